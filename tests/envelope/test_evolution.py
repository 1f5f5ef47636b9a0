"""Schema evolution through ``hudi-cdc ingest``: versions mixed in a batch, widening, drops, type changes."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from hudi_cdc.envelope.evolution import widen
from hudi_cdc.testing import envelope_schema, pg_event, write_events
from tests.support import ingest_args, run_cli


def _decimal(precision: int, scale: int) -> list:
    return [
        "null",
        {
            "type": "bytes",
            "logicalType": "decimal",
            "precision": precision,
            "scale": scale,
            "connect.name": "org.apache.kafka.connect.data.Decimal",
        },
    ]


V1 = envelope_schema(
    "orders",
    [
        ("id", "long"),
        ("name", ["null", "string"]),
        ("qty", ["null", "int"]),
        ("price", _decimal(10, 2)),
        ("legacy", ["null", "string"]),
    ],
)
# v2: adds email, widens qty and price, drops legacy.
V2 = envelope_schema(
    "orders",
    [
        ("id", "long"),
        ("name", ["null", "string"]),
        ("qty", ["null", "long"]),
        ("price", _decimal(12, 2)),
        ("email", ["null", "string"]),
    ],
)
# v3: name becomes an integer: incompatible.
V3 = envelope_schema(
    "orders",
    [
        ("id", "long"),
        ("name", ["null", "int"]),
        ("qty", ["null", "long"]),
        ("price", _decimal(12, 2)),
        ("email", ["null", "string"]),
    ],
)
# v4: adds a column, ingested with --schema-change-behavior ignore.
V4 = envelope_schema(
    "orders",
    [
        ("id", "long"),
        ("name", ["null", "string"]),
        ("qty", ["null", "long"]),
        ("price", _decimal(12, 2)),
        ("email", ["null", "string"]),
        ("extra", ["null", "string"]),
    ],
)


def test_widening_rules() -> None:
    from pyspark.sql.types import DecimalType, DoubleType, FloatType, IntegerType, LongType, StringType

    assert widen(IntegerType(), LongType()) == LongType()
    assert widen(FloatType(), DoubleType()) == DoubleType()
    assert widen(DecimalType(10, 2), DecimalType(12, 2)) == DecimalType(12, 2)
    assert widen(DecimalType(10, 2), DecimalType(10, 3)) is None
    assert widen(StringType(), IntegerType()) is None


@pytest.mark.hudi
@pytest.mark.parametrize("table_type", ["cow", "mor"])
def test_schema_versions_evolve_the_table(spark, tmp_path: Path, table_type: str) -> None:
    source, base = tmp_path / "events", str(tmp_path / "table")
    args = ingest_args(str(source), base, table_type=table_type)

    def row(key: int, **values: object) -> dict:
        return {"id": key, **values}

    write_events(
        source / "0001.avro",
        V1,
        [
            pg_event("c", lsn=10, after=row(1, name="a", qty=1, price=Decimal("1.50"), legacy="L1")),
            pg_event("c", lsn=11, after=row(2, name="b", qty=2, price=Decimal("2.50"), legacy="L2")),
        ],
    )
    assert run_cli(*args).exit_code == 0

    # One batch, two writer schemas: each file is decoded with its own schema.
    write_events(
        source / "0002.avro",
        V1,
        [pg_event("c", lsn=20, after=row(3, name="c", qty=3, price=Decimal("3.50"), legacy="L3"))],
    )
    write_events(
        source / "0003.avro",
        V2,
        [
            pg_event("u", lsn=30, after=row(1, name="a2", qty=2**40, price=Decimal("9999999999.99"), email="a@x")),
            pg_event("c", lsn=31, after=row(4, name="d", qty=4, price=Decimal("4.50"), email="d@x")),
        ],
    )
    result = run_cli(*args)
    assert result.exit_code == 0, result.output

    table = spark.read.format("hudi").load(base)
    types = {f.name: f.dataType.simpleString() for f in table.schema.fields}
    assert (types["qty"], types["price"], types["email"], types["legacy"]) == (
        "bigint",
        "decimal(12,2)",
        "string",
        "string",
    )
    rows = {r["id"]: (r["name"], r["qty"], r["price"], r["email"], r["legacy"]) for r in table.collect()}
    assert rows == {
        1: ("a2", 2**40, Decimal("9999999999.99"), "a@x", None),  # dropped column: NULL in the new version
        2: ("b", 2, Decimal("2.50"), None, "L2"),  # untouched row keeps the dropped column's value
        3: ("c", 3, Decimal("3.50"), None, "L3"),
        4: ("d", 4, Decimal("4.50"), "d@x", None),
    }

    # Incompatible: name text -> int stops the table, nothing committed.
    write_events(
        source / "0004.avro",
        V3,
        [pg_event("u", lsn=40, after=row(2, name=7, qty=2, price=Decimal("2.50"), email=None))],
    )
    from tests.support import commit_instants

    commits_before = commit_instants(spark, base)
    result = run_cli(*args)
    assert result.exit_code == 1
    assert "column 'name' changed type from string to int" in result.output, result.output
    assert spark.read.format("hudi").load(base).filter("id = 2").collect()[0]["name"] == "b"
    assert commit_instants(spark, base) == commits_before

    result = run_cli(*args, "--schema-change-behavior", "evolve")
    assert result.exit_code == 0, result.output
    assert spark.read.format("hudi").load(base).filter("id = 2").collect()[0]["name"] == "7"

    write_events(
        source / "0005.avro",
        V4,
        [pg_event("u", lsn=50, after=row(3, name="c5", qty=5, price=Decimal("5.00"), email="c@x", extra="E"))],
    )
    result = run_cli(*args, "--schema-change-behavior", "ignore")
    assert result.exit_code == 0, result.output
    table = spark.read.format("hudi").load(base)
    assert "extra" not in table.columns
    assert table.filter("id = 3").collect()[0]["name"] == "c5"
