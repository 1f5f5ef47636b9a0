"""Storage faults under a real ingest: the target's disk fills up, or refuses writes, during a commit.

The table lives on a small tmpfs mounted for the test (root only; skipped
otherwise). Each fault must end the round with one clear error and leave the
table and its checkpoint as they were; once the disk is back, the next run
must complete the data with nothing lost or doubled.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from hudi_cdc.testing import envelope_schema, pg_event, write_events
from hudi_cdc.testing.faults import fill_disk, pending_instants, timeline_of
from tests.support import CUSTOMERS, apply_events, commit_instants, ingest_args, read_rows, run_cli

pytestmark = pytest.mark.hudi


def _events(first: int, count: int, lsn: int) -> list[dict]:
    return [
        pg_event(
            "c" if k % 3 else "u", lsn=lsn + k, after={"id": first + k % 50, "name": f"n{lsn + k}", "bio": "x" * 200}
        )
        for k in range(count)
    ]


def _expected(events: list[dict]) -> list[tuple]:
    return sorted((k, v["name"]) for k, v in apply_events(events).items())


def test_a_full_disk_ends_the_round_cleanly_and_the_next_run_completes(spark, small_disk: Path, tmp_path: Path) -> None:  # noqa: ANN001
    schema = envelope_schema("customers", CUSTOMERS)
    source, base = tmp_path / "events", str(small_disk / "table")
    first = _events(1, 200, 1000)
    write_events(source / "a.avro", schema, first)
    assert run_cli(*ingest_args(str(source), base)).exit_code == 0
    commits = commit_instants(spark, base)

    second = _events(30, 300, 5000)
    write_events(source / "b.avro", schema, second)
    filler = fill_disk(small_disk)
    done = run_cli(*ingest_args(str(source), base))
    assert done.exit_code == 75, done.output  # transient: space may come back
    assert "No space left on device" in done.output and base in done.output
    assert len(done.output.strip().splitlines()) == 1, done.output
    filler.unlink()
    assert commit_instants(spark, base) == commits  # nothing half-committed, the checkpoint did not move
    assert read_rows(spark, base, ["id", "name"]) == _expected(first)

    done = run_cli(*ingest_args(str(source), base))
    assert done.exit_code == 0, done.output
    assert read_rows(spark, base, ["id", "name"]) == _expected(first + second)


def _immutable(folders: list[Path], on: bool) -> None:
    for folder in folders:
        subprocess.run(["chattr", "+i" if on else "-i", str(folder)], check=True, capture_output=True)


@pytest.mark.parametrize("table_type", ["cow", "mor"])
def test_a_target_refusing_writes_during_a_commit(spark, small_disk: Path, tmp_path: Path, table_type: str) -> None:  # noqa: ANN001
    """The table's folders become immutable (even root cannot add files) once the round's instant is requested."""
    schema = envelope_schema("customers", CUSTOMERS)
    source, base = tmp_path / "events", str(small_disk / "table")
    first = _events(1, 200, 1000)
    write_events(source / "a.avro", schema, first)
    assert run_cli(*ingest_args(str(source), base, table_type=table_type)).exit_code == 0
    second = _events(30, 300, 5000)
    write_events(source / "b.avro", schema, second)
    folders = [Path(base), Path(base) / ".hoodie", timeline_of(base)]
    try:
        _immutable(folders[:1], True)
        _immutable(folders[:1], False)
    except subprocess.CalledProcessError as exc:
        pytest.skip(f"chattr +i is not supported here: {exc.stderr.decode().strip()}")

    # The round runs in this process (the worker's session: no JVM of its own); a thread watches the timeline
    # and makes the folders immutable once the round's instant is requested.
    timeline, known = timeline_of(base), set(pending_instants(timeline_of(base)))
    refused, stop = threading.Event(), threading.Event()

    def refuse_once_requested() -> None:
        deadline = time.monotonic() + 300
        while not stop.is_set() and time.monotonic() < deadline:
            if set(pending_instants(timeline)) - known:
                _immutable(folders, True)
                refused.set()
                return
            time.sleep(0.02)

    watcher = threading.Thread(target=refuse_once_requested, daemon=True)
    watcher.start()
    try:
        refusing = run_cli(*ingest_args(str(source), base, table_type=table_type))
    finally:
        stop.set()
        watcher.join(timeout=60)
        _immutable(folders, False)
    output = refusing.output
    assert refused.is_set(), f"no instant was requested: {output}"
    # Hadoop's local file system reports the refused rename as a missing file; the line names the table.
    assert refusing.exit_code == 75, output  # transient: the next run (or --continuous) finishes it
    lines = [line for line in output.splitlines() if line.startswith("hudi-cdc:")]
    assert len(lines) == 1 and f"writing Hudi table {base} failed" in lines[0], output
    assert read_rows(spark, base, ["id", "name"]) == _expected(first)

    done = run_cli(*ingest_args(str(source), base, table_type=table_type))
    assert done.exit_code == 0, done.output
    assert read_rows(spark, base, ["id", "name"]) == _expected(first + second)


def test_a_round_too_big_for_the_driver_says_what_to_lower(spark, tmp_path: Path) -> None:  # noqa: ANN001
    """A 512 MiB heap and a round of ~740 MB of values: the JVM dies of an OutOfMemoryError; the error line says
    to lower --source-limit or raise the driver's memory, nothing is committed, and a smaller round goes through."""
    schema = envelope_schema("customers", CUSTOMERS)
    source, base = tmp_path / "events", str(tmp_path / "table")
    big = "x" * (8 << 20)
    for part in range(10):
        events = [
            pg_event("c", lsn=part * 100 + k, after={"id": part * 100 + k, "name": "n", "bio": big})
            for k in range(2 if part == 0 else 10)
        ]
        write_events(source / f"part-{part:02d}.avro", schema, events)
    env = {
        **os.environ,
        "PYSPARK_SUBMIT_ARGS": "--driver-memory 512m pyspark-shell",
        "HUDI_CDC_LOG_DIR": str(tmp_path / "logs"),
    }
    command = [sys.executable, "-m", "hudi_cdc", "ingest", *ingest_args(str(source), base)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900)
    assert done.returncode != 0, done.stdout + done.stderr
    assert "--source-limit" in done.stderr and "OutOfMemoryError" in done.stderr, done.stderr
    assert not commit_instants(spark, base) if Path(base, ".hoodie").exists() else True
    # A round of one file fits: the first, of 2 values. One of 10 values (80 MiB) sat at the edge of the
    # 512 MiB heap and once failed in CI (an OutOfMemoryError after Spark's sort waited on the GC locker).
    done = subprocess.run([*command, "--source-limit", "1"], capture_output=True, text=True, env=env, timeout=900)
    assert done.returncode == 0, done.stderr
