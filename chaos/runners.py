"""Chaos with two runners on one pipeline: kill them by turns, one in the middle of a repair; one writer per table.

Ten tables (``--tables``) of the run's own in the stack's Postgres, half COPY_ON_WRITE and half
MERGE_ON_READ (the MOR ones through a pattern section of the pipeline file), captured by the stack's
Debezium connector; a random workload over all of them (chaos.common.Workload's, on one thread); two
``hudi-cdc run --pipeline F --continuous`` processes, each with a state folder of its own and a short
``lease_expiry_seconds``, sharing the tables through the writer leases (docs/many-processes.md).

1. Kills: the runners' process groups (Python and its Spark driver JVM) are SIGKILLed by turns: first the
   moment one of the victim's tables has a pending Hudi instant (inside a commit), later at a random moment;
   each is started again a few seconds later. The other runner takes the killed one's tables over.
2. A repair in flight: ``hudi-cdc verify --repair --pipeline F --table T`` from a shell is handed to the
   runner holding T, and that runner is SIGKILLed while the repair runs. The shell exits 75 (transient) and
   the harness issues it again, as a scheduler's retry would, until it is done.
3. Catch-up: the workload stops, the runners reach every topic's end offsets, stop (SIGTERM), and
   ``verify`` must find every table equal to Postgres.
4. One writer per table (chaos.writers): every instant started under a live process's lease, and every
   rollback rolled back an instant of its own writer or of one dead before it.

``python -m chaos.runners`` (``make chaos-runners``); tests/stack/test_chaos_runners.py is the short form.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from chaos.common import (
    BOOTSTRAP,
    PASSWORD_ENV,
    REGISTRY,
    SOURCE_URL,
    Workload,
    append_rows,
    exit_report,
    git_commit,
    latest_checkpoint,
)
from chaos.writers import Life, Lives, WriterCheck, WriterWatch, check_one_writer
from hudi_cdc.errors import TransientError
from hudi_cdc.ops.verify import checkpoint_covers, kafka_end_offsets
from hudi_cdc.sink.lease import lease_holder
from hudi_cdc.sources.kafka import end_offsets
from hudi_cdc.testing.faults import pending_instants, timeline_of
from hudi_cdc.testing.postgres import TOPIC_PREFIX, connect, wait_for_stream

HUDI_CDC = str(Path(sys.executable).parent / "hudi-cdc")
SLOT = "debezium_inventory"  # the stack connector's slot (stack/conf/inventory-connector.properties)
RESULTS_END = "<!-- chaos-runners results end -->"
EXIT_TRANSIENT = 75


# --- the workload: one thread over every table ---------------------------------------------------------


class Workloads(threading.Thread):
    """Random transactions, each on a table picked at random; each table's changes are chaos.common.Workload's."""

    def __init__(self, tables: list[str], seed: int, pause_s: float) -> None:
        super().__init__(daemon=True, name="workloads")
        self.each = [Workload(t, seed + n, pause_s) for n, t in enumerate(tables)]
        self.rng = random.Random(seed)
        self.pause_s = pause_s
        self.error: BaseException | None = None
        self._halt = threading.Event()

    @property
    def changes(self) -> int:
        return sum(w.changes for w in self.each)

    @property
    def transactions(self) -> int:
        return sum(w.transactions for w in self.each)

    def create(self) -> None:
        """Create every table and give each its first rows: its topic exists before the runners start."""
        for workload in self.each:
            workload.create()
        with connect() as conn:
            for workload in self.each:
                for _ in range(5):
                    workload.transaction(conn)

    def run(self) -> None:
        try:
            with connect() as conn:
                while not self._halt.is_set():
                    self.rng.choice(self.each).transaction(conn)
                    time.sleep(self.pause_s)
        except BaseException as exc:  # noqa: BLE001 - reported by stop()
            self.error = exc

    def stop(self) -> None:
        self._halt.set()
        self.join(60)
        if self.error is not None:
            raise RuntimeError(f"the workload failed: {self.error}") from self.error


# --- the pipeline and its runners ----------------------------------------------------------------------


def pipeline_file(path: Path, run_id: str, work: Path, state_dir: Path, expiry_s: float) -> Path:
    """One runner's copy of the pipeline: the same name and tables, a state folder of its own."""
    path.write_text(
        f"""
name = "{run_id}"

[source]
source = "kafka"
bootstrap_servers = "{BOOTSTRAP}"
schema_registry_url = "{REGISTRY}"
tables = "{TOPIC_PREFIX}{run_id}_*"

[defaults]
target_base_path = "{work}/lake/{{table}}"
target_table = "{{table}}"
table_type = "cow"
lease_expiry_seconds = {expiry_s}
min_sync_interval_seconds = 3

[tables."inventory.{run_id}_mor_*"]
table_type = "mor"

[run]
max_concurrent_tables = 2
discovery_interval_seconds = 5
state_dir = "{state_dir}"
"""
    )
    return path


@dataclass
class Kill:
    runner: str
    when: str  # "in a commit", "anywhere", "repair in flight"
    held: list[str]  # the tables it held
    in_commit: bool  # it died inside a commit: one of its tables was left with a pending instant
    left_pending: list[str]  # its tables left with an instant it was writing (chaos.runners._interrupted)
    takeover_s: float | None = None  # from the kill until each of its tables had a live writer again


class RunnerProcess:
    """One ``hudi-cdc run --pipeline F --continuous``, in a process group of its own (its JVM in it)."""

    def __init__(self, name: str, pipeline: Path, state_dir: Path, logs: Path, lives: Lives) -> None:
        self.name, self.pipeline, self.state_dir, self.logs, self.lives = name, pipeline, state_dir, logs, lives
        self.process: subprocess.Popen[bytes] | None = None
        self.life: Life | None = None
        self.starts = 0
        self.killed = False  # by the harness: not an exit of its own
        self.exits: list[str] = []  # it ended by itself (it must not): how (chaos.common.exit_report)
        self.started_at = 0.0

    @property
    def pid(self) -> int:
        return self.process.pid if self.process is not None else -1

    def start(self) -> None:
        self.starts += 1
        env = {
            **os.environ,
            "HUDI_CDC_LOG_DIR": str(self.logs),
            "PYSPARK_SUBMIT_ARGS": "--driver-memory 2g pyspark-shell",
        }
        with open(self._log(), "wb") as log:
            self.process = subprocess.Popen(
                [HUDI_CDC, "-v", "run", "--pipeline", str(self.pipeline), "--continuous"],
                stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True,
            )  # fmt: skip
        self.life, self.killed = self.lives.born(f"runner {self.name}", self.process.pid), False
        self.started_at = time.monotonic()

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self) -> float:
        """SIGKILL its process group; return when the group is gone. The moment of the kill (wall clock)."""
        assert self.process is not None and self.life is not None
        self.killed = True
        self.life.killed = time.time()
        _kill_group(self.process.pid)
        self.process.wait()
        _wait_group_gone(self.process.pid)
        self.life.ended = time.time()
        return self.life.killed

    def stop(self, timeout_s: float = 120.0) -> int | None:
        """SIGTERM: a clean stop, its leases given back. Its exit code (None: it had to be killed)."""
        if not self.alive():
            return self.process.returncode if self.process is not None else None
        assert self.process is not None and self.life is not None
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            code = self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()
            return None
        _wait_group_gone(self.process.pid)
        self.life.ended = time.time()
        return code

    def revive(self) -> None:
        """Start it again if it ended by itself, noting how it ended: its error line, the JVM's last words and the
        end of its log (the log of that start: each start writes a file of its own)."""
        if self.process is None or self.alive() or self.killed:
            return
        lived = time.monotonic() - self.started_at
        how = exit_report(self._log(), self.process.returncode)
        self.exits.append(f"runner {self.name}, start {self.starts}, after {lived:.0f} s: {how}")
        print(f"chaos-runners: runner {self.name} ended by itself: {self.exits[-1]}", file=sys.stderr)
        if self.life is not None:
            self.life.ended = time.time()
        self.start()

    def status(self) -> dict[str, Any]:
        try:
            return json.loads((self.state_dir / "status.json").read_text())
        except (OSError, ValueError):
            return {}

    def held(self, bases: dict[str, str]) -> list[str]:
        return [t for t, base in bases.items() if _live_holder_pid(base) == self.pid]

    def _log(self) -> Path:
        return self.logs / f"runner-{self.name}-{self.starts:03d}.log"


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _wait_group_gone(pgid: int, timeout_s: float = 30.0) -> None:
    """Until no live process of the group is left (its JVM may outlive its Python parent by a moment)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and _group_members(pgid):
        time.sleep(0.02)


def _group_members(pgid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            found.append(int(entry))
    return found


def _live_holder_pid(base: str) -> int | None:
    holder = lease_holder(base)
    return holder.owner.pid if holder is not None and holder.live() else None


class Fleet:
    """The two runners; any that ended by itself is started again (and noted) whenever the harness waits."""

    def __init__(self, runners: list[RunnerProcess], bases: dict[str, str]) -> None:
        self.runners, self.bases = runners, bases

    def revive(self) -> None:
        for runner in self.runners:
            runner.revive()

    def by_pid(self, pid: int | None) -> RunnerProcess | None:
        return next((r for r in self.runners if r.alive() and r.pid == pid), None)

    def wait(self, what: str, ready: Callable[[], Any], timeout_s: float, poll_s: float = 0.1) -> Any:  # noqa: ANN401
        """``ready()``'s first truthy value, reviving runners meanwhile; None after the timeout."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            self.revive()
            if got := ready():
                return got
            time.sleep(poll_s)
        print(f"chaos-runners: not within {timeout_s:.0f}s: {what}", file=sys.stderr)
        return None


# --- kills -----------------------------------------------------------------------------------------------


def _completed(base: str) -> set[str]:
    timeline = timeline_of(base)
    if not timeline.is_dir():
        return set()
    return {n.split("_")[0] for n in os.listdir(timeline) if n.endswith((".commit", ".deltacommit"))}


def _new_pending(victim: RunnerProcess, bases: dict[str, str], seen: dict[str, set[str]]) -> bool:
    """A new instant pending on one of the victim's tables (the lease is read only for a table with one)."""
    for table, base in bases.items():
        new = set(pending_instants(timeline_of(base))) - seen[table]
        if new and _live_holder_pid(base) == victim.pid:
            return True
        seen[table] |= new  # another writer's: not the moment
    return False


def _new_commit(victim: RunnerProcess, bases: dict[str, str], done: dict[str, set[str]]) -> bool:
    return any(_completed(bases[t]) - done[t] for t in victim.held(bases))


def _moment_to_kill(fleet: Fleet, victim: RunnerProcess, when: str, rng: random.Random) -> bool:
    """Wait for the moment: a new instant pending on one of its tables ("in a commit"), or a new commit and
    then 0-6 s more ("anywhere"). Whether it came (else the kill lands where it does)."""
    bases = fleet.bases
    if when == "in a commit":
        seen = {t: set(pending_instants(timeline_of(b))) for t, b in bases.items()}
        came = fleet.wait("a pending instant", lambda: _new_pending(victim, bases, seen), 180, poll_s=0.05)
        time.sleep(rng.uniform(0, 0.3))  # a small round commits within a second
        return bool(came)
    done = {t: _completed(b) for t, b in bases.items()}
    came = fleet.wait("a new commit", lambda: _new_commit(victim, bases, done), 180, poll_s=0.2)
    time.sleep(rng.uniform(0, 6))
    return bool(came)


def kill_once(fleet: Fleet, victim: RunnerProcess, when: str, rng: random.Random, restart_after_s: float) -> Kill:
    """Kill the runner (once it holds tables) at the moment ``when`` says, start it again, time the takeover."""
    fleet.wait(f"runner {victim.name} to hold a table", lambda: victim.alive() and victim.held(fleet.bases), 240)
    before = {t: set(pending_instants(timeline_of(b))) for t, b in fleet.bases.items()}
    if when != "repair in flight":
        _moment_to_kill(fleet, victim, when, rng)
    held, dead_pid = victim.held(fleet.bases), victim.pid
    killed_at = victim.kill()
    left = [t for t in held if _interrupted(fleet.bases[t], before[t])]
    kill = Kill(victim.name, when, held, bool(left), left)
    kill.takeover_s = _restart_and_take_over(fleet, victim, held, dead_pid, killed_at, restart_after_s)
    return kill


def kills_until(
    fleet: Fleet, victim: RunnerProcess, when: str, rng: random.Random, restart_after_s: float, tries: int = 3
) -> list[Kill]:
    """One kill; one aimed inside a commit is tried again (up to ``tries``) while it lands after the commit."""
    kills = [kill_once(fleet, victim, when, rng, restart_after_s)]
    while when == "in a commit" and not kills[-1].in_commit and len(kills) < tries:
        kills.append(kill_once(fleet, victim, when, rng, restart_after_s))
    return kills


def _interrupted(base: str, before: set[str]) -> list[str]:
    """The instants of a table its killed writer was inside of: pending now, not before the kill was aimed (an
    earlier dead writer's), and not a compaction plan merely scheduled (no write of it under way)."""
    pending = set(pending_instants(timeline_of(base))) - before
    return sorted(n for n in pending if not n.endswith(("compaction.requested", "logcompaction.requested")))


def _restart_and_take_over(
    fleet: Fleet, victim: RunnerProcess, held: list[str], dead_pid: int, killed_at: float, restart_after_s: float
) -> float | None:
    """Start the victim again ``restart_after_s`` after its kill; the seconds until each table it held had a
    live writer again (the other runner, or the victim restarted)."""
    taken: float | None = None
    restarted = False
    while time.time() - killed_at < 240:
        if not restarted and time.time() - killed_at >= restart_after_s:
            victim.start()
            restarted = True
        fleet.revive()  # a runner that ended by itself (the victim once restarted, or the other) is noted
        if taken is None and all(_live_holder_pid(fleet.bases[t]) not in (None, dead_pid) for t in held):
            taken = round(time.time() - killed_at, 1)
        if taken is not None and victim.alive():
            return taken
        time.sleep(0.1)
    if not restarted:
        victim.start()
    return taken


# --- a repair from the shell, killed in flight -------------------------------------------------------------


@dataclass
class RepairRun:
    table: str = ""
    exits: list[int] = field(default_factory=list)  # each shell's exit code, in order
    killed_in_flight: int = 0  # its runner killed while the request was taken and not settled
    done: bool = False  # a shell got the repair's outcome (exit 0 or 1)
    repaired_by: str | None = None
    keys: int = 0  # keys the finished repair found differing
    seconds: float = 0.0
    requests_left: list[str] = field(default_factory=list)  # unsettled requests in state folders at the end


class RepairShell:
    """``hudi-cdc verify --repair --pipeline F --table T``: what an operator (or a scheduler) runs."""

    def __init__(self, pipeline: Path, table: str, logs: Path, lives: Lives) -> None:
        self.pipeline, self.table, self.logs, self.lives = pipeline, table, logs, lives
        self.runs = 0

    def start(self) -> subprocess.Popen[bytes]:
        self.runs += 1
        command = [
            HUDI_CDC, "verify", "--pipeline", str(self.pipeline), "--table", self.table, "--source-url", SOURCE_URL,
            "--password-env", PASSWORD_ENV, "--slot", SLOT, "--repair", "--json",
        ]  # fmt: skip
        with open(self._out(), "wb") as out, open(self.logs / f"repair-{self.runs:02d}.log", "wb") as err:
            process = subprocess.Popen(command, stdout=out, stderr=err, start_new_session=True)
        self.lives.born("repair shell", process.pid)
        return process

    def finish(self, process: subprocess.Popen[bytes]) -> int:
        code = process.wait(timeout=900)
        life = self.lives.get(process.pid)
        if life is not None:
            life.ended = time.time()
        return code

    def outcome(self) -> dict[str, Any]:
        lines = self._out().read_text(errors="replace").strip().splitlines()
        try:
            return json.loads(lines[-1]) if lines else {}
        except ValueError:
            return {}

    def _out(self) -> Path:
        return self.logs / f"repair-{self.runs:02d}.json"


def _runner_holding(fleet: Fleet, table: str, base: str) -> RunnerProcess | None:
    """The runner that holds the table and can take a repair now (running continuously, the table runnable)."""
    runner = fleet.by_pid(_live_holder_pid(base))
    if runner is None:
        return None
    state = (runner.status().get("tables", {}).get(table) or {}).get("state")
    return runner if state in ("waiting", "running", "retrying") else None


def _repair_in_flight(runner: RunnerProcess, table: str) -> bool:
    """The runner runs the repair now: its round of the table carries the request, not yet settled."""
    shown = runner.status().get("tables", {}).get(table) or {}
    request = runner.state_dir / "control" / f"{table}.repair"
    return shown.get("state") == "running" and bool(shown.get("repair")) and request.exists()


def repair_under_kill(
    fleet: Fleet, shell: RepairShell, base: str, rng: random.Random, restart_after_s: float
) -> tuple[RepairRun, list[Kill]]:
    """Issue the repair and kill its runner while it runs it (up to three tries for the kill to land in flight),
    then issue it again after every exit 75, as a scheduler's retry would, until it is done."""
    run, kills, started = RepairRun(shell.table), [], time.monotonic()

    def holder() -> RunnerProcess | None:
        return fleet.wait(f"a runner holding {shell.table}", lambda: _runner_holding(fleet, shell.table, base), 240)

    for _ in range(3):
        runner = holder()
        if runner is not None:
            kills += _issue_and_kill(fleet, shell, runner, run, rng, restart_after_s)
        if run.killed_in_flight:
            break
    while run.exits and run.exits[-1] == EXIT_TRANSIENT and len(run.exits) < 12:
        holder()
        run.exits.append(shell.finish(shell.start()))
    _repair_result(run, shell)
    run.seconds = round(time.monotonic() - started, 1)
    return run, kills


def _issue_and_kill(
    fleet: Fleet, shell: RepairShell, runner: RunnerProcess, run: RepairRun, rng: random.Random, restart_after_s: float
) -> list[Kill]:
    """Issue the repair; SIGKILL the runner once it runs it, 0-1 s in. The shell's exit code goes to ``run``."""
    process = shell.start()

    def in_flight_or_over() -> bool:
        return process.poll() is not None or _repair_in_flight(runner, shell.table)

    kills = []
    if fleet.wait("the repair in flight", in_flight_or_over, 300, 0.05) and process.poll() is None:
        time.sleep(rng.uniform(0, 1.0))
        if _repair_in_flight(runner, shell.table):
            kills.append(kill_once(fleet, runner, "repair in flight", rng, restart_after_s))
            run.killed_in_flight += 1
    run.exits.append(shell.finish(process))
    return kills


def _repair_result(run: RepairRun, shell: RepairShell) -> None:
    outcome = shell.outcome() if run.exits else {}
    run.done = bool(run.exits) and run.exits[-1] in (0, 1) and bool(outcome)
    run.repaired_by = outcome.get("repaired_by")
    run.keys = len(outcome.get("keys") or [])


def _requests_left(fleet: Fleet) -> list[str]:
    return [f"runner {r.name}: {p.name}" for r in fleet.runners for p in (r.state_dir / "control").glob("*.repair")]


# --- catch-up and verify -----------------------------------------------------------------------------------


def _wait_for_topics(topics: list[str], timeout_s: float = 180.0) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:  # a topic Debezium has just created may have no leader yet ("Not leader for partition"): not yet
            if {t for t, _ in end_offsets(BOOTSTRAP, topics)} == set(topics):
                return
        except TransientError as exc:
            print(f"chaos-runners: topics not ready yet: {exc}", file=sys.stderr)
        if time.monotonic() > deadline:
            raise TimeoutError(f"Debezium did not publish every one of {topics} within {timeout_s:.0f}s")
        time.sleep(1)


def catch_up(fleet: Fleet, topics: dict[str, str], timeout_s: float) -> float:
    """Every table's checkpoint covers its topic's end offsets (after the workload stopped); the seconds."""
    started = time.monotonic()
    with connect() as conn:
        wait_for_stream(conn, BOOTSTRAP, list(topics.values()), timeout_s=300)
    ends = {t: kafka_end_offsets(topic, BOOTSTRAP) for t, topic in topics.items()}

    def covered() -> bool:
        return all(checkpoint_covers(latest_checkpoint(timeline_of(fleet.bases[t])), e) for t, e in ends.items())

    if fleet.wait("every table caught up", covered, timeout_s, poll_s=1.0) is None:
        behind = [
            t for t, e in ends.items() if not checkpoint_covers(latest_checkpoint(timeline_of(fleet.bases[t])), e)
        ]
        raise TimeoutError(f"not caught up within {timeout_s:.0f}s: {behind}")
    return round(time.monotonic() - started, 1)


@dataclass
class TableResult:
    name: str
    table_type: str
    rows: int = 0
    equal: bool | None = None
    differences: list[str] = field(default_factory=list)
    commits: int = 0  # completed commits and delta commits the watch saw
    rollbacks: int = 0
    writers: int = 0  # distinct processes that held its lease


def verify_tables(results: dict[str, TableResult], bases: dict[str, str], work: Path) -> None:
    from hudi_cdc.ops.verify import verify
    from hudi_cdc.spark import spark_session
    from hudi_cdc.upstream.database import SourceDatabase

    spark = spark_session(app_name="hudi-cdc-chaos-runners", jvm_log=work / "logs" / "verify-jvm.log")
    database = SourceDatabase(SOURCE_URL, password_env=PASSWORD_ENV)
    for name, result in results.items():
        found = verify(spark, bases[name], database, f"inventory.{name}")
        result.rows, result.equal = found.source_rows, found.equal
        result.differences = found.describe().splitlines()[1:21]


def _table_type(base: str) -> str:
    """The type Hudi recorded (the pattern section chose it): "cow" or "mor"."""
    properties = (Path(base) / ".hoodie" / "hoodie.properties").read_text()
    return "mor" if "hoodie.table.type=MERGE_ON_READ" in properties else "cow"


def _table_counts(result: TableResult, watch: WriterWatch) -> None:
    instants = watch.instants[result.name].values()
    result.commits = sum(1 for i in instants if i.completed and i.action in ("commit", "deltacommit"))
    result.rollbacks = len(watch.rollbacks[result.name])
    result.writers = len({g.owner.pid for g in watch.generations[result.name].values()})


# --- the run -------------------------------------------------------------------------------------------------


@dataclass
class RunnerRun:
    name: str
    starts: int = 0
    kills: int = 0
    kills_in_commit: int = 0
    kills_left_pending: int = 0
    kills_in_repair: int = 0
    exits: list[str] = field(default_factory=list)  # it ended by itself (it must not)
    stop_exit: int | None = None  # the clean stop at the end: 0


@dataclass
class RunnersChaosReport:
    started: str
    commit: str
    run_id: str
    seed: int
    changes: int = 0
    transactions: int = 0
    kills: list[Kill] = field(default_factory=list)
    runners: list[RunnerRun] = field(default_factory=list)
    repair: RepairRun = field(default_factory=RepairRun)
    writers: WriterCheck = field(default_factory=WriterCheck)
    tables: list[TableResult] = field(default_factory=list)
    catch_up_s: float = 0.0
    duration_s: float = 0.0

    @property
    def ok(self) -> bool:
        return (
            bool(self.tables)
            and all(t.equal and t.rows > 0 for t in self.tables)
            and all(not r.exits and r.stop_exit == 0 for r in self.runners)
            and self.repair.done
            and not self.writers.violations
        )


def _runner_runs(fleet: Fleet, kills: list[Kill]) -> list[RunnerRun]:
    runs = []
    for runner in fleet.runners:
        own = [k for k in kills if k.runner == runner.name]
        runs.append(
            RunnerRun(
                runner.name,
                runner.starts,
                len(own),
                sum(k.in_commit for k in own),
                sum(bool(k.left_pending) for k in own),
                sum(k.when == "repair in flight" for k in own),
                runner.exits,
            )  # fmt: skip
        )
    return runs


def _kill_schedule(kills: int) -> list[tuple[str, str]]:
    """Runner a then b, by turns; the first turn inside a commit, then anywhere and inside a commit in turn;
    the repair comes after the first turn."""
    plan: list[tuple[str, str]] = []
    for i in range(kills):
        when = "in a commit" if i % 2 == 0 else "anywhere"
        plan += [("a", when), ("b", when)]
        if i == 0:
            plan.append(("repair", "repair in flight"))
    return plan


def run_chaos_runners(
    *,
    tables: int = 10,
    kills: int = 2,
    work: Path,
    seed: int | None = None,
    pause_s: float = 0.1,
    expiry_s: float = 8.0,
    restart_after_s: float = 3.0,
    catch_up_timeout_s: float = 600.0,
    keep_tables: bool = False,
) -> RunnersChaosReport:
    seed = random.randrange(2**32) if seed is None else seed
    rng, run_id = random.Random(seed), f"chr_{uuid.uuid4().hex[:6]}"
    report = RunnersChaosReport(datetime.now(UTC).strftime("%Y-%m-%d %H:%M"), git_commit(), run_id, seed)
    started = time.monotonic()
    names = [f"{run_id}_{'cow' if n % 2 == 0 else 'mor'}_{n}" for n in range(tables)]
    bases = {t: str(work / "lake" / t) for t in names}
    topics = {t: f"{TOPIC_PREFIX}{t}" for t in names}
    (work / "logs").mkdir(parents=True, exist_ok=True)
    os.environ.setdefault(PASSWORD_ENV, "dbz")  # the runners resolve the repair's password from their environment
    lives, workload, watch = Lives(), Workloads(names, seed, pause_s), WriterWatch(bases)
    fleet = Fleet(
        [
            RunnerProcess(
                n,
                pipeline_file(work / f"{n}.toml", run_id, work, work / f"state-{n}", expiry_s),
                work / f"state-{n}",
                work / "logs",
                lives,
            )
            for n in ("a", "b")
        ],  # fmt: skip
        bases,
    )
    try:
        workload.create()
        _wait_for_topics(list(topics.values()))
        watch.start()
        workload.start()
        for runner in fleet.runners:
            runner.start()
        fleet.wait("every table's first commit", lambda: all(_completed(b) for b in bases.values()), 300, 1.0)
        repaired = rng.choice(names)
        shell = RepairShell(fleet.runners[0].pipeline, f"inventory.{repaired}", work / "logs", lives)
        for who, when in _kill_schedule(kills):
            if who == "repair":
                report.repair, repair_kills = repair_under_kill(fleet, shell, bases[repaired], rng, restart_after_s)
                report.kills += repair_kills
            else:
                victim = next(r for r in fleet.runners if r.name == who)
                report.kills += kills_until(fleet, victim, when, rng, restart_after_s)
        workload.stop()
        report.changes, report.transactions = workload.changes, workload.transactions
        report.catch_up_s = catch_up(fleet, topics, catch_up_timeout_s)
        report.runners = _runner_runs(fleet, report.kills)
        for runner, run in zip(fleet.runners, report.runners, strict=True):
            run.stop_exit = runner.stop()
        report.repair.requests_left = _requests_left(fleet)
        watch.stop()
        report.writers = check_one_writer(watch, lives)
        results = {t: TableResult(t, _table_type(bases[t])) for t in names}
        for result in results.values():
            _table_counts(result, watch)
        verify_tables(results, bases, work)
        report.tables = list(results.values())
    finally:
        _clean_up(workload, fleet, names, keep_tables)
    report.duration_s = round(time.monotonic() - started, 1)
    return report


def _clean_up(workload: Workloads, fleet: Fleet, names: list[str], keep_tables: bool) -> None:
    workload._halt.set()
    for runner in fleet.runners:
        if runner.alive():
            runner.kill()
    if not keep_tables:
        with connect() as conn:
            for name in names:
                conn.execute(f"drop table if exists inventory.{name}")


# --- the report -----------------------------------------------------------------------------------------------


def markdown_rows(report: RunnersChaosReport) -> list[str]:
    runners = " / ".join(
        f"{r.kills} ({r.kills_in_commit} in a commit, {r.kills_in_repair} in a repair)" for r in report.runners
    )
    takeovers = [k.takeover_s for k in report.kills if k.takeover_s is not None]
    takeover = f"{sorted(takeovers)[len(takeovers) // 2]:.0f} / {max(takeovers):.0f} s" if takeovers else "-"
    kinds = f"{sum(t.table_type == 'cow' for t in report.tables)} COW + {sum(t.table_type == 'mor' for t in report.tables)} MOR"
    repair = f"{report.repair.killed_in_flight} killed in flight, exits {' '.join(map(str, report.repair.exits))}"
    w = report.writers
    equal = sum(bool(t.equal) for t in report.tables)
    return [
        f"| {report.started} | {report.commit} | {kinds} | {report.changes} | {runners} | {takeover} | {repair} "
        f"| {w.rollbacks} ({w.of_dead_writers} of dead writers, {w.own_rollbacks} own) | {len(w.violations)} "
        f"| {report.catch_up_s:.0f} s | {sum(t.rows for t in report.tables)} | {equal} of {len(report.tables)} "
        f"| {report.duration_s / 60:.1f} min |"
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", type=int, default=10, help="tables in the pipeline (half COW, half MOR)")
    parser.add_argument("--kills", type=int, default=3, help="kills per runner, besides the repair's")
    parser.add_argument("--expiry", type=float, default=8.0, help="lease_expiry_seconds")
    parser.add_argument("--seed", type=int)
    parser.add_argument("--work", type=Path, help="where the tables, state folders and logs go (default: /tmp)")
    parser.add_argument("--markdown", type=Path, help="append the run's row to this file's results table")
    parser.add_argument("--keep-tables", action="store_true", help="leave the Postgres tables in place")
    args = parser.parse_args(argv)
    work = args.work or Path(f"/tmp/hudi-cdc-chaos-runners-{datetime.now(UTC):%Y%m%d-%H%M%S}")
    report = run_chaos_runners(
        tables=args.tables, kills=args.kills, work=work, seed=args.seed, expiry_s=args.expiry,
        keep_tables=args.keep_tables,
    )  # fmt: skip
    print(json.dumps(asdict(report), indent=2, default=str))
    print("\n".join(markdown_rows(report)))
    if args.markdown:
        append_rows(args.markdown, markdown_rows(report), RESULTS_END)
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
