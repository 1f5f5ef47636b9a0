"""What flattening refuses before it reads a row, and what a TRUNCATE event becomes under each setting."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from hudi_cdc.envelope import flatten
from hudi_cdc.errors import DecodeError
from payloads import PostgresPolicy
from payloads.base import ERROR_COLUMN, OP_COLUMN

ENVELOPE = (
    "op string, before struct<id:bigint,name:string>, after struct<id:bigint,name:string>, source struct<lsn:bigint>"
)


def _flatten(frame, *, key_fields=("id",), truncates: str = "fail"):  # noqa: ANN001, ANN202
    return flatten(
        frame,
        source_meta_columns=PostgresPolicy().source_meta_columns,
        key_fields=key_fields,
        ingested_at=datetime.now(UTC),
        where="test batch",
        truncates=truncates,
    )


def test_records_that_are_not_envelopes_are_refused_naming_what_they_hold(spark) -> None:
    frame = spark.createDataFrame([], "id bigint, name string, op string")
    with pytest.raises(
        DecodeError, match=r"^test batch: .*missing field\(s\) before, after, source \(found id, name, op\)"
    ):
        _flatten(frame)


def test_an_after_that_is_not_a_record_is_refused(spark) -> None:
    frame = spark.createDataFrame([], "op string, before string, after string, source struct<lsn:bigint>")
    with pytest.raises(DecodeError, match="envelope field 'after' is string, expected a record"):
        _flatten(frame)


def test_a_key_field_the_table_lacks_is_refused(spark) -> None:
    frame = spark.createDataFrame([], ENVELOPE)
    with pytest.raises(DecodeError, match=r"record key field\(s\) code not in the table's columns \(id, name\)"):
        _flatten(frame, key_fields=("code",))


@pytest.mark.parametrize(
    ("truncates", "ops", "truncate_error"),
    [
        (
            "fail",
            ["c", "t"],
            "a TRUNCATE event (op=t) with truncate_behavior = fail: set it to apply or ignore, or re-snapshot",
        ),
        ("apply", ["c", "t"], None),
        ("ignore", ["c"], None),
    ],
)
def test_a_truncate_fails_applies_or_goes(spark, truncates: str, ops: list[str], truncate_error: str | None) -> None:
    rows = [("c", None, {"id": 1, "name": "a"}, {"lsn": 5}), ("t", None, None, {"lsn": 6})]
    flat = _flatten(spark.createDataFrame(rows, ENVELOPE), truncates=truncates).orderBy("_source_lsn").collect()
    assert [r[OP_COLUMN] for r in flat] == ops
    assert flat[0]["id"] == 1 and flat[0]["name"] == "a" and flat[0][ERROR_COLUMN] is None
    if len(flat) > 1:
        assert flat[1]["id"] is None and flat[1][ERROR_COLUMN] == truncate_error
