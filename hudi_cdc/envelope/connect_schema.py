"""Kafka Connect schemas (as ``JsonConverter`` embeds them) to what the Avro path already understands.

A Debezium message written with ``JsonConverter`` and ``schemas.enable=true``
is ``{"schema": <Connect schema>, "payload": <envelope>}``. The Connect schema
carries the same logical-type names (``io.debezium.time.MicroTimestamp``,
``org.apache.kafka.connect.data.Decimal`` ...) that Debezium's Avro converter
writes as ``connect.name``; :func:`avro_envelope` writes that Avro schema, so
the type conversions of :mod:`hudi_cdc.envelope.types` apply unchanged, and
:func:`json_read_type` is the Spark type ``from_json`` reads the payload with:
the Avro path's physical types, except that a decimal arrives as base64 bytes
(JsonConverter's default ``decimal.format``), converted in the JVM by
:func:`decimal_from_bytes`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from hudi_cdc.envelope.types import MAX_DECIMAL_PRECISION
from hudi_cdc.errors import DecodeError

if TYPE_CHECKING:
    from pyspark.sql import Column
    from pyspark.sql.types import DataType, StructType

__all__ = [
    "avro_envelope",
    "connect_envelope",
    "is_envelope",
    "decimal_columns",
    "decimal_from_bytes",
    "json_read_type",
]

DECIMAL = "org.apache.kafka.connect.data.Decimal"
_AVRO_PRIMITIVE = {
    "int8": "int",
    "int16": "int",
    "int32": "int",
    "int64": "long",
    "float": "float",  # JsonConverter's names for FLOAT32 / FLOAT64
    "double": "double",
    "boolean": "boolean",
    "string": "string",
    "bytes": "bytes",
}
_INVALID_NAME = re.compile(r"[^A-Za-z0-9_]")


def connect_envelope(document: Any, where: str) -> dict[str, Any]:  # noqa: ANN401 - parsed JSON
    """The value's Connect schema from a whole JsonConverter message or the schema alone: a Debezium
    envelope, or a row flattened by ExtractNewRecordState (see :mod:`hudi_cdc.envelope.unflatten`)."""
    schema = document.get("schema") if isinstance(document, dict) and "payload" in document else document
    if not isinstance(schema, dict) or schema.get("type") != "struct":
        raise DecodeError(f'{where}: not a Kafka Connect struct schema (JsonConverter\'s "schema")')
    return schema


def is_envelope(connect: dict[str, Any]) -> bool:
    return {"before", "after"} <= {f.get("field") for f in connect.get("fields", [])}


def _name(schema: dict[str, Any], hint: str) -> str:
    """An Avro full name for a struct: the Connect name, made legal (Avro names allow [A-Za-z0-9_])."""
    parts = (schema.get("name") or hint).split(".")
    return ".".join(p if p and not p[0].isdigit() else f"_{p}" for p in (_INVALID_NAME.sub("_", p) for p in parts))


def _avro(schema: dict[str, Any], hint: str, defined: set[str]) -> Any:  # noqa: ANN401 - an Avro type
    kind = schema.get("type")
    body: Any
    if kind == "struct":
        full = _name(schema, hint)
        if full in defined:
            body = full
        else:
            defined.add(full)
            namespace, _, short = full.rpartition(".")
            fields = []
            for f in schema.get("fields", []):
                field: dict[str, Any] = {"name": f["field"], "type": _avro(f, f"{full}.{f['field']}", defined)}
                if f.get("optional"):
                    field["default"] = None
                fields.append(field)
            body = {
                "type": "record",
                "name": short,
                "fields": fields,
                **({"namespace": namespace} if namespace else {}),
            }
            if schema.get("name"):  # a logical struct (VariableScaleDecimal, Geometry): its conversion keys on it
                body["connect.name"] = schema["name"]
    elif kind == "array":
        body = {"type": "array", "items": _avro(schema["items"], hint + ".item", defined)}
    elif kind == "map":
        if schema["keys"].get("type") != "string":
            raise DecodeError(f"{hint}: a map with {schema['keys'].get('type')} keys is not supported")
        body = {"type": "map", "values": _avro(schema["values"], hint + ".value", defined)}
    elif kind in _AVRO_PRIMITIVE:
        body = _AVRO_PRIMITIVE[kind]
        name, parameters = schema.get("name"), schema.get("parameters") or {}
        if name or parameters or kind in ("int8", "int16"):  # parameters: e.g. propagated source types
            body = {"type": body, "connect.type": kind}
            if name:
                body["connect.name"] = name
            if parameters:
                body["connect.parameters"] = dict(parameters)
        if name == DECIMAL:
            precision = int(parameters.get("connect.decimal.precision", 0) or 0)
            body["scale"] = int(parameters.get("scale", 0))
            if 0 < precision <= MAX_DECIMAL_PRECISION:
                body.update(logicalType="decimal", precision=precision)
    else:
        raise DecodeError(f"{hint}: Connect type {kind!r} is not one Debezium writes")
    return ["null", body] if schema.get("optional") else body


def avro_envelope(connect: dict[str, Any]) -> dict[str, Any]:
    """The Avro schema Debezium's Avro converter writes for the envelope with this Connect schema."""
    result = _avro({**connect, "optional": False}, "envelope", set())
    assert isinstance(result, dict)
    return result


def value_struct(connect: dict[str, Any]) -> dict[str, Any]:
    """The row's struct: the envelope's before/after, or a flattened value itself."""
    for f in connect.get("fields", []):
        if f.get("field") in ("before", "after") and f.get("type") == "struct":
            return f
    return connect


def decimal_columns(connect: dict[str, Any]) -> dict[str, tuple[int, int]]:
    """Value columns that are Spark decimals ``(precision, scale)``: they arrive as base64 bytes."""
    out = {}
    for f in value_struct(connect).get("fields", []):
        parameters = f.get("parameters") or {}
        precision = int(parameters.get("connect.decimal.precision", 0) or 0)
        if f.get("name") == DECIMAL and 0 < precision <= MAX_DECIMAL_PRECISION:
            out[f["field"]] = (precision, int(parameters.get("scale", 0)))
    return out


def _spark(schema: dict[str, Any]) -> DataType:
    from pyspark.sql import types as T

    kind = schema.get("type")
    if kind == "struct":
        return T.StructType(
            [T.StructField(f["field"], _spark(f), bool(f.get("optional", True))) for f in schema.get("fields", [])]
        )
    if kind == "array":
        return T.ArrayType(_spark(schema["items"]), bool(schema["items"].get("optional", True)))
    if kind == "map":
        return T.MapType(T.StringType(), _spark(schema["values"]), bool(schema["values"].get("optional", True)))
    primitive: dict[str, DataType] = {
        "int8": T.IntegerType(),  # as spark-avro reads Debezium's Avro "int" (connect.type int8/int16)
        "int16": T.IntegerType(),
        "int32": T.IntegerType(),
        "int64": T.LongType(),
        "float": T.FloatType(),
        "double": T.DoubleType(),
        "boolean": T.BooleanType(),
        "string": T.StringType(),
        "bytes": T.BinaryType(),  # JSON holds base64 text; Spark's JSON reader decodes it
    }
    if kind not in primitive:
        raise DecodeError(f"Connect type {kind!r} is not one Debezium writes")
    return primitive[kind]


def json_read_type(connect: dict[str, Any]) -> StructType:
    """The Spark type ``from_json`` reads the payload with (decimals as their bytes)."""
    from pyspark.sql.types import StructType

    result = _spark(connect)
    assert isinstance(result, StructType)
    return result


def decimal_from_bytes(c: Column, precision: int, scale: int) -> Column:
    """Big-endian two's-complement unscaled bytes to ``decimal(precision, scale)``, in the JVM.

    Negative values are read through their complement, so the running sum never
    exceeds the value's own size; the scale is applied by exact text (``nE-s``).
    """
    from pyspark.sql import functions as F

    def byte(i: Column) -> Column:
        return F.conv(F.hex(c.substr(i, F.lit(1))), 16, 10).cast("int")

    negative = byte(F.lit(1)) >= 128
    digits = F.transform(F.sequence(F.lit(1), F.length(c)), byte)
    magnitude = F.aggregate(
        digits,
        F.lit(0).cast("decimal(38,0)"),
        lambda acc, x: (acc * 256 + F.when(negative, 255 - x).otherwise(x)).cast("decimal(38,0)"),
    )
    unscaled = F.when(negative, -(magnitude + 1)).otherwise(magnitude).cast("decimal(38,0)")
    text = F.concat(unscaled.cast("string"), F.lit(f"E-{scale}"))
    return F.when(c.isNotNull() & (F.length(c) > 0), text.cast(f"decimal({precision},{scale})"))
