"""Kafka Connect through its REST API: connector and task states, and restarting failed tasks.

Kafka Connect never restarts a FAILED task by itself ("will not recover until
manually restarted"); a converter that cannot reach the schema registry fails
its task that way. :func:`supervise` is the restart loop the local stack runs
and users can run beside their own Connect clusters::

    python -m hudi_cdc.ops.connect supervise --connect-url http://connect:8083 [--interval 10]

Standard library only (urllib), so it runs wherever hudi-cdc is installed.
A URL with ``user:password@`` authenticates with HTTP basic auth; the password
is never printed (errors and logs show :func:`hudi_cdc.ops.database.redact_url`).
"""

from __future__ import annotations

import argparse
import base64
import json
import logging
import re
import signal
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote, urlsplit, urlunsplit

from hudi_cdc.errors import ConfigError, TerminalError, TransientError
from hudi_cdc.ops.database import redact_url

__all__ = [
    "ConnectRequestError",
    "ConnectorNotFound",
    "ConnectorState",
    "RestartBackoff",
    "SupervisorSummary",
    "TaskState",
    "connector_states",
    "main",
    "parse_states",
    "restart_failed",
    "supervise",
]

log = logging.getLogger("hudi_cdc.connect")

# Config values Connect returns in clear text that must not reach logs or `status` output.
_SECRET_KEY = re.compile(r"(password|secret|token|jaas\.config|user\.info|credentials?|api\.key)$", re.IGNORECASE)
_HIDDEN = "[hidden]"


class ConnectorNotFound(ConfigError):
    """The named connector does not exist on the Connect cluster."""


class ConnectRequestError(TerminalError):
    """Connect refused a request (HTTP 4xx other than 409); retrying it fails the same way."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class TaskState:
    id: int
    state: str  # RUNNING, FAILED, PAUSED, UNASSIGNED, RESTARTING
    worker: str
    trace_head: str | None = None  # first line of the task's trace when it failed
    trace_cause: str | None = None  # the trace's last "Caused by:" line: the root cause


@dataclass(frozen=True)
class ConnectorState:
    name: str
    state: str
    worker: str
    tasks: tuple[TaskState, ...] = ()
    config: dict[str, str] = field(default_factory=dict)  # secrets replaced by "[hidden]"
    trace_head: str | None = None
    trace_cause: str | None = None

    @property
    def running(self) -> bool:
        """The connector and every task RUNNING, and at least one task."""
        return self.state == "RUNNING" and bool(self.tasks) and all(t.state == "RUNNING" for t in self.tasks)

    @property
    def failed(self) -> bool:
        """The connector or one of its tasks FAILED: only a restart brings it back."""
        return self.state == "FAILED" or any(t.state == "FAILED" for t in self.tasks)


# --- pure: Connect's JSON in, states out ------------------------------------------------------------


def _trace_lines(trace: str | None) -> tuple[str | None, str | None]:
    if not trace:
        return None, None
    lines = [line.strip() for line in trace.splitlines() if line.strip()]
    causes = [line.removeprefix("Caused by:").strip() for line in lines if line.startswith("Caused by:")]
    return (lines[0] if lines else None), (causes[-1] if causes else None)


def _hide_secrets(config: Mapping[str, Any]) -> dict[str, str]:
    return {k: (_HIDDEN if _SECRET_KEY.search(k) else str(v)) for k, v in config.items()}


def parse_states(expanded: Mapping[str, Any]) -> list[ConnectorState]:
    """States from ``GET /connectors?expand=status&expand=info``, sorted by name."""
    result = []
    for name in sorted(expanded):
        status = expanded[name].get("status") or {}
        info = expanded[name].get("info") or {}
        connector = status.get("connector") or {}
        tasks = []
        for task in sorted(status.get("tasks") or [], key=lambda t: int(t["id"])):
            head, cause = _trace_lines(task.get("trace"))
            tasks.append(
                TaskState(int(task["id"]), task.get("state", "UNASSIGNED"), task.get("worker_id", ""), head, cause)
            )
        head, cause = _trace_lines(connector.get("trace"))
        result.append(
            ConnectorState(
                name=name,
                # A connector just created may have no status yet.
                state=connector.get("state", "UNASSIGNED"),
                worker=connector.get("worker_id", ""),
                tasks=tuple(tasks),
                config=_hide_secrets(info.get("config") or {}),
                trace_head=head,
                trace_cause=cause,
            )
        )
    return result


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


# --- thin I/O: Connect's REST API -------------------------------------------------------------------


def _call(connect_url: str, method: str, path: str, timeout: float) -> tuple[int, Any]:
    """``(status, parsed JSON body or None)``; errors become hudi-cdc errors naming the redacted URL."""
    parts = urlsplit(connect_url)
    shown = redact_url(connect_url)
    # urllib ignores user:password in a URL: send them as basic auth, and keep them out of the request URL.
    host = parts.hostname or ""
    netloc = host if ":" not in host else f"[{host}]"
    netloc += f":{parts.port}" if parts.port else ""
    url = urlunsplit(parts._replace(netloc=netloc)).rstrip("/") + path
    request = urllib.request.Request(url, method=method, headers={"Accept": "application/json"})
    if parts.username is not None:
        pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
        request.add_header("Authorization", "Basic " + base64.b64encode(pair).decode())
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - operator-given URL
            body = response.read()
            return response.status, (json.loads(body) if body.strip() else None)
    except urllib.error.HTTPError as e:
        message = _error_message(e)
        what = f"Kafka Connect at {shown}: {method} {path} returned HTTP {e.code}: {message}"
        # 409: a rebalance is in progress; 5xx: the worker is starting or overloaded.
        if e.code == 409 or e.code >= 500:
            raise TransientError(what) from None
        if e.code in (401, 403):
            raise ConfigError(f"{what} (check the credentials in the Connect URL)") from None
        raise ConnectRequestError(what, e.code) from None
    except (urllib.error.URLError, OSError, TimeoutError) as e:
        reason = getattr(e, "reason", e)
        raise TransientError(f"Kafka Connect at {shown} cannot be reached ({reason}); is the worker up?") from None


def _error_message(error: urllib.error.HTTPError) -> str:
    try:
        return str(json.loads(error.read()).get("message", ""))[:300]
    except (ValueError, AttributeError, OSError):
        return error.reason if isinstance(error.reason, str) else ""


def connector_states(connect_url: str, names: list[str] | None = None, *, timeout: float = 5.0) -> list[ConnectorState]:
    """States (and configs, secrets hidden) of the named connectors, or of every connector on the cluster.

    Raises :class:`hudi_cdc.errors.TransientError` naming the URL when Connect
    cannot be reached, :class:`ConnectorNotFound` for a name the cluster does not have.
    """
    _, expanded = _call(connect_url, "GET", "/connectors?expand=status&expand=info", timeout)
    states = parse_states(expanded or {})
    if names is None:
        return states
    by_name = {s.name: s for s in states}
    missing = [n for n in names if n not in by_name]
    if missing:
        raise ConnectorNotFound(
            f"no connector {', '.join(map(repr, missing))} on Kafka Connect at {redact_url(connect_url)}"
            f" (it has: {', '.join(sorted(by_name)) or 'none'})"
        )
    return [by_name[n] for n in names]


def restart_failed(connect_url: str, name: str, *, timeout: float = 10.0) -> None:
    """Restart a connector's FAILED instance and FAILED tasks (``?includeTasks=true&onlyFailed=true``)."""
    path = f"/connectors/{quote(name, safe='')}/restart?includeTasks=true&onlyFailed=true"
    try:
        _call(connect_url, "POST", path, timeout)  # 202 Accepted, or 204 when nothing needed a restart
    except ConnectRequestError as e:
        if e.status == 404:
            raise ConnectorNotFound(f"no connector {name!r} on Kafka Connect at {redact_url(connect_url)}") from None
        raise


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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hudi_cdc.ops.connect", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("supervise", help="restart FAILED connectors and tasks, forever")
    run.add_argument("--connect-url", required=True, help="Connect REST URL, e.g. http://127.0.0.1:8083")
    run.add_argument("--interval", type=float, default=10.0, help="seconds between polls (default 10)")
    run.add_argument("--max-backoff", type=float, default=300.0, help="longest wait between restarts (default 300)")
    run.add_argument("--connector", action="append", dest="names", help="only this connector (repeatable)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    stop = threading.Event()
    # systemd and stack/stop.sh send SIGTERM: finish the current cycle and exit 0.
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    log.info("supervising Kafka Connect at %s every %.0fs", redact_url(args.connect_url), args.interval)
    try:
        summary = supervise(
            args.connect_url, interval_s=args.interval, names=args.names, max_backoff_s=args.max_backoff, stop=stop
        )
    except KeyboardInterrupt:
        return 130
    except TerminalError as e:
        log.error("%s", e)
        return 2
    log.info("stopped after %d polls, %d restarts", summary.cycles, summary.restarts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
