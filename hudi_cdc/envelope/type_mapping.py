"""Type mappings: per source type or per column, how a value lands instead of the default (docs/types.md).

``type_mappings`` keys a mapping by the column's source type: the database's own name when the
connector propagates it (``column.propagate.source.type``: ``tinyint(1)``, ``bigint unsigned``,
``numeric(12,4)``), else what Debezium's logical type says (``numeric`` for a NUMERIC without
precision, ``timestamp``, ``timestamptz``, ``json``). ``column_types`` keys it by column and wins.

A mapping never loses a value silently: a value that does not fit its target (a decimal with too
many digits, a tinyint that is not 0 or 1 mapped to boolean, JSON that does not parse with the given
schema) makes its event bad, with a message naming the column and the setting; the table's
``on_bad_event`` then fails the round or quarantines the event. Each mapping is a
:class:`~hudi_cdc.envelope.types.Conversion` of the physical Avro value, so it applies in the same
pass as the default conversions.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hudi_cdc.envelope.types import Conversion, avro_fields, value_conversions
from hudi_cdc.errors import ConfigError

if TYPE_CHECKING:
    from pyspark.sql import Column
    from pyspark.sql.types import DataType

__all__ = ["TypeMapping", "mapped_conversions", "source_types", "normalise_type"]

_SOURCE_TYPE = "__debezium.source.column.type"
_SOURCE_LENGTH = "__debezium.source.column.length"
_SOURCE_SCALE = "__debezium.source.column.scale"
_DECIMAL = re.compile(r"decimal\((\d+),\s*(\d+)\)")
_NAIVE_TIMESTAMPS = {
    "io.debezium.time.Timestamp",
    "io.debezium.time.MicroTimestamp",
    "io.debezium.time.NanoTimestamp",
    "org.apache.kafka.connect.data.Timestamp",
}
_BY_LOGICAL = {
    "io.debezium.data.VariableScaleDecimal": "numeric",
    "io.debezium.data.Json": "json",
    "io.debezium.time.ZonedTimestamp": "timestamptz",
    **dict.fromkeys(_NAIVE_TIMESTAMPS, "timestamp"),
}
_ALIASES = {"jsonb": "json", "timestamp with time zone": "timestamptz", "timestamp without time zone": "timestamp"}
_UNSIGNED_64 = 18446744073709551616  # 2**64: a BIGINT UNSIGNED sent as a Java long wraps by it


def normalise_type(name: str) -> str:
    """A source type name as mappings key it: lower case, single spaces, no space before ``(``."""
    text = re.sub(r"\s+", " ", name.strip().lower()).replace(" (", "(")
    return re.sub(r",\s+", ",", text)


@dataclass(frozen=True)
class TypeMapping:
    """A table's ``type_mappings`` (by source type) and ``column_types`` (by column)."""

    by_type: Mapping[str, str] = field(default_factory=dict)
    by_column: Mapping[str, str] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.by_type or self.by_column)

    def target(self, column: str, names: list[str]) -> tuple[str, str] | None:
        """(the setting that maps ``column``, its target), or None: by column first, then by source type."""
        if column in self.by_column:
            return f"column_types.{column}", self.by_column[column]
        by_type = {normalise_type(k): v for k, v in self.by_type.items()}
        for name in names:
            if name in by_type:
                return f'type_mappings."{name}"', by_type[name]
        return None


def source_types(field_type: Any) -> list[str]:  # noqa: ANN401 - an Avro field type
    """The source type names one Avro field answers to, most specific first (``tinyint(1)``, ``tinyint``)."""
    t = field_type
    if isinstance(t, list):
        branches = [b for b in t if b != "null"]
        t = branches[0] if len(branches) == 1 else None
    if not isinstance(t, dict):
        return []
    names = []
    parameters = t.get("connect.parameters") or {}
    if _SOURCE_TYPE in parameters:
        base = normalise_type(parameters[_SOURCE_TYPE])
        length, scale = parameters.get(_SOURCE_LENGTH), parameters.get(_SOURCE_SCALE)
        if length is not None and scale is not None:
            names.append(f"{base}({length},{scale})")
        if length is not None:
            names.append(f"{base}({length})")
        names.append(base)
        if base in _ALIASES:
            names.append(_ALIASES[base])
    logical = _BY_LOGICAL.get(t.get("connect.name", ""))
    if logical and logical not in names:
        names.append(logical)
    return names


def mapped_conversions(
    avro_schema: dict[str, Any] | None, physical: DataType, mapping: TypeMapping, *, where: str
) -> dict[str, Conversion]:
    """The default conversions of :mod:`hudi_cdc.envelope.types`, with ``mapping``'s columns replaced.

    ``physical`` is the row's Spark type as decoded (the envelope's ``after``). A column named in
    ``column_types`` that the row does not have is refused: a typo must not pass silently.
    """
    conversions = value_conversions(avro_schema) if avro_schema else {}
    if not mapping:
        return conversions
    from pyspark.sql.types import StructType

    if not isinstance(physical, StructType):
        raise ConfigError(f"{where}: the envelope's after image is {physical.simpleString()}, not a row")
    fields = avro_fields(avro_schema) if avro_schema else {}
    present = {f.name: f.dataType for f in physical.fields}
    missing = [c for c in mapping.by_column if c not in present]
    if missing:
        raise ConfigError(
            f"{where}: column_types names {', '.join(missing)}, not a column of the source "
            f"({', '.join(present)}): fix column_types"
        )
    out = dict(conversions)
    for name, dtype in present.items():
        avro_type = fields.get(name)
        chosen = mapping.target(name, source_types(avro_type))
        if chosen is None:
            continue
        setting, target = chosen
        out[name] = _mapped(name, dtype, avro_type, conversions.get(name), setting, target)
    return out


def _logical(avro_type: Any) -> tuple[str, bool]:  # noqa: ANN401 - an Avro field type
    """(connect.name, whether the source type is unsigned)."""
    names = source_types(avro_type)
    t = avro_type
    if isinstance(t, list):
        t = next((b for b in t if b != "null"), None)
    connect_name = t.get("connect.name", "") if isinstance(t, dict) else ""
    return connect_name, any("unsigned" in n for n in names)


def _mapped(
    name: str,
    physical: DataType,
    avro_type: Any,  # noqa: ANN401 - an Avro field type
    default: Conversion | None,
    setting: str,
    target: str,
) -> Conversion:
    """One column's conversion from its physical value to ``target``, with the check that refuses a misfit."""
    from pyspark.sql import functions as F

    connect_name, unsigned = _logical(avro_type)
    base: Callable[[Column], Column] = default.expr if default and default.expr else (lambda c: c)
    kind = default.target if default is not None and default.expr is not None else physical.simpleString()
    spec = target.strip()
    lowered = spec.lower()
    misfit = f"column '{name}': a value does not fit {spec} ({setting}); change the mapping or the table's on_bad_event"

    def refused(ok: Callable[[Column], Column]) -> Callable[[Column], Column]:
        return lambda c: F.when(c.isNotNull() & ~F.coalesce(ok(c), F.lit(False)), F.lit(misfit))

    if lowered == "boolean":
        if kind == "boolean":
            return Conversion("boolean", default.expr if default else None)
        if kind in ("int", "bigint", "smallint", "tinyint"):
            return Conversion("boolean", lambda c: c != F.lit(0), refused(lambda c: c.isin(0, 1)))
        raise _unmappable(name, kind, spec, setting)
    decimal = _DECIMAL.fullmatch(lowered)
    if decimal:
        return _to_decimal(name, kind, int(decimal[1]), int(decimal[2]), base, unsigned, setting, refused)
    if lowered in ("string", "text", "json"):
        if connect_name == "io.debezium.time.ZonedTimestamp":
            return Conversion("string", lambda c: c)  # the ISO text as the connector sent it
        if connect_name in _NAIVE_TIMESTAMPS:
            return Conversion("string", lambda c: F.date_format(base(c), "yyyy-MM-dd HH:mm:ss.SSSSSS"))
        return Conversion("string", lambda c: base(c).cast("string"))
    if lowered == "timestamp" or lowered.startswith("timestamp:"):
        zone = spec.split(":", 1)[1] if ":" in spec else None
        if connect_name in _NAIVE_TIMESTAMPS and zone:
            # A naive timestamp is the source's wall-clock time: read it in ``zone``, store the instant.
            return Conversion("timestamp", lambda c: F.to_utc_timestamp(base(c), zone))
        if kind in ("string",) and not connect_name:
            return Conversion(
                "timestamp", lambda c: c.cast("timestamp"), refused(lambda c: c.cast("timestamp").isNotNull())
            )
        return Conversion("timestamp", default.expr if default else None)
    if lowered.startswith("json:"):
        return _to_json(name, kind, spec.split(":", 1)[1].strip(), setting, misfit)
    if lowered in ("int", "bigint", "double"):

        def survives(c: Column) -> Column:
            cast = base(c).cast(lowered)
            if kind == "string":  # the text must be the number's own ("12", not "12.5" or " 12")
                return cast.cast("string") == base(c)
            return cast.isNotNull() & (cast == base(c))  # compared as numbers: 1 and 1.0 are equal

        return Conversion(lowered, lambda c: base(c).cast(lowered), refused(survives))
    raise _unmappable(name, kind, spec, setting)


def _to_decimal(
    name: str,
    kind: str,
    precision: int,
    scale: int,
    base: Callable[[Column], Column],
    unsigned: bool,
    setting: str,
    refused: Callable[[Callable[[Column], Column]], Callable[[Column], Column]],
) -> Conversion:
    """To ``decimal(precision,scale)``, refusing a value with more integral or fractional digits (never rounding)."""
    from pyspark.sql import functions as F

    ddl = f"decimal({precision},{scale})"
    if kind in ("int", "bigint", "smallint", "tinyint"):
        if unsigned and kind == "bigint":
            # bigint.unsigned.handling.mode=long sends a value >= 2^63 as its 64-bit pattern: negative.
            def value(c: Column) -> Column:
                wide = c.cast("decimal(20,0)")
                return F.when(c < 0, wide + F.lit(str(_UNSIGNED_64)).cast("decimal(20,0)")).otherwise(wide).cast(ddl)

        else:

            def value(c: Column) -> Column:
                return c.cast("decimal(20,0)").cast(ddl)

        return Conversion(ddl, value, refused(lambda c: value(c).isNotNull()))
    if kind.startswith("decimal"):
        # Compared as decimals (exact: Spark widens both sides): an overflow reads NULL, a rounding differs.
        def fits_decimal(c: Column) -> Column:
            return base(c).cast(ddl).isNotNull() & (base(c).cast(ddl) == base(c))

        return Conversion(ddl, lambda c: F.when(fits_decimal(c), base(c).cast(ddl)), refused(fits_decimal))
    if kind == "string":
        # Exact digits by text: integral digits (leading zeros aside) and fractional ones (trailing zeros aside).
        def text(c: Column) -> Column:
            return base(c).cast("string")

        def fits(c: Column) -> Column:
            t = text(c)
            integral = F.regexp_extract(t, r"^[-+]?0*(\d*)", 1)
            fraction = F.regexp_extract(t, r"\.(\d*?)0*$", 1)
            return (
                t.rlike(r"^[-+]?\d*(\.\d*)?$")
                & (F.length(integral) <= F.lit(precision - scale))
                & (F.length(fraction) <= F.lit(scale))
            )

        return Conversion(ddl, lambda c: F.when(fits(c), text(c).cast(ddl)), refused(fits))
    raise _unmappable(name, kind, ddl, setting)


def _to_json(name: str, kind: str, ddl: str, setting: str, misfit: str) -> Conversion:
    """JSON text parsed with the Spark type ``ddl``; text that does not parse (or not to that type) is refused."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructField, StructType, _parse_datatype_string

    if kind != "string":
        raise _unmappable(name, kind, f"json:{ddl}", setting)
    try:
        parsed_type = _parse_datatype_string(ddl)
    except Exception as exc:  # noqa: BLE001 - Spark's parse errors have no common class
        raise ConfigError(f"{setting}: json:{ddl} is not a Spark DDL type ({str(exc).splitlines()[0]})") from None
    if not isinstance(parsed_type, StructType):
        raise ConfigError(f"{setting}: json:{ddl}: give a struct<...> type")
    corrupt = "__hudi_cdc_corrupt"
    reader = StructType([*parsed_type.fields, StructField(corrupt, _string())])
    options = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": corrupt}

    def value(c: Column) -> Column:
        parsed = F.from_json(c, reader, options)
        return F.when(
            c.isNotNull() & parsed[corrupt].isNull(),
            F.struct(*[parsed[f.name].alias(f.name) for f in parsed_type.fields]),
        )

    def error(c: Column) -> Column:
        parsed = F.from_json(c, reader, options)
        return F.when(c.isNotNull() & (parsed.isNull() | parsed[corrupt].isNotNull()), F.lit(misfit))

    return Conversion(parsed_type.simpleString(), value, error)


def _string() -> DataType:
    from pyspark.sql.types import StringType

    return StringType()


def _unmappable(name: str, kind: str, target: str, setting: str) -> ConfigError:
    return ConfigError(f"column '{name}' ({kind}) cannot be mapped to {target}: fix {setting}")
