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
from hudi_cdc.service.cut_retention import refuse_unreadable
from hudi_cdc.sources.transactions import TableEvent, TransactionEnd

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from hudi_cdc.service.spec import PipelineSpec, TableRef

__all__ = [
    "CutPlan",
    "CutStore",
    "TableScan",
    "collections_of",
    "configure_stores",
    "event_counts",
    "event_key",
    "plan_cut",
    "plan_or_why",
    "read_consistent",
]

CUTS_FILE = "cuts.json"
KEPT_CUTS = 500
"""Cuts kept in ``cuts.json`` by default, newest last; the runner keeps ``[run] cut_retention`` (their commits
pinned: :mod:`hudi_cdc.service.cut_retention`)."""

_LATER = 1 << 62  # the order of a transaction whose END has not been seen: after every candidate


@dataclass(frozen=True)
class TableScan:
    """What a cut's plan needs of one table: the offsets its newest commit holds, and its messages since the
    previous cut (``events``, read from ``start`` to ``end`` per partition)."""

    name: str  # the table's name in the pipeline
    head: Mapping[int, int]
    events: Sequence[TableEvent]
    end: Mapping[int, int]
    ended_before: int = -1
    """Transactions whose END is at or before this transaction-topic offset wrote to the table before
    ``events`` start (they were in the previous cut): complete whatever ``events`` holds of them."""
    collections: frozenset[str] = frozenset()
    """The data collections (source tables, as the END events name them) its events come from: more than
    its name for a route or a renamed topic, several for a merge. Those its events name are added; none at
    all: ``name``."""
    seen: Mapping[str, int] | None = None
    """Per transaction, how many distinct events of it the messages hold (each ``data_collection_order``
    once); None: counted from ``events``. Given, ``events`` need only hold the first message of each run of
    one transaction's messages in a partition (the runner keeps those, :mod:`hudi_cdc.service.cutter`)."""


def collections_of(table: TableScan) -> frozenset[str]:
    """The data collections whose END counts the table's events are matched against (summed)."""
    named = table.collections | {e.collection for e in table.events if e.collection is not None}
    return named or frozenset({table.name})


@dataclass(frozen=True)
class CutPlan:
    """Where a cut falls: the transaction's END, and per table the offsets (partition -> next) it ends at."""

    end: TransactionEnd
    offsets: Mapping[str, Mapping[int, int]]


def plan_cut(ends: Sequence[TransactionEnd], tables: Sequence[TableScan]) -> CutPlan | None:
    """The newest transaction boundary every table can be cut at, or None (:func:`plan_or_why` says why)."""
    found = plan_or_why(ends, tables)
    return found if isinstance(found, CutPlan) else None


def plan_or_why(ends: Sequence[TransactionEnd], tables: Sequence[TableScan]) -> CutPlan | str:
    """The newest transaction boundary every table can be cut at, or why there is none.

    A table can be cut after the ``i``-th END when its topic holds every event the
    transactions up to it wrote to the table (the END's ``data_collections`` counts of the
    table's collections, each event counted once by its ``data_collection_order``),
    those events come first in each partition (commit order), and its newest commit
    holds none of a later transaction (its head is not past the boundary).
    """
    if not ends:
        return "no transaction END on the transaction topic since the previous cut"
    order: dict[str, int] = {}
    for i, end in enumerate(ends):
        if not end.undecodable:
            order.setdefault(end.match, i)
    ranked = {t.name: _ranked(t, order) for t in tables}
    newest, why = len(ends) - 1, ""
    for table in tables:
        until, reason = _complete_until(table, ends)
        if until < newest:
            newest, why = until, reason
    for i in range(newest, -1, -1):
        if ends[i].undecodable or order[ends[i].match] != i:
            continue  # a redelivered END: its transaction was ranked where it first ended
        offsets = {}
        for table in tables:
            boundary = _boundary(table, ranked[table.name], i)
            if isinstance(boundary, str):
                why = why or boundary
                break
            if any(boundary[p] < table.head.get(p, 0) for p in boundary):
                # A table already holds a later transaction: an older boundary would be worse.
                return why or (
                    f"{table.name}'s newest commit holds events after transaction {ends[i].id} of a transaction "
                    "whose END was not read yet"
                )
            offsets[table.name] = boundary
        else:
            return CutPlan(ends[i], offsets)
    return why or "no transaction boundary every table can end at"


def _complete_until(table: TableScan, ends: Sequence[TransactionEnd]) -> tuple[int, str]:
    """The last END index up to which the table's topic holds every event of every transaction, and why
    not further."""
    collections = collections_of(table)
    counts = table.seen if table.seen is not None else event_counts(table.events)
    for i, end in enumerate(ends):
        if end.undecodable:
            return i - 1, f"the transaction topic's message at offset {end.offset} does not decode"
        needed = sum(end.counts.get(c, 0) for c in collections)
        got = counts.get(end.match, 0)
        if end.offset > table.ended_before and got < needed:
            return i - 1, (
                f"{table.name} holds {got} of the {needed} events transaction {end.id} wrote to "
                f"{', '.join(sorted(collections))}"
            )
    return len(ends) - 1, ""


def event_key(event: TableEvent) -> tuple[object, ...]:
    """What makes two messages of a transaction one event: its place among its transaction's events of its
    collection (a message delivered twice, by a producer's resend or a connector restart, is one event)."""
    return (event.collection, event.order) if event.order is not None else (event.partition, event.offset)


def event_counts(events: Sequence[TableEvent]) -> dict[str, int]:
    """Per transaction, its distinct events among ``events`` (tombstones and snapshot reads are none's)."""
    seen: dict[str, set[tuple[object, ...]]] = {}
    for event in events:
        if event.transaction is not None and not event.tombstone:
            seen.setdefault(event.transaction, set()).add(event_key(event))
    return {t: len(s) for t, s in seen.items()}


def _ranked(table: TableScan, order: Mapping[str, int]) -> dict[int, list[tuple[int, int, TableEvent]]]:
    """Partition -> ``(offset, rank, event)`` of its events, rank being the END index of their transaction;
    -1 for an event of no transaction (a snapshot read); ``_LATER`` for one whose END was not read, whether
    it has not ended yet or ended before the transaction topic was read from (a redelivery of an old one:
    the runner then reads that topic from its start), and for one that does not decode; a tombstone ranks
    with the delete before it."""
    ranked: dict[int, list[tuple[int, int, TableEvent]]] = {}
    for event in sorted(table.events, key=lambda e: (e.partition, e.offset)):
        events = ranked.setdefault(event.partition, [])
        if event.tombstone:
            rank = events[-1][1] if events else -1
        elif event.undecodable:
            rank = _LATER
        elif event.transaction is None:
            rank = -1
        else:
            rank = order.get(event.transaction, _LATER)
        events.append((event.offset, rank, event))
    return ranked


def _boundary(
    table: TableScan, ranked: Mapping[int, list[tuple[int, int, TableEvent]]], i: int
) -> dict[int, int] | str:
    """Per partition, the offset after the events of transactions up to END ``i``; why not when those are
    not a prefix of the partition."""
    boundary = {}
    for partition, end in table.end.items():
        events = ranked.get(partition, [])
        k = 0
        while k < len(events) and events[k][1] <= i:
            k += 1
        if any(rank <= i for _, rank, _ in events[k:]):
            offset, rank, event = events[k]
            if event.undecodable:
                what = "does not decode"
            elif rank == _LATER:
                what = (
                    f"is of transaction {event.transaction}, whose END was not read (not ended yet, expired from "
                    "the transaction topic, or a redelivery)"
                )
            else:
                what = f"is of transaction {event.transaction}, redelivered after a later one"
            where = f"{table.name}'s message at partition {partition} offset {offset}"
            return f"{where} {what}, before events of ended transactions"
        boundary[partition] = events[k][0] if k < len(events) else end
    return boundary


def restarted(
    previous: Mapping[str, Any],
    low: int,
    high: int,
    ends: Sequence[TransactionEnd],
    what: str = "the last cut was taken at",
) -> str | None:
    """Why the transaction topic is not the one the ``previous`` cut was taken on (recreated, or truncated and
    written again: its offsets restarted), from its ``low``/``high`` watermarks and the ENDs read from the
    previous cut's offset on; None when it is, or cannot be told (that END expired by retention). The cutter
    passes the newest END it read instead of the cut's (``what`` says which)."""
    offset, transaction = int(previous["transaction_offset"]), previous["transaction"]
    if high <= offset:
        return f"its offsets end at {high}, at or below offset {offset}, the END of transaction {transaction} {what}"
    if low > offset:
        return None
    at = next((e for e in ends if e.offset == offset), None)
    if at is None or at.id != transaction:
        found = "no END" if at is None else f"the END of transaction {at.id or '(undecodable)'}"
        return f"offset {offset} holds {found}, not the END of transaction {transaction} {what}"
    return None


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
    def path(self) -> Path:
        return Path(self.state_dir) / CUTS_FILE

    @property
    def newest(self) -> dict[str, Any] | None:
        return self.cuts[-1] if self.cuts else None

    def record(self, cut: dict[str, Any], *, keep: int = KEPT_CUTS) -> None:
        """Append ``cut``, keeping the newest ``keep``; written to a new file then renamed over the old one, so a
        kill leaves either."""
        self.cuts = [*self.cuts, cut][-keep:]
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
            number: int, *, partial: Mapping[str, dict[str, Any]] | None = None,
            planned: tuple[datetime, float] | None = None) -> dict[str, Any]:  # fmt: skip
    """The record of a cut whose tables all committed: ``tables`` name -> {path, commit, offsets, collections};
    ``partial``: name -> {quarantined: n} for the tables whose rounds since their previous cut set events aside
    (those events, of transactions up to the cut, are missing from it); ``planned``: when it was planned, and
    the seconds the plan took."""
    timing = {} if planned is None else {"planned_at": planned[0].isoformat(timespec="milliseconds"),
                                          "plan_s": round(planned[1], 3)}  # fmt: skip
    return {
        "id": number,
        "at": datetime.now(UTC).isoformat(timespec="milliseconds"),
        **timing,
        "transaction": plan.end.id,
        "transaction_topic": topic,
        "transaction_offset": plan.end.offset,
        "source_ts_ms": plan.end.ts_ms,
        "tables": dict(tables),
        "left_out": dict(left_out),
        "partial": dict(partial or {}),
    }


def read_consistent(
    spark: SparkSession, pipeline: PipelineSpec | str | os.PathLike[str], *, at: str | int | datetime = "latest"
) -> dict[str, DataFrame]:
    """Every table of one consistent cut of ``pipeline``, by name (``schema.table``), as of the cut's commits.

    ``at``: "latest" (the newest cut), a transaction id a cut was taken at, a transaction-topic offset (the
    newest cut at or before it) or a ``datetime`` (the newest cut taken at or before it). Tables left out of
    the cut (paused, failed, new: see docs/consistent-cuts.md) are not in the result. A cut a table's cleaner
    has passed (files of its commit removed, or the commit archived) is refused with
    :class:`~hudi_cdc.errors.TerminalSinkError` naming the cut, the table and why, never read in part. An
    ``s3a://`` table's bucket gets the table's ``s3_endpoint`` and ``s3_path_style_access`` on ``spark`` first
    (:func:`configure_stores`); credentials come from s3a's provider chain, as for every command.
    """
    from hudi_cdc.service.spec import PipelineSpec, load_pipeline

    spec = pipeline if isinstance(pipeline, PipelineSpec) else load_pipeline(pipeline)
    cut = CutStore.load(spec.run.state_dir).pick(at)
    configure_stores(spark, spec, cut)  # a notebook's session has none of the tables' bucket settings
    refuse_unreadable(spark, cut, spec.name)  # a cleaned cut would fail to read, or read some file groups only
    return {
        name: spark.read.format("hudi").option("as.of.instant", table["commit"]).load(table["path"])
        for name, table in sorted(cut["tables"].items())
    }


def configure_stores(spark: SparkSession, spec: PipelineSpec, cut: Mapping[str, Any]) -> None:
    """Set the bucket settings (``s3_endpoint``, ``s3_path_style_access``) of each ``s3a://`` table of ``cut`` on
    ``spark``, from the table's settings in ``spec``, as its writer did: a reader's own session (a notebook's)
    has none of them, and s3a would look for a bucket of another store at AWS. A ConfigError when the session
    has no s3a connector, or gives the bucket another endpoint (:func:`hudi_cdc.sink.object_store.configure`)."""
    from hudi_cdc.service.control import read_status
    from hudi_cdc.sink.object_store import buckets, configure

    on_s3a = {n: str(t["path"]) for n, t in sorted(cut.get("tables", {}).items()) if buckets([str(t["path"])])}
    if not on_s3a:
        return  # local tables, or another file system: nothing to set
    known = (read_status(spec.run.state_dir) or {}).get("tables") or {}
    for name, path in on_s3a.items():
        config = spec.table_config(_table_ref(spec, name, known.get(name) or {}))
        configure(spark, [path], endpoint=config.s3_endpoint, path_style=config.s3_path_style_access, table=name)


def _table_ref(spec: PipelineSpec, name: str, known: Mapping[str, Any]) -> TableRef:
    """The cut's table ``name`` as the runner that took the cut listed it (``status.json``: its topic, or a routed
    table's sources), so that sections naming its topic apply; else as its name gives it."""
    from hudi_cdc.service.control import listed_topics
    from hudi_cdc.service.spec import TableRef

    routed, _ = spec.routed([TableRef(s) for s in listed_topics(known)])
    return next((ref for ref in routed if ref.name == name), TableRef(name))
