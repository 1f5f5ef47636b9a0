"""Reading and writing one Hudi table, and the checkpoint in its commit metadata.

The checkpoint travels as extra metadata of the very commit that writes the
batch's rows, so data and checkpoint become visible together or not at all: a
crash before the commit completes leaves an inflight instant that Hudi rolls
back on the next write, with the checkpoint still at the previous commit.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hudi_cdc._jvm import hadoop_conf, java_message, jvm
from hudi_cdc.errors import HudiCdcError, SinkError
from hudi_cdc.sink import options as opt
from hudi_cdc.sink import small_write
from hudi_cdc.spark import task_heap_bytes
from payloads.base import DELETED_COLUMN

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["CommitInfo", "HudiTable", "SmallWrite", "first_commit_rows", "index_conf"]


@dataclass(frozen=True)
class SmallWrite:
    """A write of ``rows`` rows, which Hudi's Java write client may take if at most ``max_rows`` holding
    at most ``max_bytes`` (None: its share of the driver's heap, ``small_write.HEAP_SHARE``)."""

    rows: int
    max_rows: int
    max_bytes: int | None = None


@dataclass(frozen=True)
class CommitInfo:
    instant: str
    action: str
    extra: dict[str, str]
    written: dict[str, int] = field(default_factory=dict)  # Hudi's own counts: inserts, updates
    operation: str = ""  # Hudi's write operation: upsert, bulk_insert, compact, ...


class HudiTable:
    def __init__(self, spark: SparkSession, base_path: str) -> None:
        self._spark = spark
        self.base_path = base_path
        # A round asks these 5-6 times each: one meta client and one "it exists" for the life of this
        # object (a round's), the timeline reloaded at each ask. ~25 ms of a 2 s round.
        self._client = None
        self._exists = False
        self.last_writer = ""  # who wrote the last write(): "spark" (the datasource) or "java" (sink.small_write)
        self.java_failed: str | None = None  # the Java client's failure the last write() stepped around, if any
        self.java_declined: str | None = None  # why the last write() was not offered to, or taken by, the Java client

    def exists(self) -> bool:
        """Whether the table has its properties, or their backup alone: a writer killed while Hudi
        updated them left that, and Hudi restores them from it when the table is next opened."""
        if self._exists:  # a table does not stop existing under a round
            return True
        hconf = hadoop_conf(self._spark)
        path = jvm(self._spark).org.apache.hadoop.fs.Path
        meta = self.base_path.rstrip("/") + "/.hoodie/"
        fs = path(meta).getFileSystem(hconf)
        names = ("hoodie.properties", "hoodie.properties.backup")
        self._exists = any(bool(fs.exists(path(meta + name))) for name in names)
        return self._exists

    def has_commits(self) -> bool:
        """Whether a write ever completed. A writer killed during the table's first commit leaves
        ``.hoodie`` with only a pending instant: the table exists, but there is nothing to read yet."""
        return bool(self._instant_times())

    def _meta_client(self, *, fresh: bool = False):  # noqa: ANN202 - py4j HoodieTableMetaClient
        """The table's meta client, made once; ``fresh``: a new one, with the table config as it is now."""
        if self._client is not None and not fresh:
            return self._client
        gateway = jvm(self._spark)
        storage_conf = gateway.org.apache.hudi.storage.hadoop.HadoopStorageConfiguration(hadoop_conf(self._spark))
        client = (
            gateway.org.apache.hudi.common.table.HoodieTableMetaClient.builder()
            .setConf(storage_conf)
            .setBasePath(self.base_path)
            .build()
        )
        if not fresh:
            self._client = client
        return client

    def record_key_fields(self) -> tuple[str, ...]:
        """The record key the table was created with, or () when it does not exist yet."""
        if not self.exists():
            return ()
        fields = self._meta_client().getTableConfig().getString("hoodie.table.recordkey.fields")
        return tuple(f.strip() for f in str(fields or "").split(",") if f.strip())

    def metadata_partitions(self) -> frozenset[str]:
        """The partitions of the table's metadata table (``files``, ``column_stats``, ...) as this object's meta
        client read its properties (a round's: another writer may have added one since the last round)."""
        if not self.exists():
            return frozenset()
        return frozenset(str(p) for p in self._meta_client().getTableConfig().getMetadataPartitions())

    def fills_placeholders(self, placeholder: str) -> bool:
        """Whether Hudi's merge fills ``placeholder`` in string columns from the stored row; on an
        unpartitioned COPY_ON_WRITE table with no partial-update mode of its own, made so.

        Hudi 1.2 takes the mode from the table's properties only, fills strings only (not bytes nor
        arrays), and on MERGE_ON_READ fills from whichever log record it merges with, older or not;
        a partitioned table may move a row to a file group with nothing to merge with (each tried on
        Hudi 1.2 tables written with hudi-cdc's options).
        """
        client = self._meta_client(fresh=True)  # the properties this may change
        table_config = client.getTableConfig()
        props = table_config.getProps()
        if str(table_config.getTableType().name()) != "COPY_ON_WRITE" or table_config.getPartitionFieldProp():
            return False
        mode, value = props.getProperty(opt.PARTIAL_UPDATE_MODE), props.getProperty(opt.UNAVAILABLE_VALUE)
        if mode is not None:
            return str(mode) == "FILL_UNAVAILABLE" and value is not None and str(value) == placeholder
        gateway = jvm(self._spark)
        update = gateway.java.util.Properties()
        update.setProperty(opt.PARTIAL_UPDATE_MODE, "FILL_UNAVAILABLE")
        update.setProperty(opt.UNAVAILABLE_VALUE, placeholder)
        try:  # Hudi's own update: a backup first, so a crash leaves the old or the new properties
            gateway.org.apache.hudi.common.table.HoodieTableConfig.update(
                client.getStorage(), client.getMetaPath(), update
            )
        except Exception as exc:
            raise SinkError(
                f"setting {opt.PARTIAL_UPDATE_MODE} on {self.base_path} failed: {java_message(exc)}"
            ) from exc
        return True

    def _timeline(self):  # noqa: ANN202
        return self._meta_client().reloadActiveTimeline().getCommitsTimeline().filterCompletedInstants()

    def _instant_times(self) -> set[str]:
        return set(_requested_times(self._timeline())) if self.exists() else set()

    def pending_compactions(self) -> list[str]:
        """Compaction plans on the timeline not yet completed (requested or inflight), oldest first."""
        if not self.exists():
            return []
        return sorted(_requested_times(self._meta_client().reloadActiveTimeline().filterPendingCompactionTimeline()))

    def largest_new_base_file(self) -> int:
        """The largest base file the newest commit or compaction wrote, by its write stats (no listing); 0 when
        the newest file-group change since is a replace commit (a rewrite, a clustering), or none wrote one.
        MERGE_ON_READ rounds (delta commits) write log files and are passed over: compaction writes the base."""
        for _, action, read in self.completed_commits():
            if action == "deltacommit":
                continue
            if action != "commit":
                return 0
            stats = read().getWriteStats().iterator()
            largest = 0
            while stats.hasNext():
                stat = stats.next()
                if ".log." not in str(stat.getPath()):
                    largest = max(largest, int(stat.getFileSizeInBytes()))
            return largest
        return 0

    def base_file_bytes(self) -> list[int]:
        """The bytes of each file group's latest base file in an unpartitioned table, as Hudi's file-system view
        sees them: replaced file groups and uncommitted files left out (log files too: compaction folds them)."""
        if not self.exists():
            return []
        gateway = jvm(self._spark)
        client = self._meta_client(fresh=True)  # the timeline and the table's files as they are now
        hudi = gateway.org.apache.hudi
        context = hudi.common.engine.HoodieLocalEngineContext(client.getStorageConf())
        listed_by_metadata = bool(client.getTableConfig().isMetadataTableAvailable())
        listing = hudi.common.config.HoodieMetadataConfig.newBuilder().enable(listed_by_metadata).build()
        view = hudi.common.table.view.FileSystemViewManager.createInMemoryFileSystemView(context, client, listing)
        try:
            files = view.getLatestBaseFiles("").iterator()
            sizes = []
            while files.hasNext():
                sizes.append(int(files.next().getFileSize()))
            return sizes
        finally:
            view.close()

    def commits(self, newest_first: bool = True) -> list[CommitInfo]:
        """Completed commits, delta commits and replace commits with their extra metadata."""
        out = list(self._commit_infos())
        return out if newest_first else out[::-1]

    def iter_commits(self) -> Iterator[CommitInfo]:
        """As :meth:`commits`, newest first, each read when reached: for a reader that stops early."""
        return self._commit_infos()

    def _commit_infos(self, only: set[str] | None = None) -> Iterator[CommitInfo]:
        """Newest first, each instant's metadata read when reached (``only``: just these instants).

        Lazily: a round needs the newest checkpoint and its own new commit, and reading
        every commit's metadata through the JVM gateway cost 0.2-0.3 s at 13 commits.
        """
        for requested, action, read in self.completed_commits():
            if only is not None and requested not in only:
                continue
            metadata = read()
            extra = {str(k): str(v) for k, v in dict(metadata.getExtraMetadata()).items()}
            written = {
                "inserts": int(metadata.fetchTotalInsertRecordsWritten()),
                "updates": int(metadata.fetchTotalUpdateRecordsWritten()),
            }
            operation = metadata.getOperationType()
            yield CommitInfo(requested, action, extra, written, str(operation.value()) if operation else "")

    def completed_commits(self) -> Iterator[tuple[str, str, Callable[[], Any]]]:
        """Completed commits, delta commits and replace commits, newest first: each one's instant time, its
        action, and a function that reads its metadata (Hudi's ``HoodieCommitMetadata``) when called."""
        if not self.exists():
            return
        timeline = self._timeline()
        instants = timeline.getReverseOrderedInstants().iterator()
        while instants.hasNext():
            instant = instants.next()
            action = str(instant.getAction())
            read = (
                timeline.readReplaceCommitMetadata
                if action in ("replacecommit", "clustering")
                else timeline.readCommitMetadata
            )
            yield str(instant.requestedTime()), action, functools.partial(read, instant)

    def checkpoint_commit(self) -> CommitInfo | None:
        """The newest commit that carries a checkpoint (compactions and cleans carry none)."""
        return next((c for c in self._commit_infos() if opt.CHECKPOINT_KEY in c.extra), None)

    def history(self) -> str:
        """The table's history mode (``payloads.history``), recorded in its commits: ``none`` before the first."""
        last = self.checkpoint_commit()
        return last.extra.get(opt.HISTORY_KEY, "none") if last else "none"

    def shape(self) -> dict[str, object] | None:
        """The transforms and masks the table is written with (``envelope.shape.recorded``); None: none."""
        import json

        last = self.checkpoint_commit()
        text = last.extra.get(opt.SHAPE_KEY) if last else None
        return json.loads(text) if text else None

    def latest_checkpoint(self) -> str | None:
        commit = self.checkpoint_commit()
        return None if commit is None else commit.extra[opt.CHECKPOINT_KEY]

    def write(
        self,
        rows: DataFrame,
        options: Mapping[str, str],
        extra_metadata: Mapping[str, str],
        *,
        marker: str = opt.CHECKPOINT_KEY,
        small: SmallWrite | None = None,
    ) -> str:
        """Upsert ``rows`` in one commit carrying ``extra_metadata`` (with ``marker``); return its instant time.

        ``small``: the row count, and the most rows Hudi's Java write client may take instead of Spark's
        datasource (``sink.small_write``); which of the two wrote the commit is left in ``last_writer``, and
        the Java client's failure before its commit, when Spark's datasource wrote the round instead, in ``java_failed``,
        and why the Java client did not take it, in ``java_declined``.
        """
        before = self._instant_times()
        options = self._pinned(options)
        # Arrays may hold NULL elements (int[] {1,NULL}); parquet-avro's legacy
        # two-level lists cannot, and a user's own session may not set this.
        hadoop_conf(self._spark).set("parquet.avro.write-old-list-structure", "false")
        if options.get(opt.TABLE_TYPE) == "MERGE_ON_READ" and opt.LOG_BLOCK_MAX_SIZE not in options:
            block = opt.log_block_max_size(task_heap_bytes(self._spark))
            options = {**options, opt.LOG_BLOCK_MAX_SIZE: str(block)}
        try:
            outcome = self._write_small(rows, options, extra_metadata, small)
            self.last_writer = "java" if outcome.instant else "spark"
            self.java_failed = outcome.failed
            self.java_declined = outcome.declined
            if self.last_writer == "spark":
                rows.write.format("hudi").options(**options).options(**extra_metadata).mode("append").save(
                    self.base_path
                )
        except HudiCdcError:
            raise
        except Exception as exc:
            raise SinkError(f"writing Hudi table {self.base_path} failed: {java_message(exc)}") from exc
        ours = [c for c in self._commit_infos(only=self._instant_times() - before) if marker in c.extra]
        if not ours:
            raise SinkError(f"the write to {self.base_path} completed but no new commit carries {marker}")
        return ours[0].instant

    def _pinned(self, options: Mapping[str, str]) -> Mapping[str, str]:
        """``options`` with a cleaner that keeps every commit since the table's pin (``sink.retention``: the
        oldest commit of a retained consistent cut) readable, past this write's own commit and clean."""
        from hudi_cdc.sink import retention

        keep = retention.keep_from(self.base_path, spark=self._spark)
        if keep is None or not self.exists():
            return options
        since = int(self._timeline().findInstantsAfterOrEquals(keep).countInstants())
        return {**options, **retention.clean_options(options, since)}

    def unreadable_at(self, instant: str) -> str | None:
        """Why the table can no longer be read as it was at ``instant`` (its commit archived, or files its slices
        need cleaned), or None. Hudi's time travel checks the newest clean only, and a cleaner that keeps file
        versions records no retained commit: such a clean may have removed a slice of ``instant`` while a
        time-travel read still returns the file groups it kept."""
        client = self._meta_client()
        active = client.reloadActiveTimeline()
        commits = active.getCommitsTimeline().filterCompletedInstants()
        if not commits.containsInstant(instant):
            first = commits.firstInstant()
            if first.isPresent() and instant < str(first.get().requestedTime()):
                return (
                    f"its commit {instant} was archived (the oldest on the timeline is {first.get().requestedTime()})"
                )
            return f"{instant} is not a completed commit of the table"
        utils = jvm(self._spark).org.apache.hudi.common.util.CleanerUtils
        cleans = active.getCleanerTimeline().filterCompletedInstants()
        newest = cleans.lastInstant()
        if newest.isPresent():
            kept = utils.getCleanerMetadata(client, newest.get()).getEarliestCommitToRetain()
            if kept and str(kept) > instant:
                return (
                    f"the clean at {newest.get().requestedTime()} removed the files of commits before {kept}, and "
                    f"{instant} is older"
                )
        after = cleans.findInstantsAfter(instant).getInstants().iterator()
        while after.hasNext():
            clean = after.next()
            metadata = utils.getCleanerMetadata(client, clean)
            if metadata.getEarliestCommitToRetain():
                continue
            for partition in dict(metadata.getPartitionMetadata()).values():
                for path in list(partition.getSuccessDeleteFiles()):
                    written = _file_instant(str(path))
                    if written is not None and written <= instant:
                        return (
                            f"the clean at {clean.requestedTime()} ({partition.getPolicy()}) deleted {path}, written "
                            f"at {written}, at or before {instant}: a read as of {instant} could miss its rows"
                        )
        return None

    def _write_small(
        self, rows: DataFrame, options: Mapping[str, str], metadata: Mapping[str, str], small: SmallWrite | None
    ) -> small_write.Outcome:
        """What Hudi's Java write client did with ``rows`` (no instant: nothing written, Spark's datasource writes them)."""
        if small is None:
            return small_write.Outcome(declined="not a round")
        if (why := small_write.declined(options, small.rows, small.max_rows)) is not None:
            return small_write.Outcome(declined=why)
        if not self.has_commits():  # a new table: Spark's datasource creates it and its file groups
            return small_write.Outcome(declined="a new table")
        return small_write.write(self._spark, self.base_path, rows, options, metadata, max_bytes=small.max_bytes)

    def read(self, options: Mapping[str, str] | None = None) -> DataFrame:
        """The table as a snapshot; ``options`` are Hudi's read options (``opt.bucket_read_options``)."""
        return self._spark.read.format("hudi").options(**(options or {})).load(self.base_path)

    def read_as_of(self, instant: str) -> DataFrame:
        """The table as it was when ``instant`` completed (time travel; needs its files not yet cleaned)."""
        return self._spark.read.format("hudi").option("as.of.instant", instant).load(self.base_path)


def index_conf(
    table: HudiTable, user_conf: Mapping[str, str], *, partitioned: bool, rows: int | None = None
) -> dict[str, str]:
    """The settings of a write to ``table``: the user's, with the index ``options.resolve_index`` gives
    the table as it is now (its last commit's recorded layout, or a new table's default for ``rows``), and
    the metadata indexes the table has kept on (``options.kept_metadata_indexes``).

    Every writer and check of a CDC table asks this, so they agree on the index. The timeline is
    read only when the settings leave the index open.
    """
    kept = opt.kept_metadata_indexes(table.metadata_partitions(), user_conf)
    if opt.names_index(user_conf, partitioned=partitioned):
        return {**user_conf, **kept}
    last = table.checkpoint_commit()
    recorded = last.extra.get(opt.INDEX_KEY) if last else None
    committed = last is not None or table.has_commits()
    resolved = opt.resolve_index(user_conf, partitioned=partitioned, committed=committed, recorded=recorded, rows=rows)
    return {**resolved, **kept}


def _file_instant(path: str) -> str | None:
    """The instant a data file belongs to: a base file's commit (``<id>_<token>_<instant>.parquet``), a log
    file's base instant (``.<id>_<instant>.log.<n>_<token>``); None for a name of neither shape."""
    name = path.rsplit("/", 1)[-1]
    if name.startswith(".") and ".log." in name:
        instant = name[1:].split(".log.", 1)[0].rsplit("_", 1)[-1]
    else:
        instant = name.rsplit(".", 1)[0].rsplit("_", 1)[-1]
    return instant if instant.isdigit() else None


def _requested_times(timeline) -> list[str]:  # noqa: ANN001 - py4j HoodieTimeline
    """The requested instant times of a timeline's instants."""
    instants = timeline.getInstants().iterator()
    times = []
    while instants.hasNext():
        times.append(str(instants.next().requestedTime()))
    return times


# Rows per file of a first commit: Hudi's own for an upsert's inserts (hoodie.copyonwrite.insert.split.size).
ROWS_PER_NEW_FILE = 500_000


def first_commit_rows(upserts: DataFrame, count: int) -> DataFrame:
    """A table's first commit, for a bulk insert instead of an upsert: ``upserts`` without the deletes.

    A table without a completed commit holds no rows: nothing to look up in an index,
    merge with or delete (a delete leaves only its tombstone), and the write plan left
    one row per key. Hudi's bulk insert writes them as they are, in files of up to
    ROWS_PER_NEW_FILE rows, not one per Spark partition.
    """
    from pyspark.sql import functions as F

    return upserts.filter(~F.col(DELETED_COLUMN)).coalesce(max(1, -(-count // ROWS_PER_NEW_FILE)))
