"""The runner's side of consistent cuts: when one is due, which tables are in it, and recording it once whole.

A cut goes through two phases in the runner's loop (:mod:`hudi_cdc.service.runner`):

1. *draining*: no round starts; the rounds under way finish, so every
   table's newest commit (its head) stands still while the cut is planned;
2. *rounds*: each table whose head is short of the cut's offsets gets one
   round (or more, with ``source_limit``) bounded to end exactly there; the
   other tables, and each bounded table once its round committed, go back to
   their own rounds at once.

The cut is written to ``cuts.json`` only when every bounded round committed at
exactly its offsets. A failed round, or a run stopped or killed before, leaves
no cut: the next one is planned afresh at a later transaction.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from hudi_cdc.errors import ConfigError, SourceError
from hudi_cdc.service.cut_repairs import held_by_repairs
from hudi_cdc.service.cut_retention import PIN_LIFETIME_S, CutPins, oldest_commits
from hudi_cdc.service.cuts import CutPlan, CutStore, TableScan, collections_of, new_cut, plan_or_why, restarted
from hudi_cdc.service.schedule import committed_offsets
from hudi_cdc.service.states import RUNNING, WAITING, TableState
from hudi_cdc.sources.transactions import topic_collection, topic_server

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from hudi_cdc.service.metrics import PipelineMetrics
    from hudi_cdc.service.spec import PipelineSpec
    from hudi_cdc.sources.transactions import TransactionEnd, TransactionReader

__all__ = ["MISSES_BEFORE_FULL_READ", "Cutter", "head_commit"]

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


class _Head(tuple):  # type: ignore[type-arg]
    """``(instant, offsets)`` of a table's newest checkpoint commit, and the newest repair it carries."""

    repaired: dict[str, Any] | None = None


def head_commit(spark: SparkSession, base_path: str) -> tuple[str, dict[int, int]] | None:
    """The table's newest checkpoint commit and the Kafka offsets it holds (with ``.repaired``: the newest repair
    of the table, :mod:`hudi_cdc.service.cut_repairs`); None before its first."""
    from hudi_cdc.sink import options as opt
    from hudi_cdc.sink.hudi import HudiTable

    commit = HudiTable(spark, base_path).checkpoint_commit()
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

    @property
    def draining(self) -> bool:
        return self.underway is not None and self.underway.plan is None

    def underway_now(self) -> dict[str, Any] | None:
        """The cut under way, for ``status.json``: its transaction (None while draining) and the tables whose
        bounded round has not committed yet."""
        underway = self.underway
        if underway is None:
            return None
        transaction = underway.plan.end.id if underway.plan is not None else None
        return {"transaction": transaction, "pending": sorted(underway.pending)}

    def blocked_now(self) -> dict[str, Any] | None:
        """Why the cuts are not being made, for ``status.json``: the last plan's reason, since when plans have
        failed and how many, and when the next is tried; None once a cut is recorded."""
        return self.blocked

    def holds(self, table: TableState) -> bool:
        """Whether ``table`` may not start a round of its own now."""
        return self.underway is not None and (self.underway.plan is None or table.name in self.underway.pending)

    def step(self, now: float, tables: Iterable[TableState]) -> None:
        """Start a cut when due; plan it once no round is under way."""
        tables = list(tables)
        for table in tables:
            self._quarantined_at.setdefault(table.name, table.quarantined)
        if self.underway is None and now >= self.next_at:
            self.underway = _Underway()
        if self._stalled(tables):
            self._cannot(now, "a table it waited for was paused or removed meanwhile", after_s=self.interval_s)
            self.release(tables)
            return
        if not self.draining or any(t.state == RUNNING for t in tables):
            return
        try:
            self._plan(tables)
        except Exception as exc:  # noqa: BLE001 - a cut that cannot be planned must not stop the tables
            self._cannot(now, f"not planned: {exc}", error=True)
            return
        if self.underway is not None and self.underway.plan is None:
            self._cannot(now, self.underway.why)
        else:
            self._maybe_record(now)

    def _cannot(self, now: float, why: str, *, error: bool = False, after_s: float | None = None) -> None:
        """No cut this time: say why (status.json, metrics, the log) and try again later, twice as late after
        each plan in a row that made none (a cut that cannot be made must not drain every table every 2 s)."""
        self.misses += 1
        if after_s is None:
            after_s = min(RETRY_S * 2 ** (self.misses - 1), self.interval_s * MAX_BACKOFF_INTERVALS)
        wall = datetime.now(UTC)
        self.blocked = {
            "reason": why,
            "since": self.blocked["since"] if self.blocked else _iso(wall),
            "failed_plans": self.misses,
            "next_attempt_at": _iso(wall + timedelta(seconds=after_s)),
        }
        if self.metrics is not None:
            self.metrics.cut_missed(error=error, in_a_row=self.misses)
        quiet = not error and self.misses < MISSES_BEFORE_FULL_READ
        (log.info if quiet else log.warning)(
            "consistent cut not made (%d in a row): %s; tried again in %.0f s", self.misses, why, after_s
        )
        self._again(now, after_s)

    def _stalled(self, tables: list[TableState]) -> bool:
        """Whether a table the cut waits for can no longer run its bounded round (paused, removed, dropped)."""
        pending = self.underway.pending if self.underway is not None else set()
        return any(t.name in pending and t.state not in (WAITING, RUNNING) for t in tables)

    def _again(self, now: float, after_s: float) -> None:
        self.underway = None
        self.next_at = now + after_s

    def _plan(self, tables: list[TableState]) -> None:
        assert self.underway is not None
        underway = self.underway
        heads: dict[str, tuple[TableState, str, dict[int, int]]] = {}
        repaired: dict[str, dict[str, Any] | None] = {}
        for table in tables:
            # A table done with its rounds (--max-rounds) would never run its bounded round: left out too.
            if table.state != WAITING or table.config is None:
                underway.left_out[table.name] = table.state
                continue
            if table.config.shard_sources:  # a merged table ([[routes]]) reads many topics: never in a cut
                underway.left_out[table.name] = "merged shards: not in consistent cuts"
                continue
            head = head_commit(self.spark, table.config.target_base_path)
            if head is None:
                underway.left_out[table.name] = "new: no commit yet"
                continue
            heads[table.name] = (table, *head)
            repaired[table.name] = getattr(head, "repaired", None)
        if not heads:
            underway.why = "no table can take part: " + ", ".join(
                f"{n} ({w})" for n, w in sorted(underway.left_out.items())
            )
            return
        # Refused before any topic is read: tables of several servers share no transaction order.
        underway.topic = self.transaction_topic(t.topic for t, _, _ in heads.values())
        # Each head pinned before its bounded round: no clean passes the cut's commit before it is recorded.
        self._pin({table.target: instant for table, instant, _ in heads.values()})
        scans = {s.name: s for s in self._scans(heads)}
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
            return
        for name, (table, instant, offsets) in heads.items():
            until = dict(plan.offsets[name])
            underway.tables[name] = {
                "path": table.target,
                "commit": instant,
                "offsets": until,
                "collections": sorted(collections_of(scans[name])),
            }
            if repaired.get(name):
                underway.tables[name]["repaired"] = repaired[name]
            underway.quarantined[name] = table.quarantined - self._quarantined_at.get(name, table.quarantined)
            if until != {p: offsets.get(p, 0) for p in until}:
                table.until, table.due = until, 0.0
                underway.pending.add(name)
        underway.plan = plan
        log.info(
            "consistent cut at transaction %s: %d table(s), %d bounded round(s)",
            plan.end.id,
            len(heads),
            len(underway.pending),
        )

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
        previous = self.store.newest
        joining = previous is None or any(name not in previous["tables"] for name in heads)
        # A transaction redelivered from before the previous cut has its END there: after a few plans that
        # found no boundary, the whole retained topic is read.
        joining = joining or self.misses >= MISSES_BEFORE_FULL_READ
        assert self.underway is not None
        topic = self.underway.topic
        if previous is None or previous.get("transaction_topic") != topic:
            return self.reader.ends(topic, None if joining or previous is None else int(previous["transaction_offset"]))
        # Read from the previous cut's END on, to see it is still there: a topic recreated (its offsets restarted)
        # would have every new END at or below that offset skip the count check (ended_before).
        last = int(previous["transaction_offset"])
        low, high = self.reader.watermarks(topic)[0]
        ends = self.reader.ends(topic, None if joining else last - 1)
        why = restarted(previous, low, high, ends)
        if why is not None:
            raise SourceError(
                f"the transaction topic {topic} was recreated or truncated: {why}. The transactions between the last "
                f"cut and then lost their END events, so no cut can be checked against them: to take cuts again, stop "
                f"the runner, move {self.store.path} aside and start it again (docs/consistent-cuts.md#limits)"
            )
        return [e for e in ends if joining or e.offset > last]

    def _scans(self, heads: dict[str, tuple[TableState, str, dict[int, int]]]) -> list[TableScan]:
        newest = self.store.newest or {}
        previous = newest.get("tables", {})
        scans = []
        flavor = self.spec.source.flavor
        for name, (table, _, offsets) in heads.items():
            before = {int(p): int(o) for p, o in previous.get(name, {}).get("offsets", {}).items()}
            starts = {p: min(before.get(p, o), o) for p, o in offsets.items()} if before else {}
            events, end = self.reader.events(table.topic, starts)
            ended_before = int(newest["transaction_offset"]) if before else -1
            # Matched by source collection: a route's table is named after its target, a renamed topic's events
            # name theirs in their source block; those of the previous cut stay known when no event names them.
            collections = {topic_collection(table.topic, flavor), *previous.get(name, {}).get("collections", ())}
            scans.append(TableScan(name, offsets, events, end, ended_before, frozenset(collections)))
        return scans

    def round_done(self, table: TableState, commit: str | None, now: float, *, quarantined: int = 0) -> None:
        """A bounded round of ``table`` ended: committed at the cut (``commit``) or not (None: cut abandoned);
        ``quarantined``: the bad events its rounds set aside, missing from the cut."""
        underway, table.until = self.underway, None
        if underway is None or table.name not in underway.pending:
            return
        if commit is None:
            self._cannot(now, f"abandoned: {table.name} did not commit at the cut", after_s=self.interval_s)
            return
        underway.tables[table.name]["commit"] = commit
        underway.quarantined[table.name] = underway.quarantined.get(table.name, 0) + quarantined
        underway.pending.discard(table.name)
        self._maybe_record(now)

    def release(self, tables: Iterable[TableState]) -> None:
        """The run stops: a cut under way is not recorded, and no table stays bounded."""
        for table in tables:
            table.until = None
        self.underway = None

    def _maybe_record(self, now: float) -> None:
        underway = self.underway
        if underway is None or underway.plan is None or underway.pending:
            return
        number = int((self.store.newest or {}).get("id", 0)) + 1
        partial = {n: {"quarantined": q} for n, q in sorted(underway.quarantined.items()) if q}
        cut = new_cut(underway.plan, underway.topic, underway.tables, underway.left_out, number, partial=partial)
        self.store.record(cut, keep=self.spec.run.cut_retention)
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
        self.next_at = now + self.interval_s


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="seconds")
