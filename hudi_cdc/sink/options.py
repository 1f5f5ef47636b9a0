"""Hudi option keys, as named constants, and the mapping from our settings.

The keys hudi-cdc owns (ordering field, merge mode, checkpoint prefix) cannot be
overridden with --hoodie-conf: changing them would silently break the merge
semantics, so an attempt is a ConfigError.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from hudi_cdc.envelope import evolution as _evolution
from hudi_cdc.errors import ConfigError

TABLE_NAME = "hoodie.table.name"
TABLE_TYPE = "hoodie.datasource.write.table.type"
OPERATION = "hoodie.datasource.write.operation"
RECORD_KEY = "hoodie.datasource.write.recordkey.field"
PARTITION_PATH = "hoodie.datasource.write.partitionpath.field"
KEYGEN_CLASS = "hoodie.datasource.write.keygenerator.class"
PRECOMBINE_FIELD = "hoodie.datasource.write.precombine.field"
ORDERING_FIELDS = "hoodie.table.ordering.fields"
MERGE_MODE = "hoodie.record.merge.mode"
COMMIT_META_PREFIX = "hoodie.datasource.write.commitmeta.key.prefix"
INDEX_TYPE = "hoodie.index.type"
BUCKET_ENGINE = "hoodie.index.bucket.engine"
NUM_BUCKETS = "hoodie.bucket.index.num.buckets"
BUCKET_HASH_FIELD = "hoodie.bucket.index.hash.field"
GLOBAL_SIMPLE_UPDATE_PARTITION = "hoodie.simple.index.update.partition.path"
COMPACT_INLINE = "hoodie.compact.inline"
COMPACT_INLINE_MAX_DELTA_COMMITS = "hoodie.compact.inline.max.delta.commits"
INSERT_DROP_DUPS = "hoodie.datasource.write.insert.drop.duplicates"
COMBINE_BEFORE_UPSERT = "hoodie.combine.before.upsert"
COLUMN_STATS = "hoodie.metadata.index.column.stats.enable"
CLEAN_TRIGGER_MAX_COMMITS = "hoodie.clean.trigger.max.commits"
CLEAN_POLICY = "hoodie.clean.policy"
CLEAN_POLICY_OLD = "hoodie.cleaner.policy"
CLEAN_COMMITS_RETAINED = "hoodie.clean.commits.retained"
CLEAN_COMMITS_RETAINED_OLD = "hoodie.cleaner.commits.retained"
KEEP_MIN_COMMITS = "hoodie.keep.min.commits"
KEEP_MAX_COMMITS = "hoodie.keep.max.commits"
RECORD_INDEX_ENABLE = "hoodie.metadata.record.index.enable"
PARTITION_STATS = "hoodie.metadata.index.partition.stats.enable"
COMPACT_SCHEDULE_INLINE = "hoodie.compact.schedule.inline"
LOCK_PROVIDER = "hoodie.write.lock.provider"
RECORD_MERGER_CLASSES = "hoodie.write.record.merge.custom.implementation.classes"
LOG_BLOCK_FORMAT = "hoodie.logfile.data.block.format"
LOG_BLOCK_MAX_SIZE = "hoodie.logfile.data.block.max.size"
PARQUET_CODEC = "hoodie.parquet.compression.codec"
BLOOM_FILTER = "hoodie.parquet.bloom.filter.enabled"
# The metadata table's bloom-filter index reads the footers' filters (its key, and the older name).
METADATA_BLOOM_INDEX = ("hoodie.metadata.index.bloom.filter.enable", "hoodie.metadata.bloom.filter.enable")
SPARK_RECORD_MERGER = "org.apache.hudi.DefaultSparkRecordMerger"
AVRO_RECORD_MERGER = "org.apache.hudi.common.model.HoodieAvroRecordMerger"
# Table properties (hoodie.properties), not write options: Hudi 1.2 ignores them when written with a commit.
PARTIAL_UPDATE_MODE = "hoodie.table.partial.update.mode"
UNAVAILABLE_VALUE = "hoodie.record.merge.property.hoodie.write.partial.update.unavailable.value"
# The record mergers whose partial-update fill is tested here (tests/sink/test_hudi.py).
FILLING_MERGERS = (SPARK_RECORD_MERGER, AVRO_RECORD_MERGER)
IN_PROCESS_LOCK = "org.apache.hudi.client.transaction.lock.InProcessLockProvider"

# Our keys in the commit's extra metadata: written by the same commit as the data.
META_PREFIX = "hudi_cdc."
CHECKPOINT_KEY = META_PREFIX + "checkpoint"
SOURCE_KEY = META_PREFIX + "source"
STATS_KEY = META_PREFIX + "stats"
CHECKPOINT_RESET_KEY = META_PREFIX + "checkpoint.reset"  # the --checkpoint a run started from
TRUNCATED_AT_KEY = META_PREFIX + "truncated.at"  # the newest applied TRUNCATE's position, carried by every commit
REPAIRED_AT_KEY = META_PREFIX + "repaired.at"  # the newest repair's position (JSON), carried by every commit
QUARANTINE_KEY = META_PREFIX + "quarantine"  # a quarantine table's commits: the batch or re-apply they record
INDEX_KEY = META_PREFIX + "index"  # where the commit's writer put new keys (index_layout)
HISTORY_KEY = META_PREFIX + "history"  # the table's history mode (payloads.history), when not "none"
SHAPE_KEY = META_PREFIX + "shape"  # the table's transforms and masks (envelope.shape.recorded), never a salt
WRITER_KEY = META_PREFIX + "writer"  # "java": Hudi's Java write client wrote the commit (sink.small_write)
# The schema changes a commit took, and the source's columns as of it (written by envelope.evolution).
SCHEMA_CHANGES_KEY = _evolution.SCHEMA_CHANGES_KEY
SOURCE_COLUMNS_KEY = _evolution.SOURCE_COLUMNS_KEY

EVENT_TIME_ORDERING = "EVENT_TIME_ORDERING"

_KEYGEN = "org.apache.hudi.keygen."
_OWNED = (PRECOMBINE_FIELD, ORDERING_FIELDS, MERGE_MODE, COMMIT_META_PREFIX, RECORD_KEY, TABLE_TYPE, TABLE_NAME)


def write_options(
    *,
    table_name: str,
    table_type: str,
    record_key_fields: Sequence[str],
    partition_path_field: str | None,
    ordering_field: str,
    user_conf: Mapping[str, str],
    async_compaction: bool = False,
) -> dict[str, str]:
    """The options of an upsert, user settings last except for the ones we own.

    ``async_compaction`` (MERGE_ON_READ): the commit schedules a compaction every 5 delta
    commits and ``sink.compaction.Compactor`` runs it, both under Hudi's in-process lock.
    """
    _check_user_conf(user_conf)
    composite = len(record_key_fields) > 1
    if partition_path_field:
        keygen = "ComplexKeyGenerator" if composite else "SimpleKeyGenerator"
    else:
        keygen = "ComplexKeyGenerator" if composite else "NonpartitionedKeyGenerator"
    options = {
        TABLE_NAME: table_name,
        TABLE_TYPE: table_type,
        OPERATION: "upsert",
        RECORD_KEY: ",".join(record_key_fields),
        PARTITION_PATH: partition_path_field or "",
        KEYGEN_CLASS: _KEYGEN + keygen,
        PRECOMBINE_FIELD: ordering_field,
        MERGE_MODE: EVENT_TIME_ORDERING,
        COMMIT_META_PREFIX: META_PREFIX,
        # The policy already reduced the batch to one event per key.
        COMBINE_BEFORE_UPSERT: "false",
        # Off unless asked for: measured here it costs ~2 s of every commit (5 s -> 3 s
        # per small MOR round), and on MOR it hit Hudi issue #7125 (a failed commit).
        COLUMN_STATS: "false",
        # Plan a clean every 10th commit, not after each: planning one after each commit cost
        # 8-23% of a 1.5 s small commit; retention is unchanged, old versions just wait up to 9 commits longer.
        CLEAN_TRIGGER_MAX_COMMITS: "10",
        # Hudi 1.2's default is gzip. zstd cut a COPY_ON_WRITE round's rewrite by a quarter of its CPU
        # and wrote 6% smaller files than gzip (snappy: as fast, 40% larger). Spark 3.5's Parquet
        # reads it without the off-heap leak older Parquet had (PARQUET-2160).
        PARQUET_CODEC: "zstd",
    }
    if partition_path_field:
        # A delete's before image may lack the partition column (REPLICA IDENTITY
        # DEFAULT) and an update may move a row: look keys up across partitions.
        options[INDEX_TYPE] = "GLOBAL_SIMPLE"
        options[GLOBAL_SIMPLE_UPDATE_PARTITION] = "true"
    if table_type == "MERGE_ON_READ":
        options[COMPACT_INLINE] = "false" if async_compaction else "true"
        options[COMPACT_INLINE_MAX_DELTA_COMMITS] = "5"
        if async_compaction:
            options[COMPACT_SCHEDULE_INLINE] = "true"
            options[LOCK_PROVIDER] = IN_PROCESS_LOCK
    options.update(user_conf)
    if partition_path_field:
        _check_global_index(options)
    options[RECORD_MERGER_CLASSES] = record_merger(options)
    if not _keeps_key_blooms(options, user_conf):
        options[BLOOM_FILTER] = "false"
    return options


def _check_user_conf(user_conf: Mapping[str, str]) -> None:
    """Refuse user settings that would change keys hudi-cdc owns, or break the source order."""
    clash = sorted(k for k in user_conf if k in _OWNED or k.startswith(META_PREFIX))
    if clash:
        raise ConfigError(
            f"--hoodie-conf/--props may not set {', '.join(clash)}: hudi-cdc sets them from its own "
            "options (--target-table, --table-type, --record-key-fields) and its merge semantics"
        )
    block_format = user_conf.get(LOG_BLOCK_FORMAT, "avro")
    if block_format.lower() != "avro":
        # Found by tests/payloads/test_scenarios.py: with Hudi 1.2's Parquet log blocks, an update older
        # than the stored row replaces it when it shares a batch with newer ones, and compaction keeps it.
        raise ConfigError(
            f"--hoodie-conf {LOG_BLOCK_FORMAT}={block_format}: hudi-cdc writes Avro log blocks only; with "
            "Parquet ones Hudi 1.2 lets an older event replace a newer row (tested), which breaks the "
            "source order"
        )


def _keeps_key_blooms(options: Mapping[str, str], user_conf: Mapping[str, str]) -> bool:
    """Whether base files carry Hudi's key bloom filter: where an index may read it, or the user says so.

    Hudi writes one into every base file's footer (431 kB of a 1 MB file of 25k keys here) that only its
    bloom indexes read, and a table with another index cannot be switched to one (check_index_layout):
    10-29% of a COPY_ON_WRITE rewrite's CPU. The file-lookup indexes keep it: Hudi 1.2's bloom index
    fails on a file without one, and a SIMPLE table may be switched to it.
    """
    metadata_blooms = any(_enabled(user_conf, key) for key in METADATA_BLOOM_INDEX)
    return BLOOM_FILTER in user_conf or index_layout(options) == FILE_LOOKUP or metadata_blooms


# Indexes whose lookup is per partition: a key never meets a stored row of another partition.
_PARTITION_LOCAL_INDEXES = {"SIMPLE", "BLOOM", "BUCKET"}


def _check_global_index(options: Mapping[str, str]) -> None:
    """Refuse an index that looks a key up in one partition only, on a partitioned table.

    An update that changes the partition value would be written to the new partition while the
    row stays in the old one: two rows for one key, and a key-only delete (its partition value
    NULL) would find neither.
    """
    index = options.get(INDEX_TYPE, "SIMPLE").upper()
    if index in _PARTITION_LOCAL_INDEXES:
        raise ConfigError(
            f"--hoodie-conf {INDEX_TYPE}={options[INDEX_TYPE]} with --partition-path-field: that index finds a key "
            "in its own partition only, so a row whose partition value changes would be kept twice and a "
            "key-only delete would miss it. Leave the index unset (hudi-cdc uses GLOBAL_SIMPLE) or choose a "
            "global one (GLOBAL_SIMPLE, GLOBAL_BLOOM, RECORD_INDEX); nothing was written"
        )


def record_merger(options: Mapping[str, str]) -> str:
    """The record merger of a write: Spark's own rows where that is safe, Avro records where it is not.

    Spark's merger takes 16% off a COPY_ON_WRITE upsert into a table of a million rows. But with
    a global index (hudi-cdc's default on partitioned tables) Hudi 1.2 merges an incoming record
    with the stored one before the write, and when the stored row wins (a stale or replayed event)
    its Spark path reads the stored row, already projected to the write schema, as if it still had
    the five meta columns: the partition path comes from the column five places further on. That
    failed the round (NegativeArraySizeException) or, silently, moved the row into a partition named
    by another column's value (docs/semantics.md "Record mergers"). Avro records are read by name.
    Any index not known to be partition-local counts as global. A user's explicit choice of Spark's
    merger with such an index is refused, not honoured.
    """
    chosen = options.get(RECORD_MERGER_CLASSES)
    local = options.get(INDEX_TYPE, "SIMPLE").upper() in _PARTITION_LOCAL_INDEXES
    if local:
        return chosen or SPARK_RECORD_MERGER
    if chosen and SPARK_RECORD_MERGER in chosen.split(","):
        raise ConfigError(
            f"--hoodie-conf {RECORD_MERGER_CLASSES}={chosen} with {INDEX_TYPE}="
            f"{options.get(INDEX_TYPE)}: with a global index Hudi 1.2's Spark record merger reads a stored "
            "row that outlives a stale event with the wrong layout, failing the write or moving the row to a "
            f'wrong partition (docs/semantics.md "Record mergers"). Leave {RECORD_MERGER_CLASSES} unset '
            f"(hudi-cdc picks {AVRO_RECORD_MERGER}) or choose a partition-local index: "
            f"{', '.join(sorted(_PARTITION_LOCAL_INDEXES))}"
        )
    return chosen or AVRO_RECORD_MERGER


# The metadata table's index partitions a write keeps up to date, by the setting that turns each on. A write
# whose settings leave one off that the table has drops it, and Hudi 1.2 then fails that write ("Partition
# column_stats should be part of inflight metadata partitions", tested): another writer (Hudi's own
# run_compaction procedure, a Spark SQL job) may have built one with Hudi's defaults.
_METADATA_INDEXES: dict[str, tuple[str, ...]] = {
    "column_stats": (COLUMN_STATS,),
    "partition_stats": (PARTITION_STATS,),
    "bloom_filters": METADATA_BLOOM_INDEX,
    "record_index": (RECORD_INDEX_ENABLE,),
}


def kept_metadata_indexes(partitions: Iterable[str], user_conf: Mapping[str, str]) -> dict[str, str]:
    """The settings that keep each metadata index the table has (its ``partitions``) on, where the user's
    settings leave it open: the table's indexes stay as whoever built them made them."""
    present = set(partitions)
    return {
        keys[0]: "true"
        for partition, keys in _METADATA_INDEXES.items()
        if partition in present and not any(key in user_conf for key in keys)
    }


def _enabled(conf: Mapping[str, str], key: str) -> bool:
    """A boolean setting as Hudi reads it (Java's ``Boolean.parseBoolean``: any case, no trimming)."""
    return conf.get(key, "false").lower() == "true"


# Hudi 1.2 buffers a MERGE_ON_READ log block whole, then serializes it into an array that grows by doubling
# and is copied once more: at its default 256 MB a block took several times that in heap per task, and a
# 4 GiB driver died in round 3-4 of a 5M-event run with two tasks appending at once; at 63 MB it ran all 12
# rounds. So: a twelfth of a task's share of the heap Spark leaves to user code.
_LOG_BLOCK_SHARE = 12
_LOG_BLOCK_MIN, _LOG_BLOCK_MAX = 16 << 20, 256 << 20  # the floor newer Hudi sizes blocks to; Hudi's default


def log_block_max_size(task_heap: int) -> int:
    """The ``hoodie.logfile.data.block.max.size`` for tasks with ``task_heap`` bytes each outside Spark's memory."""
    return max(_LOG_BLOCK_MIN, min(_LOG_BLOCK_MAX, task_heap // _LOG_BLOCK_SHARE))


# Indexes that look a key up in the files themselves: a bulk insert's files serve them as an upsert's do.
_FILE_INDEXES = {"SIMPLE", "GLOBAL_SIMPLE", "BLOOM", "GLOBAL_BLOOM"}
FILE_LOOKUP = "file lookup"  # their index_layout: interchangeable with each other
_BUCKET_SETTINGS = (
    (BUCKET_ENGINE, "SIMPLE"),
    (NUM_BUCKETS, "256"),  # Hudi's defaults
    (BUCKET_HASH_FIELD, ""),
)


def index_layout(options: Mapping[str, str]) -> str:
    """How a write's index finds a key's file group, as a string equal only for interchangeable settings.

    Hudi keeps no record of it in the table: a writer with another layout does not find
    the keys written under the first (a bucket is a file group named by a key's hash,
    and on MERGE_ON_READ a bucket's or the record-level index's inserts may sit in log
    files that a file-lookup index never reads), so it writes them again as new rows.
    The indexes that read the files themselves are interchangeable.
    """
    index = options.get(INDEX_TYPE, "SIMPLE").upper()
    if index in _FILE_INDEXES:
        return FILE_LOOKUP
    if index == "BUCKET":
        engine, buckets, field = (options.get(k, default) for k, default in _BUCKET_SETTINGS)
        if engine.upper() == "CONSISTENT_HASHING":  # its clustering changes the bucket count itself
            buckets = ""
        field = field or options.get(RECORD_KEY, "")  # Hudi hashes the record key by default
        return f"BUCKET({', '.join(p for p in (engine.upper(), buckets, field) if p)})"
    return index


def check_index_layout(recorded: str | None, options: Mapping[str, str], where: str) -> None:
    """Refuse to write ``where`` with another index layout than its last commit recorded."""
    wanted = index_layout(options)
    if recorded is not None and recorded != wanted:
        raise ConfigError(
            f"{where} was written with the index {recorded}, and these settings give {wanted}: Hudi would not "
            "find the rows already written and would add them again. Set hoodie.index.type (and the bucket "
            "settings) as before, or replicate into a new --target-base-path; nothing was written"
        )


# A new unpartitioned table's index, when the user names none: Hudi's simple bucket index. A bucket is
# a file group named by the key's hash, so a round finds its keys' files without reading any: 1,000
# random updates into a 1M-row table took 2.67 s with 4 buckets against 9.18 s with SIMPLE's lookup
# on MERGE_ON_READ, 11.32 s against 26.84 s on COPY_ON_WRITE (docs/benchmarks-rounds.md "commit cost").
# The count is chosen when the table is made: a power of two from MIN_BUCKETS (the write's
# parallelism) to MAX_BUCKETS (Hudi's default), with at most ROWS_PER_BUCKET rows of the first commit
# in each (1-2M once above the floor): a COPY_ON_WRITE update rewrites a whole bucket's file. It grows
# with the table later (grown_bucket_count, sink.buckets).
MIN_BUCKETS, MAX_BUCKETS = 4, 256
ROWS_PER_BUCKET = 2_000_000
_RECORDED_BUCKET = re.compile(r"BUCKET\(SIMPLE, (\d+), .+\)")


def bucket_count(rows: int | None) -> int:
    """The buckets of a new table whose first commit writes ``rows`` (None: not known, the floor)."""
    needed = -(-max(rows or 0, 0) // ROWS_PER_BUCKET)
    count = MIN_BUCKETS
    while count < needed and count < MAX_BUCKETS:
        count *= 2
    return count


_BUCKET_CHOICES = (INDEX_TYPE, BUCKET_ENGINE, NUM_BUCKETS, BUCKET_HASH_FIELD)
_PARTITION_BUCKETS = "hoodie.bucket.index.partition."  # Hudi's partition-level bucket index (RFC-89)


def user_sized_index(user_conf: Mapping[str, str]) -> bool:
    """Whether the user chose the index or its bucket count: theirs to keep, never grown."""
    return any(k in user_conf for k in _BUCKET_CHOICES) or _enabled(user_conf, RECORD_INDEX_ENABLE)


def grows_buckets(user_conf: Mapping[str, str], options: Mapping[str, str]) -> bool:
    """Whether a write with ``options`` is on the bucket default ``resolve_index`` chose, whose count hudi-cdc
    may grow (``sink.buckets``): unpartitioned, Hudi's simple bucket engine on the record key, not the user's."""
    return (
        not user_sized_index(user_conf)
        and not options.get(PARTITION_PATH)
        and _RECORDED_BUCKET.fullmatch(index_layout(options)) is not None
    )


def bucket_read_options(options: Mapping[str, str], keys: Sequence[str]) -> dict[str, str]:
    """The read options under which Hudi's query on the record key reads only the file groups its keys hash
    to: a simple bucket index's settings with the hash field named (Hudi's reader prunes only then, and
    only with the table's own count: a written ``options``'s). None for any other layout, read whole: a
    partition-level bucket index (counts per partition) among them."""
    if any(k.startswith(_PARTITION_BUCKETS) for k in options):
        return {}
    layout = index_layout({RECORD_KEY: ",".join(keys), **options})
    match = _RECORDED_BUCKET.fullmatch(layout)
    if match is None:
        return {}
    field = options.get(BUCKET_HASH_FIELD) or ",".join(keys)
    return {INDEX_TYPE: "BUCKET", BUCKET_ENGINE: "SIMPLE", NUM_BUCKETS: match[1], BUCKET_HASH_FIELD: field}


def grown_bucket_count(file_bytes: Sequence[int], buckets: int, max_bytes: int) -> int | None:
    """The bucket count for a table whose buckets' base files hold ``file_bytes`` once one passes ``max_bytes``:
    the smallest power-of-two multiple of ``buckets`` with an average under half of ``max_bytes`` (room to
    grow before the next), at most MAX_BUCKETS. None while no file passes it, or at the ceiling already."""
    if max_bytes <= 0 or not file_bytes or max(file_bytes) <= max_bytes or buckets >= MAX_BUCKETS:
        return None
    total, count = sum(file_bytes), buckets * 2
    while total / count > max_bytes / 2 and count < MAX_BUCKETS:
        count *= 2
    return min(count, MAX_BUCKETS)


def names_index(user_conf: Mapping[str, str], *, partitioned: bool) -> bool:
    """Whether the settings decide the index without the table: the user's choice, or a partitioned table's."""
    return INDEX_TYPE in user_conf or _enabled(user_conf, RECORD_INDEX_ENABLE) or partitioned


def resolve_index(
    user_conf: Mapping[str, str], *, partitioned: bool, committed: bool, recorded: str | None, rows: int | None = None
) -> dict[str, str]:
    """The user's settings, with the index a write uses when they name none.

    ``recorded`` is the index layout of the table's last hudi-cdc commit, ``committed`` whether any
    commit completed, ``rows`` how many the table's first commit writes. An index the user chose, the
    record-level index and a partitioned table's GLOBAL_SIMPLE (``write_options``) are left alone. An
    existing table keeps the layout it recorded; one with commits but no recorded layout (an older
    hudi-cdc's, or written otherwise) keeps Hudi's SIMPLE, the default it was written with. A new table
    gets the bucket index, ``bucket_count(rows)`` buckets unless the user set the count. The user's
    settings come last: a bucket count that differs from the recorded one is refused by
    ``check_index_layout``, not ignored.
    """
    if names_index(user_conf, partitioned=partitioned):
        return dict(user_conf)
    if recorded is not None:
        return {**_recorded_index(recorded), **user_conf}
    if committed:
        return dict(user_conf)
    return {INDEX_TYPE: "BUCKET", BUCKET_ENGINE: "SIMPLE", NUM_BUCKETS: str(bucket_count(rows)), **user_conf}


def compaction_options(options: Mapping[str, str], recorded: str | None) -> dict[str, str]:
    """A compaction's options: a continuous process's write options, made before a new table had an
    index (``resolve_index``), with the index its last commit ``recorded`` and the key bloom filters
    that index reads (none with the bucket default): compacted base files like the rounds' own."""
    partitioned = bool(options.get(PARTITION_PATH))
    resolved = resolve_index(options, partitioned=partitioned, committed=True, recorded=recorded)
    if not _keeps_key_blooms(resolved, resolved):
        resolved[BLOOM_FILTER] = "false"
    return resolved


def _recorded_index(recorded: str) -> dict[str, str]:
    """The settings that give back a recorded layout: a file lookup's (Hudi's SIMPLE, no setting) or a simple
    bucket index's on the record key. Any other layout gets none, and the user's settings must name it."""
    match = _RECORDED_BUCKET.fullmatch(recorded)
    if match is None:
        return {}
    return {INDEX_TYPE: "BUCKET", BUCKET_ENGINE: "SIMPLE", NUM_BUCKETS: match[1]}


def first_commit_bulk_insert(user_conf: Mapping[str, str]) -> bool:
    """Whether a new table's first commit may be a bulk insert rather than an upsert, by the user's settings.

    Not when the user chose the operation, nor with an index the user chose that
    ``bulk_inserts`` refuses. With no index set, the write's own options decide
    (``bulk_inserts``, asked again once the index is resolved).
    """
    return OPERATION not in user_conf and bulk_inserts(user_conf)


def bulk_inserts(options: Mapping[str, str]) -> bool:
    """Whether a first commit with these settings' index is a bulk insert: only with a file lookup.

    An index that keeps its own map of keys to files (bucket, record-level) is left to the upsert
    path it is tested with. For the bucket default (``resolve_index``) that was measured too:
    Hudi 1.2's bulk insert writes it bucket by bucket and later upserts find every key, but 300k
    rows took 4.6-16.4 s on MERGE_ON_READ against an upsert's 3.1-11.9 s, and 3.5-7.2 s on
    COPY_ON_WRITE against 3.0-16.1 s (two runs each on a loaded 2-core machine): no gain.
    """
    return index_layout(options) == FILE_LOOKUP and not _enabled(options, RECORD_INDEX_ENABLE)
