"""Shaping on local frames: masks on envelopes, renames, computed columns, the filter, kept columns."""

from __future__ import annotations

import pytest

from hudi_cdc.config import load_config
from hudi_cdc.envelope.shape import REDACTED, Shape, hmac_hex, shape_plan
from hudi_cdc.errors import ConfigError
from payloads import PostgresPolicy
from payloads.base import DELETED_COLUMN, INGESTED_AT_COLUMN, ORDER_COLUMN, PlanCounts, WritePlan

PLACEHOLDER = "__debezium_unavailable_value"
ENVELOPE = (
    "op string, before struct<id:bigint,email:string,ssn:string>, "
    "after struct<id:bigint,email:string,ssn:string>, source struct<lsn:bigint>"
)
SALT = "pepper-7f3a9c"


def _shape(monkeypatch, **settings) -> Shape:  # noqa: ANN001
    monkeypatch.setenv("TEST_MASK_SALT", SALT)
    settings = {"record_key_fields": "id", **settings}
    config = load_config(
        target_base_path="/tmp/unused", target_table="customers", source_path="/tmp/unused", env={}, **settings
    )
    return Shape.of(config, PostgresPolicy(toast_placeholder=PLACEHOLDER))


def test_masks_hash_redact_keep_last_leave_null_and_the_placeholder_and_keep_the_salt_out_of_plans(
    spark, monkeypatch
) -> None:
    shape = _shape(
        monkeypatch,
        masks={"email": "hash", "ssn": "keep_last:4"},
        mask_salt_env="TEST_MASK_SALT",
    )
    rows = [
        ("c", None, (1, "a@x.io", "123-45-6789"), (10,)),
        ("u", None, (2, PLACEHOLDER, "12"), (11,)),
        ("d", (3, None, "987654321"), None, (12,)),
    ]
    masked = shape.mask_envelopes(spark.createDataFrame(rows, ENVELOPE), "test")
    got = {(r["op"]): r for r in masked.collect()}
    assert got["c"]["after"]["email"] == hmac_hex(SALT.encode(), "a@x.io")
    assert got["c"]["after"]["ssn"] == "*******6789"
    assert got["u"]["after"]["email"] == PLACEHOLDER  # the policy fills it from the stored, masked value
    assert got["u"]["after"]["ssn"] == "12"  # no more than N characters: nothing to hide
    assert got["d"]["before"]["email"] is None and got["d"]["before"]["ssn"] == "*****4321"
    assert got["d"]["after"] is None
    # Masking twice changes nothing for keep_last (a re-applied event); hash is not re-applied (see test_transforms).
    again = shape.mask_envelopes(masked.select("op", "before", "after", "source"), "test").collect()
    assert {r["op"]: r["before"] for r in again}["d"]["ssn"] == "*****4321"
    plan_text = masked._jdf.queryExecution().toString()
    assert "mask_hash" in plan_text and SALT not in plan_text and SALT not in repr(shape)

    redact = _shape(monkeypatch, masks={"email": "redact"})
    assert redact.mask_envelopes(spark.createDataFrame(rows[:1], ENVELOPE), "t").first()["after"]["email"] == REDACTED


def test_mask_mistakes_are_named(spark, monkeypatch) -> None:
    frame = spark.createDataFrame([("c", None, (1, "a", "b"), (1,))], ENVELOPE)
    with pytest.raises(ConfigError, match="column 'id' is bigint; masks apply to text columns only"):
        _shape(monkeypatch, masks={"id": "hash"}, mask_salt_env="TEST_MASK_SALT").mask_envelopes(frame, "t")
    with pytest.raises(ConfigError, match="no column 'phone' in the source"):
        _shape(monkeypatch, masks={"phone": "redact"}).check_masked_columns(["id", "email"], "t")
    with pytest.raises(ConfigError, match="hash mask needs the secret salt"):
        _shape(monkeypatch, masks={"email": "hash"})
    with pytest.raises(ConfigError, match="only hash keeps distinct keys distinct"):
        _shape(monkeypatch, masks={"id": "redact"})
    with pytest.raises(ConfigError, match="expected hash, redact or keep_last:N"):
        _shape(monkeypatch, masks={"email": "keep_last:x"})
    with pytest.raises(ConfigError, match="environment variable NOPE_SALT"):
        _shape(monkeypatch, masks={"email": "hash"}, mask_salt_env="NOPE_SALT")
    with pytest.raises(ConfigError, match="cannot be dropped: the record key"):
        _shape(monkeypatch, columns_drop=["id"])


def test_renames_refuse_a_target_the_source_has(spark, monkeypatch) -> None:
    shape = _shape(monkeypatch, column_renames={"email_address": "email"}, computed_columns={"domain": "1"})
    old = spark.createDataFrame([(1, "a@x")], "id bigint, email string")
    new = spark.createDataFrame([(1, "b@x")], "id bigint, email_address string")
    assert shape.rename(old, "old").columns == ["id", "email"]
    assert shape.rename(new, "new").columns == ["id", "email"]
    both = spark.createDataFrame([(1, "a", "b")], "id bigint, email string, email_address string")
    with pytest.raises(ConfigError, match="rename onto a column the source does not have"):
        shape.rename(both, "part 2")
    clash = spark.createDataFrame([(1, "x")], "id bigint, domain string")
    with pytest.raises(ConfigError, match="computed_columns: domain is a source column too"):
        shape.rename(clash, "part 1")


def _plan(spark, rows) -> WritePlan:  # noqa: ANN001
    schema = f"id bigint, status string, notes string, {ORDER_COLUMN} string, {DELETED_COLUMN} boolean, "
    schema += f"{INGESTED_AT_COLUMN} timestamp, _source_ts_ms bigint"
    frame = spark.createDataFrame(rows, schema)
    counts = PlanCounts(events=len(rows), upserts=sum(not r[4] for r in rows), deletes=sum(r[4] for r in rows))
    return WritePlan(decided=frame, upserts=frame, tombstones=None, counts=counts)


def test_the_filter_turns_failing_winners_into_deletes_with_tombstones_then_computed_and_kept_columns(
    spark, monkeypatch
) -> None:
    from datetime import datetime

    now = datetime(2026, 1, 1)
    shape = _shape(
        monkeypatch,
        row_filter="status <> 'test'",
        computed_columns={"tag": "upper(status)", "tag2": "concat(tag, '-', _source_ts_ms)"},
        columns_drop=["notes"],
    )
    plan = _plan(
        spark,
        [
            (1, "live", "n1", "0001", False, now, 5),
            (2, "test", "n2", "0002", False, now, 6),
            (3, None, "n3", "0003", False, now, 7),  # NULL does not pass
            (4, "test", "n4", "0004", True, now, 8),  # a delete stays a delete, no extra tombstone
        ],
    )
    shaped, tombstones = shape_plan(shape, plan, key_fields=("id",))
    got = {r["id"]: r for r in shaped.upserts.collect()}
    assert "notes" not in shaped.upserts.columns and {"tag", "tag2"} <= set(shaped.upserts.columns)
    assert [got[k][DELETED_COLUMN] for k in (1, 2, 3, 4)] == [False, True, True, True]
    assert got[1]["tag2"] == "LIVE-5" and got[2][ORDER_COLUMN] == "0002"  # the delete at the row's own position
    assert sorted((r["id"], r[ORDER_COLUMN]) for r in tombstones.collect()) == [(2, "0002"), (3, "0003")]
    assert (shaped.counts.upserts, shaped.counts.deletes) == (1, 3)

    bad = _shape(monkeypatch, row_filter="no_such_column > 1")
    with pytest.raises(ConfigError, match=r"row_filter = 'no_such_column > 1' does not apply to the rows: .*no_such"):
        shape_plan(bad, plan, key_fields=("id",))
    keep = _shape(monkeypatch, columns_keep=["status"])
    kept = shape_plan(keep, plan, key_fields=("id",))[0].upserts.columns
    assert "notes" not in kept and {"id", "status", ORDER_COLUMN, DELETED_COLUMN} <= set(kept)


def test_a_masked_key_prints_masked_and_quarantined_events_are_not_masked_again(spark, monkeypatch) -> None:
    from datetime import UTC, datetime

    from pyspark.sql import functions as F

    from hudi_cdc.envelope.batch import change_rows
    from hudi_cdc.envelope.events import Batch, BatchPart
    from payloads import StoredState
    from payloads.base import ARRIVAL_COLUMN, ORIGIN_COLUMN, RAW_COLUMN

    shape = _shape(monkeypatch, masks={"email": "hash"}, mask_salt_env="TEST_MASK_SALT", record_key_fields="email")
    envelope = "op string, before struct<email:string>, after struct<email:string>, source struct<lsn:bigint>"
    frame = spark.createDataFrame([("x", None, ("ann@x.io",), (10,))], envelope).select(
        "*",
        F.lit("f1.avro").alias(ORIGIN_COLUMN),
        F.struct(F.lit("f1").alias("file"), F.lit(0).alias("row")).alias(ARRIVAL_COLUMN),
    )
    policy = PostgresPolicy(toast_placeholder=PLACEHOLDER)
    flat = change_rows(
        Batch([BatchPart(envelopes=frame)], {}, "test batch"),
        policy,
        key_fields=("email",),
        ingested_at=datetime.now(UTC),
        behavior="fail",
        table_schema=None,
        shape=shape,
    )
    errors = " ".join(policy.plan(flat, key_fields=("email",), stored=StoredState.empty()).errors)
    assert "unknown op 'x'" in errors and hmac_hex(SALT.encode(), "ann@x.io") in errors and "ann@x.io" not in errors
    # Read back from the quarantine table (raw: a struct), the envelope was masked when set aside.
    quarantined = frame.withColumn(RAW_COLUMN, F.struct(F.lit(b"x").alias("data")))
    assert shape.mask_envelopes(quarantined, "t").first()["after"]["email"] == "ann@x.io"
