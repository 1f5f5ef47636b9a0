"""What the runner knows of each table, and the names of its states: what ``status.json`` and the metrics hold.

The runner writes these states and the metrics read them; both import them from here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hudi_cdc.config import IngestConfig
    from hudi_cdc.pipeline import RoundSteps
    from hudi_cdc.service.schedule import Arrivals

__all__ = ["STATES", "TableState"]

WAITING, RUNNING, RETRYING, FAILED, PAUSED, REMOVED, DONE, DROPPED = (
    "waiting",
    "running",
    "retrying",
    "failed",
    "paused",
    "removed",
    "done",
    "dropped",
)
STATES = (WAITING, RUNNING, RETRYING, FAILED, PAUSED, REMOVED, DONE, DROPPED)


@dataclass
class TableState:
    """What the runner knows of one table; what ``status.json`` holds."""

    name: str
    topic: str
    target: str
    state: str = WAITING
    rounds: int = 0
    commits: int = 0
    events: int = 0
    upserts: int = 0
    deletes: int = 0
    stale: int = 0
    quarantined: int = 0
    failures: int = 0  # consecutive
    failures_total: int = 0
    failing_since: str | None = None
    last_error: str | None = None
    last_error_kind: str | None = None  # transient | terminal
    last_round: dict[str, Any] | None = None
    last_commit: str | None = None
    next_round_at: str | None = None
    dropped_at_source: str | None = None  # the DROP seen on the schema-change topic, with its DDL
    shards: tuple[str, ...] = ()  # a routed table ([[routes]]): the topics (or folders) it reads
    # freshness (hudi-cdc run --continuous on Kafka: see hudi_cdc.service.schedule)
    freshness_target_s: float | None = None  # the table's max_freshness_seconds
    pending_since: str | None = None  # when the oldest message the table does not hold was first seen
    oldest_pending_s: float | None = None  # its age when the status was written
    late: str | None = None  # past its target: what it is waiting for (a slot, which step of its round...)
    freshness_missed: int = 0  # committed rounds whose oldest change was older than the target
    last_miss: str | None = None  # the last missed round: how late, and where its time went
    writer: str | None = None  # who holds the table's writer lease: "this runner", or the other process
    # runner-only fields, not in the status file
    config: IngestConfig | None = field(default=None, repr=False)
    due: float = field(default=0.0, repr=False)
    failing_since_s: float | None = field(default=None, repr=False)
    checked: bool = field(default=False, repr=False)
    arrivals: Arrivals | None = field(default=None, repr=False)  # Kafka tables of a continuous run
    steps: RoundSteps | None = field(default=None, repr=False)  # the round under way
    round_started_s: float | None = field(default=None, repr=False)
    round_waiting_since_s: float | None = field(default=None, repr=False)  # its oldest change, as it started
    until: dict[int, int] | None = field(default=None, repr=False)  # a consistent cut's bound on its next round
    until_at: float | None = field(default=None, repr=False)  # when the cut's plan set ``until`` (runner clock)
    cut_commit: str | None = field(default=None, repr=False)  # the commit its bounded round ended at the cut with
    claimed: dict[int, int] | None = field(default=None, repr=False)
    """Where the round under way reads to (partition -> next offset), once it has planned: the head it will
    commit at most; a consistent cut is planned against it (:meth:`hudi_cdc.service.cutter.Cutter.claim`)."""
    repair: dict[str, Any] | None = field(default=None, repr=False)  # a repair request, run as its next round

    def to_dict(self) -> dict[str, Any]:
        hidden = {
            "config",
            "due",
            "failing_since_s",
            "checked",
            "arrivals",
            "steps",
            "round_started_s",
            "round_waiting_since_s",
            "until",
            "until_at",
            "cut_commit",
            "claimed",
        }
        return {k: v for k, v in self.__dict__.items() if k not in hidden}
