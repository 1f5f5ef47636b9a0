"""Decoded envelopes to flat change rows in the driver: :func:`flatten`'s rows as Python dicts, no Spark job.

For a small round planned in the driver (``payloads.driver``). It takes only envelopes whose flat rows
it makes exactly as ``envelope.flatten`` and ``envelope.batch.change_rows`` do, and says why not for the
rest (the round then goes to the Spark plan): value columns of plain Avro types only (long, int, string,
boolean, double, float, bytes; no logical type, no conversion, no column a merged schema marks absent),
source fields of the types the policy's columns cast simply, and events flatten would mark bad (no or
an unknown op, a TRUNCATE, no image) left to the Spark plan, which reports or quarantines them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from hudi_cdc.envelope.types import absent_columns, value_conversions
from payloads.base import DELETED_COLUMN, ERROR_COLUMN, INGESTED_AT_COLUMN, OP_COLUMN

__all__ = ["FlatRows", "flat_rows"]

SPARK_TYPES = {
    "long": "bigint",
    "int": "int",
    "string": "string",
    "boolean": "boolean",
    "double": "double",
    "float": "float",
    "bytes": "binary",
}
"""The Avro types taken, and the Spark type spark-avro reads each as."""
_OPTIONAL_SOURCE = (("ts_ms", "_source_ts_ms", "bigint"), ("snapshot", "_source_snapshot", "string"))
_KNOWN_OPS = ("c", "u", "d", "r")


@dataclass(frozen=True)
class FlatRows:
    """Flat rows as ``envelope.flatten`` makes them, their columns in its order, and each written column's type."""

    rows: list[dict[str, Any]]
    columns: list[str]
    types: dict[str, str]
    """Per column that is written (not internal): its Spark type, as DDL."""


def _plain(avro_type: Any) -> str | None:  # noqa: ANN401 - an Avro schema
    """The Avro primitive of a field's type (a union with null allowed), if it is one taken here."""
    branches = avro_type if isinstance(avro_type, list) else [avro_type]
    taken = [b for b in branches if b != "null"]
    if len(taken) != 1:
        return None
    branch = taken[0]
    if isinstance(branch, dict):
        if "logicalType" in branch:
            return None
        branch = branch.get("type")
    return branch if isinstance(branch, str) and branch in SPARK_TYPES else None


def _record_fields(avro_type: Any) -> list[dict[str, Any]] | None:  # noqa: ANN401 - an Avro schema
    branches = avro_type if isinstance(avro_type, list) else [avro_type]
    records = [b for b in branches if isinstance(b, dict) and b.get("type") == "record"]
    return records[0]["fields"] if len(records) == 1 else None


def _cast(value: Any, avro: str, ddl: str) -> Any:  # noqa: ANN401 - a decoded Avro value
    """Spark's ``cast(value as ddl)`` of a source field (only the casts :func:`_castable` allows)."""
    if value is None or avro == {"bigint": "long", "int": "int", "string": "string"}.get(ddl):
        return value
    if ddl == "bigint":
        return int(value)
    if avro == "boolean":
        return "true" if value else "false"
    return str(value)


def _castable(avro: str | None, ddl: str) -> bool:
    return (ddl, avro) in {
        ("bigint", "long"),
        ("bigint", "int"),
        ("int", "int"),
        ("string", "string"),
        ("string", "long"),
        ("string", "int"),
        ("string", "boolean"),
    }


def flat_rows(
    records: Sequence[Mapping[str, Any]],
    avro_schema: Mapping[str, Any],
    *,
    source_meta_columns: Sequence[tuple[str, str, str, bool]],
    ingested_at: datetime,
) -> FlatRows | str:
    """The envelopes ``records`` (decoded with ``avro_schema``) as flat rows; or why the driver does not take them."""
    import fastavro

    # Named types referenced by name (``after`` names ``before``'s record): each written out where it is used.
    expanded: dict[str, Any] = fastavro.parse_schema(dict(avro_schema), expand=True, _write_hint=False)  # type: ignore[assignment]
    fields = {f["name"]: f["type"] for f in expanded.get("fields", [])}
    after = _record_fields(fields.get("after"))
    source = _record_fields(fields.get("source"))
    if after is None or source is None or "op" not in fields or "before" not in fields:
        return "not a Debezium envelope schema the driver reads"
    if value_conversions(dict(avro_schema)) or absent_columns(dict(avro_schema)):
        return "a column with a conversion, or one a merged schema marks absent"
    values = {f["name"]: _plain(f["type"]) for f in after}
    if any(t is None for t in values.values()):
        return "a column of a type the driver does not read"
    sources = {f["name"]: _plain(f["type"]) for f in source}
    meta: list[tuple[str, str, str | None, str]] = []  # (column, field, Avro type, DDL)
    for column, field, ddl, required in source_meta_columns:
        if field not in sources:
            if required:
                return f"the source block has no {field!r} field"
            meta.append((column, field, None, ddl))
        elif not _castable(sources[field], ddl):
            return f"source field {field!r} of a type the driver does not cast"
        else:
            meta.append((column, field, sources[field], ddl))
    for field, column, ddl in _OPTIONAL_SOURCE:
        if field in sources and not _castable(sources[field], ddl):
            return f"source field {field!r} of a type the driver does not cast"
        meta.append((column, field, sources.get(field), ddl))
    rows = []
    for record in records:
        op = record.get("op")
        if op not in _KNOWN_OPS:
            return f"an event of op {op!r}"
        image = record.get("before") if op == "d" else record.get("after")
        if image is None:
            return "an event without its image"
        block = record.get("source") or {}
        row: dict[str, Any] = {name: image.get(name) for name in values}
        row[OP_COLUMN] = op
        for column, field, avro, ddl in meta:
            row[column] = _cast(block.get(field), avro, ddl) if avro is not None else None
        row[DELETED_COLUMN] = op == "d"
        row[INGESTED_AT_COLUMN] = ingested_at
        row[ERROR_COLUMN] = None
        rows.append(row)
    types = {name: SPARK_TYPES[t] for name, t in values.items() if t is not None}
    types.update({OP_COLUMN: "string", **{c: ddl for c, _, _, ddl in meta}})
    types.update({DELETED_COLUMN: "boolean", INGESTED_AT_COLUMN: "timestamp"})
    columns = [*values, OP_COLUMN, *[c for c, _, _, _ in meta], DELETED_COLUMN, INGESTED_AT_COLUMN, ERROR_COLUMN]
    return FlatRows(rows=rows, columns=columns, types=types)
