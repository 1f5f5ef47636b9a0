"""Debezium/Kafka Connect logical types to Spark types, losslessly.

Debezium marks logical types with ``connect.name`` on the Avro type; spark-avro
ignores it and reads the physical type (int, long, string, bytes). This module
reads the envelope's Avro schema and says, per value column, what spark-avro
must be told (the reader schema) and which Spark expression turns the physical
value into the natural type. docs/types.md is the table of what maps to what.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import Column

__all__ = ["Conversion", "absent_columns", "avro_fields", "value_conversions", "reader_schema", "MAX_DECIMAL_PRECISION"]

MAX_DECIMAL_PRECISION = 38  # Spark's (and Hudi's) largest decimal


@dataclass(frozen=True)
class Conversion:
    """How one column's physical Avro value becomes its table type."""

    target: str
    """The Spark type of the table column (DDL), for docs and tests."""
    expr: Callable[[Column], Column] | None
    """Physical column -> table column; None when spark-avro already reads the right type."""
    error: Callable[[Column], Column] | None = None
    """Physical column -> why the value cannot land (a type mapping's misfit), or NULL; makes the event bad."""


def _unwrap(avro_type: Any) -> Any:
    """The non-null branch of ``["null", T]``."""
    if isinstance(avro_type, list):
        branches = [t for t in avro_type if t != "null"]
        return branches[0] if len(branches) == 1 else avro_type
    return avro_type


def _time_of_day(unit_per_second: int, digits: int) -> Callable[[Column], Column]:
    def convert(c: Column) -> Column:
        from pyspark.sql import functions as F

        seconds = F.floor(c / F.lit(unit_per_second)).cast("bigint")
        fraction = F.pmod(c, F.lit(unit_per_second)).cast("bigint")
        text = F.format_string(
            f"%02d:%02d:%02d.%0{digits}d",
            (seconds / 3600).cast("int"),
            (seconds / 60 % 60).cast("int"),
            (seconds % 60).cast("int"),
            fraction,
        )
        return F.when(c.isNotNull(), text)

    return convert


def _date(c: Column) -> Column:
    from pyspark.sql import functions as F

    return F.date_add(F.lit("1970-01-01").cast("date"), c.cast("int"))


def _millis(c: Column) -> Column:
    from pyspark.sql import functions as F

    return F.timestamp_millis(c)


def _micros(c: Column) -> Column:
    from pyspark.sql import functions as F

    return F.timestamp_micros(c)


def _nanos(c: Column) -> Column:
    from pyspark.sql import functions as F

    # Exact floor division: Spark keeps microseconds, nanoseconds are cut (documented).
    return F.timestamp_micros(((c - F.pmod(c, F.lit(1000))) / F.lit(1000)).cast("bigint"))


def _iso_timestamp(c: Column) -> Column:
    return c.cast("timestamp")


def _decimal_text(scale: int | None) -> Callable[[Column], Column]:
    """Unscaled two's-complement bytes (+ scale) -> exact decimal text."""

    def convert(c: Column) -> Column:
        from pyspark.sql import functions as F

        if scale is None:  # VariableScaleDecimal: struct<scale:int, value:binary>
            return _variable_scale_udf()(c["scale"], c["value"])
        return _variable_scale_udf()(F.lit(scale), c)

    return convert


def _variable_scale_udf():  # noqa: ANN202 - a pyspark UDF
    from pyspark.sql import functions as F

    @F.udf("string")
    def decimal_text(scale: int | None, unscaled: bytes | None) -> str | None:
        from decimal import Decimal

        if scale is None or unscaled is None:
            return None
        # From text, so no context precision (28 digits by default) rounds it.
        value = Decimal(f"{int.from_bytes(unscaled, 'big', signed=True)}E{-scale}")
        return format(value, "f")

    return decimal_text


_BY_CONNECT_NAME: dict[str, Conversion] = {
    "io.debezium.time.Date": Conversion("date", _date),
    "org.apache.kafka.connect.data.Date": Conversion("date", _date),
    "io.debezium.time.Timestamp": Conversion("timestamp", _millis),
    "io.debezium.time.MicroTimestamp": Conversion("timestamp", _micros),
    "io.debezium.time.NanoTimestamp": Conversion("timestamp", _nanos),
    "org.apache.kafka.connect.data.Timestamp": Conversion("timestamp", _millis),
    "io.debezium.time.ZonedTimestamp": Conversion("timestamp", _iso_timestamp),
    "io.debezium.time.Time": Conversion("string", _time_of_day(1000, 3)),
    "org.apache.kafka.connect.data.Time": Conversion("string", _time_of_day(1000, 3)),
    "io.debezium.time.MicroTime": Conversion("string", _time_of_day(1_000_000, 6)),
    "io.debezium.time.NanoTime": Conversion("string", _time_of_day(1_000_000_000, 9)),
    "io.debezium.data.VariableScaleDecimal": Conversion("string", _decimal_text(None)),
}


def _conversion(avro_type: Any) -> tuple[Any, Conversion | None]:
    """(reader type for spark-avro, conversion) of one field type."""
    t = _unwrap(avro_type)
    if not isinstance(t, dict):
        return avro_type, None
    connect_name = t.get("connect.name")
    if connect_name == "org.apache.kafka.connect.data.Decimal":
        precision = t.get("precision") or int(t.get("connect.parameters", {}).get("connect.decimal.precision", 0) or 0)
        scale = int(t.get("scale", t.get("connect.parameters", {}).get("scale", 0)))
        if t.get("logicalType") == "decimal" and precision and precision <= MAX_DECIMAL_PRECISION:
            return avro_type, Conversion(f"decimal({precision},{scale})", None)
        # Too wide for Spark, or no precision: read the bytes and keep the exact text.
        raw = {k: v for k, v in t.items() if k not in ("logicalType", "precision", "scale")}
        return _rewrap(avro_type, raw), Conversion("string", _decimal_text(scale))
    if t.get("type") == "array":
        item_reader, item_conversion = _conversion(t["items"])
        if item_conversion is None or item_conversion.expr is None:
            return avro_type, None
        inner = item_conversion.expr

        def convert(c: Column) -> Column:
            from pyspark.sql import functions as F

            return F.transform(c, inner)

        return _rewrap(avro_type, {**t, "items": item_reader}), Conversion(f"array<{item_conversion.target}>", convert)
    conversion = _BY_CONNECT_NAME.get(connect_name or "")
    return avro_type, conversion


def _rewrap(original: Any, inner: Any) -> Any:
    if isinstance(original, list):
        return [inner if t != "null" else t for t in original]
    return inner


def _value_record(envelope: dict[str, Any]) -> dict[str, Any]:
    for field in envelope.get("fields", []):
        if field["name"] in ("before", "after"):
            record = _unwrap(field["type"])
            if isinstance(record, dict) and record.get("type") == "record":
                return record
    if envelope.get("type") == "record":  # a row flattened by ExtractNewRecordState: the row itself
        return envelope
    raise ValueError("envelope schema has no before/after record")


def reader_schema(envelope: dict[str, Any]) -> dict[str, Any]:
    """The envelope schema as spark-avro should read it (oversized decimals as bytes)."""
    schema = copy.deepcopy(envelope)
    record = _value_record(schema)
    for field in record["fields"]:
        field["type"], _ = _conversion(field["type"])
    return schema


def avro_fields(envelope: dict[str, Any]) -> dict[str, Any]:
    """Each value column's Avro field type, by name."""
    return {f["name"]: f["type"] for f in _value_record(envelope)["fields"]}


def absent_columns(envelope: dict[str, Any]) -> set[str]:
    """Value columns a merged reader schema keeps only for older writer versions (``avro_schemas.ABSENT_MARK``)."""
    return {f["name"] for f in _value_record(envelope)["fields"] if f.get("hudi_cdc.absent")}


def value_conversions(envelope: dict[str, Any]) -> dict[str, Conversion]:
    """Per value column that needs one, the conversion from its physical value."""
    out = {}
    for field in _value_record(envelope)["fields"]:
        _, conversion = _conversion(field["type"])
        if conversion is not None and conversion.expr is not None:
            out[field["name"]] = conversion
    return out
