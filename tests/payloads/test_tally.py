"""The plan's counts: the same whether the per-key results are tallied as they are materialised (nothing to look
up) or after the lookups."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from hudi_cdc.config import load_config
from hudi_cdc.envelope.batch import change_rows
from hudi_cdc.envelope.types import reader_schema
from hudi_cdc.sources.files import FileSource
from hudi_cdc.testing import envelope_schema, pg_event, write_events
from payloads import StoredState, policy_for
from payloads.base import ORDER_COLUMN, MergePolicy, PlanCounts, _ObservedTally
from tests.support import CUSTOMERS

pytestmark = pytest.mark.spark

SCHEMA = envelope_schema("customers", CUSTOMERS)


def _row(key: int, name: str) -> dict:
    return {"id": key, "name": name, "bio": f"bio {key}"}


EVENTS = [
    pg_event("c", lsn=10, after=_row(1, "a"), ts_ms=1_000),
    pg_event("u", lsn=20, after=_row(1, "b"), ts_ms=2_000),
    pg_event("c", lsn=21, after=_row(2, "a"), ts_ms=2_100),
    pg_event("u", lsn=30, after=_row(1, "c"), ts_ms=3_000),
    pg_event("c", lsn=40, after=_row(3, "a"), ts_ms=4_000),
    pg_event("d", lsn=50, before={"id": 3, "name": None, "bio": None}, ts_ms=5_000),
    pg_event("c", lsn=60, after=_row(4, "a"), ts_ms=6_000),
    pg_event("u", lsn=70, after=_row(4, "b"), ts_ms=7_000),
]


def _counts(spark, tmp_path: Path, *, truncated_at: str | None, tombstone_store: bool) -> tuple[PlanCounts, dict]:
    config = load_config(
        source="files",
        source_path=str(tmp_path / "events"),
        target_base_path=str(tmp_path / "table"),
        target_table="t",
        record_key_fields=["id"],
    )
    batch = FileSource(spark, config, reader_schema=reader_schema).next_batch(None)
    assert batch is not None
    policy = policy_for("postgres", toast_placeholder="__debezium_unavailable_value")
    flat = change_rows(
        batch, policy, key_fields=("id",), ingested_at=datetime.now(UTC), behavior="fail", table_schema=None
    )
    orders = {r[0]: r[1] for r in flat.groupBy("id").agg(F.max(ORDER_COLUMN)).collect()}
    empty_store = spark.createDataFrame([], f"id long, {ORDER_COLUMN} string")
    stored = StoredState(
        tombstones=lambda: empty_store if tombstone_store else None,
        stored_rows=lambda columns: None,
        past_rows=lambda columns: iter(()),
        truncated_at=truncated_at,
        fills_placeholders=lambda: False,
    )
    plan = policy.plan(flat, key_fields=("id",), stored=stored)
    assert not plan.errors
    return plan.counts, orders


def _spy_tally(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    tally, observed = MergePolicy._tally, _ObservedTally.result

    def spy(decided, **kwargs):  # noqa: ANN001, ANN003, ANN202
        calls.append("decided")
        return tally(decided, **kwargs)

    def spy_observed(self):  # noqa: ANN001, ANN202
        calls.append("observed")
        return observed(self)

    monkeypatch.setattr(MergePolicy, "_tally", staticmethod(spy))
    monkeypatch.setattr(_ObservedTally, "result", spy_observed)
    return calls


@pytest.mark.parametrize("floor_key", [None, 2], ids=["no-truncate", "truncated-at-key-2"])
def test_early_tally_equals_the_tally_after_lookups(
    spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, floor_key: int | None
) -> None:
    write_events(tmp_path / "events" / "b.avro", SCHEMA, EVENTS)
    _, orders = _counts(spark, tmp_path, truncated_at=None, tombstone_store=False)
    floor = None if floor_key is None else orders[floor_key]
    tallied = _spy_tally(monkeypatch)
    # No tombstone store: the job that materialises the per-key results also tallies them; no tally job.
    early, _ = _counts(spark, tmp_path, truncated_at=floor, tombstone_store=False)
    assert tallied == ["observed"]
    # An (empty) tombstone store makes the plan join it, then tally the decided rows.
    tallied.clear()
    after, _ = _counts(spark, tmp_path, truncated_at=floor, tombstone_store=True)
    assert tallied == ["decided"]
    assert early == after
    # Keys 1 (3 events), 2, 3 (create, delete) and 4 (2 events); a TRUNCATE at key 2's position makes the
    # winners at or before it stale: key 2's (lsn 21) and none other (key 1's winner is at lsn 30).
    stale = 0 if floor_key is None else 1
    assert (early.events, early.upserts, early.deletes, early.stale, early.superseded) == (8, 3 - stale, 1, stale, 4)
    assert early.ops == {"c": 4, "u": 3, "d": 1}
    assert early.new_tombstones == 1
    assert (early.source_ts_ms_min, early.source_ts_ms_max) == (3_000 if stale else 2_100, 7_000)
