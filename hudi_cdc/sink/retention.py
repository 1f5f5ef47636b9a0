"""Commits a table must keep readable: the pins consistent cuts leave in the table's folder, and the cleaner
settings every write to the table takes from them.

A consistent cut (docs/consistent-cuts.md) is read with Hudi's time travel at each table's commit in it, which
needs that commit's file slices still on storage. Hudi's default cleaner (``KEEP_LATEST_COMMITS``, 10 commits)
removes them once 10 newer commits exist: on a busy table, minutes. So the runner that takes the cuts *pins*
each table at the oldest commit of its retained cuts (``[run] cut_retention``), and every writer of the table
(a runner's rounds, ``ingest``, repair, compaction: all through :meth:`hudi_cdc.sink.hudi.HudiTable.write`)
raises the cleaner's ``hoodie.clean.commits.retained`` to cover every completed commit from the pin on, and
archival's ``hoodie.keep.min/max.commits`` above it (archival never passes the cleaner's earliest retained
commit). Only upward: a user's larger retention stays.

Why not Hudi savepoints: a savepoint is an instant on the table's timeline, written by a write client, so it
would be a second writer beside the table's rounds (one writer per table: ``sink.lease``); and archival stops
at the oldest savepoint unless told otherwise, so every forgotten one holds the timeline forever. A pin is a
file beside ``.hoodie`` that only changes the next write's settings.

Where: ``<base_path>/.hudi_cdc/pins/<owner>.json``, one file per pipeline that pins (its state folder is its
name), written whole. A pin expires (``expires_at``): a pipeline that stops taking cuts, or is gone, stops
holding the cleaner back once its pins lapse; the runner renews them while it cuts.

Only ``KEEP_LATEST_COMMITS`` (Hudi's default) is raised. A table cleaned by file versions or by hours keeps its
user's policy, and :func:`hudi_cdc.read_consistent` refuses a cut whose files that cleaner may have removed.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import urlsplit

from hudi_cdc.sink import options as opt
from hudi_cdc.sink.lease import table_store

__all__ = ["PIN_FOLDER", "Pin", "clean_options", "keep_from", "pin", "pins", "unpin"]

log = logging.getLogger("hudi_cdc.retention")

PIN_FOLDER = ".hudi_cdc/pins"
KEEP_LATEST_COMMITS = "KEEP_LATEST_COMMITS"
# Hudi 1.2's defaults (HoodieCleanConfig, HoodieArchivalConfig).
HUDI_COMMITS_RETAINED = 10
HUDI_KEEP_MIN_COMMITS = 20
HUDI_KEEP_MAX_COMMITS = 30
MARGIN = 2
"""Commits retained beyond those since the pin: the write under way, and one to spare."""


@dataclass(frozen=True)
class Pin:
    """One pipeline's pin of a table: keep every commit from ``keep_from`` on readable until ``expires_at``."""

    owner: str  # who pinned: a pipeline's state folder
    keep_from: str  # a Hudi instant time
    expires_at: float  # seconds since the epoch
    why: str = ""

    def live(self, now: float | None = None) -> bool:
        return (time.time() if now is None else now) < self.expires_at


def _file(owner: str) -> str:
    return hashlib.sha256(owner.encode()).hexdigest()[:16] + ".json"


def _store(base_path: str, spark: Any | None) -> Any:  # noqa: ANN401 - sink.lease's store
    return table_store(base_path, PIN_FOLDER, spark=spark, what="the table's pins")


def pin(
    base_path: str,
    keep_from: str,
    *,
    owner: str,
    expires_at: float,
    why: str = "",
    spark: Any | None = None,  # noqa: ANN401
) -> bool:
    """Pin ``base_path`` at ``keep_from`` for ``owner`` (replacing that owner's previous pin); False, and nothing
    written, for a local table folder that does not exist (no table there to keep anything of)."""
    parts = urlsplit(base_path)
    if parts.scheme in ("", "file") and not os.path.isdir(parts.path if parts.scheme else base_path):
        return False
    record = Pin(owner, keep_from, expires_at, why)
    _store(base_path, spark).replace(_file(owner), json.dumps(asdict(record), sort_keys=True).encode())
    return True


def unpin(base_path: str, *, owner: str, spark: Any | None = None) -> None:  # noqa: ANN401
    """Drop ``owner``'s pin of the table, if it has one."""
    _store(base_path, spark).delete(_file(owner))


def pins(base_path: str, *, spark: Any | None = None) -> list[Pin]:  # noqa: ANN401
    """Every pin in the table's folder, live or lapsed; one that cannot be read is skipped with a warning."""
    store = _store(base_path, spark)
    found = []
    for name in store.names():
        data = store.read(name)
        if data is None:
            continue
        try:
            found.append(Pin(**json.loads(data)))
        except (ValueError, TypeError) as exc:
            log.warning("%s/%s/%s is not a pin (%s): ignored", base_path, PIN_FOLDER, name, exc)
    return found


def keep_from(base_path: str, *, spark: Any | None = None, now: float | None = None) -> str | None:  # noqa: ANN401
    """The oldest instant a live pin keeps readable; None when no pin holds the table."""
    live = [p.keep_from for p in pins(base_path, spark=spark) if p.live(now)]
    return min(live) if live else None


def _int(options: Mapping[str, str], keys: tuple[str, ...], default: int) -> int:
    for key in keys:
        if options.get(key) not in (None, ""):
            return int(options[key])
    return default


def clean_options(options: Mapping[str, str], since_pin: int) -> dict[str, str]:
    """The settings that keep the ``since_pin`` completed commits from a pin on readable after this write's own
    commit and clean, over ``options`` (a write's): none when its cleaner already keeps them or cleans by
    another policy than ``KEEP_LATEST_COMMITS``."""
    policy = options.get(opt.CLEAN_POLICY) or options.get(opt.CLEAN_POLICY_OLD) or KEEP_LATEST_COMMITS
    if policy.upper() != KEEP_LATEST_COMMITS:
        return {}
    retained_now = _int(options, (opt.CLEAN_COMMITS_RETAINED, opt.CLEAN_COMMITS_RETAINED_OLD), HUDI_COMMITS_RETAINED)
    retained = since_pin + MARGIN
    if retained <= retained_now:
        return {}
    keep_min = max(_int(options, (opt.KEEP_MIN_COMMITS,), HUDI_KEEP_MIN_COMMITS), retained + 1)
    keep_max = max(_int(options, (opt.KEEP_MAX_COMMITS,), HUDI_KEEP_MAX_COMMITS), keep_min + 10)
    return {
        opt.CLEAN_COMMITS_RETAINED: str(retained),
        opt.CLEAN_COMMITS_RETAINED_OLD: str(retained),
        opt.KEEP_MIN_COMMITS: str(keep_min),
        opt.KEEP_MAX_COMMITS: str(keep_max),
    }
