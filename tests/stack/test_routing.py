"""Merged shards over the real stack: 16 Postgres schemas' ``orders`` into one MERGE_ON_READ table.

A Debezium connector of this test's own (its own topic prefix and publication)
publishes ``<run>_shop_0.orders`` .. ``<run>_shop_15.orders`` and two ``users``
tables; ``hudi-cdc run --continuous`` merges the shops by schema (the same ids in
every shop) and the users with keys declared unique. A 17th shop created
mid-run joins at the next discovery, the runner is killed and restarted, and
the table must equal the union of the shops' tables, shard column included. A
user moved between the two users tables ends in its new shard, and a key
inserted in both at once is a cross-shard key clash, quarantined with both
shards named.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from hudi_cdc.ops.verify import verify
from hudi_cdc.testing.faults import kill_group
from hudi_cdc.testing.postgres import connect
from hudi_cdc.upstream.database import SourceDatabase
from tests.stack.conftest import BOOTSTRAP, REGISTRY, wait_until
from tests.stack.connectors import postgres_connector
from tests.support import CommittedRows, start_runner

pytestmark = [pytest.mark.kafka, pytest.mark.postgres, pytest.mark.hudi]

RUN = f"rt{uuid.uuid4().hex[:6]}"
PREFIX = f"route{RUN}"
SHOPS = 16
DATABASE = SourceDatabase("postgresql://debezium:dbz@127.0.0.1:55432/inventory")


def _shop(conn: Any, n: int, rows: int = 4) -> None:  # noqa: ANN401
    conn.execute(f"create schema {RUN}_shop_{n}")
    conn.execute(f"create table {RUN}_shop_{n}.orders (id int primary key, label text, amount int)")
    conn.execute(
        f"insert into {RUN}_shop_{n}.orders select i, 's{n}-' || i, i * {n + 1} from generate_series(1, {rows}) i"  # noqa: S608
    )


def _churn(conn: Any, shops: range, step: int) -> None:  # noqa: ANN401
    """Updates, deletes and inserts in every shop: the same ids in many of them."""
    for n in shops:
        table = f"{RUN}_shop_{n}.orders"
        with conn.transaction():
            conn.execute(
                f"update {table} set label = label || '.{step}', amount = amount + 1 where id % 2 = {step % 2}"
            )  # noqa: S608
            conn.execute(f"delete from {table} where id = {1 + (n + step) % 4}")  # noqa: S608
            conn.execute(f"insert into {table} values ({10 + step}, 'new{step}', {n})")  # noqa: S608


def _union(conn: Any, shops: int) -> list[tuple]:  # noqa: ANN401
    rows = []
    for n in range(shops):
        found = conn.execute(f"select id, label, amount from {RUN}_shop_{n}.orders").fetchall()  # noqa: S608
        rows += [(f"{RUN}_shop_{n}", *r) for r in found]
    return sorted(rows)


_watches: dict[tuple[str, tuple[str, ...]], CommittedRows] = {}


def _read(spark: Any, base: Path, columns: list[str]) -> list[tuple]:  # noqa: ANN401
    """The table's rows as of its newest commit (read again only after a new one); none before its first."""
    key = (str(base), tuple(columns))
    watch = _watches.get(key) or _watches.setdefault(key, CommittedRows(spark, base, columns))
    return watch.rows() or []


def _lake(spark: Any, base: Path) -> list[tuple]:  # noqa: ANN401
    return _read(spark, base, ["_source_schema", "id", "label", "amount"])


def _status(state: Path) -> dict[str, Any]:
    try:
        return json.loads((state / "status.json").read_text())["tables"]
    except (OSError, ValueError, KeyError):
        return {}


def _pipeline(tmp_path: Path) -> Path:
    path = tmp_path / "shops.toml"
    path.write_text(
        f"""
[source]
source = "kafka"
bootstrap_servers = "{BOOTSTRAP}"
schema_registry_url = "{REGISTRY}"
tables = "{PREFIX}.*"

[defaults]
target_base_path = "{tmp_path}/lake/{{table}}"
target_table = "{{table}}"
table_type = "mor"
min_sync_interval_seconds = 3

[[routes]]
tables = ["{RUN}_shop_*.orders"]
target = "orders"
shard_columns = ["schema"]

[[routes]]
tables = ["{RUN}_hub_*.users"]
target = "users"
unique_keys = true
shard_columns = ["schema"]

[tables."users"]
on_bad_event = "quarantine"

[run]
max_concurrent_tables = 2
discovery_interval_seconds = 2
"""
    )
    return path


def test_sixteen_shards_merged_a_shard_joining_a_kill_and_a_key_clash(spark, tmp_path: Path) -> None:  # noqa: ANN001
    path, log, state = _pipeline(tmp_path), tmp_path / "runner.log", tmp_path / "shops.state"
    orders = tmp_path / "lake" / "orders"
    with connect() as conn:
        for n in range(SHOPS):
            _shop(conn, n)
        for hub, ids in (("a", "(1, 'x'), (2, 'y')"), ("b", "(3, 'z')")):
            conn.execute(f"create schema {RUN}_hub_{hub}")
            conn.execute(f"create table {RUN}_hub_{hub}.users (id int primary key, name text)")
            conn.execute(f"insert into {RUN}_hub_{hub}.users values {ids}")  # noqa: S608
    publication = f"pub_{RUN}"
    include = rf"{RUN}_shop_\d+\.orders,{RUN}_hub_[ab]\.users"
    runner = None
    try:
        with postgres_connector(
            f"routing-{RUN}", slot=f"slot_{RUN}", topic_prefix=PREFIX, table=include,
            **{"publication.name": publication, "publication.autocreate.mode": "filtered"},
        ), connect() as conn:  # fmt: skip
            runner = start_runner(path, log)
            wait_until("16 shards in the table", lambda: len(_lake(spark, orders)) == SHOPS * 4, timeout_s=240)
            _churn(conn, range(SHOPS), 1)
            # A 17th shop, created while the runner runs: a new topic matching the route.
            _shop(conn, SHOPS, rows=0)  # its rows once it is published: a table added to a publication is not snapshot
            conn.execute(f"alter publication {publication} add table {RUN}_shop_{SHOPS}.orders")
            conn.execute(f"insert into {RUN}_shop_{SHOPS}.orders values (1, 'l1', 1), (2, 'l2', 2), (99, 'late', 1)")
            joined = f"{PREFIX}.{RUN}_shop_{SHOPS}.orders"
            wait_until(
                "the 17th shard joined and read",
                lambda: (
                    joined in _status(state).get("orders", {}).get("shards", [])
                    and any(r[0] == f"{RUN}_shop_{SHOPS}" for r in _lake(spark, orders))
                ),
                timeout_s=180,
            )
            _churn(conn, range(SHOPS + 1), 2)
            kill_group(runner)  # mid-stream: some of those changes are read, none half-committed
            _churn(conn, range(0, SHOPS + 1, 3), 3)
            with conn.transaction():  # a user moves from hub_a to hub_b
                conn.execute(f"delete from {RUN}_hub_a.users where id = 2")
                conn.execute(f"insert into {RUN}_hub_b.users values (2, 'y@b')")
            conn.execute(f"insert into {RUN}_hub_a.users values (9, 'a9')")  # live in both hubs: a clash
            conn.execute(f"insert into {RUN}_hub_b.users values (9, 'b9')")
            time.sleep(5)  # Debezium publishes them while no runner runs: the restart reads move and clash at once
            runner = start_runner(path, log)
            expected = _union(conn, SHOPS + 1)
            assert len({r[1] for r in expected}) < len(expected)  # the same ids in several shards
            wait_until("the table equal to the union of the shards", lambda: _lake(spark, orders) == expected, 240)
            users = tmp_path / "lake" / "users"
            wait_until("the users' move applied", lambda: _users(spark, users) == _USERS, timeout_s=120)
            quarantine = Path(f"{users}_hudi_cdc_quarantine")
            reasons = wait_until(
                "the clash quarantined", lambda: len(r := _quarantined(spark, quarantine)) >= 2 and r, 60
            )
            assert len(reasons) == 2, reasons
            assert all("cross-shard key clash" in r and f"{RUN}_hub_a and {RUN}_hub_b" in r for r in reasons)
            assert _status(state)["orders"]["state"] != "failed" and _status(state)["users"]["state"] != "failed"
            # verify compares a merged table shard by shard: its rows of each source table, with that table
            for n in (0, SHOPS):
                shard = verify(spark, str(orders), DATABASE, f"{RUN}_shop_{n}.orders")
                assert shard.equal and shard.key_fields == ("id",), shard.describe()
            kill_group(runner)  # the drift below stays in the source only
            conn.execute(f"update {RUN}_shop_3.orders set label = 'drift' where id = 10 + 2")  # noqa: S608
            drifted = verify(spark, str(orders), DATABASE, f"{RUN}_shop_3.orders")
            assert not drifted.equal and [d.key for d in drifted.differences] == [{"id": "12"}], drifted.describe()
    finally:
        if runner is not None:
            kill_group(runner)
        with connect() as conn:
            for schema in [*(f"{RUN}_shop_{n}" for n in range(SHOPS + 1)), f"{RUN}_hub_a", f"{RUN}_hub_b"]:
                conn.execute(f"drop schema if exists {schema} cascade")
            conn.execute(f"drop publication if exists {publication}")


_USERS = [(f"{RUN}_hub_a", 1, "x"), (f"{RUN}_hub_b", 2, "y@b"), (f"{RUN}_hub_b", 3, "z")]


def _users(spark: Any, base: Path) -> list[tuple]:  # noqa: ANN401
    return _read(spark, base, ["_source_schema", "id", "name"])


def _quarantined(spark: Any, base: Path) -> list[str]:  # noqa: ANN401
    return [r[0] for r in _read(spark, base, ["reason"])]
