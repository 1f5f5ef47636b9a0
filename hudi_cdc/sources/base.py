"""What every source gives the pipeline: a :class:`~hudi_cdc.envelope.events.Batch` after a checkpoint."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from hudi_cdc.envelope.events import Batch

__all__ = ["Source"]


class Source(Protocol):
    def parse_checkpoint(self, text: str) -> dict[str, Any]:
        """Parse a stored or user-given checkpoint; CheckpointError if it does not fit."""

    def next_batch(self, checkpoint: dict[str, Any] | None) -> Batch | None:
        """The next batch after ``checkpoint``, or None when nothing new has arrived."""
