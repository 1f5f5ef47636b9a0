"""Kafka Connect through its REST API: connector and task states, and restarting failed tasks.

Kafka Connect never restarts a FAILED task by itself ("will not recover until
manually restarted"); a converter that cannot reach the schema registry fails
its task that way. :func:`supervise` is the restart loop the local stack runs
and users can run beside their own Connect clusters.

Standard library only (urllib), so it runs wherever hudi-cdc is installed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["ConnectorState", "TaskState", "connector_states", "restart_failed", "supervise"]


@dataclass(frozen=True)
class TaskState:
    id: int
    state: str  # RUNNING, FAILED, PAUSED, UNASSIGNED, RESTARTING
    worker: str
    trace_head: str | None = None  # first line of the task's trace when it failed


@dataclass(frozen=True)
class ConnectorState:
    name: str
    state: str
    worker: str
    tasks: tuple[TaskState, ...] = ()
    config: dict[str, str] = field(default_factory=dict)
    trace_head: str | None = None

    @property
    def running(self) -> bool:
        """The connector and every task RUNNING, and at least one task."""
        return self.state == "RUNNING" and bool(self.tasks) and all(t.state == "RUNNING" for t in self.tasks)


def connector_states(connect_url: str, names: list[str] | None = None, *, timeout: float = 5.0) -> list[ConnectorState]:
    """States (and configs) of the named connectors, or of every connector on the cluster.

    Raises :class:`hudi_cdc.errors.SourceError` (transient) naming the URL when Connect cannot be reached.
    """
    raise NotImplementedError


def restart_failed(connect_url: str, name: str, *, timeout: float = 10.0) -> None:
    """Restart a connector's FAILED instance and FAILED tasks (``?includeTasks=true&onlyFailed=true``)."""
    raise NotImplementedError


def supervise(connect_url: str, *, interval_s: float = 10.0) -> None:
    """Forever: every ``interval_s``, restart whatever FAILED, with backoff per connector, logging each restart."""
    raise NotImplementedError
