"""``hudi-cdc verify``: is the Hudi table equal to its source table, row for row and value for value?

The comparison with a source database is :func:`hudi_cdc.upstream.compare.verify`
(re-exported here); this module adds the comparison of a table fed from change
files with what the files replay to, and the wait for the ingest to pass a
source position before a second pass.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from hudi_cdc.envelope.type_mapping import TypeMapping
from hudi_cdc.errors import ConfigError, SourceError
from hudi_cdc.upstream import canonical
from hudi_cdc.upstream.compare import Difference, Plan, SparkSide, VerifyResult, compare
from hudi_cdc.upstream.compare import verify as _verify

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from hudi_cdc.config import IngestConfig
    from hudi_cdc.envelope.events import Batch
    from hudi_cdc.sink.hudi import HudiTable
    from hudi_cdc.upstream.database import SourceDatabase
    from payloads.base import MergePolicy, WritePlan

__all__ = [
    "Difference",
    "VerifyResult",
    "checkpoint_covers",
    "kafka_end_offsets",
    "verify",
    "verify_replay",
    "verify_transformed",
    "wait_for_ingest",
]


_SHARD_COLUMNS = ("_source_server", "_source_database", "_source_schema", "_source_table")


def verify(
    spark: SparkSession,
    base_path: str,
    database: SourceDatabase,
    table: str,
    **options: Any,  # noqa: ANN401 - hudi_cdc.upstream.compare.verify's
) -> VerifyResult:
    """Compare the Hudi table at ``base_path`` with ``table`` of ``database`` (:func:`hudi_cdc.upstream.compare.verify`).

    A merged table ([[routes]], docs/routing.md#verify) is compared shard by shard: only its rows of ``table``
    (the shard columns ``table``'s schema, name and database give) are compared with it.
    """
    held = [c for c in spark.read.format("hudi").load(base_path).columns if c in _SHARD_COLUMNS]
    if held:
        return _verify_shard(spark, base_path, database, table, held, **options)
    return _verify(spark, base_path, database, table, **options)


def _verify_shard(
    spark: SparkSession,
    base_path: str,
    database: SourceDatabase,
    table: str,
    held: list[str],
    **options: Any,  # noqa: ANN401 - hudi_cdc.upstream.compare.verify's
) -> VerifyResult:
    """One shard of a merged table against its source table, as :func:`hudi_cdc.upstream.compare.verify` compares
    a whole table (the same plan, sides and recheck), the table's side narrowed to that shard's rows."""
    shard = _shard_rows(spark, base_path, database, table, held)
    return _verify(spark, base_path, database, table, table_rows=shard, **options)


def _shard_rows(
    spark: SparkSession, base_path: str, database: SourceDatabase, table: str, held: list[str]
) -> Callable[[], DataFrame]:
    """A merged table's rows of source table ``table`` (read again at each call); ConfigError when the shard
    columns cannot single it out (rows of several servers with the same schema and table)."""
    from urllib.parse import urlsplit

    from pyspark.sql import functions as F

    from payloads.history import current_rows

    schema, _, name = table.rpartition(".")
    if not schema:
        raise ConfigError(f"name the shard's source table with its schema (MySQL: its database), e.g. public.{table}")
    dbname = urlsplit(database.url).path.lstrip("/") if database.kind == "postgres" else schema
    values = {"_source_schema": schema, "_source_table": name, "_source_database": dbname}
    test = F.lit(True)
    for column in held:
        if column in values:
            test = test & (F.col(column) == F.lit(values[column]))

    def rows() -> DataFrame:
        frame = current_rows(spark.read.format("hudi").load(base_path)).where(test)
        if "_source_server" in held:
            servers = [r[0] for r in frame.select("_source_server").distinct().limit(2).collect()]
            if len(servers) > 1:
                raise ConfigError(
                    f"{base_path} is a merged table with rows of {table} from servers {', '.join(servers)}: verify "
                    "cannot tell which server's source table this is (docs/routing.md#verify)"
                )
        return frame

    return rows


# --- a table fed from change files: compared with what the files replay to ------------------------------


def verify_replay(
    spark: SparkSession,
    config: IngestConfig,
    *,
    columns: Sequence[str] | None = None,
    where: str | None = None,
    max_diffs: int = 20,
    fetch_limit: int = 50_000,
) -> VerifyResult:
    """Compare the Hudi table of ``config`` with the state its change files replay to.

    The replay takes exactly the files the table's checkpoint covers (files that
    arrived since are counted in a note, not compared), decides every key's
    change with the same merge policy over all of them at once, from nothing,
    and keeps the rows whose last change is not a delete. Compared are the
    table's columns and its ``_source_*`` columns (the winning event must be the
    same one), not Hudi's meta columns nor ``_ingested_at``.
    """
    from hudi_cdc.spark import release

    started = time.monotonic()
    table, batch, result = _replay_scope(spark, config)
    hudi = table.read()
    materialised: tuple[DataFrame, ...] = ()
    try:
        replayed, materialised = _replayed(batch, config, result.key_fields, hudi, table.history())
        mappings = _replay_mappings(replayed, hudi, columns, result)
        opts = {"fetch_limit": fetch_limit, "max_diffs": max_diffs, "toast": config.toast_placeholder}
        plan = Plan(result.key_fields, mappings)
        diffs = compare(SparkSide(replayed, where, source=True), SparkSide(hudi, where), plan, opts, result)
    finally:
        release(*materialised)
    result.differences = diffs[:max_diffs]
    result.duration_s = time.monotonic() - started
    return result


def verify_transformed(
    spark: SparkSession,
    config: IngestConfig,
    database: SourceDatabase,
    table: str,
    *,
    columns: Sequence[str] | None = None,
    where: str | None = None,
    max_diffs: int = 20,
    fetch_limit: int = 50_000,
) -> VerifyResult:
    """Compare a table ingested with ``config``'s transforms and masks with its Postgres source ``table``.

    The source rows are read through Spark and shaped as the ingest shapes them (``envelope.shape``):
    renames, masks with the same salt, computed columns, the row filter, the kept columns. What reads
    a change's own columns (``_source_*``) cannot be computed from the database: those computed
    columns (and such a filter) are skipped, and the result's notes name them.
    """
    from hudi_cdc.envelope.shape import Shape
    from hudi_cdc.policy import merge_policy
    from hudi_cdc.sink.hudi import HudiTable

    started = time.monotonic()
    hudi_table = HudiTable(spark, config.target_base_path)
    keys = config.record_key_fields or hudi_table.record_key_fields()
    result = VerifyResult(table=table, source=database.display, target=config.target_base_path, key_fields=keys)
    url, properties = database.jdbc()
    properties = {**properties, "driver": "org.postgresql.Driver", "fetchsize": "10000"}
    source = spark.read.jdbc(url, table, properties=properties)
    rows, skipped = Shape.of(config, merge_policy(config), keys=keys).database_rows(source)
    if skipped:
        result.notes.append(
            f"not compared: {', '.join(skipped)} (computed from the change's _source_* columns, which a row "
            "read from the database does not have)"
        )
    hudi = hudi_table.read()
    mappings = _replay_mappings(rows, hudi, columns, result)
    opts = {"fetch_limit": fetch_limit, "max_diffs": max_diffs, "toast": config.toast_placeholder}
    diffs = compare(SparkSide(rows, where, source=True), SparkSide(hudi, where), Plan(keys, mappings), opts, result)
    result.differences = diffs[:max_diffs]
    result.duration_s = time.monotonic() - started
    return result


def _replay_scope(spark: SparkSession, config: IngestConfig) -> tuple[HudiTable, Batch | None, VerifyResult]:
    """The table, the batch of the files its checkpoint covers (None: none yet), and a result noting what is left out."""
    from hudi_cdc.envelope.types import reader_schema
    from hudi_cdc.sink.hudi import HudiTable
    from hudi_cdc.sink.options import CHECKPOINT_RESET_KEY
    from hudi_cdc.sources.files import FileSource

    base_path = config.target_base_path
    table = HudiTable(spark, base_path)
    if not table.has_commits():
        raise SourceError(f"{base_path} has no completed commit yet: nothing to compare")
    source = FileSource(spark, config, reader_schema=reader_schema)
    stored = table.latest_checkpoint()
    batch, not_taken = source.covered(source.parse_checkpoint(stored) if stored else None)
    from payloads.base import ORDER_COLUMN
    from payloads.history import source_key_fields

    keys = source_key_fields(config.record_key_fields or table.record_key_fields())
    if table.history() == "scd2":  # every version is compared: a key and a position name one
        keys = (*keys, ORDER_COLUMN)
    result = VerifyResult(table=config.target_table, source=str(config.source_path), target=base_path, key_fields=keys)
    if not_taken:
        result.notes.append(f"{not_taken} file(s) after the table's checkpoint, not ingested yet, were not replayed")
    if any(c.extra.get(CHECKPOINT_RESET_KEY) not in (None, "earliest") for c in table.commits()):
        result.notes.append(
            "the table was once started from a given --checkpoint: events before it are in the replay, not the table"
        )
    return table, batch, result


def _replayed(
    batch: Batch | None, config: IngestConfig, keys: tuple[str, ...], hudi: DataFrame, history: str = "none"
) -> tuple[DataFrame, tuple[DataFrame, ...]]:
    """The rows the batch's last changes leave, decided from nothing, as the table's ``history`` keeps them
    (``none``: no deletes; ``soft_delete``: marked deletes too; ``scd2``: every version); and what to release."""
    from pyspark.sql import functions as F

    from hudi_cdc.envelope.batch import change_rows
    from hudi_cdc.envelope.shape import Shape
    from hudi_cdc.errors import DecodeError
    from hudi_cdc.policy import merge_policy
    from payloads.base import ACTION_COLUMN, UPSERT
    from payloads.history import source_key_fields

    if batch is None:
        return hudi.limit(0), ()
    policy = merge_policy(config)
    keys = source_key_fields(keys)  # an scd2 table's is the source's and the position
    shape = Shape.of(config, policy, keys=keys)  # the table's transforms, masks with the same salt
    rows = change_rows(
        batch,
        policy,
        key_fields=keys,
        ingested_at=datetime.now(UTC),
        behavior=config.schema_change_behavior,
        table_schema=hudi.schema,
        truncates=config.truncate_behavior,
        shape=shape,
        type_mapping=TypeMapping(config.type_mappings, config.column_types),  # replayed as ingested
        schema_policy=config.schema_change_policy,
    )
    plan = _replay_plan(policy, rows, keys, history)
    if plan.errors or plan.upserts is None:
        from hudi_cdc.spark import release

        release(*plan.materialised)  # here: the raise leaves the caller nothing to release
        raise DecodeError(f"replaying {batch.description}: bad change events: " + "; ".join(plan.errors))
    if history != "none":
        return shape.source_rows(plan.upserts), plan.materialised
    assert plan.decided is not None  # a plan of mode none without errors has it
    return shape.source_rows(plan.decided.filter(F.col(ACTION_COLUMN) == F.lit(UPSERT))), plan.materialised


def _replay_plan(policy: MergePolicy, rows: DataFrame, keys: tuple[str, ...], history: str) -> WritePlan:
    from payloads import StoredState
    from payloads.history import plan_scd2, soft_delete

    if history == "scd2":
        return plan_scd2(policy, rows, key_fields=keys, stored=StoredState.empty())
    plan = policy.plan(rows, key_fields=keys, stored=StoredState.empty())
    if history == "soft_delete" and not plan.errors:
        plan = soft_delete(policy, plan, rows, key_fields=keys, stored=StoredState.empty())
    return plan


def _replay_mappings(
    replayed: DataFrame, hudi: DataFrame, columns: Sequence[str] | None, result: VerifyResult
) -> tuple[canonical.Mapping, ...]:
    """How each compared column of the replay and the table meet; records the missing and compared ones in ``result``."""
    from payloads.base import INGESTED_AT_COLUMN, INTERNAL_PREFIX

    def compared(name: str) -> bool:
        return not name.startswith(("_hoodie_", INTERNAL_PREFIX)) and name != INGESTED_AT_COLUMN

    keys = result.key_fields
    replay_types = {f.name: f.dataType.simpleString() for f in replayed.schema.fields if compared(f.name)}
    hudi_types = {f.name: f.dataType.simpleString() for f in hudi.schema.fields if compared(f.name)}
    for name in (*keys, *(columns or ())):
        if name not in replay_types:
            raise ConfigError(f"column {name!r} is not in the replayed events (columns: {', '.join(replay_types)})")
    wanted = list(keys) + [n for n in replay_types if n not in keys and (not columns or n in columns)]
    result.missing_columns = tuple(n for n in wanted if n not in hudi_types)
    if any(k in result.missing_columns for k in keys):
        raise SourceError(f"the Hudi table {result.target} has no key column {', '.join(keys)}")
    mappings = tuple(canonical.map_spark_column(n, replay_types[n], hudi_types[n]) for n in wanted if n in hudi_types)
    result.compared_columns = tuple(m.name for m in mappings)
    return mappings


# --- waiting for the ingest before the second pass ----------------------------------------------------


def wait_for_ingest(
    spark: SparkSession,
    base_path: str,
    *,
    bootstrap_servers: str | None = None,
    slot: str | None = None,
    timeout_s: float = 600.0,
    poll_s: float = 2.0,
    kafka_conf: dict[str, str] | None = None,
    database_kind: str = "postgres",
    quiet_s: float = 10.0,
    advance: Callable[[], None] | None = None,
) -> Callable[[Any, str], str]:
    """A ``recheck`` for :func:`verify`: wait until the Hudi table holds every change up to a source position.

    The chain: the replication slot (``slot``, or every logical slot of the
    database) has confirmed the position, so Debezium has published it; the
    table's Kafka topic (from its checkpoint) then ends at offsets that hold it;
    a Hudi commit whose checkpoint reaches those offsets holds it too. Without
    ``bootstrap_servers`` the last link becomes "a commit made after the slot
    confirmed the position". Debezium confirms positions only as it sees
    changes or heartbeats: on a quiet database set ``heartbeat.interval.ms``,
    or the slot step gives up after half the timeout (and says so).

    MySQL/MariaDB (``database_kind="mysql"``) has no slot that confirms a
    binlog position to the outside, so the first link becomes "the topic's end
    offsets stood still for ``quiet_s``" (Debezium publishes a binlog within
    seconds); on a table that never stops changing, that step too gives up
    after half the timeout and says so.

    ``advance``: run one of the table's rounds, in place of waiting for another process to (the runner's own
    repair: it is the table's writer).
    """
    from hudi_cdc.sink.hudi import HudiTable

    def wait(conn: Any, position: str) -> str:
        deadline = time.monotonic() + timeout_s
        steps = []
        first_deadline = time.monotonic() + timeout_s / 2
        table = HudiTable(spark, base_path)
        if database_kind == "postgres":
            while not _slot_passed(conn, slot, position):
                if time.monotonic() > first_deadline:
                    steps.append(f"the replication slot did not confirm {position} within {timeout_s / 2:.0f}s")
                    break
                time.sleep(poll_s)
            else:
                steps.append(f"slot confirmed {position}")
        else:
            steps.append(_topic_quiet(table.latest_checkpoint(), bootstrap_servers, kafka_conf or {}, quiet_s,
                                      poll_s, first_deadline, position))  # fmt: skip
        before = {c.instant for c in table.commits()}
        target = _topic_ends(table.latest_checkpoint(), bootstrap_servers, kafka_conf or {})
        while True:
            checkpoint = table.latest_checkpoint()
            if target is not None and checkpoint_covers(checkpoint, target[1]):
                steps.append(f"a commit reached {target[0]} offsets {target[1]}")
                return "; ".join(steps)
            if target is None and {c.instant for c in table.commits()} - before:
                steps.append("a new commit")
                return "; ".join(steps)
            if time.monotonic() > deadline:
                steps.append(f"no commit caught up within {timeout_s:.0f}s: the ingest may be stopped or failing")
                return "; ".join(steps)
            if advance is not None:
                advance()
            else:
                time.sleep(poll_s)

    return wait


def _slot_passed(conn: Any, slot: str | None, position: str) -> bool:
    with conn.cursor() as cur:
        cur.execute(
            "select coalesce(bool_and(confirmed_flush_lsn >= %s::pg_lsn), false) from pg_replication_slots"
            " where slot_type = 'logical' and database = current_database() and (%s::text is null or slot_name = %s)",
            (position, slot, slot),
        )
        return bool(cur.fetchone()[0])


def _topic_quiet(
    checkpoint: str | None,
    bootstrap_servers: str | None,
    conf: dict[str, str],
    quiet_s: float,
    poll_s: float,
    deadline: float,
    position: str,
) -> str:
    """Wait until the table's topic stops growing for ``quiet_s`` (or ``deadline``); say which."""
    ends = _topic_ends(checkpoint, bootstrap_servers, conf)
    if ends is None:
        time.sleep(quiet_s)
        return f"binlog at {position}; waited {quiet_s:.0f}s for Debezium to publish it (no topic to watch)"
    still_since = time.monotonic()
    while time.monotonic() - still_since < quiet_s:
        if time.monotonic() > deadline:
            return f"binlog at {position}; the topic {ends[0]} never stood still for {quiet_s:.0f}s"
        time.sleep(poll_s)
        now = _topic_ends(checkpoint, bootstrap_servers, conf)
        if now is not None and now != ends:
            ends, still_since = now, time.monotonic()
    return f"binlog at {position}; the topic {ends[0]} stood still for {quiet_s:.0f}s"


def _topic_ends(
    checkpoint: str | None, bootstrap_servers: str | None, conf: dict[str, str]
) -> tuple[str, dict[str, int]] | None:
    import json

    if not checkpoint or not bootstrap_servers or not checkpoint.lstrip().startswith("{"):
        return None
    topic = json.loads(checkpoint).get("topic")
    if not topic:
        return None
    return topic, kafka_end_offsets(topic, bootstrap_servers, conf)


def kafka_end_offsets(topic: str, bootstrap_servers: str, conf: dict[str, str] | None = None) -> dict[str, int]:
    """The next offset to be written, per partition (as the checkpoint keys them)."""
    from hudi_cdc.sources.kafka import end_offsets

    return {str(p): end for (_, p), end in end_offsets(bootstrap_servers, [topic], conf).items()}


def checkpoint_covers(checkpoint: str | None, ends: dict[str, int]) -> bool:
    """Whether a Kafka checkpoint has read every partition up to ``ends``."""
    import json

    if not checkpoint or not checkpoint.lstrip().startswith("{"):
        return False
    offsets = json.loads(checkpoint).get("offsets", {})
    return all(int(offsets.get(p, 0)) >= end for p, end in ends.items())
