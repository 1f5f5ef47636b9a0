"""Each flavor's ``_source_order`` sorts like the source positions it encodes (Spark, no Hudi)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from hudi_cdc.envelope import flatten
from hudi_cdc.envelope.flatten import ORIGIN_COLUMN
from hudi_cdc.errors import DecodeError
from payloads import MySqlPolicy, PostgresPolicy
from payloads.base import ARRIVAL_COLUMN, ERROR_COLUMN, ORDER_COLUMN


def _flat(spark, rows: list[tuple], source_ddl: str, policy):  # noqa: ANN001, ANN202
    frame = spark.createDataFrame(
        rows, f"op string, before struct<id:bigint>, after struct<id:bigint>, source struct<{source_ddl}>"
    )
    from pyspark.sql import functions as F

    frame = frame.withColumn(ORIGIN_COLUMN, F.lit("test")).withColumn(ARRIVAL_COLUMN, F.monotonically_increasing_id())
    flat = flatten(
        frame,
        source_meta_columns=policy.source_meta_columns,
        key_fields=["id"],
        ingested_at=datetime.now(UTC),
        where="test batch",
    )
    return policy.with_order(flat)


def test_mysql_positions_compare_numerically(spark) -> None:
    positions = [
        ("mysql-bin.000009", 900, 0),
        ("mysql-bin.000010", 4, 0),
        ("mysql-bin.000001", 23, 0),
        ("mysql-bin.000001", 123, 0),
        ("mysql-bin.000001", 123, 2),
        ("mysql-bin.1000000", 1, 0),
    ]
    rows = [("u", None, {"id": i}, {"file": f, "pos": p, "row": r}) for i, (f, p, r) in enumerate(positions)]
    flat = _flat(spark, rows, "file:string,pos:bigint,row:int", MySqlPolicy())
    ordered = [r["id"] for r in flat.orderBy(ORDER_COLUMN).collect()]
    assert ordered == [2, 3, 4, 0, 1, 5]
    assert flat.filter(f"{ERROR_COLUMN} is not null").count() == 0


def test_mysql_snapshot_ranks_below_streaming_and_bad_names_are_errors(spark) -> None:
    rows = [
        ("r", None, {"id": 1}, {"file": "mysql-bin.000003", "pos": 10, "row": 0}),
        ("c", None, {"id": 2}, {"file": "mysql-bin.000003", "pos": 10, "row": 0}),
        ("u", None, {"id": 3}, {"file": "binlog", "pos": 10, "row": 0}),
        ("u", None, {"id": 4}, {"file": None, "pos": None, "row": None}),
    ]
    flat = {r["id"]: r for r in _flat(spark, rows, "file:string,pos:bigint,row:int", MySqlPolicy()).collect()}
    assert flat[1][ORDER_COLUMN] < flat[2][ORDER_COLUMN]
    assert "has no numeric extension" in flat[3][ERROR_COLUMN]
    assert "source.file or source.pos is null" in flat[4][ERROR_COLUMN]


def test_postgres_lsn_is_unsigned_and_snapshot_ranks_lower(spark) -> None:
    rows = [
        ("u", None, {"id": 1}, {"lsn": 2**62, "txId": 7}),
        ("u", None, {"id": 2}, {"lsn": -1, "txId": 7}),  # 2**64 - 1 in Debezium's signed long
        ("r", None, {"id": 3}, {"lsn": 2**62, "txId": None}),
        ("r", None, {"id": 4}, {"lsn": None, "txId": None}),
    ]
    flat = _flat(spark, rows, "lsn:bigint,txId:bigint", PostgresPolicy())
    assert [r["id"] for r in flat.orderBy(ORDER_COLUMN).collect()] == [4, 3, 1, 2]
    by_id = {r["id"]: r for r in flat.collect()}
    assert by_id[2][ORDER_COLUMN] == "184467440737095516151"
    assert by_id[1]["_source_txid"] == "7" and by_id[1]["_source_op"] == "u"
    assert flat.filter(f"{ERROR_COLUMN} is not null").count() == 0


def test_wrong_flavor_is_named(spark) -> None:
    rows = [("u", None, {"id": 1}, {"lsn": 5, "txId": 1})]
    with pytest.raises(DecodeError, match=r"no 'file' field, needed for _source_file.*is --flavor right"):
        _flat(spark, rows, "lsn:bigint,txId:bigint", MySqlPolicy())


def test_delete_uses_before_and_flags_problems(spark) -> None:
    rows = [
        ("d", {"id": 1}, None, {"lsn": 5, "txId": 1}),
        ("d", None, None, {"lsn": 6, "txId": 1}),
        ("c", None, None, {"lsn": 7, "txId": 1}),
        ("t", None, None, {"lsn": 8, "txId": 1}),
        (None, None, {"id": 5}, {"lsn": 9, "txId": 1}),
    ]
    flat = _flat(spark, rows, "lsn:bigint,txId:bigint", PostgresPolicy()).orderBy("_source_lsn").collect()
    assert flat[0]["id"] == 1 and flat[0]["_hoodie_is_deleted"] is True and flat[0][ERROR_COLUMN] is None
    assert [r[ERROR_COLUMN] for r in flat[1:]] == [
        "delete without a before image",
        "op 'c' without an after image",
        "a TRUNCATE event (op=t) with truncate_behavior = fail: set it to apply or ignore, or re-snapshot",
        "envelope has no op",
    ]
