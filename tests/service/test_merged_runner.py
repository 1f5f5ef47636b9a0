"""Merged shards through ``hudi-cdc run`` on a files source (COPY_ON_WRITE; the stack test covers MERGE_ON_READ
on Kafka): keyed by shard, a shard joining, and keys declared unique with a move and a cross-shard key clash."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hudi_cdc.ops.status import pipeline_status
from hudi_cdc.service import load_pipeline, run_pipeline
from hudi_cdc.sink import options as opt
from hudi_cdc.sink.hudi import HudiTable
from hudi_cdc.testing import pg_event
from hudi_cdc.testing.envelopes import envelope_schema, write_events
from tests.support import read_rows

pytestmark = pytest.mark.hudi


def _pipeline(tmp_path: Path) -> Path:
    path = tmp_path / "shops.toml"
    path.write_text(
        f"""
[source]
source = "files"
source_path = "{tmp_path / "landing"}"
tables = "dbserver1.*"

[defaults]
target_base_path = "{tmp_path / "lake"}/{{table}}"
target_table = "{{table}}"
record_key_fields = "id"
table_type = "cow"

[[routes]]
tables = ["shop_*.orders"]
target = "orders"
shard_columns = ["schema"]

[[routes]]
tables = ["hub_*.users"]
target = "users"
unique_keys = true
shard_columns = ["schema"]

[run]
discovery_interval_seconds = 0
"""
    )
    return path


class _Landing:
    """Debezium Avro files, one folder per source table, each file the next of its folder."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.files: dict[str, int] = {}

    def write(self, topic: str, events: list[dict[str, Any]]) -> None:
        table = topic.split(".")[-1]
        schema = envelope_schema(table, [("id", "int"), ("v", ["null", "string"])], schema=topic.split(".")[1])
        n = self.files[topic] = self.files.get(topic, 0) + 1
        write_events(self.root / topic / f"{topic}+0+{n:010d}.avro", schema, events)


def _c(lsn: int, i: int, v: str) -> dict[str, Any]:
    return pg_event("c", lsn=lsn, after={"id": i, "v": v})


def _u(lsn: int, i: int, v: str) -> dict[str, Any]:
    return pg_event("u", lsn=lsn, before={"id": i, "v": None}, after={"id": i, "v": v})


def _d(lsn: int, i: int) -> dict[str, Any]:
    return pg_event("d", lsn=lsn, before={"id": i, "v": None})


def _rows(spark: Any, base: Path) -> list[tuple]:  # noqa: ANN401
    return read_rows(spark, str(base), ["_source_schema", "id", "v"])


def test_merged_shards_keyed_by_shard_and_unique_keys(spark, tmp_path: Path) -> None:  # noqa: ANN001
    land, path = _Landing(tmp_path / "landing"), _pipeline(tmp_path)
    # Keyed by shard: the same id in two shards is two rows; positions are only compared within a shard.
    land.write("dbserver1.shop_a.orders", [_c(100, 1, "a1"), _c(101, 2, "a2"), _u(102, 1, "a1'")])
    land.write("dbserver1.shop_b.orders", [_c(5, 1, "b1"), _d(6, 1), _c(7, 1, "b1''")])
    land.write("dbserver1.hub_a.users", [_c(100, 1, "x"), _c(101, 2, "y")])
    land.write("dbserver1.hub_b.users", [_c(900, 3, "z")])
    report = run_pipeline(path, spark=spark)
    assert report.failed == []
    assert _rows(spark, tmp_path / "lake" / "orders") == [
        ("shop_a", 1, "a1'"),
        ("shop_a", 2, "a2"),
        ("shop_b", 1, "b1''"),
    ]
    # A shard joins (read from its beginning) while shop_a goes on from its checkpoint; a move between hubs:
    # deleted in hub_a at a position far above the insert's in hub_b, which still wins.
    land.write("dbserver1.shop_c.orders", [_c(1, 2, "c2")])
    land.write("dbserver1.shop_a.orders", [_d(103, 2)])
    land.write("dbserver1.hub_a.users", [_d(5000, 2), _d(5001, 1)])
    land.write("dbserver1.hub_b.users", [_c(901, 2, "y@b")])
    assert run_pipeline(path, spark=spark).failed == []
    assert _rows(spark, tmp_path / "lake" / "orders") == [
        ("shop_a", 1, "a1'"),
        ("shop_b", 1, "b1''"),
        ("shop_c", 2, "c2"),
    ]
    checkpoint = HudiTable(spark, str(tmp_path / "lake" / "orders")).checkpoint_commit()
    assert checkpoint is not None
    shards = json.loads(checkpoint.extra[opt.CHECKPOINT_KEY])["shards"]
    assert sorted(shards) == [f"{tmp_path / 'landing'}/dbserver1.shop_{s}.orders" for s in "abc"]
    # status names the merged table by its target; its backlog is every shard's, here one file not taken yet
    land.write("dbserver1.shop_b.orders", [_c(8, 5, "b5")])
    status = {t.name: t for t in pipeline_status(spark, load_pipeline(path)).tables}
    assert {"orders", "users"} <= set(status) and status["orders"].behind == 1
    assert "shop_a.orders" not in status
    # id 1 moved across rounds: deleted in hub_a (position 5001) last round, inserted in hub_b (902) now;
    # a stray delete of id 3 from hub_a, which never held it, leaves hub_b's row.
    users = tmp_path / "lake" / "users"
    assert _rows(spark, users) == [("hub_b", 2, "y@b"), ("hub_b", 3, "z")]
    land.write("dbserver1.hub_b.users", [_c(902, 1, "x@b")])
    land.write("dbserver1.hub_a.users", [_d(5002, 3)])
    assert run_pipeline(path, spark=spark).failed == []
    assert _rows(spark, users) == [("hub_b", 1, "x@b"), ("hub_b", 2, "y@b"), ("hub_b", 3, "z")]
    assert ("shop_b", 5, "b5") in _rows(spark, tmp_path / "lake" / "orders")
    # Two shards holding one key at once: the round fails naming the key and both shards, nothing committed.
    land.write("dbserver1.hub_a.users", [_c(5003, 7, "a7")])
    land.write("dbserver1.hub_b.users", [_c(903, 7, "b7"), _u(904, 3, "z2")])
    report = run_pipeline(path, spark=spark)
    assert report.failed == ["users"]
    error = report.tables["users"].last_error or ""
    assert "cross-shard key clash" in error and "id=7" in error
    assert "hub_a and hub_b" in error
    assert _rows(spark, users) == [("hub_b", 1, "x@b"), ("hub_b", 2, "y@b"), ("hub_b", 3, "z")]


def test_unique_keys_redelivered_events_of_the_holding_shard_are_stale(spark, tmp_path: Path) -> None:  # noqa: ANN001
    """At-least-once redelivery (a connector restart) replays a shard's older events in a later round: against
    that same shard's newer row or delete they are stale, whatever round they come in."""
    land, path = _Landing(tmp_path / "landing"), _pipeline(tmp_path)
    users = tmp_path / "lake" / "users"
    land.write("dbserver1.hub_a.users", [_c(5, 1, "a"), _u(10, 1, "b"), _u(20, 1, "c"), _c(12, 2, "x"), _u(20, 2, "y")])
    land.write("dbserver1.hub_b.users", [_c(900, 3, "z")])
    assert run_pipeline(path, spark=spark).failed == []
    # hub_a's update of id 1 at 10 again (the row holds 20's); id 2 deleted at 30.
    land.write("dbserver1.hub_a.users", [_u(10, 1, "b"), _d(30, 2)])
    assert run_pipeline(path, spark=spark).failed == []
    assert _rows(spark, users) == [("hub_a", 1, "c"), ("hub_b", 3, "z")]
    # hub_a's update of id 2 at 20 again, below its delete at 30 (a tombstone now): id 2 stays deleted.
    land.write("dbserver1.hub_a.users", [_u(20, 2, "y")])
    assert run_pipeline(path, spark=spark).failed == []
    assert _rows(spark, users) == [("hub_a", 1, "c"), ("hub_b", 3, "z")]
