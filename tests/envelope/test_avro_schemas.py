"""One reader schema for several writer schemas: checked by actually resolving data with fastavro."""

from __future__ import annotations

import io
import json
from typing import Any

import fastavro
import pytest

from hudi_cdc.envelope.avro_schemas import merged_reader_schema
from hudi_cdc.testing import envelope_schema, pg_event

V1 = [("id", "long"), ("name", ["null", "string"]), ("score", ["null", "int"])]
V2 = [("id", "long"), ("name", ["null", "string"]), ("score", ["null", "long"]), ("tier", ["null", "string"])]
V3 = [("id", "long"), ("score", ["null", "double"]), ("tier", ["null", "string"])]  # name dropped


def _roundtrip(writer: dict[str, Any], reader: dict[str, Any], record: dict[str, Any]) -> dict[str, Any]:
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, fastavro.parse_schema(writer), record)
    buffer.seek(0)
    # Through JSON, as Spark gets it: the emitted schema must parse on its own.
    parsed_reader = fastavro.parse_schema(json.loads(json.dumps(reader)))
    return fastavro.schemaless_reader(buffer, fastavro.parse_schema(writer), parsed_reader)


def test_every_version_reads_into_the_merged_schema() -> None:
    writers = [envelope_schema("customers", v) for v in (V1, V2, V3)]
    reader = merged_reader_schema(writers)
    assert reader is not None
    value = reader["fields"][0]["type"][1]
    assert [f["name"] for f in value["fields"]] == ["id", "score", "tier", "name"]
    assert reader["fields"][1]["type"] == ["null", value["name"]]  # defined once, then referred to

    old = _roundtrip(writers[0], reader, pg_event("c", lsn=1, after={"id": 1, "name": "a", "score": 7}))
    assert old["after"] == {"id": 1, "score": 7.0, "tier": None, "name": "a"}
    new = _roundtrip(writers[2], reader, pg_event("u", lsn=2, after={"id": 1, "score": 2.5, "tier": "gold"}))
    assert new["after"] == {"id": 1, "score": 2.5, "tier": "gold", "name": None}
    assert new["source"]["lsn"] == 2 and new["op"] == "u"


def test_a_required_field_missing_from_a_version_becomes_optional() -> None:
    a = {"type": "record", "name": "R", "fields": [{"name": "x", "type": "long"}, {"name": "y", "type": "string"}]}
    b = {"type": "record", "name": "R", "fields": [{"name": "x", "type": "long"}]}
    reader = merged_reader_schema([a, b])
    # Marked: the newest version has no y (a column dropped at the source, for envelope.evolution).
    assert reader["fields"][1] == {"name": "y", "type": ["null", "string"], "default": None, "hudi_cdc.absent": True}
    assert "hudi_cdc.absent" not in merged_reader_schema([b, a])["fields"][1]  # added, not dropped
    assert _roundtrip(b, reader, {"x": 3}) == {"x": 3, "y": None}


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (["null", "int"], ["null", "string"]),  # not an Avro promotion
        (["null", "long"], ["null", "int"]),  # narrowing
        (  # same physical type, different meaning
            ["null", {"type": "long", "connect.name": "io.debezium.time.MicroTimestamp"}],
            ["null", {"type": "long", "connect.name": "io.debezium.time.NanoTimestamp"}],
        ),
        (  # a decimal's scale changed
            {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2},
            {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 3},
        ),
    ],
)
def test_changes_avro_cannot_resolve_give_none(old: Any, new: Any) -> None:
    def schema(t: Any) -> dict[str, Any]:
        return {"type": "record", "name": "R", "fields": [{"name": "c", "type": t}]}

    assert merged_reader_schema([schema(old), schema(new)]) is None


def test_recursive_and_unknown_names_give_none() -> None:
    recursive = {
        "type": "record",
        "name": "Node",
        "fields": [{"name": "next", "type": ["null", "Node"], "default": None}],
    }
    assert merged_reader_schema([recursive, recursive]) is None
    dangling = {"type": "record", "name": "R", "fields": [{"name": "c", "type": "Missing"}]}
    assert merged_reader_schema([dangling]) is None


def test_namespaces_resolve_to_full_names() -> None:
    inner = {"type": "record", "name": "Value", "fields": [{"name": "id", "type": "long"}]}
    a = {
        "type": "record",
        "name": "Envelope",
        "namespace": "db.t",
        "fields": [{"name": "before", "type": ["null", inner]}, {"name": "after", "type": ["null", "Value"]}],
    }
    reader = merged_reader_schema([a, a])
    assert reader["name"] == "db.t.Envelope"
    assert reader["fields"][1]["type"] == ["null", "db.t.Value"]


def test_optional_then_required_stays_readable() -> None:
    a = {"type": "record", "name": "R", "fields": [{"name": "c", "type": ["null", "long"], "default": None}]}
    b = {"type": "record", "name": "R", "fields": [{"name": "c", "type": "long"}]}
    reader = merged_reader_schema([a, b])
    assert reader["fields"][0]["type"] == ["long", "null"]
    assert _roundtrip(a, reader, {"c": None}) == {"c": None}
    assert _roundtrip(b, reader, {"c": 5}) == {"c": 5}
