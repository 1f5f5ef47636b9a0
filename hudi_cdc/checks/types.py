"""Checks of a table's type mappings against the source's columns (docs/types.md#type-mappings).

Refused: a mapping that would lose information for values the source column can hold (a
``decimal(10,2)`` for a ``numeric(12,4)``, ``boolean`` for a ``tinyint(4)``, text to a number, a
number to a narrower one), a mapping the column's type cannot take, a ``column_types`` column the
source does not have. Warned: a mapping whose fit only the values can tell (a NUMERIC without
precision to a decimal, an integer of unknown width to boolean): such values are refused at ingest,
never rounded, and go to the quarantine table with ``on_bad_event = quarantine``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hudi_cdc.checks.kit import _fail, _ok, _Outcome, _Skip, _warn
from hudi_cdc.envelope.type_mapping import TypeMapping, source_types
from hudi_cdc.envelope.types import avro_fields

if TYPE_CHECKING:
    from hudi_cdc.checks.kit import _Context

__all__ = ["check_type_mappings", "mapping_problems"]

EnvelopeSchemaOf = Callable[["_Context"], "tuple[str, dict[str, Any]] | None"]
_DECIMAL = re.compile(r"decimal\((\d+),\s*(\d+)\)")
# Integral digits an integer of each width needs (with its sign); an unsigned 64-bit one needs 20.
_INTEGER_DIGITS = {"int8": 3, "int16": 5, "int32": 10, "int64": 19}
_RANK = {"int8": 0, "int16": 1, "int32": 2, "int64": 3}
_TIMESTAMPS = ("timestamp", "timestamptz", "datetime")


def check_type_mappings(ctx: _Context, envelope_schema_of: EnvelopeSchemaOf) -> _Outcome:
    """``envelope_schema_of(ctx)``: where the source's newest envelope schema was read, and the schema."""
    config = ctx.config
    if not config.type_mappings and not config.column_types:
        raise _Skip("no type_mappings or column_types set")
    found = envelope_schema_of(ctx)
    if found is None:
        raise _Skip("no envelope schema of the source to check the type mappings against")
    where, envelope = found
    problems, notes = mapping_problems(envelope, TypeMapping(config.type_mappings, config.column_types))
    fix = "widen the mapping, map the column to text, or remove it (type_mappings / column_types, docs/types.md)"
    if problems:
        return _fail(f"{where}: " + "; ".join(problems), fix)
    if notes:
        return _warn(f"{where}: " + "; ".join(notes))
    return _ok(f"{where}: the type mappings hold every value of their columns")


@dataclass(frozen=True)
class _Column:
    """What the source's schema says one column can hold."""

    name: str
    described: str  # e.g. "numeric(12,4)", "tinyint(1)", "int64"
    kind: str  # int8 | int16 | int32 | int64 | float | double | boolean | string | bytes | decimal | numeric | ...
    precision: int | None = None
    scale: int | None = None
    unsigned: bool = False
    length: int | None = None  # the source's declared length (tinyint(1): 1), when propagated


def mapping_problems(envelope: Mapping[str, Any], mapping: TypeMapping) -> tuple[list[str], list[str]]:
    """(refusals, warnings) of ``mapping`` for the value columns of ``envelope`` (an Avro envelope schema)."""
    fields = avro_fields(dict(envelope))
    problems = [
        f"column_types names '{c}', not a column of the source ({', '.join(fields)})"
        for c in mapping.by_column
        if c not in fields
    ]
    notes: list[str] = []
    for name, avro_type in fields.items():
        names = source_types(avro_type)
        chosen = mapping.target(name, names)
        if chosen is None:
            continue
        setting, target = chosen
        column = _describe(name, avro_type, names)
        loss, note = _judge(column, target.strip().lower())
        if loss:
            problems.append(f"column '{name}' ({column.described}) -> {target} ({setting}): {loss}")
        elif note:
            notes.append(f"column '{name}' ({column.described}) -> {target} ({setting}): {note}")
    return problems, notes


def _describe(name: str, avro_type: Any, names: list[str]) -> _Column:  # noqa: ANN401 - an Avro field type
    t = avro_type
    if isinstance(t, list):
        t = next((b for b in t if b != "null"), "null")
    if isinstance(t, str):
        kind = {"int": "int32", "long": "int64"}.get(t, t)
        return _Column(name, names[0] if names else kind, kind)
    connect_name = t.get("connect.name", "")
    parameters = t.get("connect.parameters") or {}
    length = parameters.get("__debezium.source.column.length")
    described = names[0] if names else connect_name or t.get("type", "?")
    unsigned = any("unsigned" in n for n in names)
    if connect_name == "org.apache.kafka.connect.data.Decimal":
        precision = int(t.get("precision") or parameters.get("connect.decimal.precision") or 0) or None
        scale = int(t.get("scale", parameters.get("scale", 0)))
        described = f"decimal({precision},{scale})" if precision else described
        return _Column(name, described, "decimal", precision, scale)
    if connect_name == "io.debezium.data.VariableScaleDecimal":
        return _Column(name, described, "numeric")
    if connect_name in _TIMESTAMP_NAMES:
        return _Column(name, described, "timestamp")
    physical = t.get("connect.type") or {"int": "int32", "long": "int64"}.get(t.get("type", ""), t.get("type", "?"))
    return _Column(name, described, physical, unsigned=unsigned, length=int(length) if length else None)


_TIMESTAMP_NAMES = {
    "io.debezium.time.Timestamp",
    "io.debezium.time.MicroTimestamp",
    "io.debezium.time.NanoTimestamp",
    "io.debezium.time.ZonedTimestamp",
    "org.apache.kafka.connect.data.Timestamp",
}


def _judge(column: _Column, target: str) -> tuple[str | None, str | None]:
    """(why ``target`` would lose values of ``column``, or a note when only the values can tell)."""
    if target in ("string", "text", "json"):
        return None, None  # text holds every value
    decimal = _DECIMAL.fullmatch(target)
    if decimal:
        return _judge_decimal(column, int(decimal[1]), int(decimal[2]))
    if target == "boolean":
        if column.kind == "boolean":
            return None, None
        if column.kind in _INTEGER_DIGITS:
            if column.length == 1:
                return None, None
            if column.length is not None:
                return f"a {column.described} holds values other than 0 and 1", None
            return (
                None,
                "the source's width is not known (column.propagate.source.type): values other than 0/1 are refused",
            )
        return f"{column.kind} values are not booleans", None
    if target in ("int", "bigint"):
        need = "int32" if target == "int" else "int64"
        if column.kind in _RANK and _RANK[column.kind] <= _RANK[need] and not (column.unsigned and column.kind == need):
            return None, None
        return f"{target} cannot hold every {column.described} value", None
    if target == "double":
        if column.kind in ("float", "double", "int8", "int16", "int32"):
            return None, None
        return f"a double rounds {column.described} values", None
    if target.startswith("timestamp"):
        return (None, None) if column.kind == "timestamp" else (f"{column.described} values are not timestamps", None)
    if target.startswith("json:"):
        return (None, None) if column.kind == "string" else (f"{column.described} values are not JSON text", None)
    return f"unknown target {target}", None


def _judge_decimal(column: _Column, precision: int, scale: int) -> tuple[str | None, str | None]:
    integral = precision - scale
    if column.kind == "decimal" and column.precision is not None and column.scale is not None:
        if column.scale > scale:
            return f"{column.scale - scale} fewer decimal(s) would round values", None
        if column.precision - column.scale > integral:
            return (
                f"{column.precision - column.scale - integral} fewer integral digit(s) would not hold every value",
                None,
            )
        return None, None
    if column.kind in _INTEGER_DIGITS:
        need = 20 if column.unsigned and column.kind == "int64" else _INTEGER_DIGITS[column.kind]
        if need > integral:
            return f"{need} integral digits needed, {integral} given", None
        return None, None
    if column.kind in ("numeric", "decimal"):
        return None, "the column has no declared precision: a value that does not fit is refused, never rounded"
    return f"{column.described} values are not numbers", None
