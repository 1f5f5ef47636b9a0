"""Many tables in one process: freshness per table under load, and what an idle table costs.

    python -m bench.pipeline --tables 50 --rate 5000 --seconds 120

``--tables`` new Postgres tables in ``inventory``, published by the stack's
Debezium connector, a topic each. ``hudi-cdc run --pipeline --continuous``
(``spark-submit``, ``local[2]``) replicates every topic into a MERGE_ON_READ
table. A load thread commits 10 transactions a second, each inserting
``rate / 10 / tables`` rows into every table (inserts: every change is its
own key, so each commit's stats say exactly which transactions it holds).

Freshness of transaction *k* in table *X*: the completion time of the first
commit of *X* whose newest source commit time (``source_ts_ms_max`` in its
stats) is at or after *k*'s start, minus the time *k*'s commit returned to
the client. Commit completion times come from the Hudi timeline's file names.
Transactions of the first ``warmup`` seconds are left out.

Then the load stops, and the runner goes on over idle tables for
``idle_seconds``: the mean duration of a round that found nothing is the cost
of an idle table per round.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import results
from bench.run import BOOTSTRAP, LAUNCHER, REGISTRY, REPO, hudi_cdc_jars, spark_submit, variant


class Load(threading.Thread):
    """Commits 10 transactions a second, each inserting ``per_table`` rows into every table."""

    def __init__(self, dsn: str, tables: list[str], rate: int, seconds: float) -> None:
        super().__init__(daemon=True)
        self.dsn, self.tables, self.seconds = dsn, tables, seconds
        self.per_table = max(1, rate // 10 // len(tables))
        self.started: dict[int, float] = {}  # seq -> the transaction's start on the server (now()), s
        self.committed: dict[int, float] = {}  # seq -> when its commit returned, s
        self.behind_s = 0.0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self._load()
        except BaseException as exc:  # the measurement must not wait for a load that died
            self.error = exc

    def _load(self) -> None:
        from hudi_cdc.testing.postgres import connect

        with connect(self.dsn) as conn, conn.cursor() as cur:
            start = time.time()
            seq = 0
            while time.time() - start < self.seconds:
                seq += 1
                due = start + seq * 0.1
                first = seq * self.per_table
                with conn.transaction():
                    cur.execute("select extract(epoch from now())")
                    row = cur.fetchone()
                    assert row is not None
                    self.started[seq] = float(row[0])
                    for table in self.tables:
                        cur.execute(
                            f"insert into inventory.{table} (id, v) select g, %s from generate_series(%s::bigint, %s::bigint) g",
                            (seq, first, first + self.per_table - 1),
                        )
                self.committed[seq] = time.time()
                pause = due - time.time()
                if pause > 0:
                    time.sleep(pause)
                else:
                    self.behind_s = max(self.behind_s, -pause)


def _completions(base: Path) -> dict[str, float]:
    """Requested instant -> completion time (s) of the table's completed (delta) commits.

    A table's first commit is a bulk insert, a ``.commit`` on MOR too; compactions are
    ``.commit``s as well, but no round's ``commit_time`` names them.
    """
    timeline = base / ".hoodie" / "timeline"
    out = {}
    for p in timeline.iterdir() if timeline.exists() else ():
        if p.name.endswith((".commit", ".deltacommit")) and "_" in p.name:
            requested, completed = p.name.split(".")[0].split("_")
            moment = datetime.strptime(completed[:17], "%Y%m%d%H%M%S%f").replace(tzinfo=UTC)
            out[requested] = moment.timestamp()
    return out


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, int(len(ordered) * q + 0.999999) - 1)]


def measure(
    tables: int,
    rate: int,
    seconds: float,
    warmup: float,
    idle_seconds: float,
    work: Path,
    hoodie_conf: dict[str, str] | None = None,
) -> dict[str, Any]:
    from hudi_cdc.testing.kafka import end_offsets
    from hudi_cdc.testing.postgres import STACK_DSN, connect

    run_id = uuid.uuid4().hex[:6]
    names = [f"bench_many_{run_id}_{i:02d}" for i in range(tables)]
    with connect() as conn, conn.cursor() as cur:
        for name in names:
            cur.execute(
                f"create table inventory.{name} (id bigint primary key, v bigint not null, at timestamptz default now())"
            )
            cur.execute(f"insert into inventory.{name} (id, v) values (0, 0)")  # the topic exists before the run
    topics = [f"dbserver1.inventory.{n}" for n in names]
    deadline = time.time() + 300
    while len(end_offsets(BOOTSTRAP, topics)) < tables and time.time() < deadline:
        time.sleep(2)
    pipeline = work / f"many_{run_id}.toml"
    conf_table = _conf_table(hoodie_conf or {})
    pipeline.write_text(
        f"""
[source]
kind = "kafka"
bootstrap_servers = "{BOOTSTRAP}"
schema_registry_url = "{REGISTRY}"
tables = "dbserver1.inventory.bench_many_{run_id}_*"

[defaults]
target_base_path = "{work}/{{table}}"
target_table = "{{table}}"
table_type = "mor"
min_sync_interval_seconds = 0
{conf_table}
[run]
max_concurrent_tables = 4
discovery_interval_seconds = 60
state_dir = "{work}/state_{run_id}"
"""
    )
    out_path = work / f"many_{run_id}.jsonl"
    out = open(out_path, "w")  # noqa: SIM115 - the child writes it until terminated
    runner = subprocess.Popen(
        [spark_submit(), "--master", "local[2]", "--driver-memory", "6g", "--conf", "spark.ui.enabled=false",
         *hudi_cdc_jars(), str(LAUNCHER), "run", "--pipeline", str(pipeline), "--continuous", "--json"],
        stdout=out, stderr=open(work / f"many_{run_id}.log", "w"),  # noqa: SIM115
        env={**os.environ, "PYSPARK_PYTHON": sys.executable},
    )  # fmt: skip
    bases = {n: work / n for n in names}
    started_s = time.time()
    load = Load(STACK_DSN, names, rate, seconds + warmup)
    try:
        deadline = time.time() + 900
        while not all(_completions(b) for b in bases.values()) and time.time() < deadline:
            time.sleep(1)  # every table has its first commit
        created_s = time.time()
        load.start()
        load.join()
        if load.error is not None:
            raise RuntimeError(f"the load failed: {load.error}") from load.error
        # Caught up: every table's newest commit holds the last transaction.
        last = load.started[max(load.started)] * 1000
        deadline = time.time() + 600
        while time.time() < deadline and not _caught_up(out_path, names, last):
            time.sleep(2)
        caught_up_s = time.time()
        busy_lines = len(out_path.read_text().splitlines())
        time.sleep(idle_seconds)
    finally:
        runner.terminate()
        runner.wait(120)
        out.close()
        with connect() as conn:  # the topics stay; the tables go
            for name in names:
                conn.execute(f"drop table if exists inventory.{name}")
    rounds = [json.loads(line) for line in out_path.read_text().splitlines() if line.startswith("{")]
    measured_from = min(load.committed.values()) + warmup
    per_table: dict[str, list[float]] = {}
    missing = 0
    for name in names:
        done = _completions(bases[name])
        commits = sorted(
            (done[r["commit_time"]], r["source_ts_ms_max"])
            for r in rounds
            if r.get("table") == f"inventory.{name}" and r.get("commit_time") in done and r.get("source_ts_ms_max")
        )
        latencies = []
        for seq, committed in load.committed.items():
            if committed < measured_from:
                continue
            visible = next((at for at, newest in commits if newest >= load.started[seq] * 1000), None)
            if visible is None:
                missing += 1
            else:
                latencies.append(visible - committed)
        per_table[name] = latencies
    p99s = sorted(_percentile(v, 0.99) for v in per_table.values() if v)
    everything = [x for v in per_table.values() for x in v]
    # Rounds once every table had caught up: nothing new anywhere.
    idle_lines = out_path.read_text().splitlines()[busy_lines:]
    idle = [r["duration_s"] for r in map(json.loads, filter(None, idle_lines)) if "duration_s" in r]
    result = {
        "tables": tables, "rate": rate, "seconds": seconds, "warmup": warmup,
        "changes": sum(load.per_table * tables for s in load.committed),
        "first_commits_s": round(created_s - started_s, 1),
        "caught_up_after_load_s": round(caught_up_s - max(load.committed.values()), 1),
        "not_visible": missing,
        "p50_s": round(statistics.median(everything), 2) if everything else None,
        "p99_s": round(_percentile(everything, 0.99), 2) if everything else None,
        "table_p99_median_s": round(statistics.median(p99s), 2) if p99s else None,
        "table_p99_max_s": round(p99s[-1], 2) if p99s else None,
        "tables_p99_within_15s": sum(1 for p in p99s if p <= 15),
        "committed_rounds": sum(1 for r in rounds if r.get("commit_time")),
        "idle_rounds": len(idle),
        "idle_round_mean_s": round(statistics.mean(idle), 3) if idle else None,
        "idle_round_p50_s": round(statistics.median(idle), 3) if idle else None,
        "idle_rounds_per_table_s": round(len(idle) / tables / idle_seconds, 2),
        "load_behind_s": round(load.behind_s, 2),
    }  # fmt: skip
    print(json.dumps(result), flush=True)
    return result


def _conf_table(conf: dict[str, str]) -> str:
    if not conf:
        return ""
    return "\n[defaults.hoodie_conf]\n" + "".join(f'"{k}" = "{v}"\n' for k, v in conf.items())


def _caught_up(out_path: Path, names: list[str], newest_ms: float) -> bool:
    held: dict[str, int] = {}
    for line in out_path.read_text().splitlines():
        if line.startswith("{"):
            r = json.loads(line)
            if r.get("source_ts_ms_max"):
                held[r["table"]] = max(held.get(r["table"], 0), r["source_ts_ms_max"])
    return all(held.get(f"inventory.{n}", 0) >= newest_ms for n in names)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tables", type=int, default=50)
    parser.add_argument("--rate", type=int, default=5000, help="changes a second over all tables")
    parser.add_argument("--seconds", type=float, default=120)
    parser.add_argument("--warmup", type=float, default=60)
    parser.add_argument("--idle-seconds", type=float, default=60)
    parser.add_argument("--work", type=Path, default=REPO / ".bench" / "pipeline")
    parser.add_argument(
        "--variant",
        action="append",
        type=variant,
        help="label or label:key=value,...: a run with these Hudi settings on every table (repeatable; "
        "one run with hudi-cdc's defaults when not given)",
    )
    parser.add_argument(
        "--results", type=Path, help="write the result file under this folder (default: .bench/results)"
    )
    args = parser.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    started = f"{datetime.now():%Y-%m-%d %H:%M}"
    started_utc = results.now_utc()
    runs = []
    for label, conf in args.variant or [("hudi-cdc defaults", {})]:
        result = measure(args.tables, args.rate, args.seconds, args.warmup, args.idle_seconds, args.work, conf)
        runs.append((label, conf, result))
    print(render(runs, started))
    results.write(
        "pipeline",
        parameters={
            "tables": args.tables, "rate": args.rate, "seconds": args.seconds, "warmup": args.warmup,
            "idle_seconds": args.idle_seconds, "max_concurrent_tables": 4, "driver_memory": "6g",
            "variants": {label: conf for label, conf, _ in runs},
        },
        tables={"runs": results.table(RUN_COLUMNS, [{"settings": label, **r} for label, _, r in runs])},
        directory=args.results or results.LOCAL,
        started_utc=started_utc,
    )  # fmt: skip
    return 0 if all(r["not_visible"] == 0 for _, _, r in runs) else 1


RUN_COLUMNS = [
    results.column("settings", "Hudi settings"), results.column("tables", unit="tables"),
    results.column("rate", "load", "changes/s"), results.column("seconds", "measured", "s"),
    results.column("changes", unit="changes"), results.column("load_behind_s", "load behind at most", "s"),
    results.column("p50_s", "freshness p50, all tables", "s"), results.column("p99_s", "freshness p99, all tables", "s"),
    results.column("table_p99_median_s", "per-table p99: median", "s"),
    results.column("table_p99_max_s", "per-table p99: worst", "s"),
    results.column("tables_p99_within_15s", "tables with p99 <= 15 s", "#"),
    results.column("not_visible", "transactions never visible", "#"),
    results.column("caught_up_after_load_s", "caught up after the load stopped", "s"),
    results.column("first_commits_s", "first commit of every table", "s"),
    results.column("committed_rounds", "committed rounds", "#"),
    results.column("idle_round_mean_s", "an idle table's round: mean", "s"),
    results.column("idle_round_p50_s", "an idle table's round: median", "s"),
    results.column("idle_rounds", "idle rounds", "#"),
    results.column("idle_rounds_per_table_s", "idle rounds per table a second", "1/s"),
]  # fmt: skip


def render(runs: list[tuple[str, dict[str, str], dict[str, Any]]], started: str) -> str:
    from bench.run import machine, versions

    first = runs[0][2]

    def row(name: str, cell: Callable[[dict[str, Any]], str]) -> str:
        return f"| {name} | " + " | ".join(cell(r) for _, _, r in runs) + " |"

    def idle(r: dict[str, Any]) -> str:
        every = 1 / r["idle_rounds_per_table_s"] if r["idle_rounds_per_table_s"] else float("nan")
        return f"{r['idle_round_mean_s']} s / {r['idle_round_p50_s']} s ({r['idle_rounds']:,} rounds; each table every {every:.1f} s)"

    settings = [
        f"- {label}: " + (", ".join(f"`{k}={v}`" for k, v in conf.items()) or "no `hoodie_conf`")
        for label, conf, _ in runs
    ]
    return "\n".join(
        [
            f"Run of {started} on {machine()}; {', '.join(f'{k} {v}' for k, v in versions().items())}. "
            f"{first['tables']} MERGE_ON_READ tables, one `hudi-cdc run --continuous` (`local[2]`, 6 GiB driver, "
            "4 concurrent tables), the stack on the same 2 cores; one run per column, one after the other.",
            "",
            *settings,
            "",
            "| | " + " | ".join(label for label, _, _ in runs) + " |",
            "| --- |" + " ---: |" * len(runs),
            row(
                "load",
                lambda r: (
                    f"{r['rate']:,} changes/s over {r['tables']} tables, {r['seconds']:.0f} s measured after "
                    f"{r['warmup']:.0f} s warm-up; {r['changes']:,} changes; load behind by at most {r['load_behind_s']} s"
                ),
            ),
            row("freshness p50, all tables", lambda r: f"{r['p50_s']} s"),
            row("freshness p99, all tables", lambda r: f"{r['p99_s']} s"),
            row("per-table p99: median / worst", lambda r: f"{r['table_p99_median_s']} s / {r['table_p99_max_s']} s"),
            row("tables with p99 <= 15 s", lambda r: f"{r['tables_p99_within_15s']} of {r['tables']}"),
            row("transactions never visible", lambda r: str(r["not_visible"])),
            row("caught up after the load stopped", lambda r: f"{r['caught_up_after_load_s']} s"),
            row("first commit of every table", lambda r: f"{r['first_commits_s']} s"),
            row("committed rounds", lambda r: f"{r['committed_rounds']:,}"),
            row("an idle table's round (nothing new): mean / median", idle),
            "",
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
