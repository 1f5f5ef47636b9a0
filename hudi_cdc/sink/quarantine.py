"""Quarantined events: the error table beside a target, one row per event set aside.

With ``on_bad_event = quarantine`` an event the merge policy cannot apply
(undecodable bytes, an unknown op, a NULL key or position, a TOAST placeholder
with no value to take) is written here with its reason, source position and
bytes, and the rest of its batch commits. Nothing is dropped without a trace.

A Hudi COPY_ON_WRITE table keyed by ``quarantine_id`` (a hash of the event's
origin and bytes), ordered by ``recorded_at``: readable with plain Spark SQL, and
idempotent. It is written before the target's commit, so a crash between the two
replays the batch and writes the same rows again, nothing doubled. Re-applying
(:mod:`hudi_cdc.ops.quarantine`) upserts the same ids with ``state = reapplied``.

Columns:

- ``quarantine_id``, ``target_table``, ``origin`` (file, or topic-partition@offset),
  ``reason``, ``op``, ``record_key`` (JSON), ``source_order``, ``source_ts_ms``;
- ``event``: the flattened event as JSON (all NULL when its bytes did not decode);
- ``raw``: the bytes, ``raw_format`` how to read them again (``confluent``: a Kafka
  message value; ``avro``: the envelope in Avro binary, ``raw_schema`` its schema);
- ``batch``, ``quarantined_at``, ``recorded_at``, ``state`` (``quarantined`` or
  ``reapplied``), ``reapplied_commit``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from hudi_cdc.sink import options as opt
from hudi_cdc.sink.hudi import HudiTable
from payloads.base import ERROR_COLUMN, INTERNAL_PREFIX, OP_COLUMN, ORDER_COLUMN, ORIGIN_COLUMN, RAW_COLUMN

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["QUARANTINED", "REAPPLIED", "QuarantineStore"]

QUARANTINED, REAPPLIED = "quarantined", "reapplied"
ID = "quarantine_id"
_ORDERING = "recorded_at"
_SOURCE_TS = "_source_ts_ms"


class QuarantineStore:
    def __init__(self, spark: SparkSession, path: str, *, target_table: str) -> None:
        self._spark = spark
        self.path = path.rstrip("/")
        self._target = target_table
        self._table = HudiTable(spark, self.path)

    def _write(self, rows: DataFrame, note: str) -> str:
        # Hudi's SIMPLE index, not a CDC table's bucket default (options.resolve_index): the table is small,
        # and the tables written so far record no index layout to keep them on another.
        options = opt.write_options(
            table_name=_table_name(self._target),
            table_type="COPY_ON_WRITE",
            record_key_fields=(ID,),
            partition_path_field=None,
            ordering_field=_ORDERING,
            user_conf={},
        )
        return self._table.write(rows, options, {opt.QUARANTINE_KEY: note}, marker=opt.QUARANTINE_KEY)

    def record(self, events: DataFrame, *, key_fields: Sequence[str], batch: str) -> int:
        """Write bad flat events (their error column says why); return how many distinct events."""
        from pyspark.sql import functions as F

        from hudi_cdc.spark import release

        data = [c for c in events.columns if not c.startswith(INTERNAL_PREFIX)]
        raw = F.col(RAW_COLUMN) if RAW_COLUMN in events.columns else None
        # Of an event whose bytes did not decode, only NULLs.
        event = F.to_json(F.struct(*[F.col(f"`{c}`") for c in data]), _JSON)
        record_key = F.to_json(F.struct(*[F.col(f"`{k}`") for k in key_fields]), _JSON)
        # The origin and the bytes: the same event read again (a replay, a re-apply) has the same id,
        # whatever the settings it is flattened with.
        identity = F.concat_ws("\x1f", F.col(ORIGIN_COLUMN), F.sha2(raw["data"], 256) if raw is not None else event)
        now = F.current_timestamp()
        rows = events.select(
            F.substring(F.sha2(identity, 256), 1, 32).alias(ID),
            F.lit(self._target).alias("target_table"),
            F.col(ORIGIN_COLUMN).alias("origin"),
            F.col(ERROR_COLUMN).alias("reason"),
            F.col(OP_COLUMN).alias("op"),
            record_key.alias("record_key"),
            F.col(ORDER_COLUMN).alias("source_order"),
            (F.col(_SOURCE_TS) if _SOURCE_TS in events.columns else F.lit(None)).cast("bigint").alias("source_ts_ms"),
            event.alias("event"),
            (raw["data"] if raw is not None else F.lit(None).cast("binary")).alias("raw"),
            (raw["format"] if raw is not None else F.lit(None).cast("string")).alias("raw_format"),
            (raw["schema"] if raw is not None else F.lit(None).cast("string")).alias("raw_schema"),
            F.lit(batch).alias("batch"),
            now.alias("quarantined_at"),
            (F.unix_micros(now)).alias(_ORDERING),
            F.lit(QUARANTINED).alias("state"),
            F.lit(None).cast("string").alias("reapplied_commit"),
        ).dropDuplicates([ID])
        rows = rows.localCheckpoint(eager=True)  # counted and written: read the source once more, not twice
        try:
            n = rows.count()
            if n:
                self._write(rows, batch)
            return n
        finally:
            release(rows)

    def exists(self) -> bool:
        return self._table.exists()

    def read(self, state: str | None = None) -> DataFrame | None:
        """The table's rows (``state`` only, if given); None when nothing was ever quarantined."""
        from pyspark.sql import functions as F

        if not self._table.has_commits():
            return None
        rows = self._table.read().select(*[c for c in _COLUMNS])
        return rows if state is None else rows.where(F.col("state") == F.lit(state))

    def count(self, state: str = QUARANTINED) -> int:
        rows = self.read(state)
        return 0 if rows is None else rows.count()

    def mark(self, rows: DataFrame, *, state: str, commit: str | None, reason: str | None = None) -> None:
        """Record a new state for ``rows`` (read from this table): re-applied by ``commit``, or still bad."""
        from pyspark.sql import functions as F

        now = F.current_timestamp()
        updated = rows.select(*_COLUMNS).withColumns(
            {
                "state": F.lit(state),
                "reapplied_commit": F.lit(commit).cast("string"),
                _ORDERING: F.unix_micros(now),
                **({"reason": F.lit(reason)} if reason is not None else {}),
            }
        )
        self._write(updated, f"{state} {commit or ''}".strip())


_JSON = {"timestampFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX", "ignoreNullFields": "false"}
_COLUMNS = (
    ID,
    "target_table",
    "origin",
    "reason",
    "op",
    "record_key",
    "source_order",
    "source_ts_ms",
    "event",
    "raw",
    "raw_format",
    "raw_schema",
    "batch",
    "quarantined_at",
    _ORDERING,
    "state",
    "reapplied_commit",
)


def _table_name(target: str) -> str:
    return f"{target}_quarantine"
