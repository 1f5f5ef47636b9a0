"""One text per value, computed alike in the source database and in Spark, so that hashes can be compared.

``hudi-cdc verify`` never moves a table to compare it: each side hashes its own
rows where they live and only the sums per bucket travel. That needs, for every
column, an expression in the source's SQL (Postgres, or MySQL/MariaDB) and one
in Spark SQL that give the very same text for a value and its Hudi counterpart
(docs/types.md says which Hudi type each source type becomes). Exact, never
approximate:

- floating point compares the IEEE bits (``float8send`` / ``doubleToLongBits``;
  MySQL has no such function, so its bits are computed from the value's
  exponent and mantissa, which is exact), since the engines print doubles
  differently;
- decimals use one zero-padded fixed-point format in both (Spark prints small
  decimals in scientific notation);
- timestamps compare epoch microseconds (the instant; ``timestamp without time
  zone`` is stored as that wall-clock time in UTC);
- binary compares lower-case hex; arrays compare JSON; text as is.

A source type with no exact counterpart here is not compared, and the result
says which columns were left out and why, rather than guessing.

Pure: builds SQL text only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = [
    "Engine",
    "Mapping",
    "key_hash",
    "map_column",
    "map_mysql_column",
    "map_spark_column",
    "row_text",
    "sql_ident",
    "spark_ident",
]

Engine = Literal["postgres", "mysql", "spark"]


@dataclass(frozen=True)
class Mapping:
    """How one column is compared: its canonical text in Postgres and in Spark."""

    name: str
    source_type: str
    hudi_type: str
    source_sql: str  # the source side's expression, text or NULL: its SQL (Spark SQL for a replay)
    spark_sql: str  # the Hudi side's Spark SQL expression: string or NULL


def sql_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def spark_ident(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


mysql_ident = spark_ident  # MySQL and MariaDB quote names as Spark does


def _spark_float_bits(e: str, *, double: bool) -> str:
    """The IEEE bits of a Spark float/double as lower-case hex (NULL stays NULL: reflection refuses a null)."""
    if double:
        bits = f"cast(java_method('java.lang.Double', 'doubleToLongBits', {e}) as bigint)"
        return f"if({e} is null, null, lpad(lower(hex({bits})), 16, '0'))"
    bits = f"(cast(java_method('java.lang.Float', 'floatToIntBits', {e}) as bigint) & 4294967295)"
    return f"if({e} is null, null, lpad(lower(hex({bits})), 8, '0'))"


_INTEGERS = {"smallint", "integer", "bigint"}
_TEXTS = {"text", "character varying", "uuid", "json", "jsonb", "name", "citext", "xml"}
_TEXT_ARRAYS = {"_text", "_varchar", "_int2", "_int4", "_int8", "_bool", "_uuid"}


def _decimal_format(precision: int, scale: int) -> str:
    digits = "0" * max(precision - scale, 1)
    return digits + ("." + "0" * scale if scale else "")


def map_column(
    name: str, pg_type: str, udt_name: str, precision: int | None, scale: int | None, hudi_type: str
) -> Mapping | str:
    """The comparison of one column, or the reason it cannot be compared exactly."""
    pg, sp = sql_ident(name), spark_ident(name)

    def ok(source_sql: str, spark_sql: str) -> Mapping:
        return Mapping(name, pg_type if pg_type != "ARRAY" else udt_name, hudi_type, source_sql, spark_sql)

    if pg_type in _INTEGERS and hudi_type in ("int", "bigint", "smallint"):
        return ok(f"{pg}::text", f"cast({sp} as string)")
    if pg_type in _INTEGERS and hudi_type.endswith(",0)") and hudi_type.startswith("decimal("):  # a type mapping
        return ok(f"{pg}::text", f"cast({sp} as string)")
    if pg_type == "timestamp without time zone" and hudi_type == "string":  # mapped to text (type_mappings)
        return ok(f"to_char({pg}, 'YYYY-MM-DD HH24:MI:SS.US')", sp)
    if pg_type == "boolean" and hudi_type == "boolean":
        return ok(f"{pg}::text", f"cast({sp} as string)")
    if pg_type in _TEXTS and hudi_type == "string":
        return ok(f"{pg}::text", sp)
    if pg_type == "character" and hudi_type == "string":
        # ::text would strip the blanks Debezium keeps; format() alone turns NULL into ''.
        return ok(f"case when {pg} is not null then format('%s', {pg}) end", sp)
    if pg_type == "double precision" and hudi_type == "double":
        return ok(f"encode(float8send({pg}), 'hex')", _spark_float_bits(sp, double=True))
    if pg_type == "real" and hudi_type == "float":
        return ok(f"encode(float4send({pg}), 'hex')", _spark_float_bits(sp, double=False))
    if pg_type == "numeric" and hudi_type.startswith("decimal("):
        p, s = (int(x) for x in hudi_type[len("decimal(") : -1].split(","))
        fmt = _decimal_format(p, s)
        # Both engines print the absolute value zero-padded to the declared digits; the sign goes in front.
        return ok(
            f"case when {pg} < 0 then '-' else '' end || ltrim(to_char(abs({pg}), '{fmt}'))",
            f"concat(if({sp} < 0, '-', ''), to_char(abs({sp}), '{fmt}'))",
        )
    if pg_type == "numeric" and hudi_type == "string":
        # Exact decimal text; the scale is not compared (Debezium drops trailing zeros of NUMERIC without a
        # declared scale: 1.50 arrives as 1.5), so both sides drop them.
        trimmed = f"regexp_replace(regexp_replace({sp}, '(\\\\.[0-9]*?)0+$', '$1'), '\\\\.$', '')"
        return ok(f"trim_scale({pg})::text", trimmed)
    if pg_type == "date" and hudi_type == "date":
        return ok(f"to_char({pg}, 'YYYY-MM-DD')", f"date_format({sp}, 'yyyy-MM-dd')")
    if pg_type.startswith("timestamp") and hudi_type == "timestamp":
        return ok(f"(extract(epoch from {pg}) * 1000000)::bigint::text", f"cast(unix_micros({sp}) as string)")
    if pg_type == "time without time zone" and hudi_type == "string":
        # HH:MM:SS[.fff[fff]] as written: pad the fraction to microseconds.
        frac = f"rpad(coalesce(nullif(substr({sp}, 10), ''), ''), 6, '0')"
        return ok(f"to_char({pg}, 'HH24:MI:SS.US')", f"concat(substr({sp}, 1, 8), '.', {frac})")
    if pg_type == "bytea" and hudi_type == "binary":
        return ok(f"encode({pg}, 'hex')", f"lower(hex({sp}))")
    if pg_type == "ARRAY" and udt_name in _TEXT_ARRAYS and hudi_type.startswith("array<"):
        return ok(f"array_to_json({pg})::text", f"to_json({sp})")
    return f"no exact comparison of Postgres {pg_type if pg_type != 'ARRAY' else udt_name} with Hudi {hudi_type}"


_MYSQL_INTEGERS = {"tinyint", "smallint", "mediumint", "int", "integer", "bigint", "year"}
_MYSQL_TEXTS = {"char", "varchar", "tinytext", "text", "mediumtext", "longtext", "enum", "set", "json"}
_MYSQL_BINARIES = {"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"}


def _mysql_float_bits(c: str, *, exponent_bits: int, mantissa_bits: int) -> str:
    """The IEEE 754 bits of a MySQL FLOAT/DOUBLE value as lower-case hex, computed exactly.

    MySQL has no ``float8send``: the exponent comes from ``log2`` (corrected by
    one where rounding put it off), the mantissa is the value scaled by a power
    of two, which is exact in binary floating point. Subnormals use the
    smallest exponent. MySQL stores no NaN, infinity or negative zero.
    """
    bias = (1 << (exponent_bits - 1)) - 1
    a = f"abs({c})"
    e0 = f"least(greatest(floor(log2({a})), {1 - bias}), {bias})"  # pow(2, e0) stays finite
    e = f"({e0} - ({a} / pow(2, {e0}) < 1) + ({a} / pow(2, {e0}) >= 2))"
    normal = (
        f"(cast({e} + {bias} as unsigned) << {mantissa_bits})"
        f" | cast(({a} / pow(2, {e}) - 1) * pow(2, {mantissa_bits}) as unsigned)"
    )
    subnormal = f"cast({a} / pow(2, {1 - bias - mantissa_bits}) as unsigned)"
    magnitude = f"case when {c} = 0 then 0 when {a} < pow(2, {1 - bias}) then {subnormal} else {normal} end"
    sign = f"(cast({c} < 0 as unsigned) << {exponent_bits + mantissa_bits})"
    digits = (1 + exponent_bits + mantissa_bits) // 4
    return f"lpad(lower(hex({sign} | {magnitude})), {digits}, '0')"


def map_mysql_column(
    name: str, data_type: str, column_type: str, precision: int | None, scale: int | None, hudi_type: str
) -> Mapping | str:
    """The comparison of one MySQL/MariaDB column, or the reason it cannot be compared exactly.

    ``data_type`` and ``column_type`` are information_schema's (``tinyint`` and
    ``tinyint(1) unsigned``). The session must run with ``time_zone = '+00:00'``
    (:class:`hudi_cdc.upstream.database.SourceDatabase` sets it), so that TIMESTAMP
    columns read as UTC.
    """
    my, sp = mysql_ident(name), spark_ident(name)
    data_type = data_type.lower()

    def ok(source_sql: str, spark_sql: str) -> Mapping:
        return Mapping(name, column_type, hudi_type, source_sql, spark_sql)

    if data_type in _MYSQL_INTEGERS and hudi_type == "boolean":  # BOOLEAN is TINYINT(1)
        return ok(f"if({my} is null, null, if({my} <> 0, 'true', 'false'))", f"cast({sp} as string)")
    if data_type in _MYSQL_INTEGERS and hudi_type in ("int", "bigint", "smallint"):
        return ok(f"cast({my} as char)", f"cast({sp} as string)")
    if data_type in _MYSQL_INTEGERS and hudi_type.startswith("decimal(") and hudi_type.endswith(",0)"):
        return ok(f"cast({my} as char)", f"cast({sp} as string)")  # bigint unsigned mapped to decimal(20,0)
    if data_type in _MYSQL_TEXTS and hudi_type == "string":
        return ok(my, sp)
    if data_type == "datetime" and hudi_type == "string":  # mapped to text (type_mappings)
        return ok(f"date_format({my}, '%Y-%m-%d %H:%i:%s.%f')", sp)
    if data_type == "double" and hudi_type == "double":
        return ok(_mysql_float_bits(my, exponent_bits=11, mantissa_bits=52), _spark_float_bits(sp, double=True))
    if data_type == "float" and hudi_type == "float":
        return ok(_mysql_float_bits(my, exponent_bits=8, mantissa_bits=23), _spark_float_bits(sp, double=False))
    if data_type == "decimal" and hudi_type.startswith("decimal("):
        p, s = (int(x) for x in hudi_type[len("decimal(") : -1].split(","))
        width = max(p - s, 1) + (s + 1 if s else 0)
        return ok(
            f"concat(if({my} < 0, '-', ''), lpad(cast(abs({my}) as char), {width}, '0'))",
            f"concat(if({sp} < 0, '-', ''), to_char(abs({sp}), '{_decimal_format(p, s)}'))",
        )
    if data_type == "decimal" and hudi_type == "string":  # wider than Spark's 38 digits: exact text
        return ok(f"cast({my} as char)", sp)
    if data_type == "date" and hudi_type == "date":
        return ok(f"date_format({my}, '%Y-%m-%d')", f"date_format({sp}, 'yyyy-MM-dd')")
    if data_type in ("datetime", "timestamp") and hudi_type == "timestamp":
        # DATETIME is a wall-clock time (stored as that time in UTC); TIMESTAMP an instant (the session is UTC).
        micros = f"cast(timestampdiff(microsecond, '1970-01-01 00:00:00', {my}) as char)"
        return ok(micros, f"cast(unix_micros({sp}) as string)")
    if data_type == "time" and hudi_type == "string":
        frac = f"rpad(coalesce(nullif(substr({sp}, 10), ''), ''), 6, '0')"
        return ok(f"time_format({my}, '%H:%i:%s.%f')", f"concat(substr({sp}, 1, 8), '.', {frac})")
    if data_type in _MYSQL_BINARIES and hudi_type == "binary":
        return ok(f"lower(hex({my}))", f"lower(hex({sp}))")
    return f"no exact comparison of MySQL {column_type} with Hudi {hudi_type}"


def map_spark_column(name: str, replay_type: str, hudi_type: str) -> Mapping:
    """The comparison of a column both sides hold in Spark (a replay of change files against the table).

    The replay's value is cast to the table's type first (schema evolution may
    have widened the column), then both sides print it one way: floating point
    as IEEE bits, decimals zero-padded, timestamps as epoch microseconds, binary
    as hex, nested values as JSON.
    """
    sp = spark_ident(name)
    source = sp if replay_type == hudi_type else f"cast({sp} as {hudi_type})"

    def text(e: str) -> str:
        if hudi_type in ("double", "float"):
            return _spark_float_bits(e, double=hudi_type == "double")
        if hudi_type.startswith("decimal("):
            p, s = (int(x) for x in hudi_type[len("decimal(") : -1].split(","))
            return f"concat(if({e} < 0, '-', ''), to_char(abs({e}), '{_decimal_format(p, s)}'))"
        if hudi_type in ("timestamp", "timestamp_ntz"):
            return f"cast(unix_micros(cast({e} as timestamp)) as string)"
        if hudi_type == "binary":
            return f"lower(hex({e}))"
        if hudi_type.startswith(("array<", "map<", "struct<")):
            return f"to_json({e})"
        return f"cast({e} as string)"

    return Mapping(name, replay_type, hudi_type, text(source), text(sp))


def _framed(expr: str, engine: Engine) -> str:
    """``<length>:<text>``, or ``~`` for NULL: concatenations of framed values cannot collide."""
    if engine == "spark":
        return f"coalesce(concat(cast(length({expr}) as string), ':', {expr}), '~')"
    if engine == "mysql":
        return f"coalesce(concat(char_length({expr}), ':', {expr}), '~')"
    return f"coalesce(length({expr})::text || ':' || {expr}, '~')"


def row_text(exprs: list[str], engine: Engine) -> str:
    parts = [_framed(e, engine) for e in exprs]
    if engine == "postgres":
        return " || ".join(parts) if parts else "''"
    return f"concat({', '.join(parts)})"


def key_hash(text_sql: str, engine: Engine) -> str:
    """A 60-bit non-negative integer from the md5 of ``text_sql`` (the same number in every engine)."""
    if engine == "spark":
        return f"cast(conv(substr(md5({text_sql}), 1, 15), 16, 10) as bigint)"
    if engine == "mysql":
        return f"cast(conv(substr(md5({text_sql}), 1, 15), 16, 10) as unsigned)"
    return f"('x' || substr(md5({text_sql}), 1, 15))::bit(60)::bigint"
