"""Pause, resume, remove and retry tables of a running pipeline, and the runner's status file.

The mechanism is files in the pipeline's state folder, so a shell, a scheduler
or a notebook can use it with no connection to the running process, and a
restarted process sees the same instructions:

- ``control/<table>.paused``: the runner starts no new round of the table (a
  round under way finishes and commits). Deleted by ``resume``.
- ``control/<table>.removed``: as paused, and the table is no longer listed as
  part of the pipeline; its Hudi table and checkpoint stay where they are, so
  ``resume`` continues from the checkpoint.
- ``control/<table>.retry``: a failed table is tried again (the runner deletes
  the file when it has read it). ``resume`` writes it too.
- ``control/<table>.repair``: a repair request (JSON: the source, the table, the
  bound; a password only by reference). The runner runs it as the table's next
  round, the table's one writer, and leaves the outcome in
  ``repairs/<table>.<id>.json``; it deletes the request after that, so a runner
  killed mid-repair runs it again when it restarts (a repair is idempotent).

``status.json`` is the runner's view of every table, rewritten after each
change of state (write to a temporary file, then rename: a reader never sees
half of it).
"""

from __future__ import annotations

import json
import os
import tempfile
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hudi_cdc.errors import ConfigError

__all__ = [
    "PAUSED",
    "REMOVED",
    "REPAIR",
    "RETRY",
    "instructions",
    "pause",
    "pending_repair",
    "repair_outcome",
    "request_repair",
    "settle_repair",
    "read_status",
    "remove",
    "resume",
    "runner_alive",
    "take_retry",
    "write_status",
]

PAUSED, REMOVED, RETRY, REPAIR = "paused", "removed", "retry", "repair"
_FLAGS = (PAUSED, REMOVED, RETRY, REPAIR)


def _control(state_dir: str | os.PathLike[str]) -> Path:
    return Path(state_dir) / "control"


def _marker(state_dir: str | os.PathLike[str], table: str, flag: str) -> Path:
    if not table or "/" in table or table.startswith("."):
        raise ConfigError(f"{table!r} is not a table name (schema.table)")
    return _control(state_dir) / f"{table}.{flag}"


def _touch(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch()


def pause(state_dir: str | os.PathLike[str], table: str) -> None:
    _touch(_marker(state_dir, table, PAUSED))


def remove(state_dir: str | os.PathLike[str], table: str) -> None:
    _touch(_marker(state_dir, table, REMOVED))


def resume(state_dir: str | os.PathLike[str], table: str) -> None:
    """Undo pause and remove, and retry the table if it had failed."""
    for flag in (PAUSED, REMOVED):
        _marker(state_dir, table, flag).unlink(missing_ok=True)
    _touch(_marker(state_dir, table, RETRY))


def instructions(state_dir: str | os.PathLike[str]) -> dict[str, set[str]]:
    """Table name -> the flags set for it."""
    found: dict[str, set[str]] = {}
    folder = _control(state_dir)
    if not folder.is_dir():
        return found
    for path in folder.iterdir():
        table, _, flag = path.name.rpartition(".")
        if flag in _FLAGS and table:
            found.setdefault(table, set()).add(flag)
    return found


def take_retry(state_dir: str | os.PathLike[str], table: str) -> bool:
    """Whether a retry was asked for ``table``; the request is consumed."""
    marker = _marker(state_dir, table, RETRY)
    try:
        marker.unlink()
    except FileNotFoundError:
        return False
    return True


def _write_json(path: Path, value: Mapping[str, Any]) -> None:
    """Write ``value`` to a temporary file, then rename it: a reader never sees half of it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}-", suffix=".tmp")
    with os.fdopen(fd, "w") as out:
        json.dump(value, out, indent=2, sort_keys=True, default=str)
    os.replace(tmp, path)


def request_repair(state_dir: str | os.PathLike[str], table: str, request: Mapping[str, Any]) -> str:
    """Ask the runner to repair ``table`` (``request``: no secret, only a reference); return the request's id."""
    marker = _marker(state_dir, table, REPAIR)
    if marker.exists():
        raise ConfigError(
            f"{table}: a repair is already requested ({marker}): wait for its outcome, or delete the file"
        )
    request_id = uuid.uuid4().hex[:12]
    _write_json(marker, {**request, "id": request_id})
    return request_id


def pending_repair(state_dir: str | os.PathLike[str], table: str) -> dict[str, Any] | None:
    """The table's repair request, if there is one."""
    try:
        return json.loads(_marker(state_dir, table, REPAIR).read_text())
    except FileNotFoundError:
        return None


def settle_repair(state_dir: str | os.PathLike[str], table: str, request_id: str, outcome: Mapping[str, Any]) -> None:
    """Leave a repair's outcome for whoever asked, then take the request away."""
    _write_json(Path(state_dir) / "repairs" / f"{table}.{request_id}.json", outcome)
    _marker(state_dir, table, REPAIR).unlink(missing_ok=True)


def repair_outcome(state_dir: str | os.PathLike[str], table: str, request_id: str) -> dict[str, Any] | None:
    try:
        return json.loads((Path(state_dir) / "repairs" / f"{table}.{request_id}.json").read_text())
    except FileNotFoundError:
        return None


def write_status(state_dir: str | os.PathLike[str], status: Mapping[str, Any]) -> None:
    folder = Path(state_dir)
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".status-", suffix=".json")
    with os.fdopen(fd, "w") as out:
        json.dump(status, out, indent=2, sort_keys=True, default=str)
    os.replace(tmp, folder / "status.json")


def runner_alive(status: Mapping[str, Any] | None, now: float | None = None) -> bool:
    """Whether the runner that wrote ``status`` (``read_status``) is still running: not ended, and its
    heartbeat (rewritten every quarter of its lease expiry, from any host) younger than that expiry."""
    if not status or status.get("ended"):
        return False
    beat, expiry = status.get("heartbeat_at"), status.get("heartbeat_expiry_s")
    if beat is None or expiry is None:
        return False  # written by a runner from before heartbeats: taken for stopped
    return (time.time() if now is None else now) - float(beat) <= float(expiry)


def read_status(state_dir: str | os.PathLike[str]) -> dict[str, Any] | None:
    path = Path(state_dir) / "status.json"
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None
