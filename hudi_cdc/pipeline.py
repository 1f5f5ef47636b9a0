"""The one orchestrator: source -> flatten -> merge policy -> Hudi, checkpoint in the commit.

The CLI and the Python API are thin shells over :func:`ingest_once`,
:func:`run` and :func:`compactions`.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from hudi_cdc.config import IngestConfig
from hudi_cdc.envelope.batch import change_rows
from hudi_cdc.envelope.events import REPAIR_AT_DETAIL
from hudi_cdc.envelope.evolution import SchemaChangeLog
from hudi_cdc.envelope.shape import Shape, shape_plan
from hudi_cdc.envelope.shape import recorded as recorded_shape
from hudi_cdc.envelope.type_mapping import TypeMapping
from hudi_cdc.errors import ConfigError, DecodeError, HudiCdcError, SinkError, SourceError, retry_backoff_s
from hudi_cdc.policy import merge_policy
from hudi_cdc.sink import buckets
from hudi_cdc.sink import options as opt
from hudi_cdc.sink.catalog import CatalogTarget, sync_after_round
from hudi_cdc.sink.failures import WriteFailures
from hudi_cdc.sink.hudi import HudiTable, SmallWrite, first_commit_rows, index_conf
from hudi_cdc.sink.lease import TableLease, hold
from hudi_cdc.sink.lineage import RoundLineage
from hudi_cdc.sink.object_store import configure_table
from hudi_cdc.sink.quarantine import QuarantineStore
from hudi_cdc.sink.tombstones import TombstoneStore
from hudi_cdc.small_plan import Declined, plan_in_driver
from hudi_cdc.spark import release
from payloads import ChangeCounts, StoredState
from payloads.base import INTERNAL_PREFIX, ORDER_COLUMN, TOMBSTONED_AT_COLUMN, is_data_column
from payloads.history import (
    SOFT_DELETED_COLUMN,
    first_versions,
    plan_scd2,
    record_key_fields,
    soft_delete,
    source_key_fields,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from hudi_cdc.envelope.events import Batch
    from hudi_cdc.sink.compaction import Compactor
    from hudi_cdc.sink.hudi import CommitInfo
    from hudi_cdc.sources.base import Source
    from payloads.base import MergePolicy, WritePlan

__all__ = [
    "CompactResult",
    "IngestResult",
    "RoundSteps",
    "compact",
    "compaction_options",
    "compactions",
    "ingest_once",
    "load_first",
    "merge_policy",
    "run",
    "writer_lease",
]

log = logging.getLogger("hudi_cdc")


@dataclass(frozen=True, kw_only=True)
class IngestResult(ChangeCounts):
    """What one round did: the counts of its changes, and the round's own. ``commit_time`` is None when there
    was nothing new."""

    table: str
    base_path: str
    commit_time: str | None
    checkpoint: dict[str, Any] | None
    batch: str | None = None
    tombstones_held: int = 0
    tombstones_purged: int = 0
    duration_s: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)
    quarantined: int = 0
    """Bad events set aside in the quarantine table by this round (``on_bad_event = quarantine``)."""
    steps_s: dict[str, float] = field(default_factory=dict)
    """Seconds spent in each step of the round (:class:`RoundSteps`): where a slow round's time went."""

    @property
    def committed(self) -> bool:
        return self.commit_time is not None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class RoundSteps:
    """Which step a round is in, since when, and the seconds each step took.

    The steps: ``open`` (the table's checkpoint, tombstone purge), ``read`` (the source's offsets and
    schemas, and a small Kafka round's messages, read by the driver), ``plan`` (decoding and deciding
    each key, reading the messages there when the executors read them: one Spark job), ``quarantine``,
    ``tombstones`` and ``commit`` (the Hudi write). A runner reads :attr:`current` from another thread
    to say what a late table is waiting for; a plain attribute read is enough for that.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.current: str | None = None
        self.since = clock()
        self.seconds: dict[str, float] = {}

    def enter(self, step: str | None) -> None:
        """End the current step (if any) and start ``step`` (None: the round is over)."""
        now = self._clock()
        if self.current is not None:
            self.seconds[self.current] = round(self.seconds.get(self.current, 0.0) + now - self.since, 3)
        self.current, self.since = step, now

    def done(self) -> dict[str, float]:
        self.enter(None)
        return dict(self.seconds)


def _make_source(spark: SparkSession, config: IngestConfig) -> Source:
    from hudi_cdc.envelope.types import reader_schema

    if config.shard_sources:  # a merged table ([[routes]]): one source per shard, one composite checkpoint
        from hudi_cdc.sources.merged import MergedSource

        return MergedSource(config, lambda shard: _make_source(spark, shard))
    if config.source == "files":
        from hudi_cdc.sources.files import FileSource

        return FileSource(spark, config, reader_schema=reader_schema)
    if config.source == "kafka":
        from hudi_cdc.sources.kafka import KafkaSource

        return KafkaSource(spark, config, reader_schema=reader_schema)
    if config.source == "jdbc":
        from hudi_cdc.sources.jdbc import JdbcSource

        return JdbcSource(spark, config)
    raise HudiCdcError(f"source {config.source!r} is not available")  # guarded by config validation


def _starting_checkpoint(stored: CommitInfo | None, source: Source, config: IngestConfig) -> dict[str, Any] | None:
    if config.checkpoint is not None:
        already_applied = stored is not None and stored.extra.get(opt.CHECKPOINT_RESET_KEY) == config.checkpoint
        if not already_applied:
            log.info("starting from the checkpoint given with --checkpoint")
            return source.parse_checkpoint(config.checkpoint)
    if stored is None:
        return None
    return source.parse_checkpoint(stored.extra[opt.CHECKPOINT_KEY])


@dataclass
class _Round:
    """What one round of one table knows as it goes: the table, its stores, its key, where it starts."""

    config: IngestConfig
    spark: SparkSession
    table: HudiTable
    policy: MergePolicy
    keys: tuple[str, ...]
    tombstones: TombstoneStore
    now: datetime
    started: float
    purged: int = 0
    truncated_at: str | None = None
    """The newest TRUNCATE the table applied: every commit carries it (see MergePolicy.plan)."""
    repaired_at: str | None = None
    """The newest repair's position (``ops.repair``, JSON): every commit carries it, for consistent cuts."""
    checkpoint: dict[str, Any] | None = None
    steps: RoundSteps = field(default_factory=RoundSteps)
    schema_changes: SchemaChangeLog = field(default_factory=SchemaChangeLog)
    """The schema changes the round takes (envelope.evolution), recorded in its commit."""

    def carried_metadata(self) -> dict[str, str]:
        """What the round's commit carries besides its own: the schema changes it takes, the newest repair."""
        carried = {opt.REPAIRED_AT_KEY: self.repaired_at} if self.repaired_at else {}
        return {**carried, **self.schema_changes.metadata()}

    def tombstone_store(self, key_fields: tuple[str, ...]) -> TombstoneStore:
        return TombstoneStore(self.spark, self.config.resolved_tombstone_path, key_fields=key_fields)


def ingest_once(
    config: IngestConfig,
    *,
    spark: SparkSession | None = None,
    source: Source | None = None,
    steps: RoundSteps | None = None,
) -> IngestResult:
    """One round: read what is new since the table's checkpoint and commit it with the next one.

    ``source`` replaces the configured one (re-applying quarantined events reads them from there).
    ``steps``, when given, follows the round's progress (a runner reports it for a late table).
    """
    from hudi_cdc.spark import spark_session

    spark = spark or spark_session()
    if config.catalog != "none":
        CatalogTarget.of(config)  # a catalog name this source cannot render fails before anything is written
    with writer_lease(config, spark):  # one writer per table; a runner's or run's own hold is the same lease
        result = _grow_buckets(config, spark, _ingest_once(config, spark, source, steps))
        # Catalog sync (issue 45): after the commit is complete, never inside the write (sink.catalog).
        catalog = sync_after_round(spark, config)
    return result if catalog is None else dataclasses.replace(result, details={**result.details, "catalog": catalog})


def writer_lease(
    config: IngestConfig, spark: SparkSession | None, **owner: str | None
) -> AbstractContextManager[TableLease]:
    """Hold the table's writer lease (``sink.lease.hold``) with the table's expiry and wait settings; an s3a://
    table's buckets get their settings first (``sink.object_store``)."""
    if spark is not None:
        configure_table(spark, config)
    return hold(
        config.target_base_path,
        expiry_s=config.lease_expiry_seconds,
        wait_s=config.lease_wait_seconds,
        spark=spark,
        owner=owner or None,
    )


def _ingest_once(
    config: IngestConfig, spark: SparkSession, source: Source | None, steps: RoundSteps | None
) -> IngestResult:
    started = time.monotonic()
    steps = steps or RoundSteps()
    steps.enter("open")
    source = source or _make_source(spark, config)
    round_, last = _open_round(config, spark, started)
    round_.steps = steps
    round_.checkpoint = _starting_checkpoint(last, source, config)
    steps.enter("read")
    batch = source.next_batch(round_.checkpoint)
    if batch is None:
        log.info("%s: nothing new since the last checkpoint", config.target_table)
        held = round_.tombstones.count()
        return IngestResult(
            table=config.target_table,
            base_path=config.target_base_path,
            commit_time=None,
            checkpoint=round_.checkpoint,
            tombstones_held=held,
            tombstones_purged=round_.purged,
            duration_s=time.monotonic() - started,
            steps_s=steps.done(),
        )
    log.info("%s: read %s", config.target_table, batch.description)
    _settle_keys(round_, batch)
    # Only a completed commit has anything to read: a writer killed during the table's
    # first commit leaves .hoodie with a pending instant alone. Asked once per round.
    committed = round_.table.has_commits()
    if not batch.parts:  # only Kafka tombstones: nothing to write, but the checkpoint must move
        return _commit_checkpoint_only(round_, committed, batch)
    steps.enter("plan")
    with RoundLineage(config, batch, round_.policy, spark) as lineage:  # OpenLineage events, if set (sink.lineage)
        plan, planned_by = _plan_round(round_, batch, committed)
        try:
            result = _write(round_, batch, plan, committed)
            return lineage.completed(dataclasses.replace(result, details={**result.details, **planned_by}))
        finally:
            # In a continuous process the next round needs that memory (see release).
            release(*plan.materialised, *(part.envelopes for part in batch.parts))


def _grow_buckets(config: IngestConfig, spark: SparkSession, result: IngestResult) -> IngestResult:
    """After a committed round, under its lease: a table on the bucket default with a base file past
    ``bucket_max_mb`` is rewritten into more buckets in a commit of its own (``sink.buckets``)."""
    if not result.committed or config.bucket_max_mb == 0 or config.partition_path_field:
        return result
    if opt.user_sized_index(config.hoodie_conf):
        return result
    table = HudiTable(spark, config.target_base_path)
    max_bytes = int(config.bucket_max_mb * 2**20)
    if table.largest_new_base_file() <= max_bytes:  # the newest commit's own stats: no listing in most rounds
        return result
    last = table.checkpoint_commit()
    options = _write_options(config, _keys(config, table), table)
    if last is None or not opt.grows_buckets(config.hoodie_conf, options):
        return result
    growth = buckets.grow(table, options, last, max_bytes)
    if growth is None:
        return result
    log.info(
        "%s: a bucket's base file passed %g MiB (%.1f MiB): rewrote the table from %d into %d buckets in commit %s (%.1fs)",
        config.target_table,
        config.bucket_max_mb,
        growth.largest_bytes / 2**20,
        growth.before,
        growth.after,
        growth.instant,
        growth.seconds,
    )
    return dataclasses.replace(result, details={**result.details, "buckets": growth.to_dict()})


def _open_round(config: IngestConfig, spark: SparkSession, started: float) -> tuple[_Round, CommitInfo | None]:
    """The round's context, with old tombstones purged and the index checked; and the last checkpoint commit."""
    table = HudiTable(spark, config.target_base_path)
    keys = _keys(config, table)
    tombstones = TombstoneStore(spark, config.resolved_tombstone_path, key_fields=keys)
    round_ = _Round(config, spark, table, merge_policy(config), keys, tombstones, datetime.now(UTC), started)
    round_.purged = round_.tombstones.purge(round_.now - timedelta(hours=config.tombstone_retention_hours))
    if round_.purged:
        log.info("purged %d tombstone(s) older than %s hours", round_.purged, config.tombstone_retention_hours)
    last = table.checkpoint_commit()
    _check_history(config, last)
    opt.check_index_layout(
        last.extra.get(opt.INDEX_KEY) if last else None, _write_options(config, keys, table), config.target_base_path
    )
    round_.truncated_at = last.extra.get(opt.TRUNCATED_AT_KEY) if last else None
    round_.repaired_at = last.extra.get(opt.REPAIRED_AT_KEY) if last else None
    round_.schema_changes = SchemaChangeLog.from_metadata(last.extra if last else None)
    return round_, last


def _keys(config: IngestConfig, table: HudiTable) -> tuple[str, ...]:
    """The table's source key: the settings' record key, else the one the table was created with."""
    return config.record_key_fields or source_key_fields(table.record_key_fields())


def _check_history(config: IngestConfig, last: CommitInfo | None) -> None:
    """A table's history mode is the one of its first commit: another would misread its rows."""
    held = last.extra.get(opt.HISTORY_KEY, "none") if last else config.history
    if held != config.history:
        raise ConfigError(
            f"{config.target_table}: the table at {config.target_base_path} keeps history={held!r}, fixed at its "
            f"first commit, but this run asks for history={config.history!r}: set --history {held} (or history = "
            f'"{held}" in the pipeline file), or write to a new table. Nothing was written'
        )


def _settle_keys(round_: _Round, batch: Batch) -> None:
    """The record key: configured, the table's, else the messages' own; a topic keyed otherwise is refused."""
    config, keys = round_.config, round_.keys
    if keys and batch.key_fields and not config.record_key_fields and set(batch.key_fields) != set(keys):
        # Another table's topic: its Debezium key is not this table's record key.
        raise SourceError(
            f"{batch.description}: the messages are keyed by ({', '.join(batch.key_fields)}) but table "
            f"{config.target_table} by ({', '.join(keys)}): is --topic this table's topic? Nothing was written "
            "(--record-key-fields overrides, if the key really changed)"
        )
    if keys:
        return
    if not batch.key_fields:
        raise ConfigError(
            f"{config.target_table}: no record key: set --record-key-fields (the messages carry no key schema)"
        )
    round_.keys = batch.key_fields
    log.info("%s: record key from the Debezium key schema: %s", config.target_table, ", ".join(round_.keys))
    round_.tombstones = round_.tombstone_store(round_.keys)


def _plan_round(round_: _Round, batch: Batch, committed: bool) -> tuple[WritePlan, dict[str, str]]:
    """The round's plan, and who made it: the driver where ``small_plan`` takes the round (no Spark job),
    else Spark (:func:`_decide`); why the driver did not is logged and kept in the result's details."""
    planned = plan_in_driver(
        round_.spark,
        round_.config,
        batch,
        policy=round_.policy,
        table=round_.table,
        keys=round_.keys,
        tombstones=round_.tombstones,
        now=round_.now,
        truncated_at=round_.truncated_at,
        committed=committed,
    )
    if isinstance(planned, Declined):
        log.info("%s: the round is planned by Spark: %s", round_.config.target_table, planned.why)
        return _decide(round_, batch, committed), {"plan": "spark", **planned.details()}
    log.info("%s: the round is planned in the driver", round_.config.target_table)
    return planned, {"plan": "driver"}


def _decide(round_: _Round, batch: Batch, committed: bool) -> WritePlan:
    """Flatten the batch and let the merge policy decide each key's change against what the table holds."""
    config, table, policy, tombstones = round_.config, round_.table, round_.policy, round_.tombstones
    quarantine = config.on_bad_event == "quarantine"
    flat = change_rows(
        batch,
        policy,
        key_fields=round_.keys,
        ingested_at=round_.now,
        behavior=config.schema_change_behavior,
        table_schema=table.read().schema if committed else None,
        truncates=config.truncate_behavior,
        keep_raw=quarantine,
        shape=Shape.of(config, policy, keys=round_.keys),
        type_mapping=TypeMapping(config.type_mappings, config.column_types),
        schema_policy=config.schema_change_policy,
        schema_changes=round_.schema_changes,
    )
    # soft_delete: a marked delete is no row to take a value from
    rows_of = _live_columns if config.history == "soft_delete" else _stored_columns
    stored = StoredState(
        tombstones=lambda: _keys_and_order(tombstones.read()),
        stored_rows=lambda columns: rows_of(table, columns) if committed else None,
        past_rows=lambda columns: _past_columns(table, columns) if committed else iter(()),
        truncated_at=round_.truncated_at,
        fills_placeholders=lambda: _hudi_fills(table, policy, config) if committed else False,
    )
    if config.unique_keys:  # a merged table whose keys are unique across shards: who holds each (payloads.shards)
        from payloads.shards import hand_over

        tag = round_.now.strftime("%Y%m%d%H%M%S%f")
        flat = hand_over(
            flat,
            key_fields=round_.keys,
            shard_columns=config.shard_columns,
            stored_rows=stored.stored_rows,
            tombstones=stored.tombstones,
            round_tag=tag,
        )
    try:
        # Reading, decoding and deciding run as one Spark job (see MergePolicy.plan).
        log.info("%s: reading, decoding and deciding each key's change", config.target_table)
        return _plan(round_, flat, stored, quarantine, committed)
    except HudiCdcError:
        raise
    except Exception as exc:  # e.g. corrupt Avro blocks, which surface only when the data is read
        from hudi_cdc._jvm import java_message

        refused = _kafka_refused(config, exc)
        if refused is not None:
            raise refused from None
        raise DecodeError(
            f"reading, decoding or deciding {batch.description} failed, nothing committed: {java_message(exc)}"
        ) from exc


def _kafka_refused(config: IngestConfig, exc: BaseException) -> ConfigError | None:
    """Spark's Java Kafka client refused by the brokers (a login, a TLS handshake) in a Spark job of the round:
    the clear error librdkafka's refusals get (``sources.kafka.java_security_error``), else None."""
    if config.source != "kafka" or not config.bootstrap_servers:
        return None
    from hudi_cdc.sources.kafka import java_security_error

    return java_security_error(exc, config.bootstrap_servers)


def _plan(round_: _Round, flat: DataFrame, stored: StoredState, quarantine: bool, committed: bool) -> WritePlan:
    """The policy's plan for ``flat``, as the table's history mode keeps it (``payloads.history``)."""
    config, table, policy, keys = round_.config, round_.table, round_.policy, round_.keys
    if config.history == "scd2":
        versions = StoredState(
            tombstones=lambda: None,
            stored_rows=lambda columns: _stored_columns(table, columns) if committed else None,
        )
        return plan_scd2(policy, flat, key_fields=keys, stored=versions, quarantine=quarantine)
    plan = policy.plan(flat, key_fields=keys, stored=stored, quarantine=quarantine)
    if config.history == "soft_delete" and not plan.errors:
        every_row = dataclasses.replace(
            stored, stored_rows=lambda columns: _stored_columns(table, columns) if committed else None
        )
        plan = soft_delete(policy, plan, flat, key_fields=keys, stored=every_row)
    return plan


def _write(round_: _Round, batch: Batch, plan: WritePlan, committed: bool) -> IngestResult:
    """Set bad events aside, record tombstones, and commit the plan's rows with the batch's checkpoint."""
    config = round_.config
    if plan.errors:
        raise DecodeError(
            f"{config.target_table}: bad change events, nothing committed and the checkpoint did not move "
            "(--on-bad-event quarantine would set them aside): " + "; ".join(plan.errors)
        )
    # computed columns, the row filter and the kept columns, on the winners (envelope.shape)
    plan, filtered_out = shape_plan(Shape.of(config, round_.policy, keys=round_.keys), plan, key_fields=round_.keys)
    assert plan.upserts is not None  # a plan without errors has them (tombstones: but with history="scd2")
    round_.steps.enter("quarantine")
    quarantined = _quarantine(round_, batch, plan)
    if plan.truncated_at is not None:
        log.warning(
            "%s: TRUNCATE at position %s applied: %d stored row(s) older than it deleted",
            config.target_table,
            plan.truncated_at,
            plan.counts.truncated,
        )
        round_.truncated_at = max(round_.truncated_at or "", plan.truncated_at)
    events = plan.counts.events
    # e.g. only Kafka tombstones: nothing to write, but the checkpoint must move. A new table
    # whose first batch was all quarantined is created empty, to hold the checkpoint.
    if events == 0 and (committed or not quarantined):
        return _commit_checkpoint_only(round_, committed, batch, quarantined)
    round_.steps.enter("tombstones")
    if plan.counts.deletes and plan.tombstones is not None:
        round_.tombstones.record(plan.tombstones, stamped_at=round_.now, new_keys=plan.counts.new_tombstones)
    if filtered_out is not None:  # rows the row filter deleted: how many keys are new is not known
        round_.tombstones.record(filtered_out, stamped_at=round_.now)
    held = round_.tombstones.count()
    details = _details(batch, events)
    details.update(round_.schema_changes.details())
    stats = {**asdict(plan.counts), "quarantined": quarantined, "tombstones_held": held, **details}
    log.info(
        "%s: %d events decided: writing %d upserts and %d deletes to Hudi",
        config.target_table,
        events,
        plan.counts.upserts,
        plan.counts.deletes,
    )
    rows, operation = plan.upserts, None
    if not committed and plan.counts.upserts and opt.first_commit_bulk_insert(config.hoodie_conf):
        rows, operation = first_commit_rows(plan.upserts, plan.counts.upserts), "bulk_insert"
    failures = WriteFailures(round_.spark, config.target_base_path)
    round_.steps.enter("commit")
    try:
        commit_time = _commit(
            round_.table,
            config,
            round_.keys,
            rows,
            batch,
            stats,
            round_.truncated_at,
            operation=operation,
            extra_metadata=round_.carried_metadata(),
        )
    except SinkError as exc:
        refused = _kafka_refused(config, exc.__cause__) if exc.__cause__ is not None else None
        if refused is not None:  # the executors' read of the round, done by the write: no write failure
            raise refused from None
        raise failures.judge(exc, start=json.dumps(round_.checkpoint, sort_keys=True)) from exc.__cause__
    failures.clear()
    details["writer"] = round_.table.last_writer
    if round_.table.java_failed:  # the Java client failed before its commit; Spark's datasource wrote the round
        details["java_failed"] = round_.table.java_failed
    if round_.table.java_declined and round_.table.java_declined != "not a round":
        details["java_declined"] = round_.table.java_declined  # why the faster path stepped aside: a user can see it
    return _record(round_, batch, plan, commit_time, held=held, details=details, quarantined=quarantined)


def _quarantine(round_: _Round, batch: Batch, plan: WritePlan) -> int:
    """The plan's bad events into the quarantine table, before the commit that moves the checkpoint past them."""
    if plan.quarantined is None:
        return 0
    config = round_.config
    store = QuarantineStore(round_.spark, config.resolved_quarantine_path, target_table=config.target_table)
    # A replay writes the same rows again.
    quarantined = store.record(plan.quarantined, key_fields=round_.keys, batch=batch.description)
    log.warning(
        "%s: %d bad event(s) quarantined in %s (hudi-cdc quarantine list)", config.target_table, quarantined, store.path
    )
    return quarantined


def _record(
    round_: _Round,
    batch: Batch,
    plan: WritePlan,
    commit_time: str,
    *,
    held: int,
    details: dict[str, Any],
    quarantined: int,
) -> IngestResult:
    """The committed round's result, logged."""
    result = IngestResult(
        **plan.counts.change_counts(),
        table=round_.config.target_table,
        base_path=round_.config.target_base_path,
        commit_time=commit_time,
        checkpoint=batch.next_checkpoint,
        batch=batch.description,
        tombstones_held=held,
        tombstones_purged=round_.purged,
        duration_s=time.monotonic() - round_.started,
        details=details,
        quarantined=quarantined,
        steps_s=round_.steps.done(),
    )
    log.info(
        "%s: commit %s: %d events, %d upserts, %d deletes, %d stale, %d superseded (%.1fs)",
        result.table,
        commit_time,
        result.events,
        result.upserts,
        result.deletes,
        result.stale,
        result.superseded,
        result.duration_s,
    )
    return result


def load_first(config: IngestConfig, source: Source, *, spark: SparkSession | None = None) -> IngestResult:
    """Write a source's one batch into a table with no commits, as read: a first load.

    There is nothing to merge with (the table is empty) and each key is one row (the
    source reads a table by its primary key), so the merge plan, a shuffle of every row,
    is skipped: the flattened rows go straight to the write (``config``'s operation;
    ``bootstrap`` asks for a bulk insert). The counts are Hudi's own, from the commit.
    """
    from hudi_cdc.spark import spark_session

    spark = spark or spark_session()
    with writer_lease(config, spark):
        return _load_first(config, source, spark)


def _load_first(config: IngestConfig, source: Source, spark: SparkSession) -> IngestResult:
    started = time.monotonic()
    table = HudiTable(spark, config.target_base_path)
    if table.has_commits():
        raise ConfigError(f"{config.target_base_path} already has commits: a first load fills a new table")
    batch = source.next_batch(None)
    if batch is None:
        return IngestResult(
            table=config.target_table, base_path=config.target_base_path, commit_time=None, checkpoint=None
        )
    keys = config.record_key_fields or batch.key_fields
    policy = merge_policy(config)
    shape = Shape.of(config, policy, keys=keys)
    flat = change_rows(
        batch,
        policy,
        key_fields=keys,
        ingested_at=datetime.now(UTC),
        behavior=config.schema_change_behavior,
        table_schema=None,
        shape=shape,
        type_mapping=TypeMapping(config.type_mappings, config.column_types),
    )
    flat = shape.source_rows(flat.select(*[c for c in flat.columns if not c.startswith(INTERNAL_PREFIX)]))
    rows = first_versions(config.history, flat)
    log.info("%s: writing %s", config.target_table, batch.description)
    commit_time = _commit(table, config, keys, rows, batch, {"first_load": True, **batch.details}, None)
    written = next((c.written for c in table.commits() if c.instant == commit_time), {})
    inserts = int(written.get("inserts", 0))
    return IngestResult(
        table=config.target_table,
        base_path=config.target_base_path,
        commit_time=commit_time,
        checkpoint=batch.next_checkpoint,
        batch=batch.description,
        events=inserts,
        upserts=inserts,
        duration_s=time.monotonic() - started,
        details=dict(batch.details),
        ops={"r": inserts},
    )


def _commit(
    table: HudiTable,
    config: IngestConfig,
    keys: tuple[str, ...],
    rows: DataFrame,
    batch: Batch,
    stats: dict[str, Any],
    truncated_at: str | None,
    *,
    operation: str | None = None,
    extra_metadata: Mapping[str, str] | None = None,
) -> str:
    """Write ``rows`` in one Hudi commit that also carries the batch's checkpoint and stats.

    A new table's index is sized by the round's upserts (``stats``), the rows of its first commit;
    its first commit is an upsert rather than ``operation``'s bulk insert where the index asks so.
    """
    options = _write_options(config, keys, table, rows=stats.get("upserts"))
    if operation == "bulk_insert" and not opt.bulk_inserts(options):
        operation = None
    metadata = {
        opt.CHECKPOINT_KEY: json.dumps(batch.next_checkpoint, sort_keys=True),
        opt.SOURCE_KEY: config.source,
        opt.STATS_KEY: json.dumps(stats, sort_keys=True),
        opt.INDEX_KEY: opt.index_layout(options),
    }
    if operation is not None:
        options[opt.OPERATION] = operation
    if config.checkpoint is not None:
        metadata[opt.CHECKPOINT_RESET_KEY] = config.checkpoint
    if truncated_at:
        metadata[opt.TRUNCATED_AT_KEY] = truncated_at
    if config.history != "none":
        metadata[opt.HISTORY_KEY] = config.history
    if (shaped := recorded_shape(config)) is not None:
        metadata[opt.SHAPE_KEY] = json.dumps(shaped, sort_keys=True)
    metadata.update(extra_metadata or {})
    if REPAIR_AT_DETAIL in batch.details:  # a repair's commit: it is now the table's newest repair
        metadata[opt.REPAIRED_AT_KEY] = json.dumps(batch.details[REPAIR_AT_DETAIL], sort_keys=True)
    small = SmallWrite(
        rows=stats.get("upserts", 0) + stats.get("deletes", 0),
        max_rows=config.java_writer_max_rows,
        max_bytes=config.java_writer_max_bytes,
    )
    return table.write(rows, options, metadata, small=small)


def _write_options(
    config: IngestConfig, keys: Sequence[str], table: HudiTable | None = None, rows: int | None = None
) -> dict[str, str]:
    """The options of a write to ``table``, its index as ``index_conf`` resolves it (``rows``: a new
    table's first commit); without a table, the settings' own (what does not depend on the index)."""
    user_conf = config.hoodie_conf
    if table is not None:
        user_conf = index_conf(table, user_conf, partitioned=bool(config.partition_path_field), rows=rows)
    return opt.write_options(
        table_name=config.target_table,
        table_type=config.table_type,
        record_key_fields=record_key_fields(config.history, keys) if keys else keys,
        partition_path_field=config.partition_path_field,
        ordering_field=ORDER_COLUMN,
        user_conf=user_conf,
        async_compaction=config.async_compaction,
    )


def _commit_checkpoint_only(round_: _Round, committed: bool, batch: Batch, quarantined: int = 0) -> IngestResult:
    """Commit no rows with the batch's checkpoint (the table must have a commit to hold it)."""
    config, table = round_.config, round_.table
    commit_time = None
    round_.steps.enter("commit")
    if committed:
        current = table.read()
        empty = current.select(*[c for c in current.columns if is_data_column(c)]).limit(0)
        stats = {"events": 0, "quarantined": quarantined, **_details(batch, 0)}
        commit_time = _commit(
            table,
            config,
            round_.keys,
            empty,
            batch,
            stats,
            round_.truncated_at,
            extra_metadata=round_.carried_metadata(),
        )
    return IngestResult(
        table=config.target_table,
        base_path=config.target_base_path,
        commit_time=commit_time,
        checkpoint=batch.next_checkpoint if commit_time else None,
        batch=batch.description,
        tombstones_held=round_.tombstones.count(),
        tombstones_purged=round_.purged,
        duration_s=time.monotonic() - round_.started,
        details={**_details(batch, 0), **round_.schema_changes.details()},
        quarantined=quarantined,
        steps_s=round_.steps.done(),
    )


def _details(batch: Batch, events: int) -> dict[str, Any]:
    """The source's details, plus how many of its messages carried no change event (Kafka tombstones)."""
    details = dict(batch.details)
    if "messages" in details:
        details["messages_without_event"] = details["messages"] - events
    return details


def _hudi_fills(table: HudiTable, policy: MergePolicy, config: IngestConfig) -> bool:
    """Whether the table's merge fills the policy's placeholders (with Hudi's own record mergers only).

    The settings rule out most tables without reading the table's properties; the table has the last word.
    """
    merger = _write_options(config, ())[opt.RECORD_MERGER_CLASSES]
    if policy.toast_placeholder is None or merger not in opt.FILLING_MERGERS:
        return False
    if config.table_type != "COPY_ON_WRITE" or config.partition_path_field:
        return False
    return table.fills_placeholders(policy.toast_placeholder)


def _stored_columns(table: HudiTable, columns: Sequence[str]) -> DataFrame:
    """The table's rows with those of ``columns`` it has (a column new in this batch is missing there)."""
    stored = table.read()
    return stored.select(*[c for c in columns if c in stored.columns])


def _live_columns(table: HudiTable, columns: Sequence[str]) -> DataFrame:
    """As :func:`_stored_columns`, without a soft_delete table's marked deletes."""
    from pyspark.sql import functions as F

    stored = table.read()
    if SOFT_DELETED_COLUMN in stored.columns:
        stored = stored.where(~F.coalesce(F.col(SOFT_DELETED_COLUMN), F.lit(False)))
    return stored.select(*[c for c in columns if c in stored.columns])


def _past_columns(table: HudiTable, columns: Sequence[str]) -> Iterator[DataFrame]:
    """The table as of each earlier completed commit, newest first (the newest is the current table)."""
    for commit in table.commits()[1:]:
        past = table.read_as_of(commit.instant)
        yield past.select(*[c for c in columns if c in past.columns])


def _keys_and_order(frame):  # noqa: ANN001, ANN202 - DataFrame | None
    return None if frame is None else frame.drop(TOMBSTONED_AT_COLUMN)


def run(
    config: IngestConfig,
    *,
    spark: SparkSession | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> Iterator[IngestResult]:
    """Yield one result per round: one round, or a loop when ``config.continuous``.

    In the loop a round starts at most every ``min_sync_interval_seconds``;
    transient errors are retried with backoff for up to ``retry_timeout_seconds``,
    terminal ones end the loop. With ``config.async_compaction`` (MERGE_ON_READ's default) the
    rounds' commits only schedule compactions, and :func:`compactions` runs them: in the loop on a
    thread, after each round; when the rounds end by themselves (one round, ``max_rounds``) every
    pending plan runs before the generator ends; on an error or a stop only the one under way finishes.
    """
    from hudi_cdc.spark import spark_session

    spark = spark or spark_session()
    # The run holds the table's lease from its first round to its end, compactions included: a second
    # writer is refused (or waits) for as long as this one runs, not only during its rounds.
    with writer_lease(config, spark), compactions(config, spark) as compactor:
        yield from _rounds(config, spark, sleep, compactor)


@contextmanager
def compactions(config: IngestConfig, spark: SparkSession) -> Iterator[Compactor | None]:
    """The table's compactor for a block of rounds run under its writer lease (the caller holds it).

    ``None`` unless ``config.async_compaction``. A plan already pending (a killed process's) runs at once;
    a round that committed calls ``notify``. When the block ends by itself the table's pending plans run
    before this returns (the last round's commit may have scheduled one): what a one-shot ``ingest`` or
    ``run`` does before it exits. On an exception (a failure, Ctrl-C, a generator closed early) only the
    compaction under way finishes; a plan not started waits for the next process. A compaction's failure
    is logged and its plan stays pending for the next one (``Compactor``); the rounds' commits stand.
    """
    if not config.async_compaction:
        yield None
        return
    from hudi_cdc.sink.compaction import Compactor

    compactor = Compactor(spark)
    compactor.add(config.target_base_path, compaction_options(config))
    try:
        yield compactor
    except BaseException:
        compactor.close()
        raise
    compactor.notify(config.target_base_path)
    compactor.close(drain=True)


@dataclass(frozen=True)
class CompactResult:
    """What :func:`compact` did: the plans it completed, and its seconds."""

    table: str
    base_path: str
    compacted: list[str]
    duration_s: float

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def compact(config: IngestConfig, *, spark: SparkSession | None = None) -> CompactResult:
    """Run the MERGE_ON_READ table's pending compaction plans (its rounds scheduled them), under its writer
    lease: refused (or waits ``lease_wait_seconds``) while another process writes or compacts the table.
    A compaction killed mid-run stays pending; the next one rolls it back and runs it again."""
    from hudi_cdc.sink.compaction import run_pending
    from hudi_cdc.spark import spark_session

    if config.table_type != "MERGE_ON_READ":
        raise ConfigError(
            f"{config.target_table}: compaction is for MERGE_ON_READ tables, and table_type is "
            f"{config.table_type}: set --table-type mor for a MERGE_ON_READ table"
        )
    spark = spark or spark_session()
    started = time.monotonic()
    with writer_lease(config, spark):
        compacted = run_pending(spark, config.target_base_path, compaction_options(config))
    return CompactResult(config.target_table, config.target_base_path, compacted, time.monotonic() - started)


def compaction_options(config: IngestConfig) -> dict[str, str]:
    """The write options a compaction of ``config``'s table runs with (its index: the one its commits recorded)."""
    return _write_options(config, ())


def _rounds(
    config: IngestConfig,
    spark: SparkSession | None,
    sleep: Callable[[float], None],
    compactor: Compactor | None,
) -> Iterator[IngestResult]:
    from hudi_cdc.checks.validate import preflight
    from hudi_cdc.spark import spark_session

    rounds = 0
    failures = 0
    failing_since = 0.0
    checked = False
    while True:
        started = time.monotonic()
        try:
            if not checked:  # the cheap preflight, before the first round only; a transient failure is retried
                preflight(config, spark=spark or spark_session())
                checked = True
            if compactor is not None:
                compactor.check(config.target_base_path)
            result = ingest_once(config, spark=spark)
            failures = 0
        except HudiCdcError as exc:
            failing_since = started if failures == 0 else failing_since
            failing_for = time.monotonic() - failing_since
            if not (config.continuous and exc.transient) or failing_for >= config.retry_timeout_seconds:
                raise
            failures += 1
            wait = retry_backoff_s(failures, config.retry_timeout_seconds - failing_for)
            log.warning(
                "transient failure (%s), retry %d in %.0fs (failing for %.0fs)", exc, failures, wait, failing_for
            )
            sleep(wait)
            continue
        if compactor is not None and result.committed:
            compactor.notify(config.target_base_path)
        yield result
        rounds += 1
        if not config.continuous or (config.max_rounds is not None and rounds >= config.max_rounds):
            return
        remaining = config.min_sync_interval_seconds - (time.monotonic() - started)
        if remaining > 0:
            sleep(remaining)
