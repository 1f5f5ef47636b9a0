"""``hudi-cdc validate --pipeline`` shows the routes (which source goes to which target) and refuses bad ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from hudi_cdc.ops.validate_pipeline import validate_pipeline
from hudi_cdc.service.spec import load_pipeline

pytestmark = pytest.mark.hudi


def test_routes_are_shown_and_a_merge_without_shard_columns_refused(spark, tmp_path: Path) -> None:  # noqa: ANN001
    for folder in ("srv.shop_0.orders", "srv.shop_1.orders", "srv.crm.people", "srv.crm.notes", "srv.a.t", "srv.b.t"):
        (tmp_path / "landing" / folder).mkdir(parents=True)
    path = tmp_path / "p.toml"
    path.write_text(
        f"""
[source]
source = "files"
source_path = "{tmp_path / "landing"}"
tables = "srv.*"
[defaults]
target_base_path = "{tmp_path / "lake"}/{{table}}"
target_table = "{{table}}"
record_key_fields = "id"
[[routes]]
tables = ["shop_*.orders"]
target = "orders"
shard_columns = ["schema", "server"]
[[routes]]
tables = ["crm.*"]
target = "crm_{{table}}"
[[routes]]
tables = ["*.t"]
target = "t"
"""
    )
    result = validate_pipeline(load_pipeline(path), spark=spark)
    routes = [c for c in result.problems if c.name == "pipeline.routes"]
    shown = next(c.detail for c in routes if c.status == "ok")
    assert "srv.shop_0.orders, srv.shop_1.orders -> orders (merged, keyed by _source_schema, _source_server)" in shown
    assert "srv.crm.people -> crm_people (renamed)" in shown and "srv.crm.notes -> crm_notes (renamed)" in shown
    refused = [c.detail for c in routes if c.status == "fail"]
    assert len(refused) == 1 and "maps a.t, b.t to one target without shard columns" in refused[0]
    assert not result.ok
    assert sorted(t.name for t in result.tables) == ["crm_notes", "crm_people", "orders"]
    orders = next(t for t in result.tables if t.name == "orders")
    assert orders.target_base_path == str(tmp_path / "lake" / "orders")
    assert orders.topic == "srv.shop_0.orders, srv.shop_1.orders"
