"""Kafka Connect through its REST API: connector and task states, and restarting failed tasks.

The client the checks, the CLI and the supervisor share (:mod:`hudi_cdc.ops.connect`
runs the restart loop). Standard library only (urllib), so it runs wherever
hudi-cdc is installed. A URL with ``user:password@`` authenticates with HTTP basic
auth; the password is never printed (errors and logs show
:func:`hudi_cdc.upstream.database.redact_url`).
"""

from __future__ import annotations

import base64
import json
import re
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote, urlsplit, urlunsplit

from hudi_cdc.errors import ConfigError, TerminalError, TransientError
from hudi_cdc.upstream.database import redact_url

__all__ = [
    "ConnectRequestError",
    "ConnectorNotFound",
    "ConnectorState",
    "TaskState",
    "connector_states",
    "connector_topics",
    "parse_states",
    "restart_failed",
]

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


def connector_topics(connect_url: str, name: str, *, timeout: float = 5.0) -> list[str]:
    """The topics a connector has written to (``GET /connectors/NAME/topics``, Connect 2.5+), sorted; empty when
    it has written nothing yet or the worker does not track topics (``topic.tracking.enable=false``)."""
    try:
        _, body = _call(connect_url, "GET", f"/connectors/{quote(name, safe='')}/topics", timeout)
    except ConnectRequestError as e:
        if e.status == 404:
            raise ConnectorNotFound(f"no connector {name!r} on Kafka Connect at {redact_url(connect_url)}") from None
        raise
    return sorted(((body or {}).get(name) or {}).get("topics") or [])


def restart_failed(connect_url: str, name: str, *, timeout: float = 10.0) -> None:
    """Restart a connector's FAILED instance and FAILED tasks (``?includeTasks=true&onlyFailed=true``)."""
    path = f"/connectors/{quote(name, safe='')}/restart?includeTasks=true&onlyFailed=true"
    try:
        _call(connect_url, "POST", path, timeout)  # 202 Accepted, or 204 when nothing needed a restart
    except ConnectRequestError as e:
        if e.status == 404:
            raise ConnectorNotFound(f"no connector {name!r} on Kafka Connect at {redact_url(connect_url)}") from None
        raise
