"""What the runner knows of each table, and the names of its states: what ``status.json`` and the metrics hold.

The runner writes these states and the metrics read them; both import them from here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hudi_cdc.config import IngestConfig

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
    # runner-only fields, not in the status file
    config: IngestConfig | None = field(default=None, repr=False)
    due: float = field(default=0.0, repr=False)
    failing_since_s: float | None = field(default=None, repr=False)
    checked: bool = field(default=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        hidden = {"config", "due", "failing_since_s", "checked"}
        return {k: v for k, v in self.__dict__.items() if k not in hidden}
