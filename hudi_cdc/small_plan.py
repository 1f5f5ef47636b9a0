"""A small round's plan in the driver: decode, decide and check tombstones without a Spark job (issue 58).

A MERGE_ON_READ round under the Java writer's threshold (``java_writer_max_rows``) is written by Hudi's
Java write client without a Spark job (``sink.small_write``); its plan, run by Spark, cost more than the
write. Where the source's events can be read in the driver, this plans the round there instead:

1. read: the files source's batch, by fastavro (``sources.files.read_in_driver``); or a small Kafka round's
   messages, which the source's own consumer read in the driver, decoded by fastavro from the Confluent
   wire format as the single-pass decode does (``sources.kafka_driver.decode_in_driver``);
2. flatten: ``envelope.driver_rows`` (what ``envelope.flatten`` makes of each event);
3. decide: ``payloads.driver.decide``, the merge policy's rules over Python rows, against the
   tombstone store read by pyarrow (``TombstoneStore.newest_in_driver``) and, for the keys whose winner
   holds a TOAST placeholder, their stored rows (``_stored_frame``: one read filtered by those keys, the
   round's only Spark job);
4. hand over: the rows and the tombstones as local relations (a Spark collect of those runs no job),
   which the pipeline writes as any plan's: the tombstones by pyarrow, the rows by the Java client.

One set of rules: the decision is proven equal to the Spark plan's (tests/payloads/test_driver_plan.py,
tests/test_small_plan.py, tests/stack/test_small_plan_kafka.py). Whatever this slice does not take (a JDBC or
JSON source, Kafka messages read by the executors or decoded per writer schema, a history mode, a shaping
option, a type mapping, a placeholder that neither the batch nor the stored row fills, a bad event, a batch
whose columns are not the table's, a table off the local file system...) it declines, naming why: the round goes to the Spark plan, before
anything is written, and the result's ``details`` say so (``driver_declined``), as for the Java writer.
Any failure of its own is a decline too, logged as a warning (``driver_failed``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from hudi_cdc.envelope.driver_rows import flat_rows
from hudi_cdc.envelope.shape import Shape
from hudi_cdc.envelope.unflatten import is_flattened
from hudi_cdc.sink import options as opt
from hudi_cdc.sink import small_write
from hudi_cdc.sink.hudi import index_conf
from hudi_cdc.sources.files import read_in_driver
from hudi_cdc.sources.kafka_driver import decode_in_driver
from payloads.base import ORDER_COLUMN, TOMBSTONED_AT_COLUMN, WritePlan, is_data_column
from payloads.driver import decide, toastable_columns, written_columns

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from hudi_cdc.config import IngestConfig
    from hudi_cdc.envelope.events import Batch
    from hudi_cdc.sink.hudi import HudiTable
    from hudi_cdc.sink.tombstones import TombstoneStore
    from payloads.base import MergePolicy

__all__ = ["Declined", "ineligible", "plan_in_driver"]

log = logging.getLogger("hudi_cdc")

TEST_HOOK = "HUDI_CDC_TEST_SMALL_PLAN"
"""``off``: every round planned by Spark (bench/small_plan.py's comparison), as HUDI_CDC_TEST_JAVA_WRITER hooks
the Java writer; not a setting."""


@dataclass(frozen=True)
class Declined:
    """Why a round's plan was not made in the driver; ``failed``: by a failure of the driver path's own."""

    why: str
    failed: bool = False

    def details(self) -> dict[str, str]:
        return {"driver_failed" if self.failed else "driver_declined": self.why}


def ineligible(config: IngestConfig, policy: MergePolicy, keys: tuple[str, ...]) -> str | None:
    """Why a table's rounds are never planned in the driver (by its settings alone), or None."""
    if config.table_type != "MERGE_ON_READ" or config.java_writer_max_rows <= 0:
        return "not a small MERGE_ON_READ round"
    if config.partition_path_field:
        return "a partitioned table"
    if config.source not in ("files", "kafka") or config.shard_sources:
        return f"the {config.source} source's events are not read in the driver"
    if config.source == "kafka" and config.kafka_value_format != "avro":
        return f"a {config.kafka_value_format} topic (the driver decodes Avro in the Confluent wire format only)"
    if config.history != "none":
        return f"history = {config.history}"
    if config.unique_keys:
        return "unique_keys"
    if Shape.of(config, policy, keys=keys).active:
        return "a shaping option (masks, renames, computed columns, a row filter, kept columns)"
    if config.type_mappings or config.column_types:
        return "a type mapping"
    if policy.order_of is None:
        return f"the {policy.name} flavor has no driver rule"
    return None


def plan_in_driver(
    spark: SparkSession,
    config: IngestConfig,
    batch: Batch,
    *,
    policy: MergePolicy,
    table: HudiTable,
    keys: tuple[str, ...],
    tombstones: TombstoneStore,
    now: datetime,
    truncated_at: str | None,
    committed: bool,
) -> WritePlan | Declined:
    """The round's write plan made in the driver, its rows and tombstones local relations; or why not.

    Nothing is written here: a decline or a failure leaves the round to the Spark plan as it was.
    """
    why = ineligible(config, policy, keys)
    if why is None and os.environ.get(TEST_HOOK, "").lower() == "off":  # a benchmark's before, in one process
        why = f"{TEST_HOOK}=off"
    if why is None and not committed:
        why = "a new table"
    if why is None and len(batch.parts) != 1:
        why = "more than one writer schema"
    if why is not None:
        return Declined(why)
    try:
        return _plan(spark, config, batch, policy, table, keys, tombstones, now, truncated_at)
    except Exception as exc:  # the Spark plan is the proven one: any surprise here hands the round to it
        from hudi_cdc._jvm import java_message

        log.warning(
            "%s: planning the round in the driver failed; the Spark plan takes it: %s",
            config.target_table,
            java_message(exc),
        )
        return Declined(f"{type(exc).__name__}: {java_message(exc)}", failed=True)


def _plan(
    spark: SparkSession,
    config: IngestConfig,
    batch: Batch,
    policy: MergePolicy,
    table: HudiTable,
    keys: tuple[str, ...],
    tombstones: TombstoneStore,
    now: datetime,
    truncated_at: str | None,
) -> WritePlan | Declined:
    from hudi_cdc.spark import ARROW_ENABLED

    if str(spark.conf.get(ARROW_ENABLED, "false")).lower() != "true":  # rows would reach Spark as an RDD: jobs
        return Declined(f"{ARROW_ENABLED} is not true")
    part = batch.parts[0]
    if part.avro_schema is None or is_flattened(part.envelopes.columns):
        return Declined("not Debezium envelopes with their Avro schema")
    meta = policy.source_meta_columns
    # What the schema alone declines (no event read yet): a table the driver never takes costs no decode.
    if isinstance(why := flat_rows((), part.avro_schema, source_meta_columns=meta, ingested_at=now), str):
        return Declined(why)
    read = _read(config, batch)
    if isinstance(read, str):
        return Declined(read)
    records, arrivals = read
    flat = flat_rows(records, part.avro_schema, source_meta_columns=meta, ingested_at=now)
    if isinstance(flat, str):
        return Declined(flat)
    stored = [f for f in table.read().schema.fields if is_data_column(f.name)]
    types = {**flat.types, ORDER_COLUMN: "string"}
    ours = {c: types[c] for c in written_columns(flat.columns)}
    theirs = {f.name: f.dataType.simpleString() for f in stored}
    if ours != theirs:  # a schema change, or a type the Spark plan would align: its own rules
        return Declined("the batch's columns are not the table's")
    if tombstones.local_path() is None:
        return Declined("the tombstone store is not on the local file system")
    decided = decide(
        policy,
        flat.rows,
        arrivals,
        columns=flat.columns,
        key_fields=keys,
        tombstones=tombstones.newest_in_driver(),
        truncated_at=truncated_at,
        toastable=toastable_columns(flat.types, keys),
        stored_rows=lambda wanted, columns: _by_key(
            _stored_frame(table, _read_options(config, table, keys), keys, wanted, columns), keys
        ),
    )
    if decided.declined is not None:
        return Declined(decided.declined)
    from pyspark.sql.types import StringType, StructField, StructType, TimestampType

    schema = StructType(stored)
    by_name = {f.name: f for f in stored}
    key_schema = StructType(
        [
            *[by_name[k] for k in keys],
            StructField(ORDER_COLUMN, StringType()),
            StructField(TOMBSTONED_AT_COLUMN, TimestampType()),
        ]
    )
    return WritePlan(
        decided=None,
        upserts=_local(spark, decided.rows, schema),
        tombstones=_local(spark, decided.tombstones, key_schema) if decided.tombstones else None,
        counts=decided.counts,
    )


def _read_options(config: IngestConfig, table: HudiTable, keys: tuple[str, ...]) -> dict[str, str]:
    """The table's read options that limit a read by key to the file groups the keys hash to (its bucket
    layout as its writers resolve it); none when its index has no such layout."""
    written = index_conf(table, config.hoodie_conf, partitioned=bool(config.partition_path_field))
    return opt.bucket_read_options(written, keys)


def _by_key(rows: DataFrame, keys: tuple[str, ...]) -> dict[tuple[Any, ...], dict[str, Any]]:
    """The rows :func:`_stored_frame` read (the keys asked for, never the table whole), each under its key."""
    return {tuple(row[k] for k in keys): row.asDict() for row in rows.collect()}


def _stored_frame(
    table: HudiTable,
    options: dict[str, str],
    keys: tuple[str, ...],
    wanted: list[tuple[Any, ...]],
    columns: list[str],
) -> DataFrame:
    """The table's rows of the ``wanted`` keys (their ``_source_order`` and those of ``columns`` it has), for
    the placeholders of a round: an ``IN`` on a single key, which Hudi's bucket query pruning limits
    to the keys' file groups under ``options`` (tests/test_small_plan.py counts the files read); a composite
    key's semi join with the keys as a local relation, as the Spark plan's lookup, reads every file group."""
    from pyspark.sql import functions as F

    stored = table.read(options)
    names = [c for c in (*keys, ORDER_COLUMN, *columns) if c in stored.columns]
    if len(keys) == 1:
        rows = stored.where(F.col(keys[0]).isin([key for (key,) in wanted]))
    else:
        from pyspark.sql.types import StructType

        by_name = {f.name: f for f in stored.schema.fields}
        local = stored.sparkSession.createDataFrame(wanted, StructType([by_name[k] for k in keys]))
        rows = stored.join(F.broadcast(local), on=list(keys), how="left_semi")
    return rows.select(*names)


def _read(config: IngestConfig, batch: Batch) -> tuple[list[dict[str, Any]], Sequence[tuple[Any, ...]]] | str:
    """The batch's envelopes read in the driver and their arrivals, as the Spark plan orders them; or why not."""
    part = batch.parts[0]
    if config.source == "files":
        return read_in_driver(part, config.java_writer_max_rows)
    if batch.details.get("decode") == "per-writer-schema":
        return "a topic decoded per writer schema (its versions have no common reader schema)"
    if batch.details.get("read") == "executors":
        return "the messages were read by Spark's executors (more than kafka_driver_read_max_messages)"
    return decode_in_driver(part, config.java_writer_max_rows)


def _local(spark: SparkSession, rows: tuple[dict[str, Any], ...], schema: Any) -> DataFrame:  # noqa: ANN401
    """``rows`` as a local relation of ``schema``: Arrow batches from a pandas frame, which Spark keeps in the
    driver (below ``spark.sql.execution.arrow.localRelationThreshold``), so reading it runs no job."""
    import pandas as pd
    from pyspark.sql.types import TimestampType

    columns = {}
    for field in schema.fields:
        values = [row[field.name] for row in rows]
        if isinstance(field.dataType, TimestampType):
            columns[field.name] = pd.Series(pd.to_datetime(values, utc=True), dtype="datetime64[us, UTC]")
        else:
            columns[field.name] = pd.Series(values, dtype=object)
    frame = pd.DataFrame(columns, columns=[f.name for f in schema.fields])
    return small_write.counted(spark.createDataFrame(frame, schema=schema), rows, schema.fields)
