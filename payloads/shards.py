"""Keys declared unique across a merged table's shards: who holds a key, and the cross-shard key clash.

A merged table keyed by shard (the default of a merge route) never needs this:
every key's events come from one shard, whose positions order them. With
``unique_keys = true`` the key is the source's alone, and the shards' positions
(an LSN of one database, a binlog position of another) are not comparable, so
they are never compared. Instead, per key of a batch (docs/routing.md):

- each shard's last event (by its own position) says whether that shard holds
  the key at the end of the batch; a shard with no event of the key in the batch
  holds it if the table's row of the key came from it;
- one holder: only its events are kept (the other shards' are a move away or a
  stray delete, and are dropped); no holder: the events of the shard the table's
  row came from (its delete applies), else of one shard (the key is gone anyway);
- two or more holders: a *cross-shard key clash*: every event of the key gets an
  error naming the key and the shards, so the round fails, or, with
  ``on_bad_event = quarantine``, the key's events are set aside.

The table's ordering value becomes the round's tag followed by the position, so a
later round always supersedes a row an earlier round wrote, whatever shard either
came from; within a round, a key's kept events all come from one shard.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from payloads.base import ARRIVAL_COLUMN, ERROR_COLUMN, INTERNAL_PREFIX, OP_COLUMN, ORDER_COLUMN

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

__all__ = ["hand_over", "shard_of"]

_SHARD = INTERNAL_PREFIX + "shard"
_KEEP = INTERNAL_PREFIX + "keep_shard"
_CLASH = INTERNAL_PREFIX + "clash"


def shard_of(shard_columns: Sequence[str]) -> Column:
    """A row's shard, as its shard columns joined with ``/`` (``dbserver1/inventory/shop_3/orders``)."""
    from pyspark.sql import functions as F

    return F.concat_ws("/", *[F.coalesce(F.col(c).cast("string"), F.lit("")) for c in shard_columns])


def hand_over(
    flat: DataFrame,
    *,
    key_fields: Sequence[str],
    shard_columns: Sequence[str],
    stored_rows: Callable[[list[str]], DataFrame | None],
    round_tag: str,
) -> DataFrame:
    """``flat`` with each key's events narrowed to the shard that holds it, clashes marked as errors, and the
    ordering value prefixed with ``round_tag`` (fixed width, increasing from round to round).

    ``stored_rows(columns)`` reads the table's rows (None before the first commit).
    """
    from pyspark.sql import functions as F

    keys = list(key_fields)
    events = flat.withColumn(_SHARD, shard_of(shard_columns))
    position = F.struct(F.col(ORDER_COLUMN), F.col(ARRIVAL_COLUMN))
    last = events.groupBy(*keys, _SHARD).agg(F.max_by(F.col(OP_COLUMN), position).alias("op"))
    per_key = last.groupBy(*keys).agg(
        F.array_sort(F.collect_list(F.when(F.col("op") != F.lit("d"), F.col(_SHARD)))).alias("live"),
        F.collect_list(_SHARD).alias("shards"),
        F.min(_SHARD).alias("any"),
    )
    table = stored_rows([*keys, *shard_columns])
    if table is not None:
        held = table.join(per_key.select(*keys), on=keys, how="left_semi").select(*keys, shard_of(shard_columns))
        per_key = per_key.join(held.withColumnRenamed(held.columns[-1], "held"), on=keys, how="left")
    else:
        per_key = per_key.withColumn("held", F.lit(None).cast("string"))
    stored_idle = F.col("held").isNotNull() & ~F.array_contains(F.col("shards"), F.col("held"))
    holders = F.when(stored_idle, F.array_union(F.col("live"), F.array(F.col("held")))).otherwise(F.col("live"))
    per_key = per_key.withColumn("holders", holders)
    stored_here = F.when(F.array_contains(F.col("shards"), F.col("held")), F.col("held"))
    keep = F.when(F.size("holders") == 1, F.col("holders")[0]).when(
        F.size("holders") == 0, F.coalesce(stored_here, F.col("any"))
    )
    clash = F.when(
        F.size("holders") > 1,
        F.concat(
            F.lit("cross-shard key clash: the key is live in shards "),
            F.array_join(F.col("holders"), " and "),
            F.lit(
                " at once (unique_keys = true in its [[routes]] says keys are unique across shards; a move must "
                "delete the key in one shard before it is inserted in another, or set unique_keys = false)"
            ),
        ),
    )
    decided = per_key.select(*keys, keep.alias(_KEEP), clash.alias(_CLASH))
    joined = events.join(decided, on=keys, how="left")
    no_key = F.lit(False)
    for k in keys:
        no_key = no_key | F.col(k).isNull()  # a TRUNCATE: no key, not a shard's to hold
    kept = joined.where(no_key | F.col(_CLASH).isNotNull() | (F.col(_SHARD) == F.col(_KEEP)))
    return (
        kept.withColumn(ERROR_COLUMN, F.coalesce(F.col(ERROR_COLUMN), F.col(_CLASH)))
        .withColumn(ORDER_COLUMN, F.concat(F.lit(round_tag), F.col(ORDER_COLUMN)))
        .drop(_SHARD, _KEEP, _CLASH)
        .select(*flat.columns)
    )
