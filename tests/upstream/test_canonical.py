"""The per-column comparison plans of verify (pure: SQL text only). The values themselves are proven equal
in both engines by tests/ops/test_verify.py, on a table of every type replicated through Debezium."""

from __future__ import annotations

import pytest

from hudi_cdc.upstream.canonical import Mapping, map_column, row_text, spark_ident, sql_ident


@pytest.mark.parametrize(
    ("pg_type", "udt", "precision", "scale", "hudi"),
    [
        ("integer", "int4", 32, 0, "int"),
        ("numeric", "numeric", 12, 2, "decimal(12,2)"),
        ("numeric", "numeric", None, None, "string"),
        ("double precision", "float8", 53, None, "double"),
        ("timestamp with time zone", "timestamptz", None, None, "timestamp"),
        ("bytea", "bytea", None, None, "binary"),
        ("ARRAY", "_text", None, None, "array<string>"),
    ],
)
def test_supported_pairs_give_both_expressions(pg_type: str, udt: str, precision, scale, hudi: str) -> None:  # noqa: ANN001
    mapped = map_column("c", pg_type, udt, precision, scale, hudi)
    assert isinstance(mapped, Mapping)
    assert '"c"' in mapped.source_sql and "`c`" in mapped.spark_sql


@pytest.mark.parametrize(
    ("pg_type", "udt", "hudi"),
    [("interval", "interval", "bigint"), ("integer", "int4", "string"), ("ARRAY", "_date", "array<date>")],
)
def test_pairs_without_an_exact_comparison_say_why(pg_type: str, udt: str, hudi: str) -> None:
    reason = map_column("c", pg_type, udt, None, None, hudi)
    assert isinstance(reason, str) and "no exact comparison" in reason and hudi in reason


def test_names_are_quoted_for_each_engine() -> None:
    assert sql_ident('we"ird') == '"we""ird"'
    assert spark_ident("we`ird") == "`we``ird`"


def test_values_are_framed_so_concatenations_cannot_collide() -> None:
    # ("ab", "c") and ("a", "bc") concatenate alike; framed with their lengths they do not.
    pg = row_text(["x", "y"], "postgres")
    assert pg.count("length(") == 2 and "'~'" in pg  # NULL has its own mark
    assert row_text(["x", "y"], "spark").startswith("concat(")
