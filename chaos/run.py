"""Chaos: kill the ingest and restart the stack under it, then prove both tables equal Postgres.

A randomized workload writes to a table of its own in the stack's Postgres
(multi-row transactions; inserts; updates that leave the TOASTed column alone
and updates that change it; deletes; re-inserts of deleted keys; primary-key
changes). ``hudi-cdc ingest --continuous`` follows its Debezium topic into a
COPY_ON_WRITE and a MERGE_ON_READ table, each in a process of its own.

1. Kills: each ingest's process group (Python and its JVM) is SIGKILLed, by
   turns at a random moment and the moment a Hudi instant is pending (inside a
   commit), from the table's very first round on; the harness starts it again.
2. Restarts: with both ingests running, the Kafka broker, the schema registry
   and Kafka Connect are stopped and started, one at a time. Each ingest must
   ride through by itself (not exit), and both tables must commit again.
3. Catch-up: the workload stops, the ingests reach the topic's end, and
   ``hudi-cdc verify`` must find both tables equal to Postgres.

``python -m chaos.run`` (``make chaos``); ``--kills 5 --restarts kafka`` is the
short form CI runs (tests/stack/test_chaos.py).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from chaos.common import (
    BOOTSTRAP,
    PASSWORD_ENV,
    REGISTRY,
    REPO,
    SOURCE_URL,
    Workload,
    append_rows,
    git_commit,
    latest_checkpoint,
)
from hudi_cdc.ops.verify import checkpoint_covers, kafka_end_offsets
from hudi_cdc.testing.faults import kill_group, pending_instants, restart_service, timeline_of
from hudi_cdc.testing.postgres import connect, wait_for_stream

SERVICES = {"kafka": "kafka", "registry": "apicurio", "connect": "connect"}


# --- one ingest --------------------------------------------------------------------------------------


@dataclass
class TableRun:
    table_type: str
    base_path: str
    kills: int = 0
    kills_in_commit: int = 0  # killed the moment an instant was pending
    kills_left_pending: int = 0  # an instant was still requested/inflight after the kill
    kills_before_first_commit: int = 0
    exits: list[str] = field(default_factory=list)  # the ingest ended by itself (it must not)
    recovery_s: dict[str, float] = field(default_factory=dict)  # service -> seconds to the next commit
    catch_up_s: float = 0.0
    rows: int = 0
    equal: bool | None = None
    differences: list[str] = field(default_factory=list)


class Ingest:
    def __init__(self, topic: str, table: str, table_type: str, work: Path) -> None:
        self.base_path = str(work / f"{table}_{table_type}")
        self.table_type = table_type
        self.logs = work / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.starts = 0
        self.process: subprocess.Popen | None = None
        self.command = [
            sys.executable, "-m", "hudi_cdc", "ingest", "--source", "kafka", "--topic", topic,
            "--bootstrap-servers", BOOTSTRAP, "--schema-registry-url", REGISTRY,
            "--target-base-path", self.base_path, "--target-table", f"{table}_{table_type}",
            "--table-type", table_type, "--continuous", "--source-limit", "10000",
            "--min-sync-interval-seconds", "2", "--retry-timeout-seconds", "900",
        ]  # fmt: skip

    @property
    def timeline(self) -> Path:
        return timeline_of(self.base_path)

    def start(self) -> None:
        self.starts += 1
        log = open(self.logs / f"{self.table_type}-{self.starts:03d}.log", "wb")  # noqa: SIM115 - the child owns it
        # 2 GiB, as a deployment would size it: two ingests and the stack share this machine's memory.
        env = {
            **os.environ,
            "HUDI_CDC_LOG_DIR": str(self.logs),
            "PYSPARK_SUBMIT_ARGS": "--driver-memory 2g pyspark-shell",
        }
        self.process = subprocess.Popen(
            [*self.command[:3], "-v", *self.command[3:]], stdout=log, stderr=subprocess.STDOUT, env=env,
            start_new_session=True,
        )  # fmt: skip
        log.close()

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self) -> None:
        if self.process is not None:
            kill_group(self.process)

    def completed(self) -> set[str]:
        if not self.timeline.is_dir():
            return set()
        return {n.split("_")[0] for n in os.listdir(self.timeline) if n.endswith((".commit", ".deltacommit"))}

    def last_exit(self) -> str:
        log = self.logs / f"{self.table_type}-{self.starts:03d}.log"
        lines = [line for line in log.read_text(errors="replace").splitlines() if "hudi-cdc:" in line]
        code = self.process.returncode if self.process else None
        return f"exit {code}: {lines[-1] if lines else '(no error line)'}"


def _kill_loop(ingest: Ingest, run: TableRun, kills: int, rng: random.Random) -> None:
    """Kill the ingest ``kills`` times and start it again each time, so that kills land everywhere.

    The first kill lands the moment the table's first instant is requested
    (its very first commit). Then, by turns: inside a commit (a new instant
    pending, then 0-2.5 s more), and anywhere (a new commit completed since the
    start, then 0-15 s more: between rounds, reading, deciding or inside the
    next commit).
    """
    for i in range(kills):
        if not ingest.alive():
            if ingest.process is not None and ingest.process.returncode not in (None, -9):
                run.exits.append(ingest.last_exit())
            ingest.start()
        in_commit = i % 2 == 0
        seen, done = set(pending_instants(ingest.timeline)), ingest.completed()
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and ingest.alive():
            if in_commit and set(pending_instants(ingest.timeline)) - seen:
                time.sleep(rng.uniform(0, 2.5) if i else 0)
                break
            if not in_commit and ingest.completed() - done:
                time.sleep(rng.uniform(0, 15))
                break
            time.sleep(0.02)
        committed_before = bool(ingest.completed())
        ingest.kill()
        run.kills += 1
        run.kills_in_commit += in_commit
        run.kills_before_first_commit += not committed_before
        run.kills_left_pending += bool(pending_instants(ingest.timeline))
    ingest.start()  # left running for the restarts and the catch-up


def _wait_for_commit(ingests: list[Ingest], since: dict[str, set[str]], timeout_s: float) -> dict[str, float]:
    started, seconds = time.monotonic(), {}
    while len(seconds) < len(ingests) and time.monotonic() - started < timeout_s:
        for ingest in ingests:
            if ingest.table_type not in seconds and ingest.completed() - since[ingest.table_type]:
                seconds[ingest.table_type] = time.monotonic() - started
        time.sleep(0.5)
    return seconds


def _catch_up(ingest: Ingest, topic: str, timeout_s: float) -> float:
    started = time.monotonic()
    ends = kafka_end_offsets(topic, BOOTSTRAP)
    while time.monotonic() - started < timeout_s:
        if checkpoint_covers(latest_checkpoint(ingest.timeline), ends):
            return time.monotonic() - started
        if not ingest.alive():
            raise RuntimeError(f"{ingest.table_type} ingest ended during the catch-up: {ingest.last_exit()}")
        time.sleep(1)
    raise TimeoutError(f"{ingest.table_type} ingest did not reach {topic} offsets {ends} within {timeout_s:.0f}s")


# --- the run -----------------------------------------------------------------------------------------


@dataclass
class ChaosReport:
    started: str
    commit: str
    table: str
    changes: int = 0
    transactions: int = 0
    restarts: dict[str, float] = field(default_factory=dict)  # service -> seconds down and back ready
    tables: list[TableRun] = field(default_factory=list)
    duration_s: float = 0.0

    @property
    def ok(self) -> bool:
        return bool(self.tables) and all(t.equal and not t.exits for t in self.tables)


def run_chaos(
    *,
    kills: int = 20,
    restarts: tuple[str, ...] = ("kafka", "registry", "connect"),
    table_types: tuple[str, ...] = ("cow", "mor"),
    work: Path,
    seed: int | None = None,
    pause_s: float = 0.05,
    catch_up_timeout_s: float = 900.0,
    keep_table: bool = False,
) -> ChaosReport:
    from hudi_cdc.ops.verify import verify
    from hudi_cdc.spark import spark_session
    from hudi_cdc.upstream.database import SourceDatabase

    seed = random.randrange(2**32) if seed is None else seed
    rng = random.Random(seed)
    table = f"chaos_{uuid.uuid4().hex[:8]}"
    topic = f"dbserver1.inventory.{table}"
    report = ChaosReport(datetime.now(UTC).strftime("%Y-%m-%d %H:%M"), git_commit(), table)
    started = time.monotonic()
    workload = Workload(table, seed, pause_s)
    workload.create()
    ingests = [Ingest(topic, table, t, work) for t in table_types]
    runs = {i.table_type: TableRun(i.table_type, i.base_path) for i in ingests}
    try:
        workload.start()
        # 1. Kills, both tables at once.
        threads = [
            threading.Thread(target=_kill_loop, args=(i, runs[i.table_type], kills, random.Random(rng.random())))
            for i in ingests
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        # 2. Service restarts under running ingests, each after both tables committed again.
        _wait_for_commit(ingests, {i.table_type: set() for i in ingests}, 300)
        for name in restarts:
            report.restarts[name] = restart_service(REPO, SERVICES[name])
            after = {i.table_type: i.completed() for i in ingests}
            recovered = _wait_for_commit(ingests, after, 600)
            for ingest in ingests:
                run = runs[ingest.table_type]
                run.recovery_s[name] = round(recovered.get(ingest.table_type, float("nan")), 1)
                if not ingest.alive():
                    run.exits.append(f"after the {name} restart: {ingest.last_exit()}")
                    ingest.start()
        # 3. Catch up and compare.
        workload.stop()
        report.changes, report.transactions = workload.changes, workload.transactions
        with connect() as conn:
            wait_for_stream(conn, BOOTSTRAP, [topic], timeout_s=300)  # the connector may still be restarting
        for ingest in ingests:
            runs[ingest.table_type].catch_up_s = round(_catch_up(ingest, topic, catch_up_timeout_s), 1)
        for ingest in ingests:
            ingest.kill()
        spark = spark_session(app_name="hudi-cdc-chaos", jvm_log=work / "logs" / "verify-jvm.log")
        os.environ.setdefault(PASSWORD_ENV, "dbz")
        database = SourceDatabase(SOURCE_URL, password_env=PASSWORD_ENV)
        for ingest in ingests:
            result = verify(spark, ingest.base_path, database, f"inventory.{table}")
            run = runs[ingest.table_type]
            run.rows, run.equal = result.source_rows, result.equal
            run.differences = result.describe().splitlines()[1:21]
    finally:
        if workload.is_alive():
            workload._halt.set()
        for ingest in ingests:
            ingest.kill()
        if not keep_table:
            with connect() as conn:
                conn.execute(f"drop table if exists inventory.{table}")
    report.tables = [runs[t] for t in table_types]
    report.duration_s = round(time.monotonic() - started, 1)
    return report


def markdown_rows(report: ChaosReport) -> list[str]:
    rows = []
    for t in report.tables:
        recovery = ", ".join(f"{k} {v:.0f}s" for k, v in t.recovery_s.items()) or "-"
        rows.append(
            f"| {report.started} | {report.commit} | {t.table_type} | {report.changes} | {t.kills} "
            f"({t.kills_in_commit} in a commit, {t.kills_before_first_commit} before the first commit) "
            f"| {t.kills_left_pending} | {', '.join(report.restarts) or '-'} | {recovery} | {len(t.exits)} "
            f"| {t.catch_up_s:.0f}s | {t.rows} | {'equal' if t.equal else 'DIFFERENT'} | {report.duration_s / 60:.0f} min |"
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=20, help="kills per table type")
    parser.add_argument("--restarts", default="kafka,registry,connect", help="services to restart, comma separated")
    parser.add_argument("--table-types", default="cow,mor")
    parser.add_argument("--seed", type=int)
    parser.add_argument("--work", type=Path, help="where the tables and logs go (default: a new folder in /tmp)")
    parser.add_argument("--markdown", type=Path, help="append a row per table type to this file's results table")
    parser.add_argument("--keep-table", action="store_true", help="leave the Postgres table in place")
    args = parser.parse_args(argv)
    work = args.work or Path(f"/tmp/hudi-cdc-chaos-{datetime.now(UTC):%Y%m%d-%H%M%S}")
    report = run_chaos(
        kills=args.kills,
        restarts=tuple(r for r in args.restarts.split(",") if r),
        table_types=tuple(args.table_types.split(",")),
        work=work,
        seed=args.seed,
        keep_table=args.keep_table,
    )
    print(json.dumps(asdict(report), indent=2, default=str))
    if args.markdown:
        append_rows(args.markdown, markdown_rows(report), "<!-- chaos results end -->")
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
