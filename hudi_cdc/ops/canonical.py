"""One text per value, computed alike in the source database and in Spark, so that hashes can be compared.

``hudi-cdc verify`` never moves a table to compare it: each side hashes its own
rows where they live and only the sums per bucket travel. That needs, for every
column, an expression in Postgres SQL and one in Spark SQL that give the very
same text for a value and its Hudi counterpart (docs/types.md says which Hudi
type each source type becomes). Exact, never approximate:

- floating point compares the IEEE bits (``float8send`` / ``doubleToLongBits``),
  since the two engines print doubles differently;
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

__all__ = ["Mapping", "key_hash", "map_column", "map_spark_column", "row_text", "sql_ident", "spark_ident"]


@dataclass(frozen=True)
class Mapping:
    """How one column is compared: its canonical text in Postgres and in Spark."""

    name: str
    source_type: str
    hudi_type: str
    source_sql: str  # the source side's expression, text or NULL: Postgres SQL (Spark SQL for a replay)
    spark_sql: str  # the Hudi side's Spark SQL expression: string or NULL


def sql_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def spark_ident(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


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
    if pg_type == "boolean" and hudi_type == "boolean":
        return ok(f"{pg}::text", f"cast({sp} as string)")
    if pg_type in _TEXTS and hudi_type == "string":
        return ok(f"{pg}::text", sp)
    if pg_type == "character" and hudi_type == "string":
        return ok(f"format('%s', {pg})", sp)  # ::text would strip the blanks Debezium keeps
    if pg_type == "double precision" and hudi_type == "double":
        bits = f"cast(java_method('java.lang.Double', 'doubleToLongBits', {sp}) as bigint)"
        return ok(f"encode(float8send({pg}), 'hex')", f"lpad(lower(hex({bits})), 16, '0')")
    if pg_type == "real" and hudi_type == "float":
        bits = f"(cast(java_method('java.lang.Float', 'floatToIntBits', {sp}) as bigint) & 4294967295)"
        return ok(f"encode(float4send({pg}), 'hex')", f"lpad(lower(hex({bits})), 8, '0')")
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
        if hudi_type == "double":
            return (
                f"lpad(lower(hex(cast(java_method('java.lang.Double', 'doubleToLongBits', {e}) as bigint))), 16, '0')"
            )
        if hudi_type == "float":
            return (
                f"lpad(lower(hex(cast(java_method('java.lang.Float', 'floatToIntBits', {e}) as bigint) & 4294967295)),"
                " 8, '0')"
            )
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


def _framed(expr: str, *, spark: bool) -> str:
    """``<length>:<text>``, or ``~`` for NULL: concatenations of framed values cannot collide."""
    if spark:
        return f"coalesce(concat(cast(length({expr}) as string), ':', {expr}), '~')"
    return f"coalesce(length({expr})::text || ':' || {expr}, '~')"


def row_text(exprs: list[str], *, spark: bool) -> str:
    parts = [_framed(e, spark=spark) for e in exprs]
    return f"concat({', '.join(parts)})" if spark else " || ".join(parts) if parts else "''"


def key_hash(text_sql: str, *, spark: bool) -> str:
    """A 60-bit non-negative integer from the md5 of ``text_sql`` (the same number in both engines)."""
    if spark:
        return f"cast(conv(substr(md5({text_sql}), 1, 15), 16, 10) as bigint)"
    return f"('x' || substr(md5({text_sql}), 1, 15))::bit(60)::bigint"
