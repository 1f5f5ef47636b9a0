"""``repair`` against the real stack: a table replicated through Debezium is corrupted while a workload runs,
repaired while it keeps running, and ends equal to Postgres once the stream has caught up.

The workload changes rows 100-399 and inserts new ones; the corrupted rows (ids below 100 and a ghost)
are left alone by it, so what repair must do with each of them is known exactly. Corruptions: a changed
value at the row's own position, a changed value at a position the WAL never reached (it would outrank
any ranked write), a TOAST placeholder stored as the value, a missing row, an extra row, a duplicate key.
"""

from __future__ import annotations

import random
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from hudi_cdc.cli import main
from hudi_cdc.ops.repair import repair, table_config
from hudi_cdc.ops.verify import verify
from hudi_cdc.testing.faults import timeline_of
from hudi_cdc.testing.postgres import connect, wait_for_stream
from hudi_cdc.upstream.database import SourceDatabase
from payloads.base import ORDER_COLUMN, is_data_column
from tests.stack.conftest import BOOTSTRAP, REGISTRY
from tests.support import PLACEHOLDER, kill_when_pending, run_cli, tamper

pytestmark = [pytest.mark.stack, pytest.mark.kafka, pytest.mark.postgres, pytest.mark.hudi]

TABLE = f"repair_{uuid.uuid4().hex[:8]}"
SOURCE = f"inventory.{TABLE}"
TOPIC = f"dbserver1.inventory.{TABLE}"
DATABASE = SourceDatabase("postgresql://debezium@127.0.0.1:55432/inventory", password_env="REPAIR_TEST_PASSWORD")
DDL = f"""
create table {SOURCE} (id integer primary key, name text, amount numeric(12,2), body text);
alter table {SOURCE} alter column body set storage external;
insert into {SOURCE} select i, 'name ' || i, i * 1.25,
  case when i % 3 = 0 then repeat(md5(i::text), 200) else 'short ' || i end
from generate_series(1, 400) i;
"""
CHANGED, TOP, TOASTED, MISSING, DUPLICATED, GHOST = 1, 2, 3, 4, 5, 999_999


def _ingest(path: str, table_type: str) -> None:
    """One ingest round; the simple index: a duplicate written into a bucket-index table stops every writer
    (Hudi: "multiple files ... belong to the same bucket"), repair's and the stream's alike."""
    result = run_cli(
        "--source", "kafka", "--topic", TOPIC, "--bootstrap-servers", BOOTSTRAP, "--schema-registry-url", REGISTRY,
        "--target-base-path", path, "--target-table", f"{TABLE}_{table_type}", "--table-type", table_type,
        "--hoodie-conf", "hoodie.index.type=SIMPLE",  # a duplicate under a bucket index leaves Hudi unable to write
    )  # fmt: skip
    assert result.exit_code == 0, result.output


def _catch_up(path: str, table_type: str, *, live: bool = False) -> str:
    """``live``: the workload is still writing, so the topic never stands still."""
    with connect() as conn:
        wait_for_stream(conn, BOOTSTRAP, [TOPIC], live=live)
    _ingest(path, table_type)
    return "an ingest round after the stream published everything"


class _Workload:
    """Small transactions on rows 100-399 (updates that leave the TOAST body alone, inserts, deletes) until stopped."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.changes = 0
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        rng = random.Random(43)
        next_id = 10_000
        with connect() as conn:
            while not self.stop.wait(0.05):
                kind = rng.random()
                if kind < 0.6:
                    conn.execute(f"update {SOURCE} set amount = amount + 1 where id = %s", (rng.randint(100, 399),))  # noqa: S608
                elif kind < 0.85:
                    conn.execute(f"insert into {SOURCE} values (%s, 'new', 1, 'b')", (next_id,))  # noqa: S608
                    next_id += 1
                else:
                    conn.execute(f"delete from {SOURCE} where id = %s", (rng.randint(300, 399),))  # noqa: S608
                self.changes += 1

    def join(self) -> int:
        self.stop.set()
        self._thread.join()
        return self.changes


@pytest.fixture(autouse=True)
def _password(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REPAIR_TEST_PASSWORD", "dbz")


@pytest.fixture(scope="module")
def source() -> Iterator[None]:
    with connect() as conn:
        conn.execute(DDL)
        try:
            wait_for_stream(conn, BOOTSTRAP, [TOPIC], since={(TOPIC, 0): 0})
            yield
        finally:
            conn.execute(f"drop table if exists {SOURCE}")


def _corrupt(spark: Any, path: str, table_type: str) -> None:  # noqa: ANN401
    frame = spark.read.format("hudi").load(path)
    data = [c for c in frame.columns if is_data_column(c)]
    rows = {r["id"]: r.asDict() for r in frame.select(*data).where("id < 10").collect()}
    upserts = [
        {**rows[CHANGED], "amount": rows[CHANGED]["amount"] + 7},  # at its own position
        {**rows[TOP], "name": "corrupt", ORDER_COLUMN: "9" * 40},  # at a position no change can have
        {**rows[TOASTED], "body": PLACEHOLDER},
        {**rows[CHANGED], "id": GHOST},
    ]
    tamper(spark, path, table_name=f"{TABLE}_{table_type}", table_type=table_type, keys=("id",), upserts=upserts,
           deletes=[rows[MISSING]], duplicates=[rows[DUPLICATED]])  # fmt: skip


def _rows(spark: Any, path: str, ids: tuple[int, ...]) -> dict[int, list[tuple]]:  # noqa: ANN401
    out: dict[int, list[tuple]] = {}
    frame = spark.read.format("hudi").load(path).where(f"id in ({', '.join(map(str, ids))})")
    for r in frame.select("id", "name", "amount", "body").collect():
        out.setdefault(r["id"], []).append(tuple(r))
    return out


def _source_rows(ids: tuple[int, ...]) -> dict[int, list[tuple]]:
    with connect() as conn:
        got = conn.execute(f"select id, name, amount, body from {SOURCE} where id = any(%s)", (list(ids),))  # noqa: S608
        return {r[0]: [tuple(r)] for r in got.fetchall()}


@pytest.mark.parametrize("table_type", ["mor"])  # COW: the CLI test below
def test_repair_under_a_running_workload(spark, source, tmp_path, table_type: str) -> None:  # noqa: ANN001
    path = str(tmp_path / f"{TABLE}_{table_type}")
    _ingest(path, table_type)
    workload = _Workload()
    try:
        _corrupt(spark, path, table_type)
        config = table_config(spark, path)
        ids = (CHANGED, TOP, TOASTED, MISSING, DUPLICATED, GHOST)
        corrupted = {str(i) for i in ids}

        # A dry run names every corrupted key and what it would write, and writes nothing.
        before = _rows(spark, path, ids)
        dry = repair(spark, config, DATABASE, SOURCE, apply=False)  # one pass: lagging keys too, corrupted ones surely
        planned = {k.key["id"]: k.action for k in dry.keys if k.key["id"] in corrupted}
        assert planned == {**{str(i): "upsert" for i in ids if i != GHOST}, str(GHOST): "delete"}, dry.describe()
        assert not dry.commits and "would upsert" in dry.describe()
        assert _rows(spark, path, ids) == before

        done = repair(spark, config, DATABASE, SOURCE, recheck=lambda c, p: _catch_up(path, table_type, live=True))
        outcome = {k.key["id"]: k.outcome for k in done.keys if k.key["id"] in corrupted}
        assert outcome == {i: "repaired" for i in corrupted}, done.describe()
        forced = {k.key["id"] for k in done.keys if k.note == "every stored copy deleted first"}
        assert forced == {str(TOP), str(DUPLICATED)}, done.describe()
        # Read back: each key as Postgres has it, once; the ghost gone.
        assert _rows(spark, path, ids) == _source_rows(ids)
    finally:
        changes = workload.join()
    assert changes > 0
    _catch_up(path, table_type)  # the stream goes on over the repaired table: everything since the repair
    result = verify(spark, path, DATABASE, SOURCE)
    assert result.equal, result.describe()
    assert _rows(spark, path, ids) == _source_rows(ids)


def test_the_cli_dry_run_then_a_repair_killed_and_run_again(spark, source, tmp_path) -> None:  # noqa: ANN001
    path = str(tmp_path / f"{TABLE}_cli")
    _catch_up(path, "cow")  # the stream holds every change of the test before (its workload's too)
    tamper(spark, path, table_name=f"{TABLE}_cow", table_type="cow", keys=("id",),
           upserts=[{**_stored(spark, path, CHANGED), "name": "wrong"}],
           duplicates=[_stored(spark, path, DUPLICATED)])  # fmt: skip
    ids = (CHANGED, DUPLICATED)
    args = ["verify", "--target-base-path", path, "--source-url", DATABASE.url, "--password-env",
            "REPAIR_TEST_PASSWORD", "--table", SOURCE, "--no-recheck"]  # fmt: skip
    dry = CliRunner().invoke(main, [*args, "--max-repair", "5"], catch_exceptions=False)
    assert dry.exit_code == 1, dry.output
    assert "id=1: changed: name -> would upsert" in dry.output and "id=5: duplicate" in dry.output
    assert "dbz" not in dry.output
    assert _rows(spark, path, ids)[CHANGED][0][1] == "wrong" and len(_rows(spark, path, ids)[DUPLICATED]) == 2
    # Killed (the whole process group, JVM included) while its first commit is pending ...
    command = [str(Path(sys.executable).parent / "hudi-cdc"), *args, "--repair"]
    assert kill_when_pending(command, timeline_of(path), "commit")
    # ... and run again: the table ends equal whichever step the kill interrupted.
    applied = CliRunner().invoke(main, [*args, "--repair"], catch_exceptions=False)
    assert applied.exit_code == 0, applied.output
    assert "id=1: changed: name -> upsert" in applied.output and ": repaired" in applied.output
    assert _rows(spark, path, ids) == _source_rows(ids)
    assert verify(spark, path, DATABASE, SOURCE).equal


def _stored(spark: Any, path: str, key: int) -> dict[str, Any]:  # noqa: ANN401
    frame = spark.read.format("hudi").load(path)
    return frame.select(*[c for c in frame.columns if is_data_column(c)]).where(f"id = {key}").first().asDict()
