"""History modes: what a table keeps of the past besides the source's current rows.

- ``none``: the table holds the source's current rows (:meth:`MergePolicy.plan` alone).
- ``soft_delete``: as ``none``, but a delete leaves the row in place, marked ``_source_deleted``, with
  the values it had before the delete and the delete's own ``_source_*`` columns (its source time and
  position). Ordering is unchanged: the marked row carries the delete's position, so a late event below
  it loses against it as it lost against the tombstone, and a re-insert above it revives the key.
- ``scd2``: one row per version of a key, the record key being the source key plus ``_source_order``.
  Each batch rebuilds the chain of every key it touches from the stored versions and its own events,
  so the result depends only on the set of events seen, never on their order or batching:
  an out-of-order event lands in its place and re-cuts its neighbours, a replay changes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal

from payloads.base import (
    ACTION_COLUMN,
    ARRIVAL_COLUMN,
    DELETE,
    DELETED_COLUMN,
    ERROR_COLUMN,
    EVENTS_COLUMN,
    INTERNAL_PREFIX,
    OP_COLUMN,
    ORDER_COLUMN,
    ORIGIN_COLUMN,
    RAW_COLUMN,
    SOURCE_TS_COLUMN,
    MergePolicy,
    PlanCounts,
    StoredState,
    WritePlan,
)

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import DataType

__all__ = [
    "CURRENT_COLUMN",
    "HISTORY_COLUMNS",
    "SOFT_DELETED_COLUMN",
    "UNCHANGED_COLUMN",
    "VALID_FROM_COLUMN",
    "VALID_TO_COLUMN",
    "VALID_TO_ORDER_COLUMN",
    "HistoryMode",
    "current_rows",
    "first_versions",
    "plan_scd2",
    "record_key_fields",
    "soft_delete",
    "source_key_fields",
]

HistoryMode = Literal["none", "soft_delete", "scd2"]

SOFT_DELETED_COLUMN = "_source_deleted"
"""soft_delete and scd2: the row is a delete (scd2: the marker of the delete that closed the version before)."""
VALID_FROM_COLUMN = "_valid_from"
"""scd2: when the version began (the source commit time of its event); its position is ``_source_order``."""
VALID_TO_COLUMN = "_valid_to"
"""scd2: when the next version of the key (or the delete) began; NULL while the version is current."""
VALID_TO_ORDER_COLUMN = "_valid_to_order"
"""scd2: the source position where the version ended (the next version's ``_source_order``)."""
CURRENT_COLUMN = "_is_current"
"""scd2: the version is the key's current one (the newest, and not a delete)."""
UNCHANGED_COLUMN = "_source_unchanged"
"""scd2: the columns the version's event left unchanged (TOAST placeholders), filled from the version before:
kept so that a version arriving later between the two re-fills them."""
HISTORY_COLUMNS = (
    SOFT_DELETED_COLUMN,
    VALID_FROM_COLUMN,
    VALID_TO_COLUMN,
    VALID_TO_ORDER_COLUMN,
    CURRENT_COLUMN,
    UNCHANGED_COLUMN,
)

_ORDER_IN_KEY = ORDER_COLUMN
_OLD = INTERNAL_PREFIX + "old_version"
_MAX_MOVES = 4  # a key changed this many times within one batch is followed back
_IN_BATCH = "__in_batch"  # 0 for a stored row, 1 for an event: at equal positions the batch's is the newer


def record_key_fields(mode: HistoryMode, keys: Sequence[str]) -> tuple[str, ...]:
    """The Hudi record key of a table in ``mode`` whose source key is ``keys``."""
    return (*keys, _ORDER_IN_KEY) if mode == "scd2" else tuple(keys)


def source_key_fields(record_key: Sequence[str]) -> tuple[str, ...]:
    """The source key of a table whose Hudi record key is ``record_key`` (an scd2 table's ends in the position)."""
    if record_key and record_key[-1] == _ORDER_IN_KEY:
        return tuple(record_key[:-1])
    return tuple(record_key)


def current_rows(frame: DataFrame) -> DataFrame:
    """A history table's rows as the source has them now (a table in mode ``none`` as it is), without the
    history columns: what ``verify`` compares with the source."""
    from pyspark.sql import functions as F

    if CURRENT_COLUMN in frame.columns:
        frame = frame.where(F.col(CURRENT_COLUMN))
    elif SOFT_DELETED_COLUMN in frame.columns:
        frame = frame.where(~F.coalesce(F.col(SOFT_DELETED_COLUMN), F.lit(False)))
    return frame.drop(*[c for c in HISTORY_COLUMNS if c in frame.columns])


def first_versions(mode: HistoryMode, rows: DataFrame) -> DataFrame:
    """A first load's rows (one per key, none a delete) as a table in ``mode`` holds them."""
    from pyspark.sql import functions as F

    if mode == "none":
        return rows
    rows = rows.withColumn(SOFT_DELETED_COLUMN, F.lit(False))
    if mode == "soft_delete":
        return rows
    ts = F.timestamp_millis(F.col(SOURCE_TS_COLUMN)) if SOURCE_TS_COLUMN in rows.columns else F.lit(None)
    return rows.select(
        "*",
        ts.cast("timestamp").alias(VALID_FROM_COLUMN),
        F.lit(None).cast("timestamp").alias(VALID_TO_COLUMN),
        F.lit(None).cast("string").alias(VALID_TO_ORDER_COLUMN),
        F.lit(True).alias(CURRENT_COLUMN),
        F.array().cast("array<string>").alias(UNCHANGED_COLUMN),
    )


def _data_columns(frame: DataFrame, keys: Sequence[str]) -> list[str]:
    """The columns that hold the source row's values (not the key, nor hudi-cdc's or Hudi's own)."""
    return [
        c
        for c in frame.columns
        if c not in keys
        and not c.startswith(("_source_", "_hoodie_", "_valid_", "_is_current", "__"))
        and c != "_ingested_at"
    ]


def _placeholder_tests(policy: MergePolicy, frame: DataFrame, keys: Sequence[str]) -> dict[str, Column]:
    fields = {f.name: f.dataType for f in frame.schema.fields}
    return {
        name: test
        for name in _data_columns(frame, keys)
        for test in [policy.placeholder_test(name, fields[name])]
        if test is not None
    }


# --- soft_delete ------------------------------------------------------------------------------------------------


def soft_delete(
    policy: MergePolicy, plan: WritePlan, batch: DataFrame, *, key_fields: Sequence[str], stored: StoredState
) -> WritePlan:
    """``plan`` with its deletes written as marked rows holding the key's values before the delete.

    A delete's values: per column, the newest real value before it (in source position order) among the
    batch's other events of the key and the stored row (a TOAST placeholder is no value; a stored row marked
    by this same delete, replayed, keeps its values); without one, the delete's own before image.
    """
    from pyspark.sql import functions as F

    if plan.upserts is None:
        return plan
    upserts = plan.upserts
    if plan.counts.deletes and plan.decided is not None:
        decided = plan.decided.filter(F.col(ACTION_COLUMN) == F.lit(DELETE))
        deletes = decided.select(*key_fields, F.col(ORDER_COLUMN).alias("__delete_order"))
        # The batch is read again only for a deleted key with other events in it (``decided`` is materialised).
        alone = decided.where(F.col(EVENTS_COLUMN) > F.lit(1)).isEmpty()
        fills = _values_before(policy, None if alone else batch, deletes, list(key_fields), stored, upserts)
        if fills is not None:
            upserts = _take_fills(upserts, fills, list(key_fields))
    marked = F.coalesce(F.col(DELETED_COLUMN), F.lit(False))
    upserts = upserts.withColumn(SOFT_DELETED_COLUMN, marked).withColumn(DELETED_COLUMN, F.lit(False))
    return replace(plan, upserts=upserts)


def _values_before(
    policy: MergePolicy,
    batch: DataFrame | None,
    deletes: DataFrame,
    keys: list[str],
    stored: StoredState,
    upserts: DataFrame,
) -> DataFrame | None:
    """Per deleted key: a struct per data column (``__fill_<column>``), the newest real value before the delete,
    from ``batch`` (None: it has no other event of a deleted key) and the stored rows; None without either."""
    from pyspark.sql import functions as F

    columns = _data_columns(upserts, keys)
    types = {f.name: f.dataType for f in upserts.schema.fields}
    arrival = batch.schema[ARRIVAL_COLUMN].dataType if batch is not None else "string"
    candidates = [] if batch is None else [_batch_candidates(policy, batch, keys, columns, types)]
    table = stored.stored_rows([*keys, ORDER_COLUMN, *columns])
    if table is not None:
        table = table.join(F.broadcast(deletes), on=keys, how="left_semi")
        candidates.append(
            table.select(
                *keys,
                ORDER_COLUMN,
                F.lit(0).alias(_IN_BATCH),
                F.lit(None).cast(arrival).alias("__arrival"),
                *[(F.col(f"`{c}`") if c in table.columns else F.lit(None)).cast(types[c]).alias(c) for c in columns],
                *[F.lit(c in table.columns).alias(f"__real_{i}") for i, c in enumerate(columns)],
            )
        )
    if not candidates:
        return None
    events = candidates[0] if len(candidates) == 1 else candidates[0].unionByName(candidates[1])
    # The stored row may be this very delete, marked by an earlier round: a replay keeps its values.
    at_or_before = (F.col(ORDER_COLUMN) < F.col("__delete_order")) | (
        (F.col(_IN_BATCH) == F.lit(0)) & (F.col(ORDER_COLUMN) == F.col("__delete_order"))
    )
    before = events.join(F.broadcast(deletes), on=keys).where(at_or_before)
    position = F.struct(F.col(ORDER_COLUMN), F.col(_IN_BATCH), F.col("__arrival"))
    return before.groupBy(*keys).agg(
        # max_by skips rows whose ordering is NULL: those where the column holds no real value
        *[
            F.max_by(F.struct(F.col(f"`{c}`").alias("v")), F.when(F.col(f"__real_{i}"), position)).alias(f"__fill_{i}")
            for i, c in enumerate(columns)
        ]
    )


def _batch_candidates(
    policy: MergePolicy, batch: DataFrame, keys: list[str], columns: list[str], types: dict[str, Any]
) -> DataFrame:
    """The batch's good events other than deletes, with per column whether it holds a real value."""
    from pyspark.sql import functions as F

    tests = _placeholder_tests(policy, batch, keys)
    good = F.col(ERROR_COLUMN).isNull() if ERROR_COLUMN in batch.columns else F.lit(True)
    return batch.filter(good & (F.col(OP_COLUMN) != F.lit("d"))).select(
        *keys,
        ORDER_COLUMN,
        F.lit(1).alias(_IN_BATCH),
        F.col(ARRIVAL_COLUMN).alias("__arrival"),
        *[F.col(f"`{c}`").cast(types[c]).alias(c) for c in columns],
        *[(~tests[c] if c in tests else F.lit(True)).alias(f"__real_{i}") for i, c in enumerate(columns)],
    )


def _take_fills(upserts: DataFrame, fills: DataFrame, keys: list[str]) -> DataFrame:
    """The delete rows of ``upserts`` with their values from ``fills`` (other rows as they are)."""
    from pyspark.sql import functions as F

    columns = _data_columns(upserts, keys)
    joined = upserts.join(F.broadcast(fills), on=keys, how="left")
    is_delete = F.coalesce(F.col(DELETED_COLUMN), F.lit(False))
    for i, c in enumerate(columns):
        fill = F.col(f"__fill_{i}")
        joined = joined.withColumn(c, F.when(is_delete & fill.isNotNull(), fill["v"]).otherwise(F.col(f"`{c}`")))
    return joined.select(*upserts.columns)


# --- scd2 -------------------------------------------------------------------------------------------------------


def plan_scd2(
    policy: MergePolicy, batch: DataFrame, *, key_fields: Sequence[str], stored: StoredState, quarantine: bool = False
) -> WritePlan:
    """The versions to write for ``batch``: every version of each key it touches whose row changed.

    A bad event fails the plan (with ``quarantine``: is set aside); so does a placeholder with no earlier
    version of its key to fill it from (with ``quarantine``: its key's events of the batch are set aside).
    """
    from pyspark.sql import functions as F

    keys = list(key_fields)
    errors, quarantined, good = _bad_events(batch, keys, quarantine)
    if errors and not quarantine:
        return WritePlan.failed(errors)
    chain, materialised = _chained(policy, good, keys, stored)
    unfilled = chain.where(F.col("__unfilled")).select(*keys, ORDER_COLUMN).limit(5).collect()
    if unfilled and not quarantine:
        return WritePlan.failed([_describe_unfilled(r, keys, policy) for r in unfilled], materialised)
    if unfilled:
        bad_keys = chain.where(F.col("__unfilled")).select(*keys).distinct()
        unplaced = good.join(bad_keys, on=keys, how="left_semi").withColumn(
            ERROR_COLUMN, F.lit("TOAST placeholder with no earlier version of the key to take the value from")
        )
        quarantined = unplaced if quarantined is None else quarantined.unionByName(unplaced)
        chain = chain.join(bad_keys, on=keys, how="left_anti")
    counts = _scd2_counts(good, chain, keys)
    written = chain.where(F.col("__changed"))
    rows = [c for c in written.columns if not c.startswith("__") and c not in HISTORY_COLUMNS]
    upserts = written.select(*rows, *HISTORY_COLUMNS)  # in the order first_versions writes them
    return WritePlan(
        decided=None,
        upserts=upserts,
        tombstones=None,
        counts=counts,
        materialised=tuple(materialised),
        quarantined=quarantined,
    )


def _chained(
    policy: MergePolicy, good: DataFrame, keys: list[str], stored: StoredState
) -> tuple[DataFrame, list[DataFrame]]:
    """Every version of the touched keys in its chain (materialised), and the local checkpoints made.

    A key change is a delete of the old key and a create of the new one at the same position; Postgres
    sends the create with placeholders for the TOASTed values it did not change. Those take the old key's
    values, which its delete marker holds once its chain is built: so the chains are built again with the
    creates filled, once per hop of a key moved several times.
    """
    tests = _placeholder_tests(policy, good, keys)
    events = _as_versions(policy, good, keys)
    versions = _stored_versions(stored, events, keys)
    materialised = []
    for _ in range(_MAX_MOVES + 1):
        chain = _rebuilt(events, versions, keys, tests).localCheckpoint(eager=True)
        materialised.append(chain)
        moved = _moved_values(chain, stored, keys, list(tests))
        if moved is None:
            break
        events = _with_moved(events, moved, keys, list(tests))
    return chain, materialised


def _moved_values(chain: DataFrame, stored: StoredState, keys: list[str], names: list[str]) -> DataFrame | None:
    """Per create still holding a placeholder at a key change: the old key's values (``__moved``), or None."""
    from pyspark.sql import functions as F

    if not names:
        return None
    creates = chain.where(F.col("__unfilled") & (F.col(OP_COLUMN) == F.lit("c"))).select(*keys, ORDER_COLUMN)
    if creates.isEmpty():
        return None
    values = F.struct(*[F.col(f"`{n}`") for n in names]).alias("__moved")
    old = [F.col(k).alias(f"__old_{k}") for k in keys]
    markers = chain.where(F.col(SOFT_DELETED_COLUMN)).select(*old, ORDER_COLUMN, values)
    table = stored.stored_rows([*keys, ORDER_COLUMN, SOFT_DELETED_COLUMN, *names])
    if table is not None and all(n in table.columns for n in names):  # the old key deleted in an earlier round
        at = creates.select(ORDER_COLUMN).distinct()
        older = table.where(F.col(SOFT_DELETED_COLUMN)).join(F.broadcast(at), ORDER_COLUMN, "left_semi")
        markers = markers.unionByName(older.select(*old, ORDER_COLUMN, values))
    other_key = F.lit(False)
    for k in keys:
        other_key = other_key | ~F.col(k).eqNullSafe(F.col(f"__old_{k}"))
    moved = creates.join(markers, ORDER_COLUMN).where(other_key)
    moved = moved.groupBy(*keys, ORDER_COLUMN).agg(F.first("__moved").alias("__moved"))
    return None if moved.isEmpty() else moved  # read from the materialised chain: cheap to compute again


def _with_moved(events: DataFrame, moved: DataFrame, keys: list[str], names: list[str]) -> DataFrame:
    """``events`` with each moved create's placeholders taken from its old key (its values are then its own)."""
    from pyspark.sql import functions as F

    joined = events.join(moved, [*keys, ORDER_COLUMN], "left")
    has = F.col("__moved").isNotNull()
    for n in names:
        placeholder = F.array_contains(F.col(UNCHANGED_COLUMN), n)
        joined = joined.withColumn(n, F.when(has & placeholder, F.col("__moved")[n]).otherwise(F.col(f"`{n}`")))
    unchanged = F.when(has, F.array().cast("array<string>")).otherwise(F.col(UNCHANGED_COLUMN))
    return joined.withColumn(UNCHANGED_COLUMN, unchanged).select(*events.columns)


def _bad_events(batch: DataFrame, keys: list[str], quarantine: bool) -> tuple[list[str], DataFrame | None, DataFrame]:
    """Descriptions of up to five bad events, the bad events to set aside (with ``quarantine``), the good ones."""
    from pyspark.sql import functions as F

    if ERROR_COLUMN not in batch.columns:
        return [], None, batch
    bad = batch.where(F.col(ERROR_COLUMN).isNotNull())
    shown = bad.select(ORIGIN_COLUMN, OP_COLUMN, ERROR_COLUMN, *keys).limit(5).collect()
    errors = [
        f"{r[ORIGIN_COLUMN]}: event op={r[OP_COLUMN]} key ({', '.join(f'{k}={r[k]!r}' for k in keys)}): "
        f"{r[ERROR_COLUMN]}"
        for r in shown
    ]
    if not errors:
        return [], None, batch
    return errors, (bad if quarantine else None), batch.where(F.col(ERROR_COLUMN).isNull())


def _as_versions(policy: MergePolicy, events: DataFrame, keys: list[str]) -> DataFrame:
    """Each event as a version row (not yet placed in its chain); a replayed event once (its last arrival)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    tests = _placeholder_tests(policy, events, keys)
    unchanged = F.filter(F.array(*[F.when(t, F.lit(n)) for n, t in tests.items()]), lambda x: x.isNotNull())
    if not tests:
        unchanged = F.array().cast("array<string>")
    replays = Window.partitionBy(*keys, ORDER_COLUMN).orderBy(F.col(ARRIVAL_COLUMN).desc())
    internal = (ERROR_COLUMN, RAW_COLUMN, ORIGIN_COLUMN, ARRIVAL_COLUMN, *HISTORY_COLUMNS)  # (the table's, as NULL)
    # Hudi never deletes a version: the marker column is false in every row
    data = [
        F.lit(False).alias(c) if c == DELETED_COLUMN else F.col(f"`{c}`") for c in events.columns if c not in internal
    ]
    is_delete = F.col(OP_COLUMN) == F.lit("d")
    ts = F.timestamp_millis(F.col(SOURCE_TS_COLUMN)) if SOURCE_TS_COLUMN in events.columns else F.lit(None)
    return (
        events.where(F.col(OP_COLUMN) != F.lit("t"))
        .withColumn("__replay", F.row_number().over(replays))
        .select(
            *data,
            F.lit(1).alias(_IN_BATCH),
            F.col("__replay"),
            is_delete.alias(SOFT_DELETED_COLUMN),
            ts.cast("timestamp").alias(VALID_FROM_COLUMN),
            F.when(is_delete, F.array().cast("array<string>")).otherwise(unchanged).alias(UNCHANGED_COLUMN),
        )
    )


def _stored_versions(stored: StoredState, events: DataFrame, keys: list[str]) -> DataFrame | None:
    """The stored versions of the keys ``events`` touches, each with its history columns as stored (``_OLD``)."""
    from pyspark.sql import functions as F

    columns = [c for c in events.columns if not c.startswith("__")]
    derived = {VALID_TO_COLUMN: "timestamp", VALID_TO_ORDER_COLUMN: "string", CURRENT_COLUMN: "boolean"}
    table = stored.stored_rows([*columns, *derived])
    if table is None:
        return None
    touched = events.select(*keys).distinct()
    types = {f.name: f.dataType for f in events.schema.fields}
    typed: dict[str, DataType | str] = {**{c: types[c] for c in columns}, **derived}
    versions = table.join(touched, on=keys, how="left_semi").select(
        *[(F.col(f"`{c}`") if c in table.columns else F.lit(None)).cast(typed[c]).alias(c) for c in typed]
    )
    # The stored row as the rebuilt one will be compared with it (types as the batch has them).
    return versions.select(
        *columns,
        F.lit(0).alias(_IN_BATCH),
        F.lit(1).alias("__replay"),
        F.struct(*[F.col(f"`{c}`") for c in typed]).alias(_OLD),
    )


def _rebuilt(events: DataFrame, stored: DataFrame | None, keys: list[str], tests: dict[str, Column]) -> DataFrame:
    """Every version of the touched keys placed in its chain: fills, validity, whether its row changed."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    fresh = events.where(F.col("__replay") == 1).withColumn(_OLD, F.lit(None))
    if stored is not None:
        fresh = stored.unionByName(fresh.withColumn(_OLD, F.lit(None).cast(stored.schema[_OLD].dataType)))
    # One row per (key, position): the stored one if there is one (a replay changes nothing).
    same = Window.partitionBy(*keys, ORDER_COLUMN).orderBy(F.col(_IN_BATCH))
    chain = fresh.withColumn("__n", F.row_number().over(same)).where(F.col("__n") == 1).drop("__n", "__replay")
    by_position = Window.partitionBy(*keys).orderBy(ORDER_COLUMN)
    earlier = by_position.rowsBetween(Window.unboundedPreceding, -1)
    deleted = F.col(SOFT_DELETED_COLUMN)
    chain = chain.withColumn("__unfilled", F.lit(False))
    for name in _data_columns(chain, keys):
        real = ~deleted & ~F.array_contains(F.col(UNCHANGED_COLUMN), name)
        before = F.last(F.when(real, F.struct(F.col(f"`{name}`").alias("v"))), ignorenulls=True).over(earlier)
        chain = chain.withColumn("__before", before)
        takes = deleted | ~real if name in tests else deleted
        value = F.when(takes & F.col("__before").isNotNull(), F.col("__before")["v"]).otherwise(F.col(f"`{name}`"))
        if name in tests:  # a placeholder with nothing before it: the value it stands for was never seen
            chain = chain.withColumn(
                "__unfilled", F.col("__unfilled") | (~real & ~deleted & F.col("__before").isNull())
            )
        chain = chain.withColumn(name, value).drop("__before")
    following = F.lead(F.struct(ORDER_COLUMN, VALID_FROM_COLUMN)).over(by_position)
    chain = chain.withColumn("__next", following)
    chain = chain.select(
        "*",
        F.when(deleted, F.col(VALID_FROM_COLUMN)).otherwise(F.col("__next")[VALID_FROM_COLUMN]).alias(VALID_TO_COLUMN),
        F.when(deleted, F.col(ORDER_COLUMN)).otherwise(F.col("__next")[ORDER_COLUMN]).alias(VALID_TO_ORDER_COLUMN),
        (F.col("__next").isNull() & ~deleted).alias(CURRENT_COLUMN),
    ).drop("__next")
    return _with_changed(chain)


def _with_changed(chain: DataFrame) -> DataFrame:
    """``__changed``: the version is new, or its stored row differs from the rebuilt one."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    old = chain.schema[_OLD].dataType
    if not isinstance(old, StructType):  # nothing stored yet: every version is new
        return chain.withColumn("__changed", F.lit(True)).drop(_OLD)
    rebuilt = F.struct(*[F.col(f"`{f.name}`") for f in old.fields])  # type: ignore[attr-defined]
    changed = F.col(_OLD).isNull() | ~rebuilt.eqNullSafe(F.col(_OLD))
    return chain.withColumn("__changed", changed).drop(_OLD)


def _scd2_counts(events: DataFrame, chain: DataFrame, keys: list[str]) -> PlanCounts:
    """Events and ops of the batch; versions written (``upserts``: new and re-cut), new deletes; replays."""
    from pyspark.sql import functions as F

    ops = ("c", "u", "d", "r")
    ev = (
        events.where(F.col(OP_COLUMN) != F.lit("t"))
        .agg(
            F.count(F.lit(1)).alias("events"),
            *[F.count(F.when(F.col(OP_COLUMN) == F.lit(op), 1)).alias(op) for op in ops],
        )
        .first()
    )
    new = F.col(_IN_BATCH) == F.lit(1)
    has_ts = SOURCE_TS_COLUMN in chain.columns
    ch = chain.agg(
        F.count(F.when(F.col("__changed"), 1)).alias("written"),
        F.count(F.when(new & F.col(SOFT_DELETED_COLUMN), 1)).alias("deletes"),
        F.count(F.when(new, 1)).alias("new"),
        F.count(F.when(new & (F.size(UNCHANGED_COLUMN) > 0), 1)).alias("toast"),
        (F.min(F.when(new, F.col(SOURCE_TS_COLUMN))) if has_ts else F.lit(None)).alias("oldest"),
        (F.max(F.when(new, F.col(SOURCE_TS_COLUMN))) if has_ts else F.lit(None)).alias("newest"),
    ).first()
    assert ev is not None and ch is not None  # global aggregates have one row
    n_events = int(ev["events"])
    return PlanCounts(
        events=n_events,
        upserts=int(ch["written"]),
        deletes=int(ch["deletes"]),
        superseded=n_events - int(ch["new"]),  # replays: of an event stored or twice in the batch
        toast_filled=int(ch["toast"]),
        source_ts_ms_min=ch["oldest"],
        source_ts_ms_max=ch["newest"],
        ops={op: int(ev[op]) for op in ops if ev[op]},
    )


def _describe_unfilled(row: object, keys: list[str], policy: MergePolicy) -> str:
    shown = ", ".join(f"{k}={row[k]!r}" for k in keys)  # type: ignore[index]
    return (
        f"key ({shown}) at position {row[ORDER_COLUMN]}: TOAST placeholder {policy.toast_placeholder!r} with no "  # type: ignore[index]
        "earlier version of the key to take the unchanged value from"
    )
