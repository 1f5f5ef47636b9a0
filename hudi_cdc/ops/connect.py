"""The supervisor of Kafka Connect: restart failed connectors and tasks, with a backoff.

Kafka Connect never restarts a FAILED task by itself ("will not recover until
manually restarted"); a converter that cannot reach the schema registry fails
its task that way. :func:`supervise` is the restart loop the local stack runs
and users can run beside their own Connect clusters, through the CLI::

    hudi-cdc connect supervise --connect-url http://connect:8083 [--interval 10]

Standard library only (urllib), so it runs wherever hudi-cdc is installed. The
REST client is :mod:`hudi_cdc.upstream.connect`, below the checks that also read
it; its names are re-exported here.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

from hudi_cdc.errors import TransientError
from hudi_cdc.upstream.connect import (
    ConnectorNotFound,
    ConnectorState,
    ConnectRequestError,
    TaskState,
    connector_states,
    parse_states,
    restart_failed,
)
from hudi_cdc.upstream.database import redact_url

__all__ = [
    "ConnectRequestError",
    "ConnectorNotFound",
    "ConnectorState",
    "RestartBackoff",
    "SupervisorSummary",
    "TaskState",
    "connector_states",
    "parse_states",
    "restart_failed",
    "supervise",
]

log = logging.getLogger("hudi_cdc.connect")


class RestartBackoff:
    """When to restart a failed connector: at once, then after ``initial_s``, doubling up to ``max_s``.

    A restart while the cause lasts (the registry still down) fails the task
    again within seconds, and the task may show RUNNING in between; so the
    delay resets only after the connector has stayed RUNNING for ``healthy_s``,
    not on the first RUNNING poll.
    """

    def __init__(self, *, initial_s: float, max_s: float, healthy_s: float) -> None:
        self.initial_s, self.max_s, self.healthy_s = initial_s, max_s, healthy_s
        self._delay: dict[str, float] = {}  # wait after the last restart before the next
        self._last_restart: dict[str, float] = {}
        self._running_since: dict[str, float] = {}

    def due(self, state: ConnectorState, now: float) -> bool:
        """Record what a poll saw; True when ``state`` has something FAILED and its backoff allows a restart."""
        name = state.name
        if state.running:
            since = self._running_since.setdefault(name, now)
            if now - since >= self.healthy_s:
                self._delay.pop(name, None)
                self._last_restart.pop(name, None)
            return False
        self._running_since.pop(name, None)
        if not state.failed:
            return False
        last = self._last_restart.get(name)
        return last is None or now - last >= self._delay.get(name, 0.0)

    def restarted(self, name: str, now: float) -> float:
        """Record a restart; returns the delay before the next one may follow."""
        delay = self._delay.get(name)
        delay = self.initial_s if delay is None else min(self.max_s, max(delay, self.initial_s) * 2)
        self._delay[name], self._last_restart[name] = delay, now
        return delay


# --- the loop ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SupervisorSummary:
    cycles: int
    restarts: int  # restart requests Connect accepted
    unreachable: int  # polls or restarts that failed transiently


def _describe_failures(state: ConnectorState) -> list[str]:
    found = []
    if state.state == "FAILED":
        found.append(f"connector FAILED: {state.trace_head} (cause: {state.trace_cause})")
    found += [
        f"task {t.id} FAILED on {t.worker}: {t.trace_head} (cause: {t.trace_cause})"
        for t in state.tasks
        if t.state == "FAILED"
    ]
    return found


def supervise(
    connect_url: str,
    *,
    interval_s: float = 10.0,
    names: Sequence[str] | None = None,
    max_backoff_s: float = 300.0,
    healthy_s: float = 60.0,
    stop: threading.Event | None = None,
    max_cycles: int | None = None,
    timeout: float = 5.0,
) -> SupervisorSummary:
    """Every ``interval_s``, restart whatever FAILED, with backoff per connector, logging each restart.

    Runs until ``stop`` is set (or ``max_cycles`` polls). Connect being
    unreachable is logged and retried; a terminal error (a connector name the
    cluster does not have, refused credentials) ends the loop by raising.
    """
    stop = stop or threading.Event()
    backoff = RestartBackoff(initial_s=interval_s, max_s=max(max_backoff_s, interval_s), healthy_s=healthy_s)
    wanted = list(names) if names is not None else None
    cycles = restarts = unreachable = 0
    shown = redact_url(connect_url)
    log.info("supervising Kafka Connect at %s every %.0fs", shown, interval_s)  # stack/start.sh waits for this line
    while not stop.is_set():
        cycles += 1
        try:
            states = connector_states(connect_url, wanted, timeout=timeout)
        except TransientError as e:
            unreachable += 1
            log.warning("%s; retrying in %.0fs", e, interval_s)
            states = []
        for state in states:
            if not backoff.due(state, time.monotonic()):
                continue
            failures = _describe_failures(state)
            try:
                restart_failed(connect_url, state.name, timeout=timeout)
            except TransientError as e:
                unreachable += 1
                log.warning("restart of %s failed, will retry: %s", state.name, e)
                continue
            except ConnectorNotFound:
                if wanted is not None:
                    raise
                continue  # deleted between the poll and the restart
            restarts += 1
            delay = backoff.restarted(state.name, time.monotonic())
            for failure in failures:
                log.warning(
                    "restarted %s on %s: %s; next restart no sooner than %.0fs", state.name, shown, failure, delay
                )
        if max_cycles is not None and cycles >= max_cycles:
            break
        stop.wait(interval_s)
    return SupervisorSummary(cycles, restarts, unreachable)
