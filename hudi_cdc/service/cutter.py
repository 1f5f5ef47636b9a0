"""The runner's side of consistent cuts: when one is due, which tables are in it, and recording it once whole.

No round is drained or held for a cut. When one is due the cutter plans it at
once (:meth:`Cutter.step`, on the runner's loop), from what it already knows
and what arrived since its last plan:

- each table's head: its newest commit's offsets, or for a table whose round
  is under way, the offsets that round has planned to read to
  (:meth:`Cutter.claim`, called by the round's source as it plans);
- the END events of the transaction topic and the transaction ids of the
  tables' messages, each read once by readers that keep their position
  between plans (a plan reads only what arrived since the previous one).

Each table short of the cut's offsets gets them as a bound on its rounds
(``TableState.until``): its next round, or its round under way if that has not
planned yet, ends there (several with ``source_limit``). A table whose round
under way has planned past the cut's offsets cannot be in it: the plan found
that from its claim and cut earlier, or (a claim made while planning) plans
again. The cut is written to ``cuts.json`` only when every bound table
committed at exactly its offsets. A failed round, or a run stopped or killed
before, leaves no cut: the next one is planned afresh at a later transaction.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from hudi_cdc.errors import ConfigError, SourceError
from hudi_cdc.service.cut_repairs import held_by_repairs
from hudi_cdc.service.cut_retention import PIN_LIFETIME_S, CutPins, oldest_commits
from hudi_cdc.service.cuts import (
    CutPlan,
    CutStore,
    TableScan,
    collections_of,
    event_key,
    new_cut,
    plan_or_why,
    restarted,
)
from hudi_cdc.service.schedule import committed_offsets
from hudi_cdc.service.states import RUNNING, WAITING, TableState
from hudi_cdc.sources.transactions import topic_collection, topic_server

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from hudi_cdc.service.metrics import PipelineMetrics
    from hudi_cdc.service.spec import PipelineSpec
    from hudi_cdc.sources.transactions import TableEvent, TransactionEnd, TransactionReader

__all__ = ["MISSES_BEFORE_FULL_READ", "Cutter", "head_commit"]

THIS_RUNNER = "this runner"
"""``TableState.writer`` of a table whose writer lease this runner holds."""
PLAN_TRIES = 3
"""Plans in one step when a round under way claimed past the cut while it was planned (a race of milliseconds)."""

log = logging.getLogger("hudi_cdc.runner")

MISSES_BEFORE_FULL_READ = 5
"""Plans in a row without a boundary before the transaction topic is read from its start."""
RETRY_S = 2.0
"""A cut that found no boundary yet (a transaction still arriving) is tried again this soon; then twice as
late after each plan in a row that made no cut, up to ``MAX_BACKOFF_INTERVALS`` cut intervals."""
MAX_BACKOFF_INTERVALS = 8


@dataclass
class _Underway:
    plan: CutPlan | None = None
    pending: set[str] = field(default_factory=set)  # tables whose bounded round has not committed yet
    tables: dict[str, dict[str, Any]] = field(default_factory=dict)  # name -> path, commit, offsets
    left_out: dict[str, str] = field(default_factory=dict)
    topic: str = ""  # the transaction topic
    why: str = ""  # why no plan was found
    quarantined: dict[str, int] = field(default_factory=dict)  # name -> events quarantined since its last cut
    bound: list[TableState] = field(default_factory=list)  # tables given the cut's offsets as their bound
    planned_at: float = 0.0
    planned_wall: datetime = field(default_factory=lambda: datetime.now(UTC))
    plan_s: float = 0.0  # the runner's loop planning it: no round starts meanwhile
    idle: bool = False  # no table could take part (none has a commit yet, or all are paused): nothing was read


_Heads = dict[str, tuple[TableState, str, dict[int, int]]]  # name -> the table, its head commit, its offsets
_Repaired = dict[str, dict[str, Any] | None]  # name -> the repair its head carries
_Claims = dict[str, dict[int, int] | None]  # name -> what its round under way claimed to read to


@dataclass
class _EndTail:
    """The transaction topic's END events a cut may fall at, kept between plans: read on from ``anchor``."""

    topic: str
    ends: list[TransactionEnd] = field(default_factory=list)  # past the previous cut's (all: ``from_start``)
    from_start: bool = False  # read from the oldest retained message (a table joining, or no previous cut)
    after: int | None = None  # the offset read past (None: from the oldest retained)
    anchor: tuple[int, str] | None = None  # (offset, id) of the newest END read: checked still there


@dataclass
class _TableTail:
    """A table's messages since its place in the previous cut (``starts``; empty: from the oldest retained),
    kept between plans, read on from ``end``: only what a plan needs of them. Per partition the first message
    of each run of one transaction's messages (where a cut can fall: :func:`hudi_cdc.service.cuts.plan_or_why`
    ranks messages by their transaction), and per transaction its distinct events, so a plan's work grows
    with the transactions since the previous cut, not with their messages."""

    topic: str
    starts: dict[int, int]
    end: dict[int, int] = field(default_factory=dict)
    heads: list[TableEvent] = field(default_factory=list)  # the first message of each run, in arrival order
    last: dict[int, tuple[object, ...] | None] = field(default_factory=dict)  # partition -> its last run's key
    events: dict[str, set[tuple[object, ...]]] = field(default_factory=dict)  # transaction -> its events
    spans: dict[str, dict[int, int]] = field(default_factory=dict)  # transaction -> partition -> last offset
    collections: set[str] = field(default_factory=set)  # those its messages name

    def add(self, events: Iterable[TableEvent]) -> None:
        for event in sorted(events, key=lambda e: (e.partition, e.offset)):
            if event.collection is not None:
                self.collections.add(event.collection)
            if event.transaction is not None and not event.tombstone:
                self.events.setdefault(event.transaction, set()).add(event_key(event))
                span = self.spans.setdefault(event.transaction, {})
                span[event.partition] = max(span.get(event.partition, -1), event.offset)
            # A tombstone goes with the delete before it; a message that does not decode ranks after all.
            key: tuple[object, ...] | None
            if event.tombstone:
                key = self.last.get(event.partition)
            else:
                key = ("undecodable",) if event.undecodable else ("transaction", event.transaction)
            if event.partition in self.last and self.last[event.partition] == key:
                continue
            self.heads.append(event)
            self.last[event.partition] = key

    def forget_before(self, starts: Mapping[int, int]) -> None:
        """Drop what lies before ``starts`` (partition -> offset): a run that goes on past it starts there."""
        ahead: dict[int, int] = {}  # partition -> the offset the run after the one being looked at starts
        kept: list[TableEvent] = []
        for event in sorted(self.heads, key=lambda e: (e.partition, -e.offset)):
            start = starts.get(event.partition, 0)
            ends_at = ahead.get(event.partition, self.end.get(event.partition, event.offset + 1))
            ahead[event.partition] = event.offset
            if event.offset >= start:
                kept.append(event)
            elif ends_at > start:
                kept.append(dataclasses.replace(event, offset=start))
        self.heads = sorted(kept, key=lambda e: (e.partition, e.offset))
        gone = [t for t, span in self.spans.items() if all(o < starts.get(p, 0) for p, o in span.items())]
        for transaction in gone:
            del self.events[transaction], self.spans[transaction]
        self.starts = dict(starts)


class _Head(tuple):  # type: ignore[type-arg]
    """``(instant, offsets)`` of a table's newest checkpoint commit, and the newest repair it carries."""

    repaired: dict[str, Any] | None = None


_TABLE_NOT_FOUND = "org.apache.hudi.exception.TableNotFoundException"


def head_commit(spark: SparkSession, base_path: str) -> tuple[str, dict[int, int]] | None:
    """The table's newest checkpoint commit and the Kafka offsets it holds (with ``.repaired``: the newest repair
    of the table, :mod:`hudi_cdc.service.cut_repairs`); None before its first."""
    from hudi_cdc.sink import options as opt
    from hudi_cdc.sink.hudi import HudiTable

    try:
        commit = HudiTable(spark, base_path).checkpoint_commit()
    except Exception as exc:
        if _TABLE_NOT_FOUND not in str(exc):
            raise
        return None  # its first round is creating it: Hudi refuses the folder until then
    if commit is None:
        return None
    offsets = committed_offsets(json.loads(commit.extra[opt.CHECKPOINT_KEY]))
    if offsets is None:
        return None
    head = _Head((commit.instant, offsets))
    if opt.REPAIRED_AT_KEY in commit.extra:
        head.repaired = json.loads(commit.extra[opt.REPAIRED_AT_KEY])
    return head


class Cutter:
    """Takes a pipeline's consistent cuts, every ``interval_s``; the runner calls it from its loop."""

    def __init__(
        self,
        spec: PipelineSpec,
        spark: SparkSession,
        interval_s: float,
        now: float,
        *,
        metrics: PipelineMetrics | None = None,
    ) -> None:
        from hudi_cdc.sources.kafka import client_conf
        from hudi_cdc.sources.kafka_security import KafkaSecurity
        from hudi_cdc.sources.registry import RegistryLogin
        from hudi_cdc.sources.transactions import TransactionReader

        self.spec = spec
        self.spark = spark
        self.interval_s = interval_s
        self.store = CutStore.load(spec.run.state_dir)
        lifetime = max(PIN_LIFETIME_S, 2 * spec.run.cut_retention * interval_s)
        self.pins = CutPins(os.path.abspath(spec.run.state_dir), spark, lifetime_s=lifetime)
        self.reader: TransactionReader = TransactionReader(
            str(spec.source.bootstrap_servers),
            str(spec.source.schema_registry_url),
            client_conf(spec.defaults.get("hoodie_conf", {}), KafkaSecurity.of(spec.source)),
            flavor=spec.source.flavor,
            registry_login=RegistryLogin.of(spec.source),
        )
        self.next_at = now + interval_s
        self.underway: _Underway | None = None
        self.misses = 0  # plans in a row that made no cut
        self.blocked: dict[str, Any] | None = None  # why the last plan made no cut, for status.json
        self.metrics = metrics
        # Per table, its rounds' quarantined events (TableState.quarantined) up to its place in the last cut,
        # or when this run first saw it: what it quarantined since is missing from the next cut.
        self._quarantined_at: dict[str, int] = {}
        # A round's claim (on its worker thread) and a plan's bounds (on the runner's loop) are each atomic.
        self._lock = threading.Lock()
        self._end_tail: _EndTail | None = None
        self._tails: dict[str, _TableTail] = {}
        # Each table's head as its rounds in this runner reported it: a plan reads no table's timeline again
        # while this runner alone has written it since (its lease held throughout).
        self._heads: dict[str, tuple[str, dict[int, int]]] = {}

    def underway_now(self) -> dict[str, Any] | None:
        """The cut under way, for ``status.json``: its transaction and the tables whose round has not
        committed at the cut yet."""
        underway = self.underway
        if underway is None or underway.plan is None:
            return None
        return {"transaction": underway.plan.end.id, "pending": sorted(underway.pending)}

    def blocked_now(self) -> dict[str, Any] | None:
        """Why the cuts are not being made, for ``status.json``: the last plan's reason, since when plans have
        failed and how many, and when the next is tried; None once a cut is recorded."""
        return self.blocked

    def claim(self, table: TableState, highs: Mapping[int, int]) -> dict[int, int] | None:
        """A round of ``table`` plans to read up to ``highs`` (partition -> next offset to be written): the
        bound it must stop at (a cut's offsets; None: none). Called on the round's worker thread; what it will
        read to is kept as ``table.claimed`` for the plans made while it runs."""
        with self._lock:
            until = dict(table.until) if table.until is not None else None
            table.claimed = {p: min(h, until.get(p, h)) for p, h in highs.items()} if until else dict(highs)
            return until

    def step(self, now: float, tables: Iterable[TableState]) -> None:
        """Plan a cut when one is due, whatever rounds are under way."""
        tables = list(tables)
        for table in tables:
            self._quarantined_at.setdefault(table.name, table.quarantined)
        if self._stalled(tables):
            self._cannot(now, "a table it waited for was paused or removed meanwhile", after_s=self.interval_s)
            self.release(tables)
            return
        if self.underway is not None or now < self.next_at:
            return
        started = time.perf_counter()
        for _ in range(PLAN_TRIES):
            underway = self.underway = _Underway(planned_at=now)
            try:
                placed = self._plan(tables)
            except Exception as exc:  # noqa: BLE001 - a cut that cannot be planned must not stop the tables
                self._cannot(now, f"not planned: {exc}", error=True)
                return
            if placed:
                break
        underway.plan_s = time.perf_counter() - started
        if self.metrics is not None:
            self.metrics.cut_planned(underway.plan_s)
        if underway.plan is None and underway.idle:
            self._idle(now, underway.why)
        elif underway.plan is None:
            self._cannot(now, underway.why)
        else:
            self._maybe_record(now)

    def _idle(self, now: float, why: str) -> None:
        """No table can be in a cut yet (the run's first rounds have not committed): said in ``status.json``,
        but no failed plan (nothing was read, no backoff, no alert): planned again at the next interval, so the
        first cut follows the first commits by at most one interval."""
        self._block(why, self.interval_s)
        log.debug("consistent cut not made: %s; tried again in %.0f s", why, self.interval_s)
        self._again(now, self.interval_s)

    def _cannot(self, now: float, why: str, *, error: bool = False, after_s: float | None = None) -> None:
        """No cut this time: say why (status.json, metrics, the log) and try again later, twice as late after
        each plan in a row that made none."""
        self.misses += 1
        if after_s is None:
            after_s = min(RETRY_S * 2 ** (self.misses - 1), self.interval_s * MAX_BACKOFF_INTERVALS)
        self._block(why, after_s)
        if self.metrics is not None:
            self.metrics.cut_missed(error=error, in_a_row=self.misses)
        quiet = not error and self.misses < MISSES_BEFORE_FULL_READ
        (log.info if quiet else log.warning)(
            "consistent cut not made (%d in a row): %s; tried again in %.0f s", self.misses, why, after_s
        )
        self._again(now, after_s)

    def _block(self, why: str, after_s: float) -> None:
        """``status.json``'s why no cut is made, since when, and when the next plan is."""
        wall = datetime.now(UTC)
        self.blocked = {
            "reason": why,
            "since": self.blocked["since"] if self.blocked else _iso(wall),
            "failed_plans": self.misses,
            "next_attempt_at": _iso(wall + timedelta(seconds=after_s)),
        }

    def _stalled(self, tables: list[TableState]) -> bool:
        """Whether a table the cut waits for can no longer commit at it (paused, removed, dropped)."""
        pending = self.underway.pending if self.underway is not None else set()
        return any(t.name in pending and t.state not in (WAITING, RUNNING) for t in tables)

    def _again(self, now: float, after_s: float) -> None:
        """The cut under way (if any) is given up: its bounds are lifted, tried again ``after_s`` later."""
        self._unbound(self.underway)
        self.underway = None
        self.next_at = now + after_s

    def _unbound(self, underway: _Underway | None) -> None:
        if underway is None:
            return
        with self._lock:
            self._lift(underway)

    @staticmethod
    def _lift(underway: _Underway) -> None:
        """Lift the bounds of the cut's rounds; the caller holds ``_lock`` (not reentrant)."""
        for table in underway.bound:
            table.until = table.until_at = None

    def _plan(self, tables: list[TableState]) -> bool:
        """Plan the cut into ``self.underway``: its plan, or why none (``why``). False: a round under way
        claimed past the cut while it was planned; the caller plans again."""
        assert self.underway is not None
        underway = self.underway
        heads, repaired, claims = self._candidates(tables, underway)
        if not heads:
            underway.idle = True
            underway.why = "no table can take part: " + ", ".join(
                f"{n} ({w})" for n, w in sorted(underway.left_out.items())
            )
            return True
        # Refused before any topic is read: tables of several servers share no transaction order.
        underway.topic = self.transaction_topic(t.topic for t, _, _ in heads.values())
        # Each head pinned before its bound round: no clean passes the cut's commit before it is recorded.
        self._pin({table.target: instant for table, instant, _ in heads.values()})
        # A round under way will commit what it claimed (or less): the plan treats that as the table's head.
        ahead = {n: claims.get(n) or offsets for n, (_, _, offsets) in heads.items()}
        scans = {s.name: s for s in self._scans(heads, ahead)}
        ends = self._ends(heads)
        plan = plan_or_why(ends, list(scans.values()))
        held = {} if isinstance(plan, str) else held_by_repairs(ends, plan.end, repaired, self.store.newest)
        if held:  # a repaired table waits for a transaction after its repair; the others are cut without it
            for name, why in held.items():
                underway.left_out[name] = why
                del heads[name], scans[name]
            plan = plan_or_why(ends, list(scans.values())) if heads else "every table waits for its repair"
        if isinstance(plan, str):
            underway.why = plan
            return True
        if not self._bind(underway, heads, claims, plan):
            return False
        for name, (table, instant, _) in heads.items():
            underway.tables[name] = {
                "path": table.target,
                "commit": instant,
                "offsets": dict(plan.offsets[name]),
                "collections": sorted(collections_of(scans[name])),
            }
            if repaired.get(name):
                underway.tables[name]["repaired"] = repaired[name]
            underway.quarantined[name] = table.quarantined - self._quarantined_at.get(name, table.quarantined)
        underway.plan = plan
        log.info(
            "consistent cut at transaction %s: %d table(s), %d to commit at it",
            plan.end.id,
            len(heads),
            len(underway.pending),
        )
        return True

    def _candidates(self, tables: list[TableState], underway: _Underway) -> tuple[_Heads, _Repaired, _Claims]:
        """The tables that can be in the cut: each one's head commit and offsets, the repair its head carries,
        and what its round under way claimed; the others go to ``underway.left_out``, with why."""
        heads: _Heads = {}
        repaired: _Repaired = {}
        claims: _Claims = {}
        for table in tables:
            # A table done with its rounds (--max-rounds) would never commit at the cut: left out too.
            if table.state not in (WAITING, RUNNING) or table.config is None:
                underway.left_out[table.name] = table.state
                continue
            if table.config.shard_sources:  # a merged table ([[routes]]) reads many topics: never in a cut
                underway.left_out[table.name] = "merged shards: not in consistent cuts"
                continue
            if table.repair is not None:  # a repair round writes keys as of its snapshot, not offsets
                underway.left_out[table.name] = "repair under way"
                continue
            with self._lock:  # before the topics are read: what they read covers what it claimed
                claims[table.name] = dict(table.claimed) if table.claimed is not None else None
            head = self._head(table)
            if head is None:
                underway.left_out[table.name] = "new: no commit yet"
                continue
            heads[table.name] = (table, *head)
            repaired[table.name] = getattr(head, "repaired", None)
        return heads, repaired, claims

    def _bind(self, underway: _Underway, heads: _Heads, claims: _Claims, plan: CutPlan) -> bool:
        """Give each table behind the cut its offsets as the bound of its next round (or of the one under way).
        False, nothing bound: a round claimed past the cut since ``claims`` were read."""
        with self._lock:
            for name, (table, _, _) in heads.items():
                claimed, until = table.claimed, plan.offsets[name]
                if (
                    claimed is not None
                    and claimed != claims[name]
                    and any(claimed.get(p, 0) > o for p, o in until.items())
                ):
                    self._lift(underway)  # under the lock already: _unbound here would wait for itself
                    underway.why = f"{name}'s round under way planned past the cut while it was planned"
                    return False
                running = table.state == RUNNING
                if running or until != {p: heads[name][2].get(p, 0) for p in until}:
                    table.until, table.until_at = dict(until), underway.planned_at
                    underway.bound.append(table)
                    underway.pending.add(name)
                    if not running:
                        table.due = 0.0
        return True

    def _head(self, table: TableState) -> tuple[str, dict[int, int]] | None:
        """The table's newest checkpoint commit and its offsets: as its last round reported it, else read."""
        assert table.config is not None
        if table.writer != THIS_RUNNER:  # another process may have written it meanwhile
            self._heads.pop(table.name, None)
        head = self._heads.get(table.name)
        if head is None:
            head = head_commit(self.spark, table.config.target_base_path)
            if head is not None and table.writer == THIS_RUNNER:
                self._heads[table.name] = head
        return head

    def _pin(self, heads: dict[str, str]) -> None:
        """Pin every table at the oldest commit of the retained cuts, or at ``heads`` (path -> instant) if older."""
        wanted = oldest_commits(self.store.cuts)
        for path, instant in heads.items():
            wanted[path] = min(wanted.get(path, instant), instant)
        self.pins.keep(wanted, why=f"consistent cuts of pipeline {self.spec.name}")

    def transaction_topic(self, topics: Iterable[str]) -> str:
        """``[source] transaction_topic``, else Debezium's default: ``<topic.prefix>.transaction``; the tables
        of a cut must all come from one server (one connector's transaction topic: the only commit order)."""
        flavor = self.spec.source.flavor
        servers: dict[str, list[str]] = {}
        for topic in topics:
            servers.setdefault(topic_server(topic, flavor), []).append(topic)
        if len(servers) > 1:
            raise ConfigError(
                f"consistent cuts of pipeline {self.spec.name} refused: its tables come from {len(servers)} "
                "Debezium servers ("
                + "; ".join(f"{s or '(no prefix)'}: {', '.join(sorted(t)[:3])}" for s, t in sorted(servers.items()))
                + "), and transactions of different servers have no common order. Run one pipeline per server "
                "(each with its own [run] state_dir) to cut each, or set [run] consistent_cut_interval_seconds = 0"
            )
        if self.spec.source.transaction_topic:
            return self.spec.source.transaction_topic
        return f"{next(iter(servers), '')}.transaction"

    def _ends(self, heads: dict[str, tuple[TableState, str, dict[int, int]]]) -> list[TransactionEnd]:
        """The END events a cut may fall at: past the previous cut's END (from the oldest retained when a table
        joins, or after plans in a row found nothing). Read on from where the previous plan stopped."""
        previous = self.store.newest
        # A transaction redelivered from before the previous cut has its END there: after a few plans that
        # found no boundary, the whole retained topic is read (once).
        joining = previous is None or any(name not in previous["tables"] for name in heads)
        joining = joining or self.misses >= MISSES_BEFORE_FULL_READ
        assert self.underway is not None
        topic = self.underway.topic
        same_topic = previous is not None and previous.get("transaction_topic") == topic
        last = int(previous["transaction_offset"]) if previous is not None and same_topic else None
        tail = self._end_tail
        if tail is None or tail.topic != topic or (joining and not tail.from_start):
            tail = self._end_tail = _EndTail(topic, from_start=joining or previous is None)
            if not tail.from_start and previous is not None:
                tail.after = int(previous["transaction_offset"])
            if last is not None:  # the previous cut's END: this topic must still hold it there
                tail.anchor = (last, str(previous["transaction"]))  # type: ignore[index]
        anchor, start = tail.anchor, tail.after
        if anchor is not None:  # the topic must still hold it: a recreated topic restarts its offsets
            low, high = self.reader.watermarks(topic)[0]
            if high <= anchor[0]:
                self._recreated(topic, restarted(_at(anchor), low, high, [], _what(anchor, last)))
            if anchor[0] >= low and start is not None:
                start = anchor[0] - 1  # read on from it, itself again, to see it is still there
        read = self.reader.ends(topic, start)
        if anchor is not None and start is not None and start < anchor[0]:
            self._recreated(topic, restarted(_at(anchor), low, high, read, _what(anchor, last)))
        fresh = [e for e in read if tail.after is None or e.offset > tail.after]
        tail.ends.extend(e for e in fresh if tail.from_start or last is None or e.offset > last)
        if read:
            tail.after = max(tail.after if tail.after is not None else -1, read[-1].offset)
        decodable = [e for e in read if not e.undecodable]
        if decodable:
            tail.anchor = (decodable[-1].offset, decodable[-1].id)
        return list(tail.ends)

    def _recreated(self, topic: str, why: str | None) -> None:
        if why is None:
            return
        self._end_tail = None  # read afresh once the topic is good again
        raise SourceError(
            f"the transaction topic {topic} was recreated or truncated: {why}. The transactions between the last "
            f"cut and then lost their END events, so no cut can be checked against them: to take cuts again, stop "
            f"the runner, move {self.store.path} aside and start it again (docs/consistent-cuts.md#limits)"
        )

    def _scans(
        self, heads: dict[str, tuple[TableState, str, dict[int, int]]], ahead: Mapping[str, dict[int, int]]
    ) -> list[TableScan]:
        """Each table's messages since its place in the previous cut, read on from where the previous plan
        stopped; ``ahead``: its head, or what its round under way claimed."""
        newest = self.store.newest or {}
        previous = newest.get("tables", {})
        scans = []
        flavor = self.spec.source.flavor
        for name, (table, _, offsets) in heads.items():
            before = {int(p): int(o) for p, o in previous.get(name, {}).get("offsets", {}).items()}
            starts = {p: min(before.get(p, o), o) for p, o in offsets.items()} if before else {}
            tail = self._tail(name, table.topic, starts)
            ended_before = int(newest["transaction_offset"]) if before else -1
            # Matched by source collection: a route's table is named after its target, a renamed topic's events
            # name theirs in their source block; those of the previous cut stay known when no event names them.
            collections = {topic_collection(table.topic, flavor), *previous.get(name, {}).get("collections", ())}
            collections |= tail.collections
            seen = {t: len(e) for t, e in tail.events.items()}
            scans.append(
                TableScan(
                    name, ahead[name], list(tail.heads), dict(tail.end), ended_before, frozenset(collections), seen=seen
                )  # fmt: skip
            )
        return scans

    def _tail(self, name: str, topic: str, starts: dict[int, int]) -> _TableTail:
        """The table's messages from ``starts`` (empty: the oldest retained) to its topic's end: those kept
        from the previous plans, and what arrived since."""
        tail = self._tails.get(name)
        held = (
            tail is not None
            and tail.topic == topic
            and (not tail.starts or (bool(starts) and all(o >= tail.starts.get(p, o + 1) for p, o in starts.items())))
        )
        if tail is None or not held:
            events, end = self.reader.events(topic, starts)
            tail = self._tails[name] = _TableTail(topic, dict(starts), dict(end))
            tail.add(events)
            return tail
        if starts != tail.starts:  # its place in the previous cut moved on: what is before it is not needed
            tail.forget_before(starts)
        events, end = self.reader.events(topic, tail.end)
        tail.add(events)
        tail.end = {**tail.end, **end}
        return tail

    def round_done(self, table: TableState, commit: str | None, now: float, *, quarantined: int = 0) -> None:
        """A bound round of ``table`` ended: committed at the cut (``commit``) or not (None: the cut is
        abandoned when it waits for the table); ``quarantined``: the bad events it set aside, missing from
        the cut."""
        with self._lock:
            table.claimed, table.until, table.until_at = None, None, None
        if commit is None:  # a failed round may have committed: its head is read again
            self._heads.pop(table.name, None)
        underway = self.underway
        if underway is None or table.name not in underway.pending:
            return
        if commit is None:
            self._cannot(now, f"abandoned: {table.name} did not commit at the cut", after_s=self.interval_s)
            return
        underway.tables[table.name]["commit"] = commit
        underway.quarantined[table.name] = underway.quarantined.get(table.name, 0) + quarantined
        underway.pending.discard(table.name)
        self._maybe_record(now)

    def round_ended(
        self,
        table: TableState,
        now: float,
        *,
        quarantined: int = 0,
        commit: str | None = None,
        offsets: Mapping[int, int] | None = None,
    ) -> None:
        """A round of ``table`` ended and reported its commit (``commit``, holding ``offsets``; None: nothing
        committed). For a cut under way the table is then at the cut, short of it (its next round is bound),
        or past it (the cut is abandoned: it never should be)."""
        with self._lock:
            table.claimed = None
        cached = self._heads.get(table.name)
        if commit is not None:
            self._heads.pop(table.name, None)
            if offsets is not None and cached is not None:  # the repair it carries is carried on
                reported = _Head((commit, dict(offsets)))
                reported.repaired = getattr(cached, "repaired", None)
                self._heads[table.name] = reported
        underway = self.underway
        if underway is None or table.name not in underway.pending or table.config is None:
            return
        until = underway.tables[table.name]["offsets"]
        head = self._heads.get(table.name) or head_commit(self.spark, table.config.target_base_path)
        at = head[1] if head is not None else {}
        if head is not None and getattr(head, "repaired", None) != underway.tables[table.name].get("repaired"):
            with self._lock:  # a repair committed meanwhile: a cut boundary of its own (cut_repairs)
                table.until = table.until_at = None
            self._cannot(now, f"abandoned: {table.name} was repaired while the cut waited for it", after_s=0.0)
        elif head is not None and at == until:
            self.round_done(table, head[0], now, quarantined=quarantined)
        elif all(at.get(p, 0) <= o for p, o in until.items()):
            underway.quarantined[table.name] = underway.quarantined.get(table.name, 0) + quarantined
        else:
            self.round_done(table, None, now)

    def release(self, tables: Iterable[TableState]) -> None:
        """The run stops (or the cut under way is given up): a cut under way is not recorded, no table stays
        bound, and the reader's connection is let go."""
        with self._lock:
            for table in tables:
                table.until = table.until_at = None
        self.underway = None
        close = getattr(self.reader, "close", None)
        if close is not None:
            close()

    def _maybe_record(self, now: float) -> None:
        underway = self.underway
        if underway is None or underway.plan is None or underway.pending:
            return
        number = int((self.store.newest or {}).get("id", 0)) + 1
        partial = {n: {"quarantined": q} for n, q in sorted(underway.quarantined.items()) if q}
        cut = new_cut(
            underway.plan,
            underway.topic,
            underway.tables,
            underway.left_out,
            number,
            partial=partial,
            planned=(underway.planned_wall, underway.plan_s),
        )
        self.store.record(cut, keep=self.spec.run.cut_retention)
        self._forget_before(cut)
        try:
            self._pin({})
        except Exception as exc:  # noqa: BLE001 - the heads stay pinned since the plan: only older pins linger
            log.warning("consistent cut %d: the tables' pins were not moved to the retained cuts: %s", number, exc)
        for name, q in underway.quarantined.items():
            self._quarantined_at[name] = self._quarantined_at.get(name, 0) + q
        log.info("consistent cut %d recorded at transaction %s: %s", number, cut["transaction"],
                 ", ".join(f"{n}@{t['commit']}" for n, t in sorted(underway.tables.items())))  # fmt: skip
        if partial:
            log.warning(
                "consistent cut %d is partial: %s quarantined events of transactions up to it "
                "(hudi-cdc quarantine list; docs/consistent-cuts.md#quarantined-events-partial-cuts)",
                number,
                ", ".join(f"{n} {p['quarantined']}" for n, p in partial.items()),
            )
        if self.metrics is not None:
            self.metrics.cut_recorded(partial=bool(partial))
        self.underway, self.misses, self.blocked = None, 0, None
        # The interval counts from the plan: the time its tables took to commit at it is not added to it.
        self.next_at = max(underway.planned_at + self.interval_s, now)

    def _forget_before(self, cut: dict[str, Any]) -> None:
        """What the next plans no longer need once ``cut`` is recorded: the ENDs up to its END, and each of its
        tables' messages before its offsets in it."""
        tail = self._end_tail
        if tail is not None and tail.topic == cut["transaction_topic"]:
            offset = int(cut["transaction_offset"])
            tail.ends = [e for e in tail.ends if e.offset > offset]
            tail.from_start = False
        for name, table in cut["tables"].items():
            kept = self._tails.get(name)
            if kept is not None:
                kept.forget_before({int(p): int(o) for p, o in table["offsets"].items()})


def _at(anchor: tuple[int, str]) -> dict[str, Any]:
    return {"transaction_offset": anchor[0], "transaction": anchor[1]}


def _what(anchor: tuple[int, str], last: int | None) -> str:
    return "the last cut was taken at" if anchor[0] == last else "the previous plan read"


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="seconds")
