"""Debezium envelopes in batches: the types every stage passes around, and table rows as envelopes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import DataType

__all__ = ["REPAIR_AT_DETAIL", "Batch", "BatchPart", "change_events"]

REPAIR_AT_DETAIL = "repair_at"
"""A repair's batch detail: its position and what passes it; its commit, and every later one of the table,
carry it (``sink.options.REPAIRED_AT_KEY``) for a consistent cut's planner."""


@dataclass(frozen=True)
class BatchPart:
    """Envelopes that share one writer schema.

    ``envelopes`` carries the envelope fields (``before``, ``after``, ``source``,
    ``op``, ...) and the internal origin and arrival columns; ``avro_schema`` is
    the envelope schema they were decoded with (logical types live there).
    """

    envelopes: DataFrame
    avro_schema: dict[str, Any] | None = None
    where: str = ""
    files: tuple[str, ...] = ()
    """The files the envelopes are read from, in arrival order (the files source), for a plan made in the driver."""
    messages: tuple[tuple[bytes | None, bytes | None, int, int], ...] | None = None
    """The Kafka messages ``(key, value, partition, offset)`` the driver read for ``envelopes``, in arrival order,
    when they are decoded in one pass: for a plan made in the driver (``sources.kafka_driver``)."""
    writer_schemas: Mapping[int, dict[str, Any]] = field(default_factory=dict)
    """With ``messages``: each writer schema by registry id, as the decode reads it (resolved to ``avro_schema``)."""


@dataclass(frozen=True)
class Batch:
    """One planned batch: its parts, one per writer schema, and the checkpoint after them."""

    parts: list[BatchPart]
    next_checkpoint: dict[str, Any]
    description: str
    details: dict[str, Any] = field(default_factory=dict)
    key_fields: tuple[str, ...] = ()
    """The source's own idea of the record key (Kafka: the Debezium key schema), if it has one."""


def change_events(
    rows: DataFrame,
    *,
    op: str,
    image: Column,
    source: Column,
    where: str,
    arrival: str | None = None,
    image_type: DataType | None = None,
) -> DataFrame:
    """``rows`` as Debezium envelopes of a source that reads tables (JDBC, a first load).

    ``image`` is the row (the ``before`` of a delete, else the ``after``; the other side
    is NULL of ``image_type``, by default the image's own type); ``where`` names the
    origin, and the arrival is ``(arrival or where, a row number)``.
    """
    from pyspark.sql import functions as F

    from hudi_cdc.envelope.flatten import ORIGIN_COLUMN
    from payloads.base import ARRIVAL_COLUMN

    empty = F.lit(None).cast(image_type or rows.select(image.alias("i")).schema["i"].dataType)
    before, after = (image, empty) if op == "d" else (empty, image)
    return rows.select(
        before.alias("before"),
        after.alias("after"),
        source.alias("source"),
        F.lit(op).alias("op"),
        F.lit(where).alias(ORIGIN_COLUMN),
        F.struct(F.lit(arrival or where).alias("file"), F.monotonically_increasing_id().alias("row")).alias(
            ARRIVAL_COLUMN
        ),
    )
