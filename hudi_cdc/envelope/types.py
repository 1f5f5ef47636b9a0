"""Debezium/Kafka Connect logical types to Spark types, losslessly.

Debezium marks logical types with ``connect.name`` on the Avro type; spark-avro
ignores it and reads the physical type (int, long, string, bytes). This module
reads the envelope's Avro schema and says, per value column, what spark-avro
must be told (the reader schema) and which Spark expression turns the physical
value into the natural type. docs/types.md is the table of what maps to what.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import Column

__all__ = [
    "MAX_DECIMAL_PRECISION",
    "Conversion",
    "NotExact",
    "absent_columns",
    "avro_fields",
    "conversion_of",
    "decimal_text",
    "reader_schema",
    "value_conversions",
]

MAX_DECIMAL_PRECISION = 38  # Spark's (and Hudi's) largest decimal
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_EPOCH_DAY = date(1970, 1, 1)


class NotExact(ValueError):
    """A value whose conversion in Python is not certain to equal the Spark expression's (``Conversion.value``)."""


@dataclass(frozen=True)
class Conversion:
    """How one column's physical Avro value becomes its table type."""

    target: str
    """The Spark type of the table column (DDL), for docs and tests."""
    expr: Callable[[Column], Column] | None
    """Physical column -> table column; None when spark-avro already reads the right type."""
    error: Callable[[Column], Column] | None = None
    """Physical column -> why the value cannot land (a type mapping's misfit), or NULL; makes the event bad."""
    value: Callable[[Any], Any] | None = None
    """The same conversion of one value as fastavro decodes it (a small round planned in the driver,
    ``envelope.driver_rows``): exactly what ``expr`` gives, as Python (a timestamp aware, in UTC); raises
    :class:`NotExact` where that is not certain. None: the driver has no rule for it."""


def _unwrap(avro_type: Any) -> Any:
    """The non-null branch of ``["null", T]``."""
    if isinstance(avro_type, list):
        branches = [t for t in avro_type if t != "null"]
        return branches[0] if len(branches) == 1 else avro_type
    return avro_type


def _integer(value: Any, what: str) -> int:  # noqa: ANN401 - a decoded Avro value
    if not isinstance(value, int) or isinstance(value, bool):
        raise NotExact(f"{what} decoded as {type(value).__name__}, not a number")
    return value


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


def _time_of_day_value(unit_per_second: int, digits: int) -> Callable[[Any], str | None]:
    """:func:`_time_of_day` in Python, for 00:00:00 to 24:00:00 (Postgres' range): there Spark's double
    divisions are exact; a negative or longer time is not certain to print alike."""

    def value(v: Any) -> str | None:  # noqa: ANN401 - a decoded Avro value
        if v is None:
            return None
        if not 0 <= _integer(v, "a time of day") <= 86_400 * unit_per_second:
            raise NotExact(f"a time of day outside 00:00:00..24:00:00 ({v} at {unit_per_second}/s)")
        seconds, fraction = divmod(v, unit_per_second)
        return f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}.{fraction:0{digits}d}"

    return value


def _date(c: Column) -> Column:
    from pyspark.sql import functions as F

    return F.date_add(F.lit("1970-01-01").cast("date"), c.cast("int"))


def _date_value(v: Any) -> date | None:  # noqa: ANN401 - a decoded Avro value
    if v is None or (isinstance(v, date) and not isinstance(v, datetime)):  # fastavro's of a file's Avro date
        return v
    try:
        return _EPOCH_DAY + timedelta(days=_integer(v, "a date"))
    except OverflowError:
        raise NotExact(f"a date {v} days from 1970-01-01, outside Python's dates") from None


def _millis(c: Column) -> Column:
    from pyspark.sql import functions as F

    return F.timestamp_millis(c)


def _millis_value(v: Any) -> datetime | None:  # noqa: ANN401 - a decoded Avro value
    if isinstance(v, datetime) and v.tzinfo is not None:  # fastavro's of a file's Avro timestamp-millis: exact
        return v.astimezone(UTC)
    return None if v is None else _micros_value(_integer(v, "a timestamp") * 1000)


def _micros(c: Column) -> Column:
    from pyspark.sql import functions as F

    return F.timestamp_micros(c)


def _micros_value(v: Any) -> datetime | None:  # noqa: ANN401 - a decoded Avro value
    if v is None:
        return None
    try:
        return _EPOCH + timedelta(microseconds=_integer(v, "a timestamp"))
    except OverflowError:
        raise NotExact(f"a timestamp {v} µs from the epoch, outside Python's datetimes") from None


def _nanos(c: Column) -> Column:
    from pyspark.sql import functions as F

    # Exact floor division: Spark keeps microseconds, nanoseconds are cut (documented). In decimal, not double:
    # a double holds 53 bits, and a nanosecond timestamp's division by 1000 in double was a microsecond off.
    whole = (c - F.pmod(c, F.lit(1000))).cast("decimal(20,0)")
    return F.timestamp_micros((whole / F.lit(1000)).cast("bigint"))


def _nanos_value(v: Any) -> datetime | None:  # noqa: ANN401 - a decoded Avro value
    if v is None:
        return None
    if _integer(v, "a timestamp") - v % 1000 < -(2**63):  # Spark's whole microseconds overflow a long there
        raise NotExact(f"a timestamp {v} ns from the epoch whose whole microseconds overflow a long")
    return _micros_value(v // 1000)


def _iso_timestamp(c: Column) -> Column:
    return c.cast("timestamp")


# What Debezium's ZonedTimestamp writes (ISO_OFFSET_DATE_TIME) and both Spark's cast and Python read alike (an
# offset within Java's ±18:00).
_ZONED = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?(Z|[+-]((0[0-9]|1[0-7]):[0-5][0-9]|18:00))"
)


def _iso_timestamp_value(v: Any) -> datetime | None:  # noqa: ANN401 - a decoded Avro value
    """:func:`_iso_timestamp` in Python, for the text Debezium writes; other text (more than six decimals,
    an offset with seconds, a date Python cannot hold...) is not certain to parse as Spark's cast does."""
    if v is None:
        return None
    if not isinstance(v, str) or not _ZONED.fullmatch(v) or v.endswith("-00:00"):  # Debezium writes Z for UTC
        raise NotExact(f"a ZonedTimestamp {v!r} not of the form yyyy-MM-ddTHH:mm:ss[.ffffff](Z|±HH:MM)")
    try:
        return datetime.fromisoformat(v.removesuffix("Z") + ("+00:00" if v.endswith("Z") else "")).astimezone(UTC)
    except (ValueError, OverflowError) as exc:
        raise NotExact(f"a ZonedTimestamp {v!r} Python does not read ({exc})") from None


def decimal_text(scale: int | None, unscaled: bytes | None) -> str | None:
    """Unscaled two's-complement bytes and a scale as exact decimal text: the Spark plan's UDF and the driver's."""
    if scale is None or unscaled is None:
        return None
    # From text, so no context precision (28 digits by default) rounds it.
    return format(Decimal(f"{int.from_bytes(unscaled, 'big', signed=True)}E{-scale}"), "f")


def _decimal_text(scale: int | None) -> Callable[[Column], Column]:
    """Unscaled two's-complement bytes (+ scale) -> exact decimal text."""

    def convert(c: Column) -> Column:
        from pyspark.sql import functions as F

        if scale is None:  # VariableScaleDecimal: struct<scale:int, value:binary>
            return _variable_scale_udf()(c["scale"], c["value"])
        return _variable_scale_udf()(F.lit(scale), c)

    return convert


def _decimal_text_value(scale: int | None) -> Callable[[Any], str | None]:
    """:func:`_decimal_text` in Python: of the bytes, or of the Decimal fastavro made of them (a file's writer
    schema keeps the logical type the reader schema drops) when it holds every digit."""

    def value(v: Any) -> str | None:  # noqa: ANN401 - a decoded Avro value
        if v is None:
            return None
        if scale is None:  # VariableScaleDecimal's record
            return decimal_text(v.get("scale"), v.get("value")) if isinstance(v, dict) else _not_bytes(v)
        if isinstance(v, Decimal):
            if v.as_tuple().exponent != -scale:  # fastavro rounded it to its precision: not the bytes' value
                raise NotExact(f"a decimal {v} with more digits than its precision, or another scale than {scale}")
            return format(v, "f")
        return decimal_text(scale, v) if isinstance(v, bytes) else _not_bytes(v)

    return value


def _not_bytes(v: Any) -> str:  # noqa: ANN401 - a decoded Avro value
    raise NotExact(f"a decimal decoded as {type(v).__name__}")


def decimal_value(precision: int, scale: int) -> Callable[[Any], Decimal | None]:
    """A decimal(p,s) as spark-avro reads it, from fastavro's Decimal: the same when it holds every digit of the
    bytes (fastavro rounds to the precision, where spark-avro fails the read)."""

    def value(v: Any) -> Decimal | None:  # noqa: ANN401 - a decoded Avro value
        if v is None:
            return None
        if not isinstance(v, Decimal) or not v.is_finite():
            raise NotExact(f"a decimal({precision},{scale}) decoded as {v!r}")
        if v.as_tuple().exponent != -scale or len(v.as_tuple().digits) > precision:
            raise NotExact(f"a decimal {v} with more digits than decimal({precision},{scale}) holds")
        return v

    return value


def _variable_scale_udf():  # noqa: ANN202 - a pyspark UDF
    from pyspark.sql import functions as F

    return F.udf(decimal_text, "string")


_TIME_MS, _TIME_US, _TIME_NS = (_time_of_day(10**d, d) for d in (3, 6, 9))

_BY_CONNECT_NAME: dict[str, Conversion] = {
    "io.debezium.time.Date": Conversion("date", _date, value=_date_value),
    "org.apache.kafka.connect.data.Date": Conversion("date", _date, value=_date_value),
    "io.debezium.time.Timestamp": Conversion("timestamp", _millis, value=_millis_value),
    "io.debezium.time.MicroTimestamp": Conversion("timestamp", _micros, value=_micros_value),
    "io.debezium.time.NanoTimestamp": Conversion("timestamp", _nanos, value=_nanos_value),
    "org.apache.kafka.connect.data.Timestamp": Conversion("timestamp", _millis, value=_millis_value),
    "io.debezium.time.ZonedTimestamp": Conversion("timestamp", _iso_timestamp, value=_iso_timestamp_value),
    "io.debezium.time.Time": Conversion("string", _TIME_MS, value=_time_of_day_value(1000, 3)),
    "org.apache.kafka.connect.data.Time": Conversion("string", _TIME_MS, value=_time_of_day_value(1000, 3)),
    "io.debezium.time.MicroTime": Conversion("string", _TIME_US, value=_time_of_day_value(1_000_000, 6)),
    "io.debezium.time.NanoTime": Conversion("string", _TIME_NS, value=_time_of_day_value(1_000_000_000, 9)),
    "io.debezium.data.VariableScaleDecimal": Conversion("string", _decimal_text(None), value=_decimal_text_value(None)),
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
            return avro_type, Conversion(f"decimal({precision},{scale})", None, value=decimal_value(precision, scale))
        # Too wide for Spark, or no precision: read the bytes and keep the exact text.
        raw = {k: v for k, v in t.items() if k not in ("logicalType", "precision", "scale")}
        return _rewrap(avro_type, raw), Conversion("string", _decimal_text(scale), value=_decimal_text_value(scale))
    if t.get("type") == "array":
        item_reader, item_conversion = _conversion(t["items"])
        if item_conversion is None or item_conversion.expr is None:
            return avro_type, None
        inner, inner_value = item_conversion.expr, item_conversion.value

        def convert(c: Column) -> Column:
            from pyspark.sql import functions as F

            return F.transform(c, inner)

        def value(v: Any) -> list[Any] | None:  # noqa: ANN401 - a decoded Avro array
            return None if v is None or inner_value is None else [inner_value(item) for item in v]

        target = f"array<{item_conversion.target}>"
        items = Conversion(target, convert, value=value if inner_value is not None else None)
        return _rewrap(avro_type, {**t, "items": item_reader}), items
    conversion = _BY_CONNECT_NAME.get(connect_name or "")
    if conversion is not None and conversion.expr is not None and "logicalType" in t:
        # Confluent's Avro converter marks Connect's Date, Time and Timestamp with Avro's date, time-millis and
        # timestamp-millis too: spark-avro would read a date or a timestamp, which the conversion (from the
        # number) turned into NULL or refused. Read the number.
        return _rewrap(avro_type, {k: v for k, v in t.items() if k != "logicalType"}), conversion
    return avro_type, conversion


def conversion_of(avro_type: Any) -> Conversion | None:  # noqa: ANN401 - an Avro schema
    """One value field type's conversion (:func:`value_conversions`'), or one with ``expr`` None where spark-avro
    reads the table type itself (a Connect Decimal of at most 38 digits), or None."""
    return _conversion(avro_type)[1]


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
