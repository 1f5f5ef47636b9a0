"""Buckets that grow with the table: more buckets for a table whose bucket files got too big.

A new unpartitioned table gets Hudi's simple bucket index with a count sized by its first commit
(``options.bucket_count``): a CDC table that starts empty or small gets 4. Each bucket is one file group,
so its files grow with the table, and a COPY_ON_WRITE round rewrites whole buckets. Hudi cannot change a
simple bucket index's count in place (a key's bucket is its hash modulo the count), so once a bucket's base
file passes ``bucket_max_mb`` the table is rewritten into more buckets in one ``insert_overwrite_table`` commit:
Hudi's own way to replace every file group at once (its partition-level bucket rescale does the same).

That commit carries the table's hudi-cdc metadata forward (checkpoint, history mode, shape, repair and
truncate positions) with the new index layout, so it becomes the commit the next round reads its settings
from: every writer after it (the next round, the Java writer, another process, the compactor) uses the new
count. Readers see the old buckets or the new ones, never a mix. A writer killed during it leaves an
inflight replace commit Hudi rolls back; the table and its checkpoint stay as they were, and a later round
grows it again.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hudi_cdc.sink import options as opt

if TYPE_CHECKING:
    from collections.abc import Mapping

    from hudi_cdc.sink.hudi import CommitInfo, HudiTable

__all__ = ["BucketGrowth", "grow"]

# The metadata of a round that a rewrite must not carry: its own counts and who wrote it.
_ROUND_ONLY = (opt.STATS_KEY, opt.WRITER_KEY)
_HUDI_META_COLUMNS = (
    "_hoodie_commit_time",
    "_hoodie_commit_seqno",
    "_hoodie_record_key",
    "_hoodie_partition_path",
    "_hoodie_file_name",
)


@dataclass(frozen=True)
class BucketGrowth:
    """A table rewritten into more buckets: the commit, the counts, the largest base file before, how long."""

    instant: str
    before: int
    after: int
    largest_bytes: int
    seconds: float

    def to_dict(self) -> dict[str, object]:
        return {
            "instant": self.instant,
            "from": self.before,
            "to": self.after,
            "largest_mb": round(self.largest_bytes / 2**20, 1),
            "seconds": round(self.seconds, 1),
        }


def grow(table: HudiTable, options: Mapping[str, str], last: CommitInfo, max_bytes: int) -> BucketGrowth | None:
    """Rewrite ``table`` into more buckets if a base file passed ``max_bytes``; None when it need not.

    ``options``: the table's write options (its bucket default, ``opt.grows_buckets``), ``last``: its newest
    checkpoint commit, whose metadata the rewrite carries. Not while a compaction plan is pending: it names
    file groups the rewrite replaces. Call it under the table's writer lease.
    """
    started = time.monotonic()
    before = int(options[opt.NUM_BUCKETS])
    if before >= opt.MAX_BUCKETS or table.pending_compactions():  # at the ceiling, no listing each round
        return None
    sizes = table.base_file_bytes()
    after = opt.grown_bucket_count(sizes, before, max_bytes)
    if after is None:
        return None
    grown = {
        **options,
        opt.NUM_BUCKETS: str(after),
        opt.OPERATION: "insert_overwrite_table",
        # Its own commit schedules no compaction: its file groups are new base files.
        opt.COMPACT_INLINE: "false",
        opt.COMPACT_SCHEDULE_INLINE: "false",
    }
    carried = {k: v for k, v in last.extra.items() if k.startswith(opt.META_PREFIX) and k not in _ROUND_ONLY}
    metadata = {
        **carried,
        opt.INDEX_KEY: opt.index_layout(grown),
        opt.STATS_KEY: json.dumps({"buckets": {"from": before, "to": after}}, sort_keys=True),
    }
    rows = table.read().drop(*_HUDI_META_COLUMNS)
    instant = table.write(rows, grown, metadata)
    return BucketGrowth(instant, before, after, max(sizes), time.monotonic() - started)
