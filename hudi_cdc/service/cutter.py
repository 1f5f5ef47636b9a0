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
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hudi_cdc.errors import HudiCdcError
from hudi_cdc.service.cuts import CutPlan, CutStore, TableScan, new_cut, plan_cut
from hudi_cdc.service.schedule import committed_offsets
from hudi_cdc.service.states import RUNNING, WAITING, TableState

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from hudi_cdc.service.spec import PipelineSpec
    from hudi_cdc.sources.transactions import TransactionEnd, TransactionReader

__all__ = ["MISSES_BEFORE_FULL_READ", "Cutter", "head_commit"]

log = logging.getLogger("hudi_cdc.runner")

MISSES_BEFORE_FULL_READ = 5
"""Plans in a row without a boundary before the transaction topic is read from its start."""
RETRY_S = 2.0
"""A cut that found no boundary yet (a transaction still arriving) is tried again this soon."""


@dataclass
class _Underway:
    plan: CutPlan | None = None
    pending: set[str] = field(default_factory=set)  # tables whose bounded round has not committed yet
    tables: dict[str, dict[str, Any]] = field(default_factory=dict)  # name -> path, commit, offsets
    left_out: dict[str, str] = field(default_factory=dict)
    topic: str = ""  # the transaction topic


def head_commit(spark: SparkSession, base_path: str) -> tuple[str, dict[int, int]] | None:
    """The table's newest checkpoint commit and the Kafka offsets it holds; None before its first."""
    from hudi_cdc.sink import options as opt
    from hudi_cdc.sink.hudi import HudiTable

    commit = HudiTable(spark, base_path).checkpoint_commit()
    if commit is None:
        return None
    offsets = committed_offsets(json.loads(commit.extra[opt.CHECKPOINT_KEY]))
    return None if offsets is None else (commit.instant, offsets)


class Cutter:
    """Takes a pipeline's consistent cuts, every ``interval_s``; the runner calls it from its loop."""

    def __init__(self, spec: PipelineSpec, spark: SparkSession, interval_s: float, now: float) -> None:
        from hudi_cdc.sources.kafka import client_conf
        from hudi_cdc.sources.transactions import TransactionReader

        self.spec = spec
        self.spark = spark
        self.interval_s = interval_s
        self.store = CutStore.load(spec.run.state_dir)
        self.reader: TransactionReader = TransactionReader(
            str(spec.source.bootstrap_servers),
            str(spec.source.schema_registry_url),
            client_conf(spec.defaults.get("hoodie_conf", {})),
            flavor=spec.source.flavor,
        )
        self.next_at = now + interval_s
        self.underway: _Underway | None = None
        self.misses = 0  # plans in a row that found no boundary

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

    def holds(self, table: TableState) -> bool:
        """Whether ``table`` may not start a round of its own now."""
        return self.underway is not None and (self.underway.plan is None or table.name in self.underway.pending)

    def step(self, now: float, tables: Iterable[TableState]) -> None:
        """Start a cut when due; plan it once no round is under way."""
        tables = list(tables)
        if self.underway is None and now >= self.next_at:
            self.underway = _Underway()
        if self._stalled(tables):
            log.warning("consistent cut abandoned: a table it waits for was paused or removed meanwhile")
            self.release(tables)
            self.next_at = now + self.interval_s
            return
        if not self.draining or any(t.state == RUNNING for t in tables):
            return
        try:
            self._plan(tables)
        except Exception as exc:  # noqa: BLE001 - a cut that cannot be planned must not stop the tables
            again = RETRY_S if isinstance(exc, HudiCdcError) and exc.transient else self.interval_s
            log.warning("consistent cut not planned (%s); tried again in %.0f s", exc, again)
            self._again(now, again)
            return
        if self.underway is not None and self.underway.plan is None:
            self.misses += 1
            self._again(now, RETRY_S)
        else:
            self.misses = 0
            self._maybe_record(now)

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
        if not heads:
            return
        plan = plan_cut(self._ends(heads), self._scans(heads))
        if plan is None:
            log.info("consistent cut: no transaction boundary every table can end at yet")
            return
        for name, (table, instant, offsets) in heads.items():
            until = dict(plan.offsets[name])
            underway.tables[name] = {"path": table.target, "commit": instant, "offsets": until}
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

    def transaction_topic(self, topics: Iterable[str]) -> str:
        """``[source] transaction_topic``, else Debezium's default: ``<topic.prefix>.transaction``."""
        if self.spec.source.transaction_topic:
            return self.spec.source.transaction_topic
        from hudi_cdc.service.spec import TableRef

        servers = sorted({TableRef(t).parts["server"] for t in topics})
        return f"{servers[0]}.transaction"

    def _ends(self, heads: dict[str, tuple[TableState, str, dict[int, int]]]) -> list[TransactionEnd]:
        previous = self.store.newest
        joining = previous is None or any(name not in previous["tables"] for name in heads)
        # A transaction redelivered from before the previous cut has its END there: after a few plans that
        # found no boundary, the whole retained topic is read.
        joining = joining or self.misses >= MISSES_BEFORE_FULL_READ
        assert self.underway is not None
        topic = self.underway.topic = self.transaction_topic(t.topic for t, _, _ in heads.values())
        after = None if joining or previous is None else int(previous["transaction_offset"])
        return self.reader.ends(topic, after)

    def _scans(self, heads: dict[str, tuple[TableState, str, dict[int, int]]]) -> list[TableScan]:
        newest = self.store.newest or {}
        previous = newest.get("tables", {})
        scans = []
        for name, (table, _, offsets) in heads.items():
            before = {int(p): int(o) for p, o in previous.get(name, {}).get("offsets", {}).items()}
            starts = {p: min(before.get(p, o), o) for p, o in offsets.items()} if before else {}
            events, end = self.reader.events(table.topic, starts)
            ended_before = int(newest["transaction_offset"]) if before else -1
            scans.append(TableScan(name, offsets, events, end, ended_before))
        return scans

    def round_done(self, table: TableState, commit: str | None, now: float) -> None:
        """A bounded round of ``table`` ended: committed at the cut (``commit``) or not (None: cut abandoned)."""
        underway, table.until = self.underway, None
        if underway is None or table.name not in underway.pending:
            return
        if commit is None:
            log.warning("consistent cut abandoned: %s did not commit at the cut; the next is due in %.0f s",
                        table.name, self.interval_s)  # fmt: skip
            self._abandon(now)
            return
        underway.tables[table.name]["commit"] = commit
        underway.pending.discard(table.name)
        self._maybe_record(now)

    def _abandon(self, now: float) -> None:
        self.underway = None
        self.next_at = now + self.interval_s

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
        cut = new_cut(underway.plan, underway.topic, underway.tables, underway.left_out, number)
        self.store.record(cut)
        log.info("consistent cut %d recorded at transaction %s: %s", number, cut["transaction"],
                 ", ".join(f"{n}@{t['commit']}" for n, t in sorted(underway.tables.items())))  # fmt: skip
        self.underway = None
        self.next_at = now + self.interval_s
