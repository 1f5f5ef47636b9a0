"""The flavor-independent half of a merge policy.

Given one flattened batch (every event of the batch, any order, replays
included) a policy decides per record key what the table must receive:

1. TOAST: a placeholder takes the key's newest value *before* it in source
   position order, from an earlier event of the batch or from the stored row
   (which joins the chain at its own position). A placeholder with neither is
   an error: the value it stands for was never seen.
2. The winner per key: the highest ``_source_order``; on a tie the later arrival.
   Every other event of the key is ``superseded``.
3. Stale events: a non-delete winner at or below a delete tombstone of its key,
   or below the stored row it was compared with, is ``stale`` and not written
   (an out-of-order event must not resurrect a deleted row).

Against rows already in the table Hudi's event-time ordering on ``_source_order``
keeps the newer of stored and incoming, deletes included.
"""

from __future__ import annotations

import dataclasses
import itertools
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import DataType

__all__ = [
    "ACTION_COLUMN",
    "ARRIVAL_COLUMN",
    "DELETED_COLUMN",
    "ERROR_COLUMN",
    "EVENTS_COLUMN",
    "INTERNAL_PREFIX",
    "ORIGIN_COLUMN",
    "ORDER_COLUMN",
    "RAW_COLUMN",
    "ChangeCounts",
    "MergePolicy",
    "PlanCounts",
    "StoredState",
    "WritePlan",
    "is_data_column",
]

ORDER_COLUMN = "_source_order"
DELETED_COLUMN = "_hoodie_is_deleted"
OP_COLUMN = "_source_op"
INGESTED_AT_COLUMN = "_ingested_at"
SOURCE_TS_COLUMN = "_source_ts_ms"  # when the source committed the change (Debezium's source.ts_ms)
TOMBSTONED_AT_COLUMN = "_tombstoned_at"
# Columns that live only inside a run and are never written.
INTERNAL_PREFIX = "__hudi_cdc_"
ARRIVAL_COLUMN = INTERNAL_PREFIX + "arrival"
ERROR_COLUMN = INTERNAL_PREFIX + "error"
ACTION_COLUMN = INTERNAL_PREFIX + "action"
_TOMB_ORDER = INTERNAL_PREFIX + "tomb_order"
_STORED_ORDER = INTERNAL_PREFIX + "stored_order"
_HAD_PLACEHOLDER = INTERNAL_PREFIX + "had_placeholder"
_NO_TOMBSTONE = INTERNAL_PREFIX + "no_tombstone"  # the key held no delete tombstone before this batch
_PICKED = INTERNAL_PREFIX + "picked"
_EVENTS = INTERNAL_PREFIX + "events"
EVENTS_COLUMN = _EVENTS
"""A decided row's count of its key's events in the batch."""
_OPS = INTERNAL_PREFIX + "ops"  # per key: how many of its events were c, u, d, r
_COUNTED_OPS = ("c", "u", "d", "r")
_KNOWN = INTERNAL_PREFIX + "known_"
_STORED = INTERNAL_PREFIX + "stored_"
_FIRST_ERROR = INTERNAL_PREFIX + "first_error"
_PAIR = INTERNAL_PREFIX + "pair"
_OLD = INTERNAL_PREFIX + "old_"
_MOVED = INTERNAL_PREFIX + "moved_"
_ROW = INTERNAL_PREFIX + "row_"
_MAX_HOPS = 4  # a key moved this many times within one batch is followed back
_PAST_COMMITS = 3  # how far back a moved key's old values are looked for (the move's delete is usually last round's)
ORIGIN_COLUMN = INTERNAL_PREFIX + "origin"
"""Where an event came from (file path, topic-partition@offset), for error messages."""
RAW_COLUMN = INTERNAL_PREFIX + "raw"
"""An event's bytes as the source gave them: set only when bad events are quarantined, never aggregated."""


def lpad(text: str, width: int) -> str:
    """Spark's ``lpad(text, width, '0')``: padded on the left, or cut to its first ``width`` characters."""
    return text[:width] if len(text) >= width else "0" * (width - len(text)) + text


def is_data_column(name: str) -> bool:
    """A column hudi-cdc writes: not one of Hudi's ``_hoodie_*`` meta columns, except the delete marker."""
    return not name.startswith("_hoodie_") or name == DELETED_COLUMN


UPSERT, DELETE, STALE, ERROR = "upsert", "delete", "stale", "error"
"""The action of each key's winning event; every other event of the key is superseded."""


@dataclass(frozen=True)
class StoredState:
    """What a policy may read of the table, handed in by the pipeline.

    ``tombstones`` returns key columns plus ``_source_order`` of past deletes, or
    None when there are none; ``stored_rows(columns)`` returns the table's current
    rows projected to ``columns``, or None when the table does not exist yet.
    """

    tombstones: Callable[[], DataFrame | None]
    stored_rows: Callable[[Sequence[str]], DataFrame | None]
    past_rows: Callable[[Sequence[str]], Iterator[DataFrame]] = field(default=lambda columns: iter(()))
    """The table's rows as of each earlier commit still retained, newest first (time travel)."""
    truncated_at: str | None = None
    """The ``_source_order`` of the newest TRUNCATE the table has applied: no event at or before it counts."""
    fills_placeholders: Callable[[], bool] = field(default=lambda: False)
    """Whether Hudi's own merge fills a string column's placeholder from the stored row
    (``HudiTable.fills_placeholders``): for those columns the lookup reads the stored row's position only."""

    @staticmethod
    def empty() -> StoredState:
        return StoredState(tombstones=lambda: None, stored_rows=lambda columns: None)


@dataclass(frozen=True)
class ChangeCounts:
    """What a batch's events came to: the counts a plan decides and a round reports (``IngestResult``)."""

    events: int = 0
    upserts: int = 0
    deletes: int = 0
    stale: int = 0
    superseded: int = 0
    toast_filled: int = 0
    """Written rows that carried a TOAST placeholder, resolved from the batch or the table."""
    source_ts_ms_min: int | None = None
    source_ts_ms_max: int | None = None
    """The oldest and newest source commit times (``source.ts_ms``) of the written changes: freshness and lag."""
    ops: dict[str, int] = field(default_factory=dict)
    """The events by Debezium op (``c``, ``u``, ``d``, ``r``, and ``t`` for applied TRUNCATEs)."""

    def change_counts(self) -> dict[str, Any]:
        """The fields of :class:`ChangeCounts` alone, as keyword arguments (``ops`` copied)."""
        shared = {f.name: getattr(self, f.name) for f in dataclasses.fields(ChangeCounts)}
        return {**shared, "ops": dict(self.ops)}


@dataclass(frozen=True)
class PlanCounts(ChangeCounts):
    """A plan's counts: those a round reports, and what the sink needs besides."""

    truncated: int = 0
    """Stored rows deleted by a TRUNCATE in the batch (also counted in ``deletes``)."""
    new_tombstones: int = 0
    """Deleted keys that held no tombstone before: how much the tombstone store's key count grows."""


@dataclass(frozen=True)
class WritePlan:
    """What the sink writes for one batch.

    ``decided`` holds each key's winning event with its action, computed from the
    materialised per-key aggregation (a local checkpoint), so counting and writing it
    does not read the source again. A batch with bad events has only ``errors``.
    """

    decided: DataFrame | None
    upserts: DataFrame | None
    tombstones: DataFrame | None
    counts: PlanCounts
    errors: tuple[str, ...] = ()
    """Bad events (``origin: event op=.. key (..): problem``), up to five; when set, nothing else is."""
    materialised: tuple[DataFrame, ...] = ()
    """The local checkpoints the plan made: the caller releases them when the round is done."""
    truncated_at: str | None = None
    """The position of the newest TRUNCATE in the batch, which the table must remember (``StoredState``)."""
    quarantined: DataFrame | None = None
    """With ``quarantine``: the bad events, as flat rows whose error column says why; None when there are none."""

    @staticmethod
    def failed(errors: Sequence[str], materialised: Sequence[DataFrame] = ()) -> WritePlan:
        return WritePlan(
            decided=None,
            upserts=None,
            tombstones=None,
            counts=PlanCounts(),
            errors=tuple(errors),
            materialised=tuple(materialised),
        )


class MergePolicy(ABC):
    """Ordering, deletes and placeholders of one source flavor."""

    name: str

    def __init__(self, *, toast_placeholder: str | None = None, apply_truncates: bool = False) -> None:
        self.toast_placeholder = toast_placeholder
        self.apply_truncates = apply_truncates
        """A TRUNCATE event (op ``t``, no key) empties the table as of its position (see :meth:`plan`)."""

    # -- flavor specifics ------------------------------------------------
    @property
    @abstractmethod
    def source_meta_columns(self) -> Sequence[tuple[str, str, str, bool]]:
        """``(column, field of the envelope's source struct, Spark DDL type, required)``."""

    @abstractmethod
    def order_expr(self) -> Column:
        """A fixed-width string whose lexical order is the events' source order."""

    @abstractmethod
    def position_error(self) -> Column:
        """A message when the event's source position is missing, else NULL."""

    # The same two rules over one flat row in the driver (payloads.driver), where a flavor has them;
    # tests/payloads/test_driver_plan.py proves them equal to the expressions above.
    order_of: Callable[[Mapping[str, Any]], str | None] | None = None
    """:meth:`order_expr` of one flat row (a dict); None: the flavor has no driver rule yet."""
    position_error_of: Callable[[Mapping[str, Any]], str | None] | None = None
    """:meth:`position_error` of one flat row: set where Spark's is set."""

    # -- shared ----------------------------------------------------------
    def with_order(self, flat: DataFrame) -> DataFrame:
        """Add ``_source_order`` and fold position problems into the error column."""
        from pyspark.sql import functions as F

        return flat.withColumn(ORDER_COLUMN, self.order_expr()).withColumn(
            ERROR_COLUMN, F.coalesce(F.col(ERROR_COLUMN), self.position_error())
        )

    def placeholder_test(self, column: str, data_type: DataType) -> Column | None:
        """True where ``column`` holds the "unchanged" placeholder; None if it cannot."""
        from pyspark.sql import functions as F
        from pyspark.sql.types import ArrayType, BinaryType, StringType

        marker = self.toast_placeholder
        if marker is None:
            return None
        c = F.col(column)
        if isinstance(data_type, StringType):
            test = c == F.lit(marker)
        elif isinstance(data_type, BinaryType):
            test = c == F.lit(bytearray(marker.encode("utf-8")))
        elif isinstance(data_type, ArrayType) and isinstance(data_type.elementType, StringType):
            test = (F.size(c) == 1) & (c.getItem(0) == F.lit(marker))
        elif isinstance(data_type, ArrayType) and isinstance(data_type.elementType, BinaryType):
            test = (F.size(c) == 1) & (c.getItem(0) == F.lit(bytearray(marker.encode("utf-8"))))
        else:
            return None
        return F.coalesce(test, F.lit(False))

    def plan(
        self, batch: DataFrame, *, key_fields: Sequence[str], stored: StoredState, quarantine: bool = False
    ) -> WritePlan:
        """Decide every event of ``batch`` (flattened and ordered; may carry the error column).

        A bad event (the error column set, or a TOAST placeholder with no value to take)
        fails the plan; with ``quarantine`` it is left out instead and returned in
        ``quarantined``: the winner and fills of its key come from its good events only,
        and a key whose placeholder has no value sets all its events of the batch aside.

        One aggregation per key over the events, streaming from the source: the winner is
        the newest position, each placeholder column's fill the newest real value (which is
        necessarily before the winner), and the key's first error. Partial aggregation runs
        before the shuffle, so the events are never held in memory. Only the per-key
        result is materialised; stored rows are looked up for winners still holding a
        placeholder, after the aggregation.
        """
        from pyspark.sql import functions as F

        events = _Events.of(self, batch, key_fields, quarantine=quarantine)
        tombstones = stored.tombstones()
        winners, early_counts, found = self._materialise(events, _per_key(events), stored, tombstones)
        checkpointed = winners
        errors = (
            winners.filter(F.col(_FIRST_ERROR).isNotNull()).select(*events.keys, _FIRST_ERROR).limit(5).collect()
            if found["errors"]
            else []
        )
        if errors and not quarantine:
            return WritePlan.failed([_describe_error(row, events.keys) for row in errors], [checkpointed])
        # Set aside, read again from the source only when there are any.
        quarantined = batch.filter(F.col(ERROR_COLUMN).isNotNull()) if errors else None
        if errors:
            winners = winners.filter(F.col(_EVENTS) > 0)  # keys with bad events only

        winners, truncated_at, truncates = self._take_truncates(winners)
        floor = max((o for o in (stored.truncated_at, truncated_at) if o), default=None)
        winners = winners.withColumn(_HAD_PLACEHOLDER, events.has_placeholder)
        winners, lookup = _look_up_stored(events, winners, stored, found, floor)
        decided = _decide(events, _fill_placeholders(events, winners, lookup), lookup, tombstones, floor)
        decided, materialised = _keep_decided(decided, checkpointed, lookup.joined or tombstones is not None)

        # Only a placeholder makes an ERROR action; the tally counts them, so a plan without one looks no further.
        nothing_looked_up = not found["errors"] and not found["placeholders"]
        counts = early_counts if nothing_looked_up else None
        tally = {} if counts is not None else self._tally(decided)  # no ERROR action without a placeholder
        if ERROR in tally:
            decided, quarantined = self._resolve_unfilled(events, decided, stored, materialised, quarantined)
            tally = self._tally(decided)  # ``decided`` changed: filled from elsewhere, or the unfillable set aside
        counts = self._count(tally) if counts is None else counts
        if truncated_at is not None:  # the truncate events are events of the batch too
            counts = dataclasses.replace(counts, events=counts.events + truncates, ops={**counts.ops, "t": truncates})
        return self._write_plan(
            decided, events.keys, stored, counts, materialised, truncated_at=truncated_at, quarantined=quarantined
        )

    # -- the phases of a plan ------------------------------------------------
    def _materialise(
        self, events: _Events, winners: DataFrame, stored: StoredState, tombstones: DataFrame | None
    ) -> tuple[DataFrame, PlanCounts | None, dict[str, Any]]:
        """``winners`` materialised, how many keys have an error and how many winners a placeholder (``found``),
        and the counts when the materialising job could tally them as it went.

        The two checks say whether the lookups after are needed at all (each is a job or two).
        """
        from pyspark.sql import functions as F

        checks = [
            F.count(_FIRST_ERROR).alias("errors"),
            (F.count(F.when(events.has_placeholder, F.lit(1))) if events.toastable else F.lit(0)).alias("placeholders"),
        ]
        if tombstones is None and not self.apply_truncates:
            # Without a tombstone store or a TRUNCATE to apply, a key with no error and no placeholder needs
            # nothing from the table: its action is known now, and the materialising job below tallies the
            # actions and the checks as it goes (kept when no key has an error or a placeholder).
            early_stale = F.col(ORDER_COLUMN) <= F.lit(stored.truncated_at) if stored.truncated_at else F.lit(False)
            early_action = F.when(early_stale, F.lit(STALE)).when(_is_delete(), F.lit(DELETE)).otherwise(F.lit(UPSERT))
            observed = _ObservedTally(
                winners,
                action=early_action,
                had_placeholder=events.has_placeholder,
                no_tombstone=F.lit(True),
                extra=checks,
            )
            # Materialise, cutting the lineage: everything after reads this, not the source again
            # (and Spark 3.5 deadlocked, on this machine, when cached plans and broadcast joins nested).
            materialised = observed.frame.localCheckpoint(eager=True)
            early_counts, found = observed.result()
            return materialised, early_counts, found
        materialised = winners.localCheckpoint(eager=True)
        row = materialised.agg(*checks).first()
        assert row is not None  # a global aggregate has one row
        return materialised, None, row.asDict()

    def _take_truncates(self, winners: DataFrame) -> tuple[DataFrame, str | None, int]:
        """``winners`` without the TRUNCATE events, the newest one's position, and how many there were."""
        from pyspark.sql import functions as F

        if not self.apply_truncates:
            return winners, None, 0
        # Truncates have no key: they are the NULL key's group, whose winner is the newest one.
        is_truncate = F.col(OP_COLUMN) == F.lit("t")
        newest = winners.filter(is_truncate).agg(F.max(ORDER_COLUMN), F.sum(_EVENTS)).first()
        truncated_at, truncates = (newest[0], int(newest[1] or 0)) if newest is not None else (None, 0)
        return winners.filter(~F.coalesce(is_truncate, F.lit(False))), truncated_at, truncates

    def _resolve_unfilled(
        self,
        events: _Events,
        decided: DataFrame,
        stored: StoredState,
        materialised: list[DataFrame],
        quarantined: DataFrame | None,
    ) -> tuple[DataFrame, DataFrame | None]:
        """Placeholders neither the batch nor the stored row could fill: from the old key of a moved row;
        what is still unfilled is set aside with ``quarantine``, else a MergeError."""
        from pyspark.sql import functions as F

        from hudi_cdc.spark import release

        keys = events.keys
        unresolved = decided.filter(F.col(ACTION_COLUMN) == F.lit(ERROR)).select(*keys).limit(5).collect()
        if unresolved:
            scratch: list[DataFrame] = []
            moved = self._fill_moved(events.frame.filter(events.good), decided, keys, events.toastable, stored, scratch)
            decided = moved.localCheckpoint(eager=True)
            release(*scratch)  # in a continuous process, left-over blocks add up round after round
            materialised.append(decided)
            unresolved = decided.filter(F.col(ACTION_COLUMN) == F.lit(ERROR)).select(*keys).limit(5).collect()
        if unresolved and events.quarantine:
            # Every event of such a key waits: none of them can be written without the value.
            bad_keys = decided.filter(F.col(ACTION_COLUMN) == F.lit(ERROR)).select(*keys)
            reason = (
                f"TOAST placeholder {self.toast_placeholder!r} with no value to take: the table has never "
                "seen this key's unchanged value"
            )
            unplaced = (
                events.frame.filter(events.good)
                .join(bad_keys, on=keys, how="left_semi")
                .withColumn(ERROR_COLUMN, F.lit(reason))
            )
            quarantined = unplaced if quarantined is None else quarantined.unionByName(unplaced)
            return decided.filter(F.col(ACTION_COLUMN) != F.lit(ERROR)), quarantined
        if unresolved:
            from hudi_cdc.errors import MergeError

            raise MergeError(
                f"TOAST placeholder {self.toast_placeholder!r} for key(s) {_describe_keys(unresolved, keys)} "
                "that the table has never seen: the unchanged value is unknown, so the record cannot be "
                "written; nothing was written and the checkpoint did not move"
            )
        return decided, quarantined

    def _write_plan(
        self,
        decided: DataFrame,
        keys: list[str],
        stored: StoredState,
        counts: PlanCounts,
        materialised: list[DataFrame],
        *,
        truncated_at: str | None,
        quarantined: DataFrame | None,
    ) -> WritePlan:
        """The rows to write (upserts and deletes, and a TRUNCATE's deletes of stored rows) and the tombstones."""
        from pyspark.sql import functions as F

        writes = decided.filter(F.col(ACTION_COLUMN).isin(UPSERT, DELETE))
        upserts = writes.select(*[c for c in decided.columns if not c.startswith(INTERNAL_PREFIX)])
        if truncated_at is not None:
            upserts, counts = self._truncate(upserts, writes, keys, stored, truncated_at, counts, materialised)
        tombstone_rows = decided.filter(F.col(ACTION_COLUMN) == F.lit(DELETE)).select(
            *keys, ORDER_COLUMN, F.col(INGESTED_AT_COLUMN).alias(TOMBSTONED_AT_COLUMN)
        )
        return WritePlan(
            decided=decided,
            upserts=upserts,
            tombstones=tombstone_rows,
            counts=counts,
            materialised=tuple(materialised),
            truncated_at=truncated_at,
            quarantined=quarantined,
        )

    @staticmethod
    def _truncate(
        upserts: DataFrame,
        writes: DataFrame,
        keys: list[str],
        stored: StoredState,
        truncated_at: str,
        counts: PlanCounts,
        materialised: list[DataFrame],
    ) -> tuple[DataFrame, PlanCounts]:
        """Add a delete of every stored row older than the TRUNCATE that no later event of the batch writes.

        Only rows older than it go: a table that already holds later changes (a replay) keeps them.
        Each delete carries the truncate's position, so Hudi's ordering lets it win; no tombstone is
        kept per row, the table remembers the position instead (``StoredState.truncated_at``).
        """
        from pyspark.sql import functions as F

        stored_rows = stored.stored_rows(upserts.columns)
        if stored_rows is None:
            return upserts, counts
        gone = (
            stored_rows.where(F.col(ORDER_COLUMN) < F.lit(truncated_at))
            .join(writes.select(*keys), on=keys, how="left_anti")
            .withColumn(ORDER_COLUMN, F.lit(truncated_at))
            .withColumn(OP_COLUMN, F.lit("t"))
            .withColumn(DELETED_COLUMN, F.lit(True))
            .localCheckpoint(eager=True)
        )
        materialised.append(gone)
        n = gone.count()
        counts = dataclasses.replace(counts, deletes=counts.deletes + n, truncated=n)
        return upserts.unionByName(gone, allowMissingColumns=True), counts

    @staticmethod
    def _fill_moved(
        batch: DataFrame,
        decided: DataFrame,
        keys: list[str],
        toastable: dict[str, Column],
        stored: StoredState,
        scratch: list[DataFrame],
    ) -> DataFrame:
        """Placeholders of rows whose key changed: the values come from the old key.

        A primary-key update reaches Debezium as a delete of the old key and a
        create of the new one, both at the update's position; an out-of-line
        value the update left alone is a placeholder in the create, and the new
        key has no past. The old key has: its newest real values below that
        position, in this batch, in the table, or (when its delete was applied
        by an earlier round) in the table as of an earlier commit. A key moved
        twice follows the chain back, a move at a time. The local checkpoints
        made on the way go to ``scratch``, for the caller to release.
        """
        from pyspark.sql import functions as F

        is_error = F.col(ACTION_COLUMN) == F.lit(ERROR)
        moved = decided.filter(is_error)
        filled = _Moves(batch, keys, toastable, stored, scratch).fill(moved)
        left = _any_of(toastable.values())
        filled = filled.withColumn(ACTION_COLUMN, F.when(left, F.lit(ERROR)).otherwise(F.lit(UPSERT)))
        return decided.filter(~is_error).unionByName(filled.select(*decided.columns))

    @staticmethod
    def _tally(decided: DataFrame) -> dict[str, Any]:
        """The per-action sums of ``decided`` (one Spark job), by action."""
        from pyspark.sql import functions as F

        has_ts = SOURCE_TS_COLUMN in decided.columns
        newest = F.max(SOURCE_TS_COLUMN) if has_ts else F.lit(None).cast("bigint")
        oldest = F.min(SOURCE_TS_COLUMN) if has_ts else F.lit(None).cast("bigint")
        rows = (
            decided.groupBy(ACTION_COLUMN)
            .agg(
                F.count(F.lit(1)).alias("n"),
                F.sum(F.col(_EVENTS)).alias("events"),
                F.sum(F.col(_EVENTS) - 1).alias("superseded"),
                F.sum(F.col(_HAD_PLACEHOLDER).cast("int")).alias("toast"),
                F.sum(F.col(_NO_TOMBSTONE).cast("int")).alias("no_tombstone"),
                newest.alias("newest"),
                oldest.alias("oldest"),
                *[F.sum(F.col(f"{_OPS}.{op}")).alias(f"op_{op}") for op in _COUNTED_OPS],
            )
            .collect()
        )
        return {r[ACTION_COLUMN]: r for r in rows}

    @staticmethod
    def _count(by_action: dict[str, Any]) -> PlanCounts:
        rows = list(by_action.values())
        ops = {op: sum(int(r[f"op_{op}"] or 0) for r in rows) for op in _COUNTED_OPS}
        n = {action: (by_action[action]["n"] if action in by_action else 0) for action in (UPSERT, DELETE, STALE)}
        return PlanCounts(
            events=sum(int(r["events"] or 0) for r in rows),
            upserts=n[UPSERT],
            deletes=n[DELETE],
            stale=n[STALE],
            superseded=sum(int(r["superseded"] or 0) for r in rows),
            toast_filled=int(by_action[UPSERT]["toast"] or 0) if UPSERT in by_action else 0,
            source_ts_ms_min=min(
                (int(r["oldest"]) for a, r in by_action.items() if a in (UPSERT, DELETE) and r["oldest"] is not None),
                default=None,
            ),
            source_ts_ms_max=max(
                (int(r["newest"]) for a, r in by_action.items() if a in (UPSERT, DELETE) and r["newest"] is not None),
                default=None,
            ),
            ops={op: n for op, n in ops.items() if n},
            new_tombstones=int(by_action[DELETE]["no_tombstone"] or 0) if DELETE in by_action else 0,
        )


class _ObservedTally:
    """The plan's counts, gathered by the job that materialises ``frame`` instead of a job of their own.

    Spark's observed metrics: aggregates over the rows as the job writes them, read from the
    finished query (a task's share counts once, as for an action's accumulators). Each aggregate
    costs planning time before the job (38 of them, ``_tally``'s sums per action, cost as much
    as the job they saved), so only what ``PlanCounts`` needs: 14.
    """

    _NAME = "hudi_cdc_tally"

    def __init__(
        self,
        frame: DataFrame,
        *,
        action: Column,
        had_placeholder: Column,
        no_tombstone: Column,
        extra: Sequence[Column],
    ) -> None:
        from pyspark.sql import functions as F

        def n(a: str) -> Column:
            return F.count(F.when(action == F.lit(a), F.lit(1))).alias(a)

        written = F.when(action != F.lit(STALE), F.col(SOURCE_TS_COLUMN))  # upserts and deletes
        has_ts = SOURCE_TS_COLUMN in frame.columns
        self._observed = frame.observe(
            self._NAME,
            n(UPSERT),
            n(DELETE),
            n(STALE),
            F.sum(_EVENTS).alias("events"),
            F.sum(F.when(action == F.lit(UPSERT), had_placeholder.cast("int"))).alias("toast"),
            F.sum(F.when(action == F.lit(DELETE), no_tombstone.cast("int"))).alias("new_tombstones"),
            (F.min(written) if has_ts else F.lit(None).cast("bigint")).alias("oldest"),
            (F.max(written) if has_ts else F.lit(None).cast("bigint")).alias("newest"),
            *[F.sum(F.col(f"{_OPS}.{op}")).alias(f"op_{op}") for op in _COUNTED_OPS],
            *extra,
        )

    @property
    def frame(self) -> DataFrame:
        """``frame`` with the observation: materialise this one (one action), then read ``result``."""
        return self._observed

    def result(self) -> tuple[PlanCounts, dict[str, Any]]:
        """The counts ``_count(_tally(...))`` gives, and the values of ``extra`` by name, once ``frame`` ran."""
        import json

        metrics = self._observed._jdf.queryExecution().observedMetrics().get(self._NAME)
        if metrics.isEmpty():  # not materialised: a bug here, never a count of zero
            raise RuntimeError("the plan's tally was read before its job ran")
        v = json.loads(metrics.get().json())
        events = int(v["events"] or 0)
        ops = {op: int(v[f"op_{op}"] or 0) for op in _COUNTED_OPS}
        counts = PlanCounts(
            events=events,
            upserts=v[UPSERT],
            deletes=v[DELETE],
            stale=v[STALE],
            superseded=events - (v[UPSERT] + v[DELETE] + v[STALE]),  # every key's events but its winner
            toast_filled=int(v["toast"] or 0),
            source_ts_ms_min=v["oldest"],
            source_ts_ms_max=v["newest"],
            ops={op: k for op, k in ops.items() if k},
            new_tombstones=int(v["new_tombstones"] or 0),
        )
        return counts, v


@dataclass(frozen=True, eq=False)  # holds Spark columns, whose == builds an expression
class _Events:
    """One plan's batch, and what every phase of the plan reads of it."""

    frame: DataFrame
    keys: list[str]
    toastable: dict[str, Column]
    """Per column that can hold the placeholder: the test for it. Expressions by name: evaluated again after
    the fill, they tell what is left."""
    good: Column
    """Holds for an event that is not set aside: every one, unless bad events are quarantined."""
    quarantine: bool

    @staticmethod
    def of(policy: MergePolicy, batch: DataFrame, key_fields: Sequence[str], *, quarantine: bool) -> _Events:
        from pyspark.sql import functions as F

        keys = list(key_fields)
        toastable = {
            name: test
            for name, dtype in ((f.name, f.dataType) for f in batch.schema.fields)
            if name not in keys and not name.startswith(("_source_", "_hoodie_", INTERNAL_PREFIX))
            for test in [policy.placeholder_test(name, dtype)]
            if test is not None
        }
        good = F.col(ERROR_COLUMN).isNull() if quarantine and ERROR_COLUMN in batch.columns else F.lit(True)
        return _Events(batch, keys, toastable, good, quarantine)

    @property
    def columns(self) -> list[str]:
        """The columns a decided row carries: all but the error and raw columns."""
        return [c for c in self.frame.columns if c not in (ERROR_COLUMN, RAW_COLUMN)]

    @property
    def others(self) -> list[str]:
        return [c for c in self.columns if c not in self.keys]

    @property
    def known(self) -> dict[str, str]:
        """Per toastable column: the per-key aggregate of its newest real value in the batch, with its position."""
        return {name: f"{_KNOWN}{i}" for i, name in enumerate(self.toastable)}

    @property
    def has_placeholder(self) -> Column:
        """A placeholder in an event that is not a delete."""
        return _any_of(self.toastable.values()) & ~_is_delete()


@dataclass(frozen=True, eq=False)  # holds Spark columns, whose == builds an expression
class _Lookup:
    """What a plan read of the stored rows for the winners holding a placeholder."""

    stored_order: Column
    """The stored row's position; NULL without a stored row, or when none was read."""
    from_table: dict[str, str] = field(default_factory=dict)
    """Per column read from the table: the column of the joined winners that holds its stored value."""
    by_table: frozenset[str] = frozenset()
    """Strings whose placeholder Hudi's merge fills from the stored row: their values are not read."""
    joined: bool = False
    """Whether the winners were joined with the table's rows."""


def _is_delete() -> Column:
    from pyspark.sql import functions as F

    return F.col(OP_COLUMN) == F.lit("d")


def _per_key(events: _Events, *, by_hash: bool | None = None) -> DataFrame:
    """Per key: the winning event's values, its events by op, the key's first error, and per placeholder
    column the newest real value of the batch with its position (``by_hash``: see :func:`_pick`)."""
    from pyspark.sql import functions as F

    batch, good, others, known = events.frame, events.good, events.others, events.known
    slots = [(F.struct(*[F.col(f"`{c}`") for c in others]), good, False)]
    if ERROR_COLUMN in batch.columns:
        error = F.col(ERROR_COLUMN)
        first_error = F.struct(F.col(ORIGIN_COLUMN).alias("origin"), F.col(OP_COLUMN).alias("op"), error.alias("e"))
        slots.append((first_error, error.isNotNull(), True))
    for name, test in events.toastable.items():
        # A struct, so that a real NULL is a value and not "nothing known"; with its position.
        newest_real = F.struct(F.col(f"`{name}`").alias("v"), F.col(ORDER_COLUMN).alias("o"))
        slots.append((newest_real, ~test & ~_is_delete() & good, False))
    position = F.struct(F.col(ORDER_COLUMN), F.col(ARRIVAL_COLUMN))
    picks, picked = _pick(batch, position, slots, by_hash=by_hash)
    winner, fills = picked[0], picked[-len(known) :] if known else []
    first = picked[1] if ERROR_COLUMN in batch.columns else F.lit(None)
    counts = [
        F.count(F.when(good, F.lit(1))).alias(_EVENTS),
        F.struct(
            *[F.count(F.when(good & (F.col(OP_COLUMN) == F.lit(op)), F.lit(1))).alias(op) for op in _COUNTED_OPS]
        ).alias(_OPS),
    ]
    return (
        batch.groupBy(*events.keys)
        .agg(*picks, *counts)
        .select(
            *events.keys,
            *[winner[c].alias(c) for c in others],
            _EVENTS,
            _OPS,
            first.alias(_FIRST_ERROR),
            *[fill.alias(name) for fill, name in zip(fills, known.values(), strict=True)],
        )
    )


def _look_up_stored(
    events: _Events, winners: DataFrame, stored: StoredState, found: dict[str, Any], floor: str | None
) -> tuple[DataFrame, _Lookup]:
    """``winners`` joined with the stored rows of the keys whose winner holds a placeholder, and what was read.

    ``found`` was counted before the filters since, which drop only keys whose winner holds no placeholder
    (keys with bad events only have none; nor has a TRUNCATE): no job to ask again.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType

    keys, toastable = events.keys, events.toastable
    if not toastable:
        return winners, _Lookup(F.lit(None).cast("string"))
    pending = winners.filter(events.has_placeholder).select(*keys)
    by_table: frozenset[str] = frozenset()
    if found["placeholders"] and stored.fills_placeholders():
        # Strings whose placeholder the table's merge fills when a stored row holds the value: no
        # values read for them, and a placeholder left in them is an error only without a stored row.
        strings = {f.name for f in events.frame.schema.fields if isinstance(f.dataType, StringType)}
        by_table = frozenset(name for name in toastable if name in strings)
    looked_up = [name for name in toastable if name not in by_table]
    table_rows = None if not found["placeholders"] else stored.stored_rows([*keys, ORDER_COLUMN, *looked_up])
    if table_rows is None:  # None before the first commit
        return winners, _Lookup(F.lit(None).cast("string"), by_table=by_table)
    if floor is not None:  # rows from before a TRUNCATE are gone
        table_rows = table_rows.where(F.col(ORDER_COLUMN) > F.lit(floor))
    from_table = {name: f"{_STORED}{events.known[name]}" for name in toastable if name in table_rows.columns}
    # Hints, not estimates: the keys are small, the stored rows may be large (TOAST values);
    # left to itself Spark broadcast them and ran out of memory at 450k stored rows.
    rows = table_rows.join(F.broadcast(pending), on=keys, how="left_semi").select(
        *keys,
        F.col(ORDER_COLUMN).alias(_STORED_ORDER),
        *[F.col(f"`{name}`").alias(alias) for name, alias in from_table.items()],
    )
    joined = winners.join(rows.hint("merge"), on=keys, how="left")
    return joined, _Lookup(F.col(_STORED_ORDER), from_table=from_table, by_table=by_table, joined=True)


def _fill_placeholders(events: _Events, winners: DataFrame, lookup: _Lookup) -> DataFrame:
    """Each placeholder takes the newest real value before it: the batch's, or the stored row's when that
    sits later in the key's chain (on equal positions the batch's is newer)."""
    from pyspark.sql import functions as F

    stored_order = lookup.stored_order
    for name, is_placeholder in events.toastable.items():
        fill = F.col(events.known[name])
        value = F.when(is_placeholder & fill.isNotNull(), fill["v"])
        stored_is_newer = stored_order.isNotNull() & (fill.isNull() | (stored_order > fill["o"]))
        if name in lookup.from_table:
            value = F.when(is_placeholder & stored_is_newer, F.col(lookup.from_table[name])).when(
                is_placeholder & fill.isNotNull(), fill["v"]
            )
        elif name in lookup.by_table:  # the stored row's value is the newer one: Hudi's merge takes it
            value = F.when(is_placeholder & fill.isNotNull() & ~stored_is_newer, fill["v"])
        winners = winners.withColumn(name, value.otherwise(F.col(f"`{name}`")))
    return winners


def _decide(
    events: _Events, winners: DataFrame, lookup: _Lookup, tombstones: DataFrame | None, floor: str | None
) -> DataFrame:
    """Each key's action: stale (below its stored row, at or below its tombstone or a TRUNCATE), delete,
    error (a placeholder still there), or upsert."""
    from pyspark.sql import functions as F

    toastable, stored_order = events.toastable, lookup.stored_order
    is_delete = _is_delete()
    is_stale = ~is_delete & stored_order.isNotNull() & (F.col(ORDER_COLUMN) < stored_order)
    no_tombstone = F.lit(True)
    if tombstones is not None:
        winners = winners.join(
            tombstones.select(*events.keys, F.col(ORDER_COLUMN).alias(_TOMB_ORDER)), on=events.keys, how="left"
        )
        is_stale = is_stale | (
            ~is_delete & F.col(_TOMB_ORDER).isNotNull() & (F.col(ORDER_COLUMN) <= F.col(_TOMB_ORDER))
        )
        no_tombstone = F.col(_TOMB_ORDER).isNull()
    if floor is not None:  # at or before a TRUNCATE the table has applied, or this batch's
        is_stale = is_stale | (F.col(ORDER_COLUMN) <= F.lit(floor))
    unfilled = _any_of(test for name, test in toastable.items() if name not in lookup.by_table)
    if lookup.by_table:
        by_table = _any_of(test for name, test in toastable.items() if name in lookup.by_table)
        unfilled = unfilled | (by_table & stored_order.isNull())
    action = (
        F.when(is_stale, F.lit(STALE))
        .when(is_delete, F.lit(DELETE))
        .when(unfilled, F.lit(ERROR))
        .otherwise(F.lit(UPSERT))
    )
    return winners.withColumn(ACTION_COLUMN, action).select(
        *events.columns, ACTION_COLUMN, _HAD_PLACEHOLDER, _EVENTS, _OPS, no_tombstone.alias(_NO_TOMBSTONE)
    )


def _keep_decided(decided: DataFrame, checkpointed: DataFrame, joined: bool) -> tuple[DataFrame, list[DataFrame]]:
    """``decided`` and the local checkpoints the plan holds: ``decided`` materialised if it was ``joined`` with
    what the table holds, so the write reads it once more at most."""
    if not joined:
        return decided, [checkpointed]
    decided = decided.localCheckpoint(eager=True)
    # The per-key results are in ``decided`` now: free their first copy before Hudi's merge
    # handles, which take heap outside Spark's memory pool, need it.
    from hudi_cdc.spark import release

    release(checkpointed)
    return decided, [decided]


class _Moves:
    """The primary-key moves in sight of one batch, and the values the old keys hand to the new ones.

    A move (an edge) is a create of a key (the ``_ROW`` columns) at the very position (``_PAIR``) of
    another key's delete (the ``_OLD`` columns). ``sources`` are the rows an old key's values may come
    from: the batch's, the table's and, once needed, the table's past. The local checkpoints made on
    the way go to ``scratch``.
    """

    def __init__(
        self,
        batch: DataFrame,
        keys: list[str],
        toastable: dict[str, Column],
        stored: StoredState,
        scratch: list[DataFrame],
    ) -> None:
        from pyspark.sql import functions as F

        self.keys, self.toastable, self.stored, self.scratch = keys, toastable, stored, scratch
        self.row = {k: f"{_ROW}{i}" for i, k in enumerate(keys)}
        self.old = {k: f"{_OLD}{i}" for i, k in enumerate(keys)}
        tombstones = stored.tombstones()
        self.edges = self._keep(self._edges(batch, tombstones))
        self.wanted = [*keys, ORDER_COLUMN, *toastable]
        self.sources = [batch.filter(F.col(OP_COLUMN) != F.lit("d")).select(*self.wanted)]
        current = stored.stored_rows(self.wanted)
        if current is not None:
            self.sources.append(current)
        self.looked_back = tombstones is None  # an old key deleted by an earlier round lives only in the table's past

    def _keep(self, frame: DataFrame) -> DataFrame:
        kept = frame.localCheckpoint(eager=True)
        self.scratch.append(kept)
        return kept

    def _edges(self, batch: DataFrame, tombstones: DataFrame | None) -> DataFrame:
        """Every move in sight: a create at the very position of another key's delete."""
        from pyspark.sql import functions as F

        keys, row, old = self.keys, self.row, self.old
        deletes = batch.filter(F.col(OP_COLUMN) == F.lit("d")).select(*keys, ORDER_COLUMN)
        if tombstones is not None:
            deletes = deletes.unionByName(tombstones.select(*keys, ORDER_COLUMN))
        creates = batch.filter(F.col(OP_COLUMN) != F.lit("d")).select(
            *[F.col(k).alias(row[k]) for k in keys], F.col(ORDER_COLUMN).alias(_PAIR)
        )
        differs = F.lit(False)
        for k in keys:
            differs = differs | ~F.col(row[k]).eqNullSafe(F.col(old[k]))
        olds = deletes.select(*[F.col(k).alias(old[k]) for k in keys], F.col(ORDER_COLUMN).alias(_PAIR))
        return creates.join(olds, _PAIR).filter(differs).distinct()

    def latest_move(self, targets: DataFrame, before: Column | None) -> DataFrame:
        """Per row, the newest move of the key it is looking at (below ``before``)."""
        from pyspark.sql import functions as F

        keys, row, old = self.keys, self.row, self.old
        on = [F.col(f"t.{k}") == F.col(f"e.{row[k]}") for k in keys]
        joined = targets.alias("t").join(self.edges.alias("e"), on)
        if before is not None:
            joined = joined.filter(F.col(f"e.{_PAIR}") < before)
        move = F.struct(F.col(f"e.{_PAIR}").alias(_PAIR), *[F.col(f"e.{old[k]}").alias(old[k]) for k in keys])
        return (
            joined.groupBy(*[F.col(f"t.{row[k]}").alias(row[k]) for k in keys])
            .agg(F.max_by(move, F.col(f"e.{_PAIR}")).alias("m"))
            .select(*row.values(), "m.*")
        )

    def fill(self, moved: DataFrame) -> DataFrame:
        """``moved`` (decided rows still holding a placeholder) filled from their old keys, a move at a time."""
        from pyspark.sql import functions as F

        keys, row, old = self.keys, self.row, self.old
        left = _any_of(self.toastable.values())  # a placeholder still there, re-evaluated on each frame
        filled = moved
        targets = self.latest_move(moved.select(*keys, *[F.col(k).alias(row[k]) for k in keys]), None)
        for _ in range(_MAX_HOPS + 1):
            targets = self._keep(targets)
            if targets.isEmpty():
                break
            filled = self._keep(self._take(filled, targets).select(*moved.columns))
            waiting = filled.filter(left).select(*[F.col(k).alias(f"w_{i}") for i, k in enumerate(keys)])
            hop = targets.join(waiting, [F.col(row[k]) == F.col(f"w_{i}") for i, k in enumerate(keys)], "left_semi")
            if not self.looked_back and not hop.isEmpty():
                # Not in this round nor in the table: the table's past, for the same targets (read only now).
                self.sources += list(itertools.islice(self.stored.past_rows(self.wanted), _PAST_COMMITS))
                self.looked_back, targets = True, hop
                continue
            # Still a placeholder: follow the old key's own move, below the position of this one.
            targets = self.latest_move(
                hop.select(*row.values(), _PAIR, *[F.col(old[k]).alias(k) for k in keys]), F.col(f"t.{_PAIR}")
            )
        return filled

    def _take(self, filled: DataFrame, targets: DataFrame) -> DataFrame:
        """``filled`` with each placeholder the newest real value the old key of its move held below the move."""
        from pyspark.sql import functions as F

        row, old, names = self.row, self.old, list(self.toastable)
        candidates = None
        for rows in self.sources:
            present = [c for c in self.wanted if c in rows.columns]
            on = [rows[k] == F.col(old[k]) for k in self.keys]
            part = rows.select(*present).join(F.broadcast(targets), on).filter(F.col(ORDER_COLUMN) < F.col(_PAIR))
            part = part.select(
                *row.values(),
                ORDER_COLUMN,
                *[F.col(f"`{n}`") if n in present else F.lit(None).alias(n) for n in names],
            )
            candidates = part if candidates is None else candidates.unionByName(part)
        assert candidates is not None
        fills = candidates.groupBy(*row.values()).agg(
            *[
                F.max_by(F.struct(F.col(f"`{n}`").alias("v")), F.when(~test, F.col(ORDER_COLUMN))).alias(f"{_MOVED}{i}")
                for i, (n, test) in enumerate(self.toastable.items())
            ]
        )
        step = filled.join(fills, [filled[k] == fills[row[k]] for k in self.keys], "left")
        for i, (name, test) in enumerate(self.toastable.items()):
            fill = F.col(f"{_MOVED}{i}")
            step = step.withColumn(name, F.when(test & fill.isNotNull(), fill["v"]).otherwise(F.col(f"`{name}`")))
        return step


def _pick(
    batch: DataFrame, position: Column, slots: Sequence[tuple[Column, Column, bool]], *, by_hash: bool | None = None
) -> tuple[list[Column], list[Column]]:
    """Per slot ``(value, where, oldest)``, the value at the greatest (with ``oldest`` the least) ``position``
    among the group's rows where ``where`` holds, NULL if none: the aggregates to compute, and each slot's
    value as read from their results. Positions are unique (source order, then arrival): a value never decides.

    ``max`` over ``struct(position, value)`` has a buffer Spark cannot update in place, so Spark sorts every
    row by key (a sort aggregate); with ``by_hash`` (default: when :func:`_hash_pick_loadable`) one aggregate
    of our own (``jars/pick``) takes every slot in an object hash aggregate instead. That one keeps Spark's
    default of 128 keys a task in its map before it sorts the rest: larger maps measured slower
    (``bench/pick.py``), the collector paying for them.
    """
    from pyspark.sql import functions as F

    if by_hash is None:
        by_hash = _hash_pick_loadable(batch.sparkSession)
    if by_hash:
        from pyspark.sql import Column as PyColumn
        from pyspark.sql.column import _to_java_column, _to_seq

        spark = batch.sparkSession
        inputs = [position, *itertools.chain.from_iterable((where, value) for value, where, _ in slots)]
        modes = "".join("o" if oldest else "n" for _, _, oldest in slots)
        jvm_inputs = _to_seq(spark.sparkContext, inputs, _to_java_column)
        picked = PyColumn(spark._jvm.io.hudicdc.pick.Pick.column(jvm_inputs, modes))  # type: ignore[union-attr]
        return [picked.alias(_PICKED)], [F.col(_PICKED)[f"s{i}"] for i in range(len(slots))]
    orderable = all(_orderable(f.dataType) for f in batch.schema.fields)
    picks = []
    for i, (value, where, oldest) in enumerate(slots):
        if orderable:  # one buffer per aggregate instead of max_by's two: 6% faster on 1M events
            both = F.when(where, F.struct(position.alias("p"), value.alias("v")))
            pick = (F.min(both) if oldest else F.max(both)).getField("v")
        else:  # a map column cannot be ordered
            pick = (F.min_by if oldest else F.max_by)(value, F.when(where, position))
        picks.append(pick.alias(f"{_PICKED}{i}"))
    return picks, [F.col(f"{_PICKED}{i}") for i in range(len(slots))]


def _hash_pick_loadable(spark: SparkSession) -> bool:
    """Whether the session's JVM has hudi-cdc's pick (``make jars`` puts it in ``.jars/hudi``; an install that
    resolves Maven coordinates has none)."""
    jvm = spark._jvm
    assert jvm is not None
    return bool(jvm.org.apache.spark.util.Utils.classIsLoadable("io.hudicdc.pick.Pick"))


def _orderable(data_type: DataType) -> bool:
    """Whether Spark can compare values of ``data_type`` (its ``RowOrdering.isOrderable``)."""
    from pyspark.sql.types import ArrayType, AtomicType, NullType, StructType, UserDefinedType

    if isinstance(data_type, AtomicType | NullType):
        return True
    if isinstance(data_type, StructType):
        return all(_orderable(f.dataType) for f in data_type.fields)
    if isinstance(data_type, ArrayType):
        return _orderable(data_type.elementType)
    if isinstance(data_type, UserDefinedType):
        return _orderable(data_type.sqlType())
    return False  # maps, calendar intervals


def _any_of(tests: Iterable[Column]) -> Column:
    from pyspark.sql import functions as F

    result = F.lit(False)
    for test in tests:
        result = result | test
    return result


def _describe_error(row: Any, keys: Sequence[str]) -> str:
    problem = row[_FIRST_ERROR]
    key = ", ".join(f"{k}={row[k]!r}" for k in keys)
    return f"{problem['origin']}: event op={problem['op']!r} key ({key}): {problem['e']}"


def _describe_keys(rows: Sequence[object], keys: Sequence[str]) -> str:
    return ", ".join("(" + ", ".join(f"{k}={row[k]!r}" for k in keys) + ")" for row in rows)  # type: ignore[index]
