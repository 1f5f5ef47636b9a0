"""``hudi-cdc quarantine``: what a table set aside, and re-applying it after a fix.

Re-applying is an ingest round whose source is the quarantine table
(:class:`hudi_cdc.sources.quarantine.QuarantinedEvents`): the same decoding,
merge policy and commit as any round, with the table's checkpoint left where it
is. Events that apply are marked ``reapplied`` with the commit; those still bad
stay quarantined with their reason as of now. A crash between the commit and
the marking re-applies the same events again on the next try, which changes
nothing (same positions, same values).

Run it while nothing else writes the table (``hudi-cdc pause`` it in a pipeline,
or between scheduled ingest runs): Hudi allows one writer at a time.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from hudi_cdc.sink.quarantine import ID, QUARANTINED, REAPPLIED, QuarantineStore

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from hudi_cdc.config import IngestConfig

__all__ = ["QuarantineReport", "ReapplyResult", "quarantine_report", "reapply"]


@dataclass(frozen=True)
class QuarantineReport:
    table: str
    path: str
    quarantined: int
    reapplied: int
    by_reason: dict[str, int]
    events: list[dict[str, Any]] = field(default_factory=list)
    """The oldest quarantined events (without their bytes), up to the limit asked for."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        lines = [f"{self.table}: {self.quarantined} event(s) quarantined, {self.reapplied} re-applied ({self.path})"]
        lines += [f"  {n:>8}  {reason}" for reason, n in sorted(self.by_reason.items(), key=lambda kv: -kv[1])]
        for e in self.events:
            lines.append(f"  {e['quarantine_id']}  {e['origin']}  op={e['op']} key={e['record_key']}: {e['reason']}")
        return "\n".join(lines)


@dataclass(frozen=True)
class ReapplyResult:
    table: str
    commit_time: str | None
    reapplied: int
    still_quarantined: int
    upserts: int = 0
    deletes: int = 0
    stale: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        if not self.reapplied and not self.still_quarantined:
            return f"{self.table}: nothing quarantined to re-apply"
        return (
            f"{self.table}: {self.reapplied} event(s) re-applied in commit {self.commit_time} "
            f"({self.upserts} upserts, {self.deletes} deletes, {self.stale} stale); "
            f"{self.still_quarantined} still quarantined"
        )


def _store(spark: SparkSession, config: IngestConfig) -> QuarantineStore:
    return QuarantineStore(spark, config.resolved_quarantine_path, target_table=config.target_table)


def quarantine_report(spark: SparkSession, config: IngestConfig, *, limit: int = 20) -> QuarantineReport:
    """Counts by state and reason, and the oldest ``limit`` events still quarantined."""
    from pyspark.sql import functions as F

    from hudi_cdc.sink.object_store import configure_table

    configure_table(spark, config)  # an s3a:// table's buckets (the quarantine's too), before it is read
    store = _store(spark, config)
    rows = store.read()
    if rows is None:
        return QuarantineReport(config.target_table, store.path, 0, 0, {})
    by_state = {r["state"]: r["n"] for r in rows.groupBy("state").agg(F.count(F.lit(1)).alias("n")).collect()}
    waiting = rows.where(F.col("state") == F.lit(QUARANTINED))
    reasons = {r["reason"]: r["n"] for r in waiting.groupBy("reason").agg(F.count(F.lit(1)).alias("n")).collect()}
    shown = [
        {k: v for k, v in r.asDict().items() if k != "raw"}
        for r in waiting.orderBy("quarantined_at", "origin").limit(limit).collect()
    ]
    return QuarantineReport(
        config.target_table,
        store.path,
        by_state.get(QUARANTINED, 0),
        by_state.get(REAPPLIED, 0),
        reasons,
        shown,
    )


def reapply(spark: SparkSession, config: IngestConfig, *, ids: Sequence[str] = ()) -> ReapplyResult:
    """Re-apply quarantined events (``ids``, or all of them) to the table, then mark them."""
    from hudi_cdc.pipeline import writer_lease

    with writer_lease(config, spark):  # one writer per table: the re-apply's round and its marks
        return _reapply(spark, config, ids)


def _reapply(spark: SparkSession, config: IngestConfig, ids: Sequence[str]) -> ReapplyResult:
    from pyspark.sql import functions as F

    from hudi_cdc.pipeline import ingest_once
    from hudi_cdc.sources.quarantine import QuarantinedEvents
    from hudi_cdc.spark import release

    store = _store(spark, config)
    waiting = store.read(QUARANTINED)
    if waiting is None:
        return ReapplyResult(config.target_table, None, 0, 0)
    if ids:
        waiting = waiting.where(F.col(ID).isin(*ids))
    waiting = waiting.localCheckpoint(eager=True)  # the round reads it; the marking compares with it after
    try:
        if waiting.isEmpty():
            return ReapplyResult(config.target_table, None, 0, 0)
        # A copy of its own: the round releases what its source read when it is done.
        source = QuarantinedEvents(spark, config, waiting.localCheckpoint(eager=True), where=store.path)
        # Still-bad events go back to the quarantine table with today's reason, never fail the round.
        round_config = dataclasses.replace(config, on_bad_event="quarantine", checkpoint=None)
        result = ingest_once(round_config, spark=spark, source=source)
        # An event the round quarantined again has a newer recorded_at; every other one was applied.
        now = store.read()
        assert now is not None
        applied = waiting.join(now.select(ID, F.col("recorded_at").alias("now_at")), on=ID, how="inner").where(
            F.col("now_at") == F.col("recorded_at")
        )
        applied = applied.drop("now_at").localCheckpoint(eager=True)
        try:
            n = applied.count()
            if n:
                store.mark(applied, state=REAPPLIED, commit=result.commit_time)
        finally:
            release(applied)
        return ReapplyResult(
            config.target_table,
            result.commit_time,
            n,
            store.count(QUARANTINED),
            upserts=result.upserts,
            deletes=result.deletes,
            stale=result.stale,
        )
    finally:
        release(waiting)
