"""One writer per table across processes (docs/many-processes.md): real ``hudi-cdc`` processes, real tables.

- a second ``hudi-cdc ingest`` on a table a running ``ingest --continuous`` writes is refused, naming the
  holder, and writes nothing; once the holder is SIGKILLed, a writer that waits takes the table over after
  the lease's expiry;
- two ``hudi-cdc run`` processes on one pipeline split its tables, a new table is taken by one of them, and
  when one is SIGKILLed the other takes its tables over and brings every table to the source's state;
- a pause given through one runner holds when that runner is SIGKILLed and the other takes the table over,
  until a resume given through the other.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from hudi_cdc.cli import main
from hudi_cdc.sink.lease import LeaseRecord, lease_holder
from hudi_cdc.testing import envelope_schema, write_events
from hudi_cdc.testing.samples import SampleCustomers
from tests.support import (
    CUSTOMERS,
    CommittedRows,
    apply_events,
    expected_rows,
    ingest_args,
    random_history,
    read_rows,
    run_cli,
)

pytestmark = pytest.mark.hudi

HUDI_CDC = str(Path(sys.executable).parent / "hudi-cdc")
SCHEMA = envelope_schema("customers", CUSTOMERS)
COLUMNS = ("id", "name", "bio")
EXPIRY_S = 4  # short, so that a takeover is quick


def _start(args: list[str], log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "HUDI_CDC_JIT": "quick"}
    with open(log, "wb") as out:
        return subprocess.Popen(
            [HUDI_CDC, *args], stdout=out, stderr=subprocess.STDOUT, start_new_session=True, env=env
        )


def _stop(process: subprocess.Popen[bytes], sig: int = signal.SIGKILL) -> None:
    if process.poll() is None:
        os.killpg(process.pid, sig)
    process.wait(timeout=120)


def _until(what: str, ready: Callable[[], bool], timeout_s: float, *processes: subprocess.Popen[bytes]) -> float:
    """Wait until ``ready()``; the seconds it took. Fails if a process ended meanwhile."""
    started = time.monotonic()
    while not ready():
        for process in processes:
            assert process.poll() is None, f"{process.args} ended with {process.returncode} while waiting for {what}"
        assert time.monotonic() - started < timeout_s, f"not within {timeout_s} s: {what}"
        time.sleep(0.25)
    return time.monotonic() - started


def _timeline(base: str) -> list[str]:
    folder = Path(base) / ".hoodie" / "timeline"
    return sorted(p.name for p in folder.iterdir() if p.is_file()) if folder.is_dir() else []


def _completed(base: str) -> list[str]:
    """The completed commits and delta commits (Hudi 1.x names them <instant>_<completion>.<action>)."""
    return [n for n in _timeline(base) if "_" in n and n.rsplit(".", 1)[-1] in ("commit", "deltacommit")]


def _live(base: str) -> LeaseRecord | None:
    holder = lease_holder(base)
    return holder if holder is not None and holder.live() else None


def test_a_second_ingest_is_refused_naming_the_holder_and_takes_over_once_it_is_killed(
    spark,  # noqa: ANN001
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    source, base = tmp_path / "events", str(tmp_path / "table")
    first, lsn = random_history(seed=11, keys=30, lsn_start=1000)
    write_events(source / "a.avro", SCHEMA, first)
    args = ingest_args(str(source), base, table_type="mor", extra=["--lease-expiry-seconds", str(EXPIRY_S)])
    holder = _start([*"ingest --continuous --min-sync-interval-seconds 1".split(), *args], tmp_path / "holder.log")
    try:
        _until(
            "the first ingest's first commit",
            lambda: bool(_completed(base)),
            240,
            holder,
        )
        owner = _live(base)
        assert owner is not None and owner.owner.pid == holder.pid and "ingest" in owner.owner.command

        before = _timeline(base)
        refused = run_cli(*args)
        assert refused.exit_code == 2, refused.output
        assert f"pid {holder.pid}" in refused.output and "another process writes this table" in refused.output
        assert "Stop that process, or wait" in refused.output and f"expires {EXPIRY_S} s after" in refused.output
        assert _timeline(base) == before  # no instant of the refused writer, not even a requested one
        time.sleep(EXPIRY_S * 1.5)
        assert _live(base) is not None and _live(base).owner.pid == holder.pid  # type: ignore[union-attr]

        _stop(holder)  # SIGKILL: no release; on this machine its process (and JVM) being gone frees the lease
        second, _ = random_history(seed=12, keys=30, lsn_start=lsn)
        write_events(source / "b.avro", SCHEMA, second)
        taken = run_cli(*args, "--lease-wait-seconds", "60")
        assert taken.exit_code == 0, taken.output
        assert f"took the writer lease over from host {socket.gethostname()}, pid {holder.pid}" in caplog.text
        assert read_rows(spark, base, COLUMNS) == expected_rows(apply_events(first + second), COLUMNS)
        stored = lease_holder(base)
        assert stored is not None and stored.released and stored.owner.pid == os.getpid() and stored.generation == 2
    finally:
        _stop(holder)


def _pipeline(path: Path, tmp_path: Path, state: str) -> Path:
    path.write_text(
        f"""
name = "shop"

[source]
source = "files"
source_path = "{tmp_path / "landing"}"
tables = "dbserver1.public.*"

[defaults]
target_base_path = "{tmp_path / "lake"}/{{table}}"
target_table = "{{table}}"
record_key_fields = "id"
table_type = "cow"
lease_expiry_seconds = {EXPIRY_S}
min_sync_interval_seconds = 1

[run]
max_concurrent_tables = 2
discovery_interval_seconds = 1
state_dir = "{tmp_path / state}"
"""
    )
    return path


def _sample(tmp_path: Path, table: str, seed: int) -> SampleCustomers:
    sample = SampleCustomers(tmp_path / "landing", keys=20, topic=f"dbserver1.public.{table}")
    sample.snapshot(8)
    sample.changes(seed)
    return sample


_COLUMNS = ("id", "name", "email", "notes")
_watches: dict[str, CommittedRows] = {}


def _equal(spark, tmp_path: Path, table: str, sample: SampleCustomers) -> bool:  # noqa: ANN001
    """The table, as of its newest commit, equals the sample's state (read again only after a new commit)."""
    base = str(tmp_path / "lake" / table)
    watch = _watches.get(base) or _watches.setdefault(base, CommittedRows(spark, base, _COLUMNS))
    return watch.rows() == sorted(tuple(r[c] for c in _COLUMNS) for r in sample.state.values())


def test_two_runners_split_a_pipeline_and_one_takes_over_when_the_other_is_killed(spark, tmp_path: Path) -> None:  # noqa: ANN001
    tables = ["t1", "t2", "t3", "t4"]
    samples = {t: _sample(tmp_path, t, n) for n, t in enumerate(tables)}
    bases = {t: str(tmp_path / "lake" / t) for t in tables}
    one = _pipeline(tmp_path / "shop-a.toml", tmp_path, "state-a")
    two = _pipeline(tmp_path / "shop-b.toml", tmp_path, "state-b")
    a = _start(["run", "--pipeline", str(one), "--continuous"], tmp_path / "a.log")
    b = _start(["run", "--pipeline", str(two), "--continuous"], tmp_path / "b.log")
    try:

        def holders() -> dict[str, int | None]:
            return {t: (h.owner.pid if (h := _live(base)) is not None else None) for t, base in bases.items()}

        def split() -> bool:
            pids = list(holders().values())
            return pids.count(a.pid) == 2 and pids.count(b.pid) == 2

        _until("the two runners hold two tables each", split, 300, a, b)
        _until(
            "every table replicated", lambda: all(_equal(spark, tmp_path, t, s) for t, s in samples.items()), 180, a, b
        )

        # status shows who writes each table
        shown = CliRunner().invoke(main, ["status", "--pipeline", str(one), "--json"])
        assert shown.exit_code == 0, shown.output
        writers = {t["name"]: t["writer"] for t in json.loads(shown.output.strip().splitlines()[-1])["tables"]}
        assert {w["pid"] for w in writers.values()} == {a.pid, b.pid}
        assert all(w["live"] and w["pipeline"] == "shop" for w in writers.values())

        # a new table: one runner takes it
        samples["t5"] = _sample(tmp_path, "t5", 9)
        bases["t5"] = str(tmp_path / "lake" / "t5")
        _until("the new table replicated", lambda: _equal(spark, tmp_path, "t5", samples["t5"]), 180, a, b)
        assert holders()["t5"] in (a.pid, b.pid)

        # kill one runner: the other takes its tables over after the lease's expiry and catches them up
        for n, sample in enumerate(samples.values()):
            sample.changes(100 + n)
        killed_tables = [t for t, pid in holders().items() if pid == a.pid]
        assert killed_tables
        _stop(a)
        took = _until("b holds every table", lambda: set(holders().values()) == {b.pid}, 120, b)
        assert took < EXPIRY_S + 30, took
        _until(
            "every table equal after the takeover",
            lambda: all(_equal(spark, tmp_path, t, s) for t, s in samples.items()),
            180,
            b,
        )
        for base in bases.values():  # one writer at a time: no writer rolled another's instant back
            assert not [n for n in _timeline(base) if ".rollback" in n], _timeline(base)
        _stop(b, signal.SIGTERM)  # a clean stop gives the leases back at once
        assert b.returncode == 0, (tmp_path / "b.log").read_text()[-3000:]
        assert all(h is not None and h.released for h in map(lease_holder, bases.values()))
    finally:
        for process in (a, b):
            _stop(process)


def _runner_state(tmp_path: Path, state: str, table: str) -> str | None:
    """The state a runner's status.json shows for ``table`` (None before the runner lists it)."""
    from hudi_cdc.service.control import read_status

    return ((read_status(tmp_path / state) or {}).get("tables", {}).get(table) or {}).get("state")


def test_a_pause_given_through_a_killed_runner_holds_for_the_runner_that_takes_its_table_over(
    spark,  # noqa: ANN001
    tmp_path: Path,
) -> None:
    # Issue 55: the pause lived in runner a's state folder only; once a was killed, b took the table over and
    # wrote it. Now the pause is in the table's folder too, read by b when it takes the lease. Two tables, so
    # that b, holding the other, runs on (a continuous runner whose every table is paused ends).
    samples = {t: _sample(tmp_path, t, 21 + n) for n, t in enumerate(("t1", "t2"))}
    bases = {t: str(tmp_path / "lake" / t) for t in samples}
    one = _pipeline(tmp_path / "shop-a.toml", tmp_path, "state-a")
    two = _pipeline(tmp_path / "shop-b.toml", tmp_path, "state-b")
    a = _start(["run", "--pipeline", str(one), "--continuous"], tmp_path / "a.log")
    b = a
    try:
        _until(
            "runner a replicated both tables",
            lambda: all(_equal(spark, tmp_path, t, s) for t, s in samples.items()),
            300,
            a,
        )
        b = _start(["run", "--pipeline", str(two), "--continuous"], tmp_path / "b.log")

        def holder(table: str) -> int | None:
            return h.owner.pid if (h := _live(bases[table])) is not None else None

        _until("the runners hold a table each", lambda: {holder("t1"), holder("t2")} == {a.pid, b.pid}, 300, a, b)
        paused = "t1" if holder("t1") == a.pid else "t2"
        name, base, sample = f"public.{paused}", bases[paused], samples[paused]
        shown = CliRunner().invoke(main, ["pause", "--pipeline", str(one), name])  # through a's state folder
        assert shown.exit_code == 0, shown.output
        _until("runner a paused the table", lambda: _runner_state(tmp_path, "state-a", name) == "paused", 60, a, b)
        before, completed = _timeline(base), _completed(base)
        sample.changes(50)  # new events: any round of the table would write them

        _stop(a)  # SIGKILL: b takes the table over at once (same machine: a's processes are gone)
        _until("runner b holds the paused table", lambda: holder(paused) == b.pid, 120, b)
        _until(
            "runner b paused the table, or started writing it",
            lambda: _runner_state(tmp_path, "state-b", name) == "paused" or _timeline(base) != before,
            60,
            b,
        )
        time.sleep(5)  # several of b's passes (discovery and min_sync_interval_seconds are 1 s)
        assert _timeline(base) == before, "runner b started an instant of the table though it was paused"
        assert _runner_state(tmp_path, "state-b", name) == "paused"
        assert not _equal(spark, tmp_path, paused, sample)  # the new events are not in the table

        resumed = CliRunner().invoke(main, ["resume", "--pipeline", str(two), name])  # through b's state folder
        assert resumed.exit_code == 0, resumed.output
        assert f"{base}/.hudi_cdc/control" in shown.output and f"{base}/.hudi_cdc/control" in resumed.output
        _until("the table caught up once resumed", lambda: _equal(spark, tmp_path, paused, sample), 180, b)
        assert len(_completed(base)) > len(completed)
        for table_base in bases.values():  # one writer at a time: no writer rolled another's instant back
            assert not [n for n in _timeline(table_base) if ".rollback" in n], _timeline(table_base)
    finally:
        for process in (a, b):
            _stop(process)
