"""Decoded envelopes to flat change rows in the driver: :func:`flatten`'s rows as Python dicts, no Spark job.

For a small round planned in the driver (``payloads.driver``). It takes only envelopes whose flat rows
it makes exactly as ``envelope.flatten`` and ``envelope.batch.change_rows`` do, and says why not for the
rest (the round then goes to the Spark plan): value columns of the plain Avro types (long, int, string,
boolean, double, float, bytes), of the logical types spark-avro reads itself (date, timestamp-millis,
timestamp-micros, a decimal of at most 38 digits), of Debezium's and Connect's types that
``envelope.types`` converts (each conversion's ``value``, its Spark expression's twin), and arrays of
these; no column a merged schema marks absent; source fields of the types the policy's columns cast
simply. A value whose conversion is not certain to equal Spark's (a date or timestamp outside Python's
range, a negative time of day, a ZonedTimestamp in another form than Debezium's, a decimal with more
digits than its precision) declines the round, naming it; events flatten would mark bad (no or an
unknown op, a TRUNCATE, no image) are left to the Spark plan, which reports or quarantines them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

from hudi_cdc.envelope.types import (
    MAX_DECIMAL_PRECISION,
    NotExact,
    absent_columns,
    avro_fields,
    conversion_of,
    decimal_value,
)
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


# Below these a logical date or timestamp is one Spark's Avro reader does not read as it is by default (the
# Julian calendar's days): the Kafka single pass makes the event bad, a files read fails the round.
_GREGORIAN = date(1582, 10, 15)
_REBASED_TS = datetime(1900, 1, 1, tzinfo=UTC)

_Read = tuple[str, Callable[[Any], Any] | None]
"""A value column as the driver reads it: its Spark type (DDL) and the conversion of a decoded value (None: as is)."""


def _column(avro_type: Any) -> _Read | str:  # noqa: ANN401 - an Avro schema
    """How the Spark flatten types and converts a value column of this Avro type; or why the driver does not."""
    branches = avro_type if isinstance(avro_type, list) else [avro_type]
    taken = [b for b in branches if b != "null"]
    if len(taken) != 1:
        return "a union of several types"
    t = taken[0]
    conversion = conversion_of(avro_type)
    if conversion is not None:
        logical = t.get("logicalType") if isinstance(t, dict) else None
        if conversion.expr is not None and logical not in (None, "decimal"):
            return f"a {t.get('connect.name')} with the Avro logical type {logical}"
        if conversion.value is None:
            return f"a conversion to {conversion.target} the driver has no rule for"
        return conversion.target, conversion.value
    if isinstance(t, str):
        return (SPARK_TYPES[t], None) if t in SPARK_TYPES else f"an Avro {t}"
    if not isinstance(t, dict):
        return "an Avro type the driver does not read"
    if t.get("type") == "array":
        item = _column(t["items"])
        if isinstance(item, str):
            return f"an array of {item.removeprefix('a ').removeprefix('an ')}"
        ddl, convert = item
        return f"array<{ddl}>", (_each(convert) if convert is not None else None)
    logical = t.get("logicalType")
    if logical is None:
        return _column(t.get("type"))
    native = _native(t)
    return native if native is not None else f"an Avro {t.get('type')} of logical type {logical}"


def _native(t: dict[str, Any]) -> _Read | None:
    """A logical type spark-avro reads itself, and fastavro's value of it checked to be that value; or None."""
    logical, physical = t.get("logicalType"), t.get("type")
    if logical == "date" and physical == "int":
        return "date", _instance(date, "a date", exclude=datetime, since=_GREGORIAN)
    if logical in ("timestamp-millis", "timestamp-micros") and physical == "long":
        return "timestamp", _instance(datetime, "a timestamp", aware=True, since=_REBASED_TS)
    precision, scale = t.get("precision"), t.get("scale", 0)
    if (
        logical == "decimal"
        and physical in ("bytes", "fixed")
        and isinstance(precision, int)
        and isinstance(scale, int)
    ):
        if 0 < precision <= MAX_DECIMAL_PRECISION and 0 <= scale <= precision:
            return f"decimal({precision},{scale})", decimal_value(precision, scale)
    return None


def _instance(
    kind: type,
    what: str,
    *,
    since: Any,  # noqa: ANN401 - a date or an aware datetime, as the values
    exclude: type | None = None,
    aware: bool = False,
) -> Callable[[Any], Any]:
    def value(v: Any) -> Any:  # noqa: ANN401 - a decoded Avro value
        if v is None:
            return None
        if not isinstance(v, kind) or (exclude is not None and isinstance(v, exclude)):
            raise NotExact(f"{what} decoded as {type(v).__name__}")
        if aware and getattr(v, "tzinfo", None) is None:
            raise NotExact(f"{what} decoded without its zone")
        if v < since:  # Spark's Avro reader refuses it (spark.sql.avro.datetimeRebaseModeInRead = EXCEPTION)
            raise NotExact(f"{what} {v} before {since}, which Spark's Avro reader refuses or rebases")
        return v

    return value


def _each(convert: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def value(v: Any) -> Any:  # noqa: ANN401 - a decoded Avro array
        return None if v is None else [convert(item) for item in v]

    return value


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
    absent = absent_columns(dict(avro_schema))
    if absent:
        return f"a column a merged schema marks absent ({sorted(absent)[0]})"
    declared = avro_fields(dict(avro_schema))  # as written: the Spark flatten converts by these, named types unexpanded
    values: dict[str, _Read] = {}
    for f in after:
        read = _column(declared.get(f["name"]))
        if isinstance(read, str):
            return f"column {f['name']!r}: {read}, which the driver does not read"
        values[f["name"]] = read
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
        row: dict[str, Any] = {}
        for name, (_, convert) in values.items():
            try:
                row[name] = image.get(name) if convert is None else convert(image.get(name))
            except NotExact as exc:
                return f"column {name!r}: {exc}"
        row[OP_COLUMN] = op
        for column, field, avro, ddl in meta:
            row[column] = _cast(block.get(field), avro, ddl) if avro is not None else None
        row[DELETED_COLUMN] = op == "d"
        row[INGESTED_AT_COLUMN] = ingested_at
        row[ERROR_COLUMN] = None
        rows.append(row)
    types = {name: ddl for name, (ddl, _) in values.items()}
    types.update({OP_COLUMN: "string", **{c: ddl for c, _, _, ddl in meta}})
    types.update({DELETED_COLUMN: "boolean", INGESTED_AT_COLUMN: "timestamp"})
    columns = [*values, OP_COLUMN, *[c for c, _, _, _ in meta], DELETED_COLUMN, INGESTED_AT_COLUMN, ERROR_COLUMN]
    return FlatRows(rows=rows, columns=columns, types=types)
