"""[[routes]]: templates, merge and rename routes, what each target's settings become, and refused route sets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hudi_cdc.errors import CheckpointError, ConfigError
from hudi_cdc.service.spec import TableRef, load_pipeline
from hudi_cdc.sources.merged import MergedSource, shard_identity

HEAD = """
name = "shops"
[source]
source = "kafka"
bootstrap_servers = "127.0.0.1:1"
schema_registry_url = "http://127.0.0.1:2"
tables = ["dbserver1.*"]
[defaults]
target_base_path = "/lake/{schema}/{table}"
target_table = "{table}"
"""

ROUTES = (
    HEAD
    + """
[[routes]]
tables = ["shop_*.orders"]
target = "orders"
shard_columns = ["schema"]

[[routes]]
tables = ["crm.*"]
target = "crm_{table}"

[[routes]]
tables = ["dbserver1.hub_*.users"]
target = "users"
unique_keys = true

[tables."orders"]
record_key_fields = "id"
table_type = "mor"
"""
)

SOURCE = [
    "dbserver1.shop_1.orders",
    "dbserver1.shop_0.orders",
    "dbserver1.crm.people",
    "dbserver1.hub_a.users",
    "dbserver1.hub_b.users",
    "dbserver1.inventory.items",
]


def _spec(tmp_path: Path, text: str) -> Any:  # noqa: ANN401 - PipelineSpec
    path = tmp_path / "pipe.toml"
    path.write_text(text)
    return load_pipeline(path)


def test_routes_merge_rename_and_pass_through(tmp_path: Path) -> None:
    spec = _spec(tmp_path, ROUTES)
    tables, refused = spec.routed([TableRef(t) for t in SOURCE])
    assert refused == {}
    by_name = {t.name: t for t in tables}
    assert sorted(by_name) == ["crm_people", "inventory.items", "orders", "users"]
    orders = by_name["orders"]
    assert orders.merged and orders.shards == ("dbserver1.shop_0.orders", "dbserver1.shop_1.orders")
    config = spec.table_config(orders, env={})
    # templates render from the target; the target's own section applies; the key gains the shard column
    assert config.target_base_path == "/lake//orders" and config.target_table == "orders"
    assert config.table_type == "MERGE_ON_READ" and config.topic == "dbserver1.shop_0.orders"
    assert config.shard_sources == orders.shards and config.shard_columns == ("_source_schema",)
    assert config.record_key_fields == ("id", "_source_schema") and not config.unique_keys
    rename = spec.table_config(by_name["crm_people"], env={})
    assert not by_name["crm_people"].merged and rename.topic == "dbserver1.crm.people"
    assert rename.target_table == "crm_people" and rename.shard_sources == ()
    users = spec.table_config(by_name["users"], env={})
    # unique keys: every identity is written, none joins the key
    assert users.unique_keys and users.record_key_fields == ()
    assert users.shard_columns == ("_source_server", "_source_database", "_source_schema", "_source_table")
    assert spec.table_config(by_name["inventory.items"], env={}).topic == "dbserver1.inventory.items"


def test_a_route_that_merges_without_shard_columns_is_refused(tmp_path: Path) -> None:
    spec = _spec(tmp_path, HEAD + '[[routes]]\ntables = ["*.orders"]\ntarget = "orders"\n')
    tables, refused = spec.routed([TableRef("dbserver1.a.orders"), TableRef("dbserver1.b.orders")])
    assert tables == [] and "orders" in refused
    assert "a.orders, b.orders" in refused["orders"] and "shard_columns" in refused["orders"]
    assert "unique_keys = true" in refused["orders"]


def test_two_routes_one_target_and_an_invalid_target_are_refused(tmp_path: Path) -> None:
    text = HEAD + (
        '[[routes]]\ntables = ["a.*"]\ntarget = "t"\nshard_columns = ["schema"]\n'
        '[[routes]]\ntables = ["b.*"]\ntarget = "t"\nshard_columns = ["schema"]\n'
        '[[routes]]\ntables = ["c.*"]\ntarget = "x/{table}"\n'
    )
    spec = _spec(tmp_path, text)
    tables, refused = spec.routed([TableRef("s.a.o"), TableRef("s.b.o"), TableRef("s.c.o")])
    assert "#1" in refused["t"] and "#2" in refused["t"] and "one route per target" in refused["t"]
    assert "'x/o'" in refused["c.o"] and "not a valid table name" in refused["c.o"]
    assert [t.name for t in tables] == []


@pytest.mark.parametrize(
    ("route", "message"),
    [
        ('tables = ["a.*"]', "target is required"),
        ('target = "t"', "tables is required"),
        ('tables = ["a.*"]\ntarget = "{db}_t"', "unknown field(s) db"),
        ('tables = ["a.*"]\ntarget = "t"\nshard_columns = ["host"]', "shard_columns must be"),
        ('tables = ["a.*"]\ntarget = "t"\nunique_keys = "yes"', "unique_keys must be true or false"),
        (
            'tables = ["a.*"]\ntarget = "t"\nshard_column = ["schema"]',
            "unknown setting 'shard_column'; did you mean shard_columns",
        ),
    ],
)
def test_route_settings_errors_name_the_route(tmp_path: Path, route: str, message: str) -> None:
    with pytest.raises(ConfigError, match="routes") as caught:
        _spec(tmp_path, HEAD + "[[routes]]\n" + route + "\n")
    assert message in str(caught.value) and "#1" in str(caught.value)


def test_shard_settings_cannot_be_set_per_table(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="shard_sources cannot be set per table"):
        _spec(tmp_path, HEAD + '[tables."x"]\nshard_sources = ["a"]\n')


class _Fake:
    """One shard's source: its checkpoint is ``{"n": count}``, and it has nothing new."""

    def __init__(self, topic: str) -> None:
        self.topic = topic

    def parse_checkpoint(self, text: str) -> dict[str, Any]:
        data = json.loads(text)
        if "n" not in data:
            raise CheckpointError(f"not a checkpoint of {self.topic}")
        return dict(data)

    def next_batch(self, checkpoint: dict[str, Any] | None) -> None:
        return None


def test_composite_checkpoint_parts_and_shards_joining(tmp_path: Path) -> None:
    spec = _spec(tmp_path, ROUTES)
    tables, _ = spec.routed([TableRef(t) for t in SOURCE] + [TableRef("dbserver1.shop_2.orders")])
    config = spec.table_config(next(t for t in tables if t.name == "orders"), env={})
    source = MergedSource(config, lambda shard: _Fake(str(shard.topic)))  # type: ignore[arg-type,return-value]
    stored = {"kind": "merged", "shards": {"dbserver1.shop_0.orders": {"n": 3}, "dbserver1.gone.orders": {"n": 1}}}
    parsed = source.parse_checkpoint(json.dumps(stored))
    # a shard no longer routed is dropped; shop_1 and shop_2 (joined since) have none: read from their beginning
    assert parsed == {"kind": "merged", "shards": {"dbserver1.shop_0.orders": {"n": 3}}}
    assert source.parse_checkpoint("earliest") == {"kind": "merged", "shards": {}}
    assert source.next_batch(parsed) is None  # no shard has anything new
    with pytest.raises(CheckpointError, match="not a checkpoint of dbserver1.shop_0.orders"):
        source.parse_checkpoint(json.dumps({"kind": "merged", "shards": {"dbserver1.shop_0.orders": {}}}))
    with pytest.raises(CheckpointError, match="merged"):
        source.parse_checkpoint(json.dumps({"kind": "kafka", "topic": "t", "offsets": {}}))


def test_shard_identity_from_topic_or_folder() -> None:
    assert shard_identity("dbserver1.shop_3.orders") == {
        "_source_server": "dbserver1",
        "_source_schema": "shop_3",
        "_source_table": "orders",
    }
    assert shard_identity("/data/in/srv.a.b.orders") == {
        "_source_server": "srv.a",
        "_source_schema": "b",
        "_source_table": "orders",
    }


def test_a_merged_tables_watched_offsets_number_every_shards_partitions() -> None:
    from hudi_cdc.service.schedule import Arrivals, committed_offsets, shard_partition

    shards = ("s.a.orders", "s.b.orders", "s.c.orders")
    checkpoint = {
        "kind": "merged",
        "shards": {
            "s.a.orders": {"kind": "kafka/v1", "topic": "s.a.orders", "offsets": {"0": 5, "1": 2}},
            "s.c.orders": {"kind": "kafka/v1", "topic": "s.c.orders", "offsets": {"0": 7}},
        },
    }
    held = committed_offsets(checkpoint, shards)
    assert held == {0: 5, 1: 2, shard_partition(2, 0): 7}
    arrivals = Arrivals()
    arrivals.apply(held or {})
    arrivals.observe(1.0, {0: 5, 1: 2, shard_partition(2, 0): 7})
    assert arrivals.pending_since() is None  # every shard applied: no round
    arrivals.observe(2.0, {0: 5, 1: 2, shard_partition(1, 0): 1, shard_partition(2, 0): 7})
    assert arrivals.pending_since() == 2.0  # shard b (nothing held of it yet) has a message


def test_a_merged_tables_quarantine_is_not_reapplied(tmp_path: Path) -> None:
    from hudi_cdc.sources.quarantine import QuarantinedEvents

    spec = _spec(tmp_path, ROUTES)
    tables, _ = spec.routed([TableRef(t) for t in SOURCE])
    config = spec.table_config(next(t for t in tables if t.name == "users"), env={})
    events = QuarantinedEvents(None, config, None, where="users")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="users is a merged table .*re-applying its quarantined events"):
        events.next_batch({"kind": "merged", "shards": {}})
