"""What every source gives the pipeline."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["Batch", "BatchPart", "Source"]


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


@dataclass(frozen=True)
class Batch:
    """One planned batch: its parts, one per writer schema, and the checkpoint after them."""

    parts: list[BatchPart]
    next_checkpoint: dict[str, Any]
    description: str
    details: dict[str, Any] = field(default_factory=dict)
    key_fields: tuple[str, ...] = ()
    """The source's own idea of the record key (Kafka: the Debezium key schema), if it has one."""


class Source(Protocol):
    def parse_checkpoint(self, text: str) -> dict[str, Any]:
        """Parse a stored or user-given checkpoint; CheckpointError if it does not fit."""

    def next_batch(self, checkpoint: dict[str, Any] | None) -> Batch | None:
        """The next batch after ``checkpoint``, or None when nothing new has arrived."""
