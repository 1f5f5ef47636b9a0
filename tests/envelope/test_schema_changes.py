"""Each kind of schema change under each action, on local frames (envelope.evolution)."""

from __future__ import annotations

import json

import pytest

from hudi_cdc.envelope.evolution import SCHEMA_CHANGES_KEY, SOURCE_COLUMNS_KEY, SchemaChangeLog, align_to_table, unify
from hudi_cdc.errors import SchemaChangeError
from payloads.base import ERROR_COLUMN

TABLE = "id bigint, name string, qty int, legacy string"


def _table(spark):  # noqa: ANN001, ANN202
    return spark.createDataFrame([], TABLE).schema


def _align(spark, frame, policy, previous=None):  # noqa: ANN001, ANN202
    changes = SchemaChangeLog(previous_columns=previous)
    out = align_to_table(frame, _table(spark), where="batch b", policy=policy, changes=changes)
    return out, changes


def _kinds(changes: SchemaChangeLog) -> list[tuple[str, str, str]]:
    return [(c.kind, c.column, c.action) for c in changes.changes]


def test_added_dropped_widened_each_per_action(spark) -> None:
    # qty widened to bigint and email added; then (a second frame) legacy dropped.
    added = spark.createDataFrame(
        [(1, "a", 2**40, "L", "e@x")], "id bigint, name string, qty bigint, legacy string, email string"
    )
    out, changes = _align(spark, added, {})
    assert out.schema.simpleString() == "struct<id:bigint,name:string,qty:bigint,legacy:string,email:string>"
    assert _kinds(changes) == [("column_added", "email", "evolve"), ("type_widened", "qty", "evolve")]
    out, changes = _align(spark, added, {"column_added": "ignore"})
    assert "email" not in out.columns and _kinds(changes)[0] == ("column_added", "email", "ignore")
    # The next round sees email again: ignored before, so no new change, still left out.
    out, again = _align(spark, added, {"column_added": "ignore"}, previous=tuple(changes.source_columns))
    assert "email" not in out.columns and _kinds(again) == [("type_widened", "qty", "evolve")]
    with pytest.raises(
        SchemaChangeError,
        match=r"column 'email' was added at the source \(string\); nothing was "
        r"written\. schema_changes\.column_added = fail: set it to evolve or ignore \(--on-column-added\)",
    ):
        _align(spark, added, {"column_added": "fail"})
    with pytest.raises(SchemaChangeError, match=r"column 'qty' was widened from int -> bigint.*--on-type-widened"):
        _align(spark, added, {"type_widened": "fail"})

    dropped = spark.createDataFrame([(1, "a", 3)], "id bigint, name string, qty int")
    out, changes = _align(spark, dropped, {})
    assert [r.asDict() for r in out.collect()] == [{"id": 1, "name": "a", "qty": 3, "legacy": None}]
    assert _kinds(changes) == [("column_dropped", "legacy", "keep")]
    metadata = changes.metadata()
    assert json.loads(metadata[SOURCE_COLUMNS_KEY]) == ["id", "name", "qty"]
    assert json.loads(metadata[SCHEMA_CHANGES_KEY]) == [
        {"kind": "column_dropped", "column": "legacy", "change": "string", "action": "keep"}
    ]
    _, again = _align(spark, dropped, {}, previous=("id", "name", "qty"))
    assert again.changes == [] and SCHEMA_CHANGES_KEY not in again.metadata()  # counted once, at the drop
    with pytest.raises(SchemaChangeError, match=r"column 'legacy' was dropped at the source.*--on-column-dropped"):
        _align(spark, dropped, {"column_dropped": "fail"})


def test_a_drop_and_an_add_of_one_type_are_a_rename(spark) -> None:
    renamed = spark.createDataFrame([(1, "a", 3, "L")], "id bigint, name string, qty int, heritage string")
    out, changes = _align(spark, renamed, {})
    assert out.columns == ["id", "name", "qty", "heritage", "legacy"]  # keep_both: the old column stays, NULL
    assert _kinds(changes) == [("column_renamed", "heritage", "keep_both")]
    with pytest.raises(
        SchemaChangeError,
        match=r"column 'legacy' was dropped and 'heritage' added in one schema change.*"
        r'column_renames = \{ heritage = "legacy" \}.*--on-column-renamed',
    ):
        _align(spark, renamed, {"column_renamed": "fail", "column_dropped": "fail", "column_added": "fail"})


def test_an_incompatible_change_fails_evolves_to_text_or_quarantines_its_events(spark) -> None:
    old = spark.createDataFrame([(1, "a", 3, "L", None)], f"{TABLE}, {ERROR_COLUMN} string")
    new = spark.createDataFrame(
        [(2, 7, 4, "M", None)], f"id bigint, name int, qty int, legacy string, {ERROR_COLUMN} string"
    )
    table = _table(spark)
    with pytest.raises(SchemaChangeError, match=r"column 'name' changed type from string to int.*--on-type-changed"):
        align_to_table(new, table, where="b", policy={})
    out = align_to_table(new, table, where="b", policy={"type_changed": "evolve"})
    assert out.collect()[0]["name"] == "7"

    changes = SchemaChangeLog()
    unified = unify([(old, "v1"), (new, "v2")], policy={"type_changed": "quarantine"}, table=table, changes=changes)
    out = align_to_table(unified, table, where="b", policy={"type_changed": "quarantine"}, changes=changes)
    rows = {r["id"]: r for r in out.collect()}
    assert rows[1]["name"] == "a" and rows[1][ERROR_COLUMN] is None
    assert rows[2]["name"] is None and "column 'name' changed type from string to int" in rows[2][ERROR_COLUMN]
    assert _kinds(changes) == [("type_changed", "name", "quarantine")]
