"""What every source gives the pipeline: a :class:`~hudi_cdc.envelope.events.Batch` after a checkpoint."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Protocol

from hudi_cdc.errors import CheckpointError

if TYPE_CHECKING:
    from hudi_cdc.envelope.events import Batch

__all__ = ["Source", "json_checkpoint"]


class Source(Protocol):
    def parse_checkpoint(self, text: str) -> dict[str, Any]:
        """Parse a stored or user-given checkpoint; CheckpointError if it does not fit."""

    def next_batch(self, checkpoint: dict[str, Any] | None) -> Batch | None:
        """The next batch after ``checkpoint``, or None when nothing new has arrived."""


def json_checkpoint(text: str, *, source: str, kind: str | None = None) -> dict[str, Any]:
    """The JSON object a checkpoint's ``text`` holds; CheckpointError naming ``source`` and quoting ``text`` if not.

    With ``kind``, the object must carry it as its ``kind``: a checkpoint of another kind is another
    source's, left by whatever fed the table before.
    """
    quoted = repr(text[:200])
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CheckpointError(f"{source} checkpoint is not JSON ({exc}): {quoted}") from None
    if not isinstance(data, dict):
        raise CheckpointError(f"{source} checkpoint is JSON but not an object: {quoted}")
    if kind is not None and data.get("kind") != kind:
        raise CheckpointError(
            f"checkpoint {quoted} is not a {source} checkpoint ({kind}); was this table fed by another source? "
            "Pass --checkpoint earliest to start over"
        )
    return data
