"""Which table's round goes next, and whether a table has anything to do at all: pure, no Spark, no network.

The runner asks the brokers for every Kafka table's end offsets each
``[run] offset_poll_seconds`` (one planning client, no Spark job) and gives each
table's :class:`Arrivals` what it saw. From those observations and the offsets
the table's last round committed, it knows without a round

- whether the table has unapplied messages at all: an idle table costs its
  offset check and nothing else;
- since when its oldest unapplied message has been waiting: the first
  observation whose end offsets were past the committed ones. It is late by
  at most one poll interval, and it needs no fetch of the message itself.

:func:`deadline` orders the tables with work: earliest deadline first, the
deadline being when the oldest unapplied change should be in the table
(``max_freshness_seconds`` after it arrived). A hot table with a round behind
it and a cold table with a single change are ranked by the same clock, so
neither starves: the cold table's change gets older until it is first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "KEPT_SIGHTINGS",
    "MIN_WAIT_S",
    "UNTARGETED_S",
    "Arrivals",
    "committed_offsets",
    "deadline",
    "next_wait",
    "shard_partition",
]

KEPT_SIGHTINGS = 1_000
"""At most this many sightings per table: a paused table's topic keeps moving. Past it the oldest is kept
(the oldest pending change's date stays exact) and the next oldest go: a partial round may then date its
remainder a little late."""

UNTARGETED_S = 60.0
"""The target a table without ``max_freshness_seconds`` is ranked by (not reported as missed)."""

MIN_WAIT_S = 0.05
"""The shortest the runner's loop waits between passes."""


@dataclass
class Arrivals:
    """What the runner saw of one topic: its end offsets over time, against the offsets the table holds."""

    applied: dict[int, int] | None = None
    """Partition -> the next offset the table's newest commit holds; None before its first round."""
    seen: list[tuple[float, dict[int, int]]] = field(default_factory=list)
    """``(when, end offsets)`` each time they moved, oldest first; pruned as rounds apply them."""

    def observe(self, now: float, ends: Mapping[int, int]) -> None:
        """End offsets as asked at ``now``; kept only when they moved since the last observation."""
        if not self.seen or dict(ends) != self.seen[-1][1]:
            self.seen.append((now, dict(ends)))
        if len(self.seen) > KEPT_SIGHTINGS:
            del self.seen[1]

    def apply(self, offsets: Mapping[int, int]) -> None:
        """A round committed up to ``offsets``: observations it covers whole are forgotten."""
        self.applied = dict(offsets)
        while len(self.seen) > 1 and not self._ahead(self.seen[0][1]):
            self.seen.pop(0)
        # The newest observation stays: the next one is compared with it, whether it is ahead or not.

    def pending_since(self) -> float | None:
        """When the oldest message the table does not hold was first seen; None when it holds all seen."""
        if self.applied is None:
            return self.seen[0][0] if self.seen else None
        return next((when for when, ends in self.seen if self._ahead(ends)), None)

    @property
    def known(self) -> bool:
        """Whether the table's committed offsets are known (a round has run)."""
        return self.applied is not None

    def _ahead(self, ends: Mapping[int, int]) -> bool:
        applied = self.applied or {}
        return any(end > applied.get(partition, 0) for partition, end in ends.items())


def shard_partition(shard: int, partition: int) -> int:
    """A merged table's watched partition: its shards' topics numbered as one (shard ``shard`` of its list)."""
    return shard * 1_000_000 + partition


def committed_offsets(checkpoint: Mapping[str, Any] | None, shards: Sequence[str] = ()) -> dict[int, int] | None:
    """Partition -> next offset from a Kafka checkpoint as a round reports it; None for any other kind.

    A merged table's composite checkpoint (its ``shards``' topics, in order) gives every shard's partitions
    numbered by :func:`shard_partition`; a shard it holds nothing of has none (everything is ahead)."""
    if checkpoint and checkpoint.get("kind") == "merged":
        held = checkpoint.get("shards", {})
        merged: dict[int, int] = {}
        for n, shard in enumerate(shards):
            offsets = committed_offsets(held.get(shard)) or {}
            merged.update({shard_partition(n, p): o for p, o in offsets.items()})
        return merged
    if not checkpoint or checkpoint.get("kind") != "kafka/v1" or "start" in checkpoint:
        return None  # "start": a table that never read its topic (earliest/latest): its offsets come with a round
    return {int(p): int(o) for p, o in checkpoint.get("offsets", {}).items()}


def deadline(waiting_since: float, target_s: float | None) -> float:
    """When the oldest change waiting since ``waiting_since`` should be in the table."""
    return waiting_since + (target_s if target_s is not None else UNTARGETED_S)


def next_wait(due_in: list[float], free_slots: int, others: list[float], idle_s: float) -> float:
    """How long the runner's loop may wait before its next pass (a round that ends wakes it sooner).

    ``due_in``: seconds until each table with work is due (negative: overdue); ``others``: seconds until
    the loop's other events (discovery, the next offset poll). With no free slot a due table cannot start,
    so it does not shorten the wait: under load, every table overdue and every slot busy, the loop waited
    ``MIN_WAIT_S`` and spent its core on passes that could start nothing.
    """
    waits = [*others, *(due_in if free_slots > 0 else [])]
    return max(MIN_WAIT_S, min([idle_s, *waits]))
