"""The first load's pure parts: how each Postgres column is read, and how the key is split into ranges."""

from __future__ import annotations

import pytest

from hudi_cdc.errors import ConfigError
from hudi_cdc.sources.snapshot import PgColumn, column_reading, range_predicates


@pytest.mark.parametrize(
    ("column", "sql", "ddl"),
    [
        (PgColumn("n", "smallint", "int2", "b", False), '"n"', "int"),
        (PgColumn("n", "numeric(12,3)", "numeric", "b", False, 12, 3), '"n"', "decimal(12,3)"),
        (PgColumn("n", "numeric(45,5)", "numeric", "b", False, 45, 5), '"n"::text', "string"),
        (PgColumn("n", "numeric", "numeric", "b", False), 'trim_scale("n")::text', "string"),
        (
            PgColumn("c", "character(5)", "bpchar", "b", False),
            'case when "c" is not null then format(\'%s\', "c") end',
            "string",
        ),
        (
            PgColumn("t", "time without time zone", "time", "b", False),
            "to_char(\"t\"::interval, 'HH24:MI:SS.US')",
            "string",
        ),
        (
            PgColumn("t", "time(3) without time zone", "time", "b", False),
            "to_char(\"t\"::interval, 'HH24:MI:SS.MS')",
            "string",
        ),
        (
            PgColumn("a", "timestamp without time zone", "timestamp", "b", False),
            "\"a\" at time zone 'UTC'",
            "timestamp",
        ),
        (PgColumn("m", "mood", "mood", "e", False), '"m"::text', "string"),
        (PgColumn("x", "integer[]", "int4", "b", True), '"x"', "array<int>"),
        (PgColumn('we"ird', "text", "text", "b", False), '"we""ird"::text', "string"),
    ],
)
def test_each_column_is_read_as_debezium_sends_it(column: PgColumn, sql: str, ddl: str) -> None:
    assert column_reading(column) == (sql, ddl)


@pytest.mark.parametrize(
    "column",
    [PgColumn("cash", "money", "money", "b", False), PgColumn("spot", "point[]", "point", "b", True)],
)
def test_a_type_without_an_equal_reading_is_refused_by_name(column: PgColumn) -> None:
    with pytest.raises(ConfigError, match=rf"column {column.name} \({column.type_name.replace('[', '.')}"):
        column_reading(column)


def test_ranges_cover_the_column_once_nulls_included() -> None:
    assert range_predicates('"id"', []) == ["true"]
    assert range_predicates('"id"', ["10", "20"]) == [
        '"id" < 10 or "id" is null',
        '"id" >= 10 and "id" < 20',
        '"id" >= 20',
    ]
    # Each value falls in exactly one range (evaluated here on integers).
    bounds = [3, 7, 8]
    predicates = range_predicates("v", [str(b) for b in bounds])
    for v in range(-2, 12):
        hits = [p for p in predicates if eval(p.replace(" or v is null", ""), {"v": v})]  # noqa: S307
        assert len(hits) == 1, (v, hits)
