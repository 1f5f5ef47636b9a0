"""The runner's metrics count the schema changes a round took, per kind (from the round's result)."""

from __future__ import annotations

from hudi_cdc.pipeline import IngestResult
from hudi_cdc.service.metrics import PipelineMetrics
from hudi_cdc.service.states import TableState


def test_schema_changes_are_counted_per_kind() -> None:
    metrics = PipelineMetrics("p")
    table = TableState("orders", "dbserver1.inventory.orders", "/lake/orders")
    changes = {"column_added": 2, "type_widened": 1}
    result = IngestResult(
        table="orders", base_path="/lake/orders", commit_time="1", checkpoint={}, details={"schema_changes": changes}
    )
    metrics.observe(table, result)
    metrics.observe(table, IngestResult(table="orders", base_path="/lake/orders", commit_time="2", checkpoint={}))
    metrics.observe(table, result)
    sample = metrics.registry.get_sample_value
    assert sample("hudi_cdc_schema_changes_total", {"table": "orders", "kind": "column_added"}) == 4
    assert sample("hudi_cdc_schema_changes_total", {"table": "orders", "kind": "type_widened"}) == 2


def test_rounds_are_counted_by_who_planned_them() -> None:
    metrics = PipelineMetrics("p")
    table = TableState("orders", "dbserver1.inventory.orders", "/lake/orders")
    for details in (
        {"plan": "driver"},
        {"plan": "driver"},
        {"plan": "spark", "driver_declined": "a TOAST placeholder"},
        {"plan": "spark", "driver_failed": "OSError: gone"},
        {},  # a round that planned nothing (only a checkpoint)
    ):
        result = IngestResult(table="orders", base_path="/lake/orders", commit_time="1", checkpoint={}, details=details)
        metrics.observe(table, result)
    sample = metrics.registry.get_sample_value
    assert sample("hudi_cdc_round_plans_total", {"table": "orders", "by": "driver"}) == 2
    assert sample("hudi_cdc_round_plans_total", {"table": "orders", "by": "spark"}) == 1
    assert sample("hudi_cdc_round_plans_total", {"table": "orders", "by": "driver_failed"}) == 1
