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
  row came from (its delete applies), else of the shard the key's tombstone came
  from, else of one shard (the key is gone anyway);
- two or more holders: a *cross-shard key clash*: every event of the key gets an
  error naming the key and the shards, so the round fails, or, with
  ``on_bad_event = quarantine``, the key's events are set aside.

The table's ordering value (``_source_order``) is a *tenure tag* followed by the
shard's own position. The tag is the round's UTC time (fixed width) when the key came
to its shard, then the shard's id (the first 16 hex digits of the SHA-256 of
:func:`shard_of`), so it names who holds the key since when. The tag advances only
when a key changes hands: the kept events of a key take the tag of the key's latest
stored value (its table row or its delete tombstone, whichever orders higher) if that
value's shard id is their shard's, so within one shard positions compare as usual and
a replayed older event (at-least-once redelivery) is stale against that shard's newer
row or delete; a key moving to another shard, or with neither row nor tombstone, gets
the round's time and its new shard's id, above every tag the key had. The tombstone
store needs no shard column: a tombstone's ordering value carries the shard's id. A
value written before tags carried a shard id matches no shard: the key's next events
take a new tag, as they always did.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import reduce
from typing import TYPE_CHECKING

from payloads.base import ARRIVAL_COLUMN, ERROR_COLUMN, INTERNAL_PREFIX, OP_COLUMN, ORDER_COLUMN

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

__all__ = ["hand_over", "shard_of"]

_SHARD = INTERNAL_PREFIX + "shard"
_KEEP = INTERNAL_PREFIX + "keep_shard"
_CLASH = INTERNAL_PREFIX + "clash"
_LAST = INTERNAL_PREFIX + "last_order"
SHARD_ID_WIDTH = 16
"""Hex digits of a shard's id in a tenure tag."""


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
    tombstones: Callable[[], DataFrame | None],
    round_tag: str,
) -> DataFrame:
    """``flat`` with each key's events narrowed to the shard that holds it, clashes marked as errors, and the
    ordering value prefixed with the key's tenure tag: the stored one while the key stays with its shard, else
    ``round_tag`` (fixed width, increasing from round to round) and the shard's id.

    ``stored_rows(columns)`` reads the table's rows (None before the first commit); ``tombstones()`` the key
    columns and ``_source_order`` of past deletes (None if none).
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
    per_key = _with_stored(per_key, keys, shard_columns, stored_rows, tombstones)
    stored_idle = F.col("held").isNotNull() & ~F.array_contains(F.col("shards"), F.col("held"))
    holders = F.when(stored_idle, F.array_union(F.col("live"), F.array(F.col("held")))).otherwise(F.col("live"))
    per_key = per_key.withColumn("holders", holders)
    stored_here = F.when(F.array_contains(F.col("shards"), F.col("held")), F.col("held"))
    # else the shard the key's tombstone came from, if its events are here (a replayed delete stays its own)
    last_id = F.substring(F.col(_LAST), len(round_tag) + 1, SHARD_ID_WIDTH)
    deleted_here = F.array_min(F.filter(F.col("shards"), lambda s: _shard_id(s) == last_id))
    keep = F.when(F.size("holders") == 1, F.col("holders")[0]).when(
        F.size("holders") == 0, F.coalesce(stored_here, deleted_here, F.col("any"))
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
    decided = per_key.select(*keys, keep.alias(_KEEP), clash.alias(_CLASH), _LAST)
    joined = events.join(decided, on=keys, how="left")
    no_key = F.lit(False)
    for k in keys:
        no_key = no_key | F.col(k).isNull()  # a TRUNCATE: no key, not a shard's to hold
    kept = joined.where(no_key | F.col(_CLASH).isNotNull() | (F.col(_SHARD) == F.col(_KEEP)))
    return (
        kept.withColumn(ERROR_COLUMN, F.coalesce(F.col(ERROR_COLUMN), F.col(_CLASH)))
        .withColumn(ORDER_COLUMN, F.concat(_tenure(F.col(_SHARD), F.col(_LAST), round_tag), F.col(ORDER_COLUMN)))
        .drop(_SHARD, _KEEP, _CLASH, _LAST)
        .select(*flat.columns)
    )


def _shard_id(shard: Column) -> Column:
    from pyspark.sql import functions as F

    return F.substring(F.sha2(shard, 256), 1, SHARD_ID_WIDTH)


def _tenure(shard: Column, last: Column, round_tag: str) -> Column:
    """The tag of an event of ``shard``: that of the key's latest stored value ``last`` if that came from the
    same shard, else ``round_tag`` and the shard's id (the key changes hands, or is new)."""
    from pyspark.sql import functions as F

    width = len(round_tag)
    same = F.substring(last, width + 1, SHARD_ID_WIDTH) == _shard_id(shard)
    return F.when(same, F.substring(last, 1, width + SHARD_ID_WIDTH)).otherwise(
        F.concat(F.lit(round_tag), _shard_id(shard))
    )


def _with_stored(
    per_key: DataFrame,
    keys: list[str],
    shard_columns: Sequence[str],
    stored_rows: Callable[[list[str]], DataFrame | None],
    tombstones: Callable[[], DataFrame | None],
) -> DataFrame:
    """``per_key`` with ``held`` (the shard of the key's table row, if any) and the ordering value of the key's
    latest stored value (its row or its delete tombstone, whichever is higher; null if neither)."""
    from pyspark.sql import functions as F

    batch_keys = per_key.select(*keys)
    table = stored_rows([*keys, *shard_columns, ORDER_COLUMN])
    orders = []
    if table is not None:
        rows = table.join(batch_keys, on=keys, how="left_semi")
        per_key = per_key.join(rows.select(*keys, shard_of(shard_columns).alias("held")), on=keys, how="left")
        orders.append(rows.select(*keys, F.col(ORDER_COLUMN).cast("string").alias(_LAST)))
    else:
        per_key = per_key.withColumn("held", F.lit(None).cast("string"))
    deleted = tombstones()
    if deleted is not None:
        deleted = deleted.join(batch_keys, on=keys, how="left_semi")
        orders.append(deleted.select(*keys, F.col(ORDER_COLUMN).cast("string").alias(_LAST)))
    if not orders:
        return per_key.withColumn(_LAST, F.lit(None).cast("string"))
    last = reduce(lambda a, b: a.unionByName(b), orders).groupBy(*keys).agg(F.max(_LAST).alias(_LAST))
    return per_key.join(last, on=keys, how="left")
