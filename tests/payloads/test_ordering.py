"""Each flavor's ``_source_order`` sorts like the source positions it encodes (Spark, no Hudi)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from hudi_cdc.envelope import flatten
from hudi_cdc.envelope.flatten import ORIGIN_COLUMN
from hudi_cdc.errors import DecodeError
from payloads import MySqlPolicy, OraclePolicy, PostgresPolicy, SqlServerPolicy
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


SQLSERVER_SOURCE = "change_lsn:string,commit_lsn:string,event_serial_no:bigint"


def test_sqlserver_orders_by_commit_then_change_then_serial(spark) -> None:
    positions = [  # (commit_lsn, change_lsn, event_serial_no), in the wanted order after the first
        ("0000002a:00000f60:0002", "0000002a:00000f58:0002", 2),
        ("0000002a:00000f60:0002", "0000002a:00000f58:0002", 1),
        ("0000002a:00000f60:0002", "0000002a:00000f50:0004", 9),
        ("00000029:ffffffff:ffff", "00000029:ffffffff:fff0", 1),
        ("0000002B:00000001:0001", "0000002B:00000001:0001", 1),  # upper-case hex is the same LSN
        ("00010000:00000000:0000", "00010000:00000000:0000", 1),
    ]
    rows = [("u", None, {"id": i}, {"commit_lsn": c, "change_lsn": h, "event_serial_no": s})
            for i, (c, h, s) in enumerate(positions)]  # fmt: skip
    flat = _flat(spark, rows, SQLSERVER_SOURCE, SqlServerPolicy())
    assert [r["id"] for r in flat.orderBy(ORDER_COLUMN).collect()] == [3, 2, 1, 0, 4, 5]
    assert flat.filter(f"{ERROR_COLUMN} is not null").count() == 0


def test_sqlserver_snapshot_ranks_below_streaming_and_bad_positions_are_errors(spark) -> None:
    lsn = "0000002a:00000f60:0002"
    rows = [
        ("r", None, {"id": 1}, {"commit_lsn": lsn, "change_lsn": None, "event_serial_no": None}),
        ("c", None, {"id": 2}, {"commit_lsn": lsn, "change_lsn": lsn, "event_serial_no": 1}),
        ("u", None, {"id": 3}, {"commit_lsn": None, "change_lsn": lsn, "event_serial_no": 1}),
        ("u", None, {"id": 4}, {"commit_lsn": "2a:f60:2", "change_lsn": lsn, "event_serial_no": 1}),
    ]
    flat = {r["id"]: r for r in _flat(spark, rows, SQLSERVER_SOURCE, SqlServerPolicy()).collect()}
    assert flat[1][ORDER_COLUMN] < flat[2][ORDER_COLUMN] and flat[1][ERROR_COLUMN] is None
    assert "commit_lsn or source.change_lsn is null on a streaming event" in flat[3][ERROR_COLUMN]
    assert "source.commit_lsn '2a:f60:2' is not an LSN" in flat[4][ERROR_COLUMN]


ORACLE_SOURCE = "scn:string,commit_scn:string,txSeq:bigint,ssn:bigint,txId:string"


def test_oracle_orders_by_commit_scn_then_tx_seq_then_scn_then_ssn(spark) -> None:
    positions = [  # (commit_scn, scn, txSeq, ssn)
        ("1000", "990", 2, 0),
        ("1000", "995", 1, 0),
        ("999", "998", 1, 0),  # numerically below 1000
        ("1000", "990", None, 5),  # no txSeq: older connectors; ssn decides within the SCN
        ("1000", "990", None, 4),
        ("18446744073709551615", "1", 1, 0),  # the largest SCN
    ]
    rows = [("u", None, {"id": i}, {"scn": s, "commit_scn": c, "txSeq": q, "ssn": n, "txId": "t"})
            for i, (c, s, q, n) in enumerate(positions)]  # fmt: skip
    flat = _flat(spark, rows, ORACLE_SOURCE, OraclePolicy())
    assert [r["id"] for r in flat.orderBy(ORDER_COLUMN).collect()] == [2, 4, 3, 1, 0, 5]
    assert flat.filter(f"{ERROR_COLUMN} is not null").count() == 0


def test_oracle_snapshot_ranks_below_streaming_and_bad_positions_are_errors(spark) -> None:
    rows = [
        ("r", None, {"id": 1}, {"scn": "5000", "commit_scn": None, "txSeq": None, "ssn": None, "txId": None}),
        ("u", None, {"id": 2}, {"scn": "4990", "commit_scn": "5000", "txSeq": 1, "ssn": 0, "txId": "t"}),
        ("u", None, {"id": 3}, {"scn": "4990", "commit_scn": None, "txSeq": 1, "ssn": 0, "txId": "t"}),
        ("u", None, {"id": 4}, {"scn": "0x1f", "commit_scn": "5000", "txSeq": 1, "ssn": 0, "txId": "t"}),
    ]
    flat = {r["id"]: r for r in _flat(spark, rows, ORACLE_SOURCE, OraclePolicy()).collect()}
    assert flat[1][ORDER_COLUMN] < flat[2][ORDER_COLUMN] and flat[1][ERROR_COLUMN] is None
    assert "commit_scn or source.scn is null on a streaming event" in flat[3][ERROR_COLUMN]
    assert "source.scn '0x1f' is not an SCN" in flat[4][ERROR_COLUMN]
    assert flat[2]["_source_txid"] == "t"
