"""History modes on the real stack: Postgres changes through Debezium and Kafka into soft_delete and scd2
tables (COW and MOR), read back and compared with Postgres by ``verify`` (the current rows) and with what
Postgres did (the history): updates leaving a TOASTed value unchanged, deletes, a re-insert, a key change."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from hudi_cdc.ops.verify import verify
from hudi_cdc.testing.kafka import end_offsets
from hudi_cdc.testing.postgres import connect, wait_for_stream
from hudi_cdc.upstream.database import SourceDatabase
from tests.stack.conftest import BOOTSTRAP, REGISTRY
from tests.support import run_cli

pytestmark = [pytest.mark.stack, pytest.mark.kafka, pytest.mark.postgres, pytest.mark.hudi]

DATABASE = SourceDatabase("postgresql://debezium@127.0.0.1:55432/inventory", password_env="HISTORY_TEST_PASSWORD")
BIG = "repeat(md5(id::text), 200)"  # 6.4 kB: TOASTed, so an update that leaves it alone sends a placeholder


@pytest.fixture(autouse=True)
def _password(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HISTORY_TEST_PASSWORD", "dbz")


def _ingest(topic: str, base: str, table_type: str, history: str) -> None:
    result = run_cli(
        "--source", "kafka", "--topic", topic, "--bootstrap-servers", BOOTSTRAP, "--schema-registry-url", REGISTRY,
        "--target-base-path", base, "--target-table", Path(base).name, "--table-type", table_type,
        "--history", history,
    )  # fmt: skip
    assert result.exit_code == 0, result.output


@contextmanager
def _source_table(name: str, topic: str) -> Iterator[Any]:
    """``inventory.<name>`` with 12 rows whose ``big`` value is TOASTed, published; dropped afterwards."""
    with connect() as conn:
        conn.execute(f"create table inventory.{name} (id int primary key, label text, big text)")
        conn.execute(f"alter table inventory.{name} alter column big set storage external")
        conn.execute(f"insert into inventory.{name} select id, 'first ' || id, {BIG} from generate_series(1, 12) id")  # noqa: S608
        wait_for_stream(conn, BOOTSTRAP, [topic], since={})
        try:
            yield conn
        finally:
            conn.execute(f"drop table inventory.{name}")


def _changes(conn: Any, name: str, topic: str) -> None:
    """Labels of 1-6 changed (the big value left alone), 7-9 deleted, 7 re-inserted, 10's key changed to 110."""
    since = end_offsets(BOOTSTRAP, [topic])
    conn.execute(f"update inventory.{name} set label = 'second ' || id where id <= 6")  # noqa: S608
    conn.execute(f"delete from inventory.{name} where id between 7 and 9")  # noqa: S608
    conn.execute(f"insert into inventory.{name} values (7, 'again 7', 'small')")  # noqa: S608
    conn.execute(f"update inventory.{name} set id = 110 where id = 10")  # noqa: S608
    wait_for_stream(conn, BOOTSTRAP, [topic], since=since)


def _versions(spark: Any, base: str) -> dict[int, list[tuple]]:
    """Per id, its versions in position order: (label, big's length, deleted, current, valid_to set)."""
    frame = spark.read.format("hudi").load(base)
    out: dict[int, list[tuple]] = {}
    rows = frame.select("id", "_source_order", "label", "big", "_source_deleted", "_is_current", "_valid_to")
    for r in sorted(rows.collect(), key=lambda r: (r["id"], r["_source_order"])):
        big = len(r["big"]) if r["big"] else None
        out.setdefault(r["id"], []).append(
            (r["label"], big, r["_source_deleted"], r["_is_current"], r["_valid_to"] is not None)
        )
    return out


@pytest.mark.parametrize("table_type", ["cow", "mor"])
def test_scd2_on_the_stack(spark, tmp_path: Path, table_type: str) -> None:  # noqa: ANN001
    name = f"hist_scd2_{table_type}_{uuid.uuid4().hex[:6]}"
    topic, base = f"dbserver1.inventory.{name}", str(tmp_path / name)
    with _source_table(name, topic) as conn:
        _ingest(topic, base, table_type, "scd2")
        _changes(conn, name, topic)
        _ingest(topic, base, table_type, "scd2")
        _ingest(topic, base, table_type, "scd2")  # nothing new: the history stays as it is
        assert verify(spark, base, DATABASE, f"inventory.{name}").equal
        versions = _versions(spark, base)
        assert versions[1] == [("first 1", 6400, False, False, True), ("second 1", 6400, False, True, False)]
        assert versions[8] == [("first 8", 6400, False, False, True), ("first 8", 6400, True, False, True)]
        assert versions[7] == [
            ("first 7", 6400, False, False, True),
            ("first 7", 6400, True, False, True),
            ("again 7", 5, False, True, False),
        ]
        # The key change: Debezium's delete of 10 and create of 110
        assert versions[10] == [("first 10", 6400, False, False, True), ("first 10", 6400, True, False, True)]
        assert versions[110] == [("first 10", 6400, False, True, False)]
        assert versions[12] == [("first 12", 6400, False, True, False)]


@pytest.mark.parametrize("table_type", ["cow", "mor"])
def test_soft_delete_on_the_stack(spark, tmp_path: Path, table_type: str) -> None:  # noqa: ANN001
    name = f"hist_soft_{table_type}_{uuid.uuid4().hex[:6]}"
    topic, base = f"dbserver1.inventory.{name}", str(tmp_path / name)
    with _source_table(name, topic) as conn:
        _ingest(topic, base, table_type, "soft_delete")
        _changes(conn, name, topic)
        _ingest(topic, base, table_type, "soft_delete")
        assert verify(spark, base, DATABASE, f"inventory.{name}").equal
        frame = spark.read.format("hudi").load(base)
        rows = {
            r["id"]: (r["label"], len(r["big"]), r["_source_deleted"], r["_source_op"])
            for r in frame.select("id", "label", "big", "_source_deleted", "_source_op").collect()
        }
        assert len(rows) == 13  # 1-12 and 110: the deleted ones stay
        assert rows[1] == ("second 1", 6400, False, "u")
        assert rows[8] == ("first 8", 6400, True, "d")  # its values before the delete, not the key-only image
        assert rows[7] == ("again 7", 5, False, "c")
        assert rows[10] == ("first 10", 6400, True, "d") and rows[110] == ("first 10", 6400, False, "c")


def test_bootstrap_writes_each_row_as_its_first_version(spark, tmp_path: Path) -> None:  # noqa: ANN001
    from hudi_cdc.config import load_config
    from hudi_cdc.ops.bootstrap import bootstrap

    run = uuid.uuid4().hex[:8]
    table, slot, base = f"inventory.hist_boot_{run}", f"hist_boot_{run}", tmp_path / "boot"
    with connect() as conn:
        conn.execute(f"create table {table} (id int primary key, label text)")
        conn.execute(f"insert into {table} select i, 'v' || i from generate_series(1, 40) i")  # noqa: S608
    config = load_config(
        env={}, source="kafka", topic=f"histboot{run}.{table}", bootstrap_servers=BOOTSTRAP,
        schema_registry_url=REGISTRY, target_base_path=str(base), target_table=base.name, history="scd2",
    )  # fmt: skip
    try:
        assert bootstrap(config, DATABASE, table, slot=slot, spark=spark).rows == 40
        frame = spark.read.format("hudi").load(str(base))
        flags = frame.groupBy("_is_current", "_source_deleted", frame["_valid_to"].isNull().alias("open")).count()
        assert [tuple(r) for r in flags.collect()] == [(True, False, True, 40)]
        assert frame.where("_valid_from is null").count() == 0
        assert verify(spark, str(base), DATABASE, table).equal
    finally:
        with connect() as conn:
            conn.execute("select pg_drop_replication_slot(%s)", (slot,))
            conn.execute(f"drop table {table}")


def test_scd2_from_jdbc_pulls(spark, tmp_path: Path) -> None:  # noqa: ANN001
    """A database without a change log: each pull that sees a row changed adds a version of it."""
    name, base = f"public.hist_jdbc_{uuid.uuid4().hex[:8]}", tmp_path / "jdbc"
    args = (
        "--source", "jdbc", "--jdbc-url", "jdbc:postgresql://127.0.0.1:55432/inventory", "--jdbc-table", name,
        "--jdbc-user", "debezium", "--jdbc-password-env", "HISTORY_TEST_PASSWORD", "--jdbc-timestamp-column",
        "updated_at", "--jdbc-incrementing-column", "id", "--record-key-fields", "id", "--target-base-path", str(base),
        "--target-table", base.name, "--table-type", "mor", "--history", "scd2",
    )  # fmt: skip
    with connect() as conn:
        conn.execute(
            f"create table {name} (id bigserial primary key, label text,"
            " updated_at timestamptz not null default clock_timestamp())"
        )
        try:
            conn.execute(f"insert into {name} (label) select 'v' || i from generate_series(1, 5) i")  # noqa: S608
            assert run_cli(*args).exit_code == 0
            conn.execute(f"update {name} set label = 'w' || id, updated_at = clock_timestamp() where id <= 2")  # noqa: S608
            result = run_cli(*args)
            assert result.exit_code == 0, result.output
            frame = spark.read.format("hudi").load(str(base))
            versions = sorted(
                (r["id"], r["label"], r["_is_current"]) for r in frame.select("id", "label", "_is_current").collect()
            )
            assert versions == [
                (1, "v1", False), (1, "w1", True), (2, "v2", False), (2, "w2", True),
                (3, "v3", True), (4, "v4", True), (5, "v5", True),
            ]  # fmt: skip
            assert verify(spark, str(base), DATABASE, name).equal
        finally:
            conn.execute(f"drop table {name}")
