"""Keeping a pipeline's retained consistent cuts readable, and refusing to read one that is not.

The runner keeps ``[run] cut_retention`` cuts in ``cuts.json`` and pins each table at the oldest commit of
those cuts (:mod:`hudi_cdc.sink.retention`): every writer of the table then keeps that commit and every later
one readable. A table is pinned at its head already when a cut is planned, before its bounded round commits,
so no clean passes the new cut's commit before the cut is recorded. Pins lapse when the runner stops renewing
them (the pipeline stopped cutting, or is gone), and are dropped when a table leaves every retained cut.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from hudi_cdc.errors import HudiCdcError, TerminalSinkError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["CutPins", "oldest_commits", "refuse_unreadable"]

log = logging.getLogger("hudi_cdc.runner")

PIN_LIFETIME_S = 24 * 3600.0
"""A pin lapses this long after it was last renewed (at least: two retention spans of cuts when longer)."""


def oldest_commits(cuts: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Table path -> the oldest commit any of ``cuts`` reads it at."""
    oldest: dict[str, str] = {}
    for cut in cuts:
        for table in cut.get("tables", {}).values():
            path, commit = str(table["path"]), str(table["commit"])
            oldest[path] = min(oldest.get(path, commit), commit)
    return oldest


class CutPins:
    """The pins one pipeline (``owner``: its state folder) holds on its tables, written only when they change or
    half their lifetime has passed."""

    def __init__(self, owner: str, spark: SparkSession | None, *, lifetime_s: float = PIN_LIFETIME_S) -> None:
        self.owner = owner
        self.spark = spark
        self.lifetime_s = lifetime_s
        self.held: dict[str, tuple[str, float]] = {}  # path -> (keep_from, expires_at) as written

    def keep(self, wanted: Mapping[str, str], *, now: float | None = None, why: str = "") -> None:
        """Pin every path of ``wanted`` at its instant, and drop this pipeline's pins of the other paths it held."""
        from hudi_cdc.sink import retention

        now = time.time() if now is None else now
        for path, instant in sorted(wanted.items()):
            held = self.held.get(path)
            if held is not None and held[0] == instant and held[1] - now > self.lifetime_s / 2:
                continue
            expires = now + self.lifetime_s
            if retention.pin(path, instant, owner=self.owner, expires_at=expires, why=why, spark=self.spark):
                self.held[path] = (instant, expires)
        for path in sorted(set(self.held) - set(wanted)):
            retention.unpin(path, owner=self.owner, spark=self.spark)
            del self.held[path]


def refuse_unreadable(spark: SparkSession, cut: Mapping[str, Any], where: str) -> None:
    """Raise, naming the cut, each table and why, when a table of ``cut`` can no longer be read as of its commit
    in it (files cleaned, commit archived): a time-travel read could fail, or return some file groups only."""
    from hudi_cdc.sink.hudi import HudiTable

    gone = []
    for name, table in sorted(cut.get("tables", {}).items()):
        try:
            why = HudiTable(spark, table["path"]).unreadable_at(str(table["commit"]))
        except HudiCdcError:
            raise
        except Exception as exc:  # noqa: BLE001 - py4j: the table itself cannot be opened
            from hudi_cdc._jvm import java_message

            why = f"its timeline cannot be read ({java_message(exc)})"
        if why is not None:
            gone.append(f"{name} ({table['path']}): {why}")
    if gone:
        raise TerminalSinkError(
            f"consistent cut {cut.get('id')} of {where} (transaction {cut.get('transaction')}, taken {cut.get('at')}) "
            f"cannot be read: {'; '.join(gone)}. Read a newer cut; the runner keeps the commits of the last "
            "[run] cut_retention cuts with Hudi's default clean policy (KEEP_LATEST_COMMITS): raise cut_retention "
            "to keep more, and do not clean these tables by file versions (docs/consistent-cuts.md#retention)"
        )
