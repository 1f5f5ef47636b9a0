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

``status.json`` is the runner's view of every table, rewritten after each
change of state (write to a temporary file, then rename: a reader never sees
half of it).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hudi_cdc.errors import ConfigError

__all__ = [
    "PAUSED",
    "REMOVED",
    "RETRY",
    "instructions",
    "pause",
    "read_status",
    "remove",
    "resume",
    "take_retry",
    "write_status",
]

PAUSED, REMOVED, RETRY = "paused", "removed", "retry"
_FLAGS = (PAUSED, REMOVED, RETRY)


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


def write_status(state_dir: str | os.PathLike[str], status: Mapping[str, Any]) -> None:
    folder = Path(state_dir)
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".status-", suffix=".json")
    with os.fdopen(fd, "w") as out:
        json.dump(status, out, indent=2, sort_keys=True, default=str)
    os.replace(tmp, folder / "status.json")


def read_status(state_dir: str | os.PathLike[str]) -> dict[str, Any] | None:
    path = Path(state_dir) / "status.json"
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None
