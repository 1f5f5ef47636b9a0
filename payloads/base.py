"""The flavor-independent half of a merge policy.

Given one flattened batch (every event of the batch, any order, replays
included) a policy decides per record key what the table must receive:

1. TOAST chains inside the batch: a placeholder takes the value of the key's
   previous event in *position* order (not arrival order).
2. The winner per key: the highest ``_source_order``; on a tie the later arrival.
   Every other event of the key is ``superseded``.
3. Delete tombstones: a non-delete winner at or below a tombstone of its key is
   ``stale`` (an out-of-order event that would resurrect a deleted row).
4. Placeholders left in a winner take the stored row's value; with no stored row
   the record is an ``error``.

Against rows already in the table Hudi's event-time ordering on ``_source_order``
keeps the newer of stored and incoming, deletes included.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Sequence

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import DataType

__all__ = [
    "ACTION_COLUMN",
    "ARRIVAL_COLUMN",
    "DELETED_COLUMN",
    "ERROR_COLUMN",
    "INTERNAL_PREFIX",
    "ORDER_COLUMN",
    "MergePolicy",
    "PlanCounts",
    "StoredState",
    "WritePlan",
]

ORDER_COLUMN = "_source_order"
DELETED_COLUMN = "_hoodie_is_deleted"
OP_COLUMN = "_source_op"
INGESTED_AT_COLUMN = "_ingested_at"
TOMBSTONED_AT_COLUMN = "_tombstoned_at"
# Columns that live only inside a run and are never written.
INTERNAL_PREFIX = "__hudi_cdc_"
ARRIVAL_COLUMN = INTERNAL_PREFIX + "arrival"
ERROR_COLUMN = INTERNAL_PREFIX + "error"
ACTION_COLUMN = INTERNAL_PREFIX + "action"
_TOMB_ORDER = INTERNAL_PREFIX + "tomb_order"
_STORED = INTERNAL_PREFIX + "stored_"

UPSERT, DELETE, STALE, SUPERSEDED, ERROR = "upsert", "delete", "stale", "superseded", "error"


@dataclass(frozen=True)
class StoredState:
    """What a policy may read of the table, handed in by the pipeline.

    ``tombstones`` returns key columns plus ``_source_order`` of past deletes, or
    None when there are none; ``stored_rows(columns)`` returns the table's current
    rows projected to ``columns``, or None when the table does not exist yet.
    """

    tombstones: Callable[[], "DataFrame | None"]
    stored_rows: Callable[[Sequence[str]], "DataFrame | None"]

    @staticmethod
    def empty() -> "StoredState":
        return StoredState(tombstones=lambda: None, stored_rows=lambda columns: None)


@dataclass(frozen=True)
class PlanCounts:
    upserts: int = 0
    deletes: int = 0
    stale: int = 0
    superseded: int = 0
    toast_filled_from_table: int = 0


@dataclass(frozen=True)
class WritePlan:
    """What the sink writes for one batch.

    ``decided`` holds every event with its action, materialised (a local
    checkpoint), so counting and writing it does not recompute the batch.
    """

    decided: "DataFrame"
    upserts: "DataFrame"
    tombstones: "DataFrame"
    counts: PlanCounts


class MergePolicy(ABC):
    """Ordering, deletes and placeholders of one source flavor."""

    name: str

    def __init__(self, *, toast_placeholder: str | None = None) -> None:
        self.toast_placeholder = toast_placeholder

    # -- flavor specifics ------------------------------------------------
    @property
    @abstractmethod
    def source_meta_columns(self) -> Sequence[tuple[str, str, str, bool]]:
        """``(column, field of the envelope's source struct, Spark DDL type, required)``."""

    @abstractmethod
    def order_expr(self) -> "Column":
        """A fixed-width string whose lexical order is the events' source order."""

    @abstractmethod
    def position_error(self) -> "Column":
        """A message when the event's source position is missing, else NULL."""

    # -- shared ----------------------------------------------------------
    def with_order(self, flat: "DataFrame") -> "DataFrame":
        """Add ``_source_order`` and fold position problems into the error column."""
        from pyspark.sql import functions as F

        return flat.withColumn(ORDER_COLUMN, self.order_expr()).withColumn(
            ERROR_COLUMN, F.coalesce(F.col(ERROR_COLUMN), self.position_error())
        )

    def placeholder_test(self, column: str, data_type: "DataType") -> "Column | None":
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

    def plan(self, batch: "DataFrame", *, key_fields: Sequence[str], stored: StoredState) -> WritePlan:
        """Decide every event of ``batch`` (flattened, ordered, validated)."""
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        keys = list(key_fields)
        is_delete = F.col(OP_COLUMN) == F.lit("d")
        toastable = {
            name: test
            for name, dtype in ((f.name, f.dataType) for f in batch.schema.fields)
            if name not in keys and not name.startswith(("_source_", "_hoodie_", INTERNAL_PREFIX))
            for test in [self.placeholder_test(name, dtype)]
            if test is not None
        }

        by_position = Window.partitionBy(*keys).orderBy(F.col(ORDER_COLUMN), F.col(ARRIVAL_COLUMN))
        chain = by_position.rowsBetween(Window.unboundedPreceding, Window.currentRow)
        filled = batch
        for name, is_placeholder in toastable.items():
            # Wrap in a struct so that a real NULL is a value and not "missing".
            known = F.when(~is_placeholder & ~is_delete, F.struct(F.col(name).alias("v")))
            previous = F.last(known, ignorenulls=True).over(chain)
            filled = filled.withColumn(
                name, F.when(is_placeholder & previous.isNotNull(), previous["v"]).otherwise(F.col(name))
            )

        newest_first = Window.partitionBy(*keys).orderBy(F.col(ORDER_COLUMN).desc(), F.col(ARRIVAL_COLUMN).desc())
        ranked = filled.withColumn(INTERNAL_PREFIX + "rank", F.row_number().over(newest_first))

        tombstones = stored.tombstones()
        if tombstones is not None:
            ranked = ranked.join(
                tombstones.select(*keys, F.col(ORDER_COLUMN).alias(_TOMB_ORDER)), on=keys, how="left"
            )
            is_stale = ~is_delete & F.col(_TOMB_ORDER).isNotNull() & (F.col(ORDER_COLUMN) <= F.col(_TOMB_ORDER))
        else:
            is_stale = F.lit(False)

        action = (
            F.when(F.col(INTERNAL_PREFIX + "rank") > 1, F.lit(SUPERSEDED))
            .when(is_stale, F.lit(STALE))
            .when(is_delete, F.lit(DELETE))
            .otherwise(F.lit(UPSERT))
        )
        decided = ranked.withColumn(ACTION_COLUMN, action).drop(INTERNAL_PREFIX + "rank", _TOMB_ORDER)
        # Materialise, cutting the lineage: Spark 3.5 deadlocked here (seen on this
        # machine) when cached plans and broadcast joins nested inside each other.
        decided = decided.localCheckpoint(eager=True)

        filled_from_table = 0
        if toastable:
            any_placeholder = F.lit(False)
            for test in toastable.values():
                any_placeholder = any_placeholder | test
            needs_table = (F.col(ACTION_COLUMN) == F.lit(UPSERT)) & any_placeholder
            pending = decided.filter(needs_table)
            filled_from_table = pending.count()
            if filled_from_table:
                resolved = self._fill_from_table(decided, pending, needs_table, keys, list(toastable), stored)
                decided = resolved.localCheckpoint(eager=True)

        counts = self._count(decided, filled_from_table)
        writes = decided.filter(F.col(ACTION_COLUMN).isin(UPSERT, DELETE))
        upserts = writes.select(*[c for c in decided.columns if not c.startswith(INTERNAL_PREFIX)])
        tombstone_rows = decided.filter(F.col(ACTION_COLUMN) == F.lit(DELETE)).select(
            *keys, ORDER_COLUMN, F.col(INGESTED_AT_COLUMN).alias(TOMBSTONED_AT_COLUMN)
        )
        return WritePlan(decided=decided, upserts=upserts, tombstones=tombstone_rows, counts=counts)

    def _fill_from_table(
        self,
        decided: "DataFrame",
        pending: "DataFrame",
        needs_table: "Column",
        keys: list[str],
        columns: list[str],
        stored: StoredState,
    ) -> "DataFrame":
        from pyspark.sql import functions as F

        from hudi_cdc.errors import MergeError

        table_rows = stored.stored_rows([*keys, *columns])
        if table_rows is None:
            sample = pending.select(*keys).limit(5).collect()
            raise MergeError(
                f"TOAST placeholder {self.toast_placeholder!r} for key(s) "
                f"{_describe_keys(sample, keys)} but the table does not exist yet: the placeholder "
                "stands for a value the table never received; nothing was written"
            )
        wanted = table_rows.join(pending.select(*keys).distinct(), on=keys, how="left_semi")
        stored_cols = wanted.select(
            *keys, F.lit(True).alias(_STORED + "found"), *[F.col(c).alias(_STORED + c) for c in columns]
        )
        joined = decided.join(stored_cols, on=keys, how="left")
        for name in columns:
            is_placeholder = self.placeholder_test(name, decided.schema[name].dataType)
            assert is_placeholder is not None
            joined = joined.withColumn(
                name,
                F.when(needs_table & is_placeholder & F.col(_STORED + "found"), F.col(_STORED + name)).otherwise(
                    F.col(name)
                ),
            )
        missing = joined.filter(needs_table & F.col(_STORED + "found").isNull())
        sample = missing.select(*keys).limit(5).collect()
        if sample:
            raise MergeError(
                f"TOAST placeholder {self.toast_placeholder!r} for key(s) {_describe_keys(sample, keys)} "
                "that the table has never seen: the unchanged value is unknown, so the record cannot be "
                "written; nothing was written and the checkpoint did not move"
            )
        return joined.drop(*[c for c in joined.columns if c.startswith(_STORED)])

    @staticmethod
    def _count(decided: "DataFrame", filled_from_table: int) -> PlanCounts:
        rows = {r[0]: r[1] for r in decided.groupBy(ACTION_COLUMN).count().collect()}
        return PlanCounts(
            upserts=rows.get(UPSERT, 0),
            deletes=rows.get(DELETE, 0),
            stale=rows.get(STALE, 0),
            superseded=rows.get(SUPERSEDED, 0),
            toast_filled_from_table=filled_from_table,
        )


def _describe_keys(rows: Sequence[object], keys: Sequence[str]) -> str:
    return ", ".join("(" + ", ".join(f"{k}={row[k]!r}" for k in keys) + ")" for row in rows)  # type: ignore[index]
