"""``repair`` of a table replicated from MariaDB (Debezium's MariaDB connector, ``--flavor mysql``), against the stack.

The table is corrupted past hudi-cdc (a changed value, a value at a binlog position no change can have, a
missing row, an extra row, a duplicate key); the repair reads the keys in a consistent snapshot whose binlog
position MariaDB states, and ranks the rows there as ``payloads.mysql`` orders stream events. Changes made
at MariaDB after the snapshot (one reaching the table before the repair writes, one after) must win over the
repaired rows; the table ends equal to MariaDB, value for value.
"""

from __future__ import annotations

import datetime as dt
import random
import sys
import threading
import uuid
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from hudi_cdc.cli import main
from hudi_cdc.ops import repair as ops
from hudi_cdc.ops.verify import verify
from hudi_cdc.testing.faults import timeline_of
from hudi_cdc.testing.mariadb import STACK_URL, connect, wait_for_stream
from hudi_cdc.upstream.database import SourceDatabase
from payloads.base import ORDER_COLUMN, is_data_column
from tests.stack.conftest import BOOTSTRAP, REGISTRY
from tests.support import kill_when_pending, run_cli, tamper

pytestmark = [pytest.mark.stack, pytest.mark.kafka, pytest.mark.hudi]

TABLE = f"repair_{uuid.uuid4().hex[:8]}"
SOURCE = f"inventory.{TABLE}"
TOPIC = f"mariadb1.inventory.{TABLE}"
DATABASE = SourceDatabase(STACK_URL, password_env="REPAIR_TEST_PASSWORD")
COLUMNS = ("id", "name", "amount", "body", "seen", "data", "at")
CHANGED, TOP, MISSING, DUPLICATED, AHEAD, BEHIND, GHOST = 1, 2, 3, 4, 5, 6, 999_999


def _row(i: int) -> tuple[Any, ...]:
    seen = dt.datetime(2026, 1, 1) + dt.timedelta(seconds=i * 3607, microseconds=i * 11)
    return (
        i,
        f"name {i}",
        Decimal(i) * Decimal("1.25"),
        "body " * (i % 7),
        seen,
        bytes([i % 256, 7]),
        f"0{i % 10}:30:0{i % 6}.25",
    )


@pytest.fixture(autouse=True)
def _password(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REPAIR_TEST_PASSWORD", "dbz")


@pytest.fixture(scope="module")
def source() -> Iterator[None]:
    with connect() as conn, conn.cursor() as cur:
        cur.execute(
            f"create table {SOURCE} (id int primary key, name varchar(64), amount decimal(12,2), body text,"
            " seen datetime(6), data varbinary(16), at time(6)) engine=InnoDB"
        )
        try:
            conn.begin()
            cur.executemany(
                f"insert into {SOURCE} values (%s, %s, %s, %s, %s, %s, %s)", [_row(i) for i in range(1, 201)]
            )  # noqa: S608
            conn.commit()
            wait_for_stream(conn, BOOTSTRAP, [TOPIC], since={(TOPIC, 0): 0})
            yield
        finally:
            cur.execute(f"drop table if exists {SOURCE}")


def _execute(sql: str, *args: Any) -> None:  # noqa: ANN401
    with connect() as conn, conn.cursor() as cur:
        cur.execute(sql, args)


class _Workload:
    """A change about every second on rows 100-200 (updates, inserts of new ids, deletes) until stopped: the corrupted
    rows (ids below 100 and a ghost) are left alone, so what repair must do with each of them is known."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.changes = 0
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        rng, next_id = random.Random(43), 10_000
        with connect() as conn, conn.cursor() as cur:
            while not self.stop.wait(0.8):
                kind = rng.random()
                if kind < 0.6:
                    cur.execute(f"update {SOURCE} set amount = amount + 1 where id = %s", (rng.randint(100, 200),))  # noqa: S608
                elif kind < 0.85:
                    cur.execute(f"insert into {SOURCE} (id, name, amount) values (%s, 'new', 1)", (next_id,))  # noqa: S608
                    next_id += 1
                else:
                    cur.execute(f"delete from {SOURCE} where id = %s", (rng.randint(150, 200),))  # noqa: S608
                self.changes += 1

    def join(self) -> int:
        self.stop.set()
        self._thread.join()
        return self.changes


def _ingest(path: str, table_type: str, *, live: bool = False) -> None:
    """Every change MariaDB has committed so far, published and ingested (the simple index, as tests/stack/test_repair.py
    explains: a duplicate under a bucket index stops every writer). ``live``: the workload is still writing."""
    with connect() as conn:
        wait_for_stream(conn, BOOTSTRAP, [TOPIC], live=live)
    result = run_cli(
        "--source", "kafka", "--topic", TOPIC, "--bootstrap-servers", BOOTSTRAP, "--schema-registry-url", REGISTRY,
        "--flavor", "mysql", "--target-base-path", path, "--target-table", f"{TABLE}_{table_type}",
        "--table-type", table_type, "--hoodie-conf", "hoodie.index.type=SIMPLE",
    )  # fmt: skip
    assert result.exit_code == 0, result.output


def _data(spark: Any, path: str, key: int) -> dict[str, Any]:  # noqa: ANN401
    frame = spark.read.format("hudi").load(path)
    return frame.select(*[c for c in frame.columns if is_data_column(c)]).where(f"id = {key}").first().asDict()


def _rows(spark: Any, path: str, ids: tuple[int, ...]) -> dict[int, list[tuple]]:  # noqa: ANN401
    out: dict[int, list[tuple]] = {}
    frame = spark.read.format("hudi").load(path).where(f"id in ({', '.join(map(str, ids))})")
    for r in frame.select("id", "name", "amount").collect():
        out.setdefault(r["id"], []).append(tuple(r))
    return out


def _source_rows(ids: tuple[int, ...]) -> dict[int, list[tuple]]:
    with connect() as conn, conn.cursor() as cur:
        cur.execute(f"select id, name, amount from {SOURCE} where id in %s", (ids,))  # noqa: S608
        return {r[0]: [tuple(r)] for r in cur.fetchall()}


def _corrupt(spark: Any, path: str, table_type: str) -> None:  # noqa: ANN401
    rows = {i: _data(spark, path, i) for i in (CHANGED, TOP, MISSING, DUPLICATED, AHEAD, BEHIND)}
    upserts = [
        {**rows[CHANGED], "amount": rows[CHANGED]["amount"] + 7},  # at its own position
        {**rows[TOP], "name": "corrupt", ORDER_COLUMN: "9" * 41},  # at a binlog position no change can have
        {**rows[AHEAD], "name": "corrupt"},
        {**rows[BEHIND], "name": "corrupt"},
        {**rows[CHANGED], "id": GHOST},
    ]
    tamper(spark, path, table_name=f"{TABLE}_{table_type}", table_type=table_type, keys=("id",), upserts=upserts,
           deletes=[rows[MISSING]], duplicates=[rows[DUPLICATED]])  # fmt: skip


def test_repair_ranks_rows_at_the_snapshots_binlog_position(spark, source, tmp_path, monkeypatch) -> None:  # noqa: ANN001
    path = str(tmp_path / f"{TABLE}_mor")
    _ingest(path, "mor")
    _corrupt(spark, path, "mor")
    config = ops.table_config(spark, path)
    assert config.flavor == "mysql"  # from the table's _source_file column
    ids = (CHANGED, TOP, MISSING, DUPLICATED, AHEAD, BEHIND, GHOST)
    corrupted = {str(i) for i in ids}
    workload = _Workload()  # the stream goes on meanwhile, over other rows
    try:
        done = _repair_under_the_workload(spark, path, config, ids, monkeypatch)
    finally:
        assert workload.join() > 0
    outcome = {k.key["id"]: k.outcome for k in done.keys if k.key["id"] in corrupted}
    assert outcome == {**{i: "repaired" for i in corrupted}, str(AHEAD): "outranked"}, done.describe()
    forced = {k.key["id"] for k in done.keys if k.note == "every stored copy deleted first"}
    assert forced == {str(TOP), str(DUPLICATED)}, done.describe()
    assert _data(spark, path, AHEAD)["name"] == "after the snapshot"  # the stored later change kept
    assert _data(spark, path, BEHIND)["name"] == f"name {BEHIND}"  # the snapshot's row, for now

    # Where the binlog puts them: every streamed change the snapshot holds sits below its position, the
    # change made after it at or above (Debezium gives a row event's own position).
    file, _, pos = done.position.rpartition(":")
    streamed = spark.read.format("hudi").load(path).where("_source_op <> 'r' and id < 100")
    before = streamed.where(f"id <> {AHEAD} and _source_file = '{file}'").agg({"_source_pos": "max"}).first()[0]
    ahead = streamed.where(f"id = {AHEAD}").first()
    assert before < int(pos) <= ahead["_source_pos"] and ahead["_source_file"] == file, done.position

    _ingest(path, "mor")  # BEHIND's change arrives after the repaired row, and wins; the workload's changes too
    assert _data(spark, path, BEHIND)["name"] == "after the snapshot, later"
    assert _rows(spark, path, ids) == _source_rows(ids)
    result = verify(spark, path, DATABASE, SOURCE)
    assert result.equal, result.describe()
    assert not result.skipped_columns and set(COLUMNS) <= set(result.compared_columns)


def _repair_under_the_workload(
    spark: Any,
    path: str,
    config: Any,
    ids: tuple[int, ...],
    monkeypatch: pytest.MonkeyPatch,  # noqa: ANN401
) -> ops.RepairResult:
    # A dry run names every corrupted key and what it would write, and writes nothing.
    before = _rows(spark, path, ids)
    dry = ops.repair(spark, config, DATABASE, SOURCE, apply=False)
    assert {k.key["id"]: k.action for k in dry.keys if int(k.key["id"]) in ids} == {
        **{str(i): "upsert" for i in ids if i != GHOST},
        str(GHOST): "delete",
    }, dry.describe()
    assert not dry.commits and "would upsert" in dry.describe() and dry.position.startswith("mariadb-bin.")
    assert _rows(spark, path, ids) == before

    # Between the repair's snapshot and its write, MariaDB changes two corrupted keys: AHEAD's change reaches
    # the table before the repair writes, BEHIND's after. Both come after the snapshot: both must win.
    write = ops._write  # noqa: SLF001

    def change_during_the_repair(*args: Any) -> list[str]:  # noqa: ANN401
        _execute(f"update {SOURCE} set name = 'after the snapshot' where id = %s", AHEAD)  # noqa: S608
        _ingest(path, "mor", live=True)
        _execute(f"update {SOURCE} set name = 'after the snapshot, later' where id = %s", BEHIND)  # noqa: S608
        return write(*args)

    monkeypatch.setattr(ops, "_write", change_during_the_repair)
    rechecked: list[str] = []

    def catch_up(conn: Any, position: str) -> str:  # noqa: ANN401 - verify's second pass waits on this
        rechecked.append(position)
        _ingest(path, "mor", live=True)
        return "an ingest round after the stream published everything"

    done = ops.repair(spark, config, DATABASE, SOURCE, recheck=catch_up)
    assert len(rechecked) == 1 and rechecked[0].startswith("mariadb-bin.") and done.verify.passes == 2
    return done


def test_the_cli_dry_run_then_the_repair(spark, source, tmp_path) -> None:  # noqa: ANN001
    path = str(tmp_path / f"{TABLE}_cow")
    _ingest(path, "cow")
    tamper(spark, path, table_name=f"{TABLE}_cow", table_type="cow", keys=("id",),
           upserts=[{**_data(spark, path, CHANGED), "name": "wrong", "seen": None}],
           duplicates=[_data(spark, path, DUPLICATED)])  # fmt: skip
    args = ["verify", "--target-base-path", path, "--source-url", DATABASE.url, "--password-env",
            "REPAIR_TEST_PASSWORD", "--table", SOURCE, "--no-recheck"]  # fmt: skip
    dry = CliRunner().invoke(main, [*args, "--max-repair", "5"], catch_exceptions=False)
    assert dry.exit_code == 1, dry.output
    assert "id=1: changed: name, seen -> would upsert" in dry.output and "id=4: duplicate" in dry.output
    assert "at position mariadb-bin." in dry.output and "dbz" not in dry.output
    assert _data(spark, path, CHANGED)["name"] == "wrong"
    # Killed (the whole process group, JVM included) while its first commit is pending, then run again.
    command = [str(Path(sys.executable).parent / "hudi-cdc"), *args, "--repair"]
    assert kill_when_pending(command, timeline_of(path), "commit")

    applied = CliRunner().invoke(main, [*args, "--repair"], catch_exceptions=False)
    assert applied.exit_code == 0, applied.output
    assert "id=1: changed: name, seen -> upsert: repaired" in applied.output
    assert _rows(spark, path, (CHANGED, DUPLICATED)) == _source_rows((CHANGED, DUPLICATED))
    # The stream goes on over the repaired table: a later change to a repaired key wins.
    _execute(f"update {SOURCE} set amount = amount + 100 where id in (%s, %s)", CHANGED, DUPLICATED)  # noqa: S608
    _ingest(path, "cow")
    assert _rows(spark, path, (CHANGED, DUPLICATED)) == _source_rows((CHANGED, DUPLICATED))
    result = verify(spark, path, DATABASE, SOURCE)
    assert result.equal, result.describe()
