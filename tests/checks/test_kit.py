"""The kit's pieces that need no service: the report, and what a Debezium envelope needs (pure)."""

from __future__ import annotations

import json

from hudi_cdc.checks.kit import Check, ValidationReport, envelope_problems
from hudi_cdc.testing import envelope_schema
from tests.support import CUSTOMERS


def test_the_report_prints_a_line_per_check_and_a_fix_under_each_problem() -> None:
    report = ValidationReport(
        (
            Check("env.java", "ok", "Java 17", fix="never shown for ok"),
            Check("kafka.topic", "fail", "topic 't' does not exist", fix="check --topic"),
            Check("kafka.retention", "skip", "not checked: kafka.topic failed"),
            Check("connect.tombstones", "warn", "compacted topic", fix="cleanup.policy=delete"),
        )
    )
    assert report.lines() == [
        "ok    env.java: Java 17",
        "FAIL  kafka.topic: topic 't' does not exist",
        "      fix: check --topic",
        "skip  kafka.retention: not checked: kafka.topic failed",
        "WARN  connect.tombstones: compacted topic",
        "      fix: cleanup.policy=delete",
    ]
    assert not report.ok and [c.name for c in report.failed] == ["kafka.topic"]
    assert [c.name for c in report.warnings] == ["connect.tombstones"]
    assert json.loads(json.dumps(report.to_dict()))["counts"] == {"ok": 1, "warn": 1, "fail": 1, "skip": 1}


def test_warnings_and_skips_leave_a_report_ok() -> None:
    assert ValidationReport((Check("a", "warn", "w"), Check("b", "skip", "s"))).ok


def test_a_debezium_envelope_with_the_key_column_has_no_problem() -> None:
    schema = envelope_schema("customers", CUSTOMERS)
    assert envelope_problems(schema, flavor="postgres", key_fields=("id",)) == []
    mysql = envelope_schema("customers", CUSTOMERS, flavor="mysql")
    assert envelope_problems(mysql, flavor="mysql", key_fields=()) == []


def test_an_unwrapped_row_is_not_an_envelope() -> None:
    row = {"type": "record", "name": "Value", "fields": [{"name": "id", "type": "long"}]}
    (problem,) = envelope_problems(row, flavor="postgres", key_fields=("id",))
    assert problem == "missing envelope field(s) op, before, after, source: not a Debezium change event"


def test_the_wrong_flavor_and_a_missing_key_column_are_named() -> None:
    mysql = envelope_schema("customers", CUSTOMERS, flavor="mysql")
    ordering, key = envelope_problems(mysql, flavor="postgres", key_fields=("customer_id",))
    assert ordering.startswith("source has no lsn, which orders postgres events (is --flavor right?")
    assert key == "the row has no column customer_id (--record-key-fields); columns: bio, id, name"
