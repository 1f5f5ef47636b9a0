"""Quarantined events as a source: re-applying them is an ingest round that reads them back.

The batch decodes each event's stored bytes the way its source did (a Kafka
message through the registry, an Avro-encoded envelope with its schema) and
leaves the table's checkpoint where it is: these events are behind it already.
The merge policy's ordering makes the replay safe whatever came since: an event
older than what the table holds, or than a delete of its key, is stale.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from hudi_cdc.envelope.flatten import ORIGIN_COLUMN
from hudi_cdc.errors import ConfigError
from hudi_cdc.sources.base import json_checkpoint
from payloads.base import ARRIVAL_COLUMN, RAW_COLUMN

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from hudi_cdc.config import IngestConfig
    from hudi_cdc.envelope.events import Batch, BatchPart

__all__ = ["QuarantinedEvents"]


class QuarantinedEvents:
    """A one-batch source over ``events`` (rows of a quarantine table)."""

    def __init__(self, spark: SparkSession, config: IngestConfig, events: DataFrame, *, where: str) -> None:
        self._spark = spark
        self._config = config
        self._events = events
        self._where = where

    def parse_checkpoint(self, text: str) -> dict[str, Any]:
        # The table's own checkpoint, whichever source left it: re-applying leaves it where it is.
        return json_checkpoint(text, source="the table's")

    def next_batch(self, checkpoint: dict[str, Any] | None) -> Batch | None:
        from pyspark.sql import functions as F

        from hudi_cdc.envelope.events import Batch

        if checkpoint is None:
            raise ConfigError(f"{self._config.target_base_path} has no committed checkpoint to re-apply events under")
        if self._config.shard_sources:  # their bytes hold no shard: the shard columns would be NULL or missing
            raise ConfigError(
                f"{self._config.target_table} is a merged table ([[routes]]): re-applying its quarantined events is "
                "not supported (docs/routing.md#limits)"
            )
        formats = {
            (r["raw_format"], r["raw_schema"])
            for r in self._events.select("raw_format", "raw_schema").distinct().collect()
        }
        parts = []
        for raw_format, raw_schema in sorted(formats, key=lambda f: (str(f[0]), str(f[1]))):
            rows = self._events.where(
                F.col("raw_format").eqNullSafe(F.lit(raw_format)) & F.col("raw_schema").eqNullSafe(F.lit(raw_schema))
            )
            parts.append(self._part(rows, raw_format, raw_schema))
        n = self._events.count()
        return Batch(parts, dict(checkpoint), f"{n} quarantined event(s) of {self._where}", details={"reapplied": n})

    def _part(self, rows: DataFrame, raw_format: str | None, raw_schema: str | None) -> BatchPart:
        from pyspark.sql import functions as F
        from pyspark.sql.avro.functions import from_avro

        from hudi_cdc.envelope.events import BatchPart

        if raw_format in ("confluent", "json"):  # Kafka messages: decoded as the topic is read
            from hudi_cdc.envelope.types import reader_schema
            from hudi_cdc.sources.kafka import KafkaSource

            if self._config.source != "kafka":
                raise ConfigError(f"{self._where}: events from Kafka can only be re-applied with --source kafka")
            position = F.regexp_extract(F.col("origin"), r"-(\d+)@(\d+)$", 1)
            messages = rows.select(
                F.col("raw").alias("value"),
                position.cast("int").alias("partition"),
                F.regexp_extract(F.col("origin"), r"@(\d+)$", 1).cast("bigint").alias("offset"),
            )
            return KafkaSource(self._spark, self._config, reader_schema=reader_schema).decode(messages)
        if raw_format != "avro" or not raw_schema:
            raise ConfigError(
                f"{self._where}: events with raw format {raw_format!r} and no schema cannot be re-applied"
            )
        raw = F.struct(
            F.col("raw").alias("data"), F.col("raw_format").alias("format"), F.col("raw_schema").alias("schema")
        )
        envelopes = rows.select(
            from_avro(F.col("raw"), raw_schema).alias("envelope"),
            F.col("origin").alias(ORIGIN_COLUMN),
            # The same shape as Kafka's (partition, offset): a tie on position goes to the later one.
            F.struct(F.lit(-1).alias("partition"), F.monotonically_increasing_id().alias("offset")).alias(
                ARRIVAL_COLUMN
            ),
            raw.alias(RAW_COLUMN),
        ).select("envelope.*", ORIGIN_COLUMN, ARRIVAL_COLUMN, RAW_COLUMN)
        return BatchPart(envelopes=envelopes, avro_schema=json.loads(raw_schema), where=self._where)
