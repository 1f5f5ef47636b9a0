"""Transaction-consistent cuts across a pipeline's tables: where they fall, where they are kept, how they are read.

A cut is a committed source transaction ``T`` (an END event on the
connector's transaction topic) and, for every table in it, the Hudi commit
whose data is exactly the table's events of the transactions up to ``T`` in
commit order: none half-applied, none of a later one. The runner
(:mod:`hudi_cdc.service.runner`) takes one every ``[run]
consistent_cut_interval_seconds``: it lets the rounds under way finish, plans
the cut (:func:`plan_cut`, pure), runs each table's round bounded to end at the
cut's offsets, and only when every one of them has committed appends the cut to
``cuts.json`` in the state folder (:class:`CutStore`). A run killed before that
leaves no cut behind it; the next run cuts again, later. Between cuts the
tables commit as they always do.

:func:`read_consistent` reads every table of a cut with Hudi's time travel.
docs/consistent-cuts.md says what a cut promises, and what happens to paused,
failed and new tables.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hudi_cdc.errors import ConfigError
from hudi_cdc.sources.transactions import TableEvent, TransactionEnd

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from hudi_cdc.service.spec import PipelineSpec

__all__ = ["CutPlan", "CutStore", "TableScan", "plan_cut", "read_consistent"]

CUTS_FILE = "cuts.json"
KEPT_CUTS = 500
"""Cuts kept in ``cuts.json``, newest last; a cut older than the tables' cleaner retention cannot be read anyway."""

_LATER = 1 << 62  # the order of a transaction whose END has not been seen: after every candidate


@dataclass(frozen=True)
class TableScan:
    """What a cut's plan needs of one table: the offsets its newest commit holds, and its messages since the
    previous cut (``events``, read from ``start`` to ``end`` per partition)."""

    name: str  # schema.table: the data collection of the transaction topic's END events
    head: Mapping[int, int]
    events: Sequence[TableEvent]
    end: Mapping[int, int]
    ended_before: int = -1
    """Transactions whose END is at or before this transaction-topic offset wrote to the table before
    ``events`` start (they were in the previous cut): complete whatever ``events`` holds of them."""


@dataclass(frozen=True)
class CutPlan:
    """Where a cut falls: the transaction's END, and per table the offsets (partition -> next) it ends at."""

    end: TransactionEnd
    offsets: Mapping[str, Mapping[int, int]]


def plan_cut(ends: Sequence[TransactionEnd], tables: Sequence[TableScan]) -> CutPlan | None:
    """The newest transaction boundary every table can be cut at, or None.

    A table can be cut after the ``i``-th END when its topic holds every event the
    transactions up to it wrote to the table (the END's ``data_collections`` counts),
    those events come first in each partition (commit order), and its newest commit
    holds none of a later transaction (its head is not past the boundary).
    """
    order: dict[str, int] = {}
    for i, end in enumerate(ends):
        order.setdefault(end.match, i)
    ranked = {t.name: _ranked(t, order) for t in tables}
    newest = min([len(ends) - 1, *(_complete_until(t, ends) for t in tables)])
    for i in range(newest, -1, -1):
        if order[ends[i].match] != i:
            continue  # a redelivered END: its transaction was ranked where it first ended
        offsets = {}
        for table in tables:
            boundary = _boundary(table, ranked[table.name], i)
            if boundary is None:
                break
            if any(boundary[p] < table.head.get(p, 0) for p in boundary):
                return None  # a table already holds a later transaction: an older boundary would be worse
            offsets[table.name] = boundary
        else:
            return CutPlan(ends[i], offsets)
    return None


def _complete_until(table: TableScan, ends: Sequence[TransactionEnd]) -> int:
    """The last END index up to which the table's topic holds every event of every transaction."""
    seen: dict[str, int] = {}
    for event in table.events:
        if event.transaction is not None and not event.tombstone:
            seen[event.transaction] = seen.get(event.transaction, 0) + 1
    for i, end in enumerate(ends):
        if end.offset > table.ended_before and seen.get(end.match, 0) < end.counts.get(table.name, 0):
            return i - 1
    return len(ends) - 1


def _ranked(table: TableScan, order: Mapping[str, int]) -> dict[int, list[tuple[int, int]]]:
    """Partition -> ``(offset, rank)`` of its events: the END index of their transaction; -1 for an event of
    no transaction (a snapshot read); ``_LATER`` for one whose END was not read, whether it has not ended
    yet or ended before the transaction topic was read from (a redelivery of an old one: the runner then
    reads that topic from its start); a tombstone ranks with the delete before it."""
    ranked: dict[int, list[tuple[int, int]]] = {}
    for event in sorted(table.events, key=lambda e: (e.partition, e.offset)):
        events = ranked.setdefault(event.partition, [])
        if event.tombstone:
            rank = events[-1][1] if events else -1
        elif event.transaction is None:
            rank = -1
        else:
            rank = order.get(event.transaction, _LATER)
        events.append((event.offset, rank))
    return ranked


def _boundary(table: TableScan, ranked: Mapping[int, list[tuple[int, int]]], i: int) -> dict[int, int] | None:
    """Per partition, the offset after the events of transactions up to END ``i``; None when those are not
    a prefix of the partition (a redelivered transaction after a later one)."""
    boundary = {}
    for partition, end in table.end.items():
        events = ranked.get(partition, [])
        k = 0
        while k < len(events) and events[k][1] <= i:
            k += 1
        if any(rank <= i for _, rank in events[k:]):
            return None
        boundary[partition] = events[k][0] if k < len(events) else end
    return boundary


# -- the record ---------------------------------------------------------------
@dataclass
class CutStore:
    """``cuts.json`` in a pipeline's state folder: the cuts taken, oldest first; replaced whole, atomically."""

    state_dir: str
    cuts: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def load(cls, state_dir: str) -> CutStore:
        path = Path(state_dir) / CUTS_FILE
        try:
            cuts = json.loads(path.read_text())["cuts"]
        except FileNotFoundError:
            cuts = []
        except (OSError, ValueError, KeyError) as exc:
            raise ConfigError(f"cannot read the pipeline's cuts from {path}: {exc}") from None
        return cls(state_dir, list(cuts))

    @property
    def newest(self) -> dict[str, Any] | None:
        return self.cuts[-1] if self.cuts else None

    def record(self, cut: dict[str, Any]) -> None:
        """Append ``cut``; written to a new file then renamed over the old one, so a kill leaves either."""
        self.cuts = [*self.cuts, cut][-KEPT_CUTS:]
        folder = Path(self.state_dir)
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=folder, prefix=".cuts-", delete=False) as out:
            json.dump({"cuts": self.cuts}, out, indent=1, sort_keys=True)
            out.flush()
            os.fsync(out.fileno())
        os.replace(out.name, folder / CUTS_FILE)

    def pick(self, at: str | int | datetime = "latest") -> dict[str, Any]:
        """The cut ``at`` names: "latest"; a transaction id of a cut; a transaction-topic offset (the newest
        cut at or before it); a time (the newest cut taken at or before it)."""
        if not self.cuts:
            raise ConfigError(
                f"no consistent cut in {self.state_dir}: set [run] consistent_cut_interval_seconds and run "
                "`hudi-cdc run --continuous`"
            )
        if at == "latest":
            return self.cuts[-1]
        if isinstance(at, datetime):
            moment = at if at.tzinfo else at.replace(tzinfo=UTC)
            found = [c for c in self.cuts if datetime.fromisoformat(c["at"]) <= moment]
        elif isinstance(at, int):
            found = [c for c in self.cuts if int(c["transaction_offset"]) <= at]
        else:
            found = [c for c in self.cuts if c["transaction"] == at]
        if not found:
            raise ConfigError(f"no consistent cut at {at!r} in {self.state_dir} (oldest: {self.cuts[0]['at']})")
        return found[-1]


def new_cut(plan: CutPlan, topic: str, tables: Mapping[str, dict[str, Any]], left_out: Mapping[str, str],
            number: int) -> dict[str, Any]:  # fmt: skip
    """The record of a cut whose tables all committed: ``tables`` name -> {path, commit, offsets}."""
    return {
        "id": number,
        "at": datetime.now(UTC).isoformat(timespec="milliseconds"),
        "transaction": plan.end.id,
        "transaction_topic": topic,
        "transaction_offset": plan.end.offset,
        "source_ts_ms": plan.end.ts_ms,
        "tables": dict(tables),
        "left_out": dict(left_out),
    }


def read_consistent(
    spark: SparkSession, pipeline: PipelineSpec | str | os.PathLike[str], *, at: str | int | datetime = "latest"
) -> dict[str, DataFrame]:
    """Every table of one consistent cut of ``pipeline``, by name (``schema.table``), as of the cut's commits.

    ``at``: "latest" (the newest cut), a transaction id a cut was taken at, a transaction-topic offset (the
    newest cut at or before it) or a ``datetime`` (the newest cut taken at or before it). Tables left out of
    the cut (paused, failed, new: see docs/consistent-cuts.md) are not in the result.
    """
    from hudi_cdc.service.spec import PipelineSpec, load_pipeline

    spec = pipeline if isinstance(pipeline, PipelineSpec) else load_pipeline(pipeline)
    cut = CutStore.load(spec.run.state_dir).pick(at)
    return {
        name: spark.read.format("hudi").option("as.of.instant", table["commit"]).load(table["path"])
        for name, table in sorted(cut["tables"].items())
    }
