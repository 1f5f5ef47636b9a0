"""What every source gives the pipeline."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["Batch", "Source"]


@dataclass(frozen=True)
class Batch:
    """One planned batch: Debezium envelopes plus the checkpoint after them.

    ``envelopes`` carries the envelope fields (``before``, ``after``, ``source``,
    ``op``, ...) and the internal origin and arrival columns.
    """

    envelopes: DataFrame
    next_checkpoint: dict[str, Any]
    description: str
    details: dict[str, Any] = field(default_factory=dict)
    avro_schema: dict[str, Any] | None = None
    """The envelope schema the batch was decoded with (logical types live here)."""


class Source(Protocol):
    def parse_checkpoint(self, text: str) -> dict[str, Any]:
        """Parse a stored or user-given checkpoint; CheckpointError if it does not fit."""

    def next_batch(self, checkpoint: dict[str, Any] | None) -> Batch | None:
        """The next batch after ``checkpoint``, or None when nothing new has arrived."""
