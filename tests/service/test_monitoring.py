"""docs/monitoring/: the Prometheus rule file and the Grafana dashboard name only metrics, labels and label
values hudi-cdc exports. Both files are parsed strictly (a duplicate key is an error), every PromQL
expression's ``hudi_cdc_*`` selectors are taken out, and each is checked against the exposition text of a
``PipelineMetrics`` fed one of everything through its public methods (a failed round, a committed one, a
backlog, a missed target, cuts). No Spark, no server: well under a second.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml  # PyYAML: a dependency of openlineage-python, in the test extra
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from hudi_cdc.pipeline import IngestResult
from hudi_cdc.service.backlog import Backlog
from hudi_cdc.service.metrics import PipelineMetrics
from hudi_cdc.service.states import STATES, TableState

DOCS = Path(__file__).resolve().parents[2] / "docs/monitoring"
RULES = DOCS / "hudi-cdc.rules.yml"
DASHBOARD = DOCS / "hudi-cdc.dashboard.json"
SELECTOR = re.compile(r"\b(hudi_cdc_[a-z0-9_]+)\s*(\{[^}]*\})?")
MATCHER = re.compile(r'(\w+)\s*(=~|!~|!=|=)\s*"([^"]*)"')


class _StrictLoader(yaml.SafeLoader):
    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        keys = [self.construct_object(k, deep=deep) for k, _ in node.value]
        duplicated = sorted({str(k) for k in keys if keys.count(k) > 1})
        if duplicated:
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key(s) {duplicated}", node.start_mark)
        return super().construct_mapping(node, deep=deep)


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    duplicated = sorted({k for k in keys if keys.count(k) > 1})
    if duplicated:
        raise ValueError(f"duplicate key(s) {duplicated}")
    return dict(pairs)


@pytest.fixture(scope="module")
def exported() -> dict[str, list[dict[str, str]]]:
    """Sample name -> the label sets of its samples, from a registry fed one of everything."""
    metrics = PipelineMetrics("p")
    table = TableState("orders", "dbserver1.inventory.orders", "/lake/orders")
    table.freshness_target_s = 30.0
    metrics.observe(table, None)  # a failed round (terminal: no kind recorded)
    table.last_error_kind = "transient"
    metrics.observe(table, None)
    result = IngestResult(
        table="orders", base_path="/lake/orders", commit_time="1", checkpoint={}, duration_s=2.0,
        events=5, upserts=3, deletes=1, stale=1, ops={"c": 3, "u": 1, "d": 1}, source_ts_ms_min=1_700_000_000_000,
        quarantined=1, tombstones_held=1, steps_s={"read": 0.5, "commit": 1.0},
        details={"schema_changes": {"column_added": 1}, "java_failed": "boom"},
    )  # fmt: skip
    metrics.observe(table, result)
    metrics.observe(table, IngestResult(table="orders", base_path="/lake/orders", commit_time=None, checkpoint={}))
    metrics.set_backlog("orders", Backlog(behind=12, lag_s=4.0))
    metrics.set_pending("orders", 3.0)
    metrics.observe_age("orders", 3.0)
    metrics.missed("orders", "commit")
    metrics.cut_recorded(partial=False)
    metrics.cut_missed(error=True, in_a_row=1)
    out: dict[str, list[dict[str, str]]] = {}
    for family in text_string_to_metric_families(generate_latest(metrics.registry).decode()):
        for sample in family.samples:
            out.setdefault(sample.name, []).append(dict(sample.labels))
    return out


def _rule_expressions() -> list[str]:
    rules = yaml.load(RULES.read_text(), Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
    assert set(rules) == {"groups"} and rules["groups"], "a rule file is {groups: [...]}"
    expressions = []
    for group in rules["groups"]:
        assert set(group) <= {"name", "interval", "rules"} and group["rules"], group
        for rule in group["rules"]:
            assert ("alert" in rule) != ("record" in rule), rule
            assert set(rule) <= {"alert", "record", "expr", "for", "labels", "annotations", "keep_firing_for"}, rule
            if "record" in rule:  # Prometheus' naming: level:metric:operations
                assert re.fullmatch(r"hudi_cdc:[a-z0-9_]+:[a-z0-9_]+", rule["record"]), rule["record"]
            expressions.append(str(rule["expr"]))
    return expressions


def _dashboard_expressions() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text(), object_pairs_hook=_no_duplicates)
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids)), "panel ids are unique"
    expressions = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    expressions += [v["definition"] for v in dashboard["templating"]["list"] if v["type"] == "query"]
    return expressions


@pytest.mark.parametrize("source", ["rules", "dashboard"])
def test_every_metric_label_and_value_named_is_exported(source: str, exported: dict[str, list[dict[str, str]]]) -> None:
    expressions = _rule_expressions() if source == "rules" else _dashboard_expressions()
    named = [(m.group(1), m.group(2) or "") for e in expressions for m in SELECTOR.finditer(e)]
    assert len(named) >= 10, named
    for name, matchers in named:
        assert name in exported, f"{source}: {name} is not a metric hudi-cdc exports ({sorted(exported)})"
        label_sets = exported[name]
        for label, op, value in MATCHER.findall(matchers):
            values = {labels[label] for labels in label_sets if label in labels}
            assert values, f"{source}: {name} has no label {label!r}"
            if op == "=":
                assert value in values, f"{source}: {name}{{{label}={value!r}}}: its values are {sorted(values)}"
    # A label taken by "by (...)" in the selector's aggregation must exist too.
    for expression in expressions:
        for by in re.findall(r"\bby \(([^)]*)\)", expression):
            for label in (x.strip() for x in by.split(",")):
                if label != "le":
                    assert any(label in ls for sets in exported.values() for ls in sets), f"{source}: by ({label})"


def test_the_state_label_values_are_the_runners_states(exported: dict[str, list[dict[str, str]]]) -> None:
    states = {labels["state"] for labels in exported["hudi_cdc_table_state"]}
    assert states == set(STATES)
