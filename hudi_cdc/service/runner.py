"""Many tables, one process, one Spark application: the database-wide run above :mod:`hudi_cdc.pipeline`.

The runner discovers the pipeline's tables, runs their rounds (one
``ingest_once`` each) on a bounded pool of threads, each table in a Spark fair
scheduler pool of its own, so a table with a big backlog does not hold the
freshness of the others, and keeps per-table state:

- a transient failure (a broker restarting) is retried with backoff until the
  table has been failing for its ``retry_timeout_seconds``; then, or at once
  for a terminal failure (bad settings, an incompatible schema change), the
  table is *failed*. The other tables go on either way; a failed table waits
  for ``hudi-cdc resume`` (or a restart).
- pause, resume and remove come from :mod:`hudi_cdc.service.control`, read
  before every scheduling decision; a paused table's round under way finishes.
  A table's own folder keeps its pause and remove too, for runners sharing the
  pipeline: read when this runner takes the table's lease (before its first
  round under it) and at every discovery.
- a new topic (or folder) matching the patterns is picked up at the next
  discovery, without a restart.
- with ``[source] schema_change_topic``, a table dropped at the source is
  applied up to what was published before the drop, then *dropped*
  (:mod:`hudi_cdc.service.schema_changes`).

In a continuous run on Kafka the runner watches every table's end offsets
(:mod:`hudi_cdc.service.offset_watch`, one request for all topics every
``[run] offset_poll_seconds``): a table whose topic has nothing new gets no
round at all, and of the tables with something new the one whose oldest
unapplied change is nearest to (or furthest past) its ``max_freshness_seconds``
goes first (:mod:`hudi_cdc.service.schedule`). ``status`` and the metrics say
which tables miss their target and what they wait for.

With ``[run] consistent_cut_interval_seconds`` a continuous Kafka run also takes transaction-consistent
cuts of its tables (:mod:`hudi_cdc.service.cutter`): without waiting for the rounds under way, it plans a cut
at one source transaction from what the tables' rounds have read and claimed, bounds each table's next rounds
to end there, and records the cut once all committed at it.

It never repeats the pipeline's logic: every table's round is the same
``ingest_once`` a single-table ``ingest`` runs, with its checkpoint in its commit.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import socket
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from hudi_cdc.errors import ConfigError, HudiCdcError, LeaseHeldError, TerminalError, TransientError, retry_backoff_s
from hudi_cdc.service import control
from hudi_cdc.service.backlog import BacklogWatch
from hudi_cdc.service.metrics import PipelineMetrics
from hudi_cdc.service.schedule import Arrivals, committed_offsets, deadline, next_wait, shard_partition
from hudi_cdc.service.spec import PipelineSpec, TableRef, select
from hudi_cdc.service.states import DONE, DROPPED, FAILED, PAUSED, REMOVED, RETRYING, RUNNING, WAITING, TableState
from hudi_cdc.sink import lease as leases
from hudi_cdc.sink.compaction import Compactor
from hudi_cdc.sink.object_store import configure_table

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from hudi_cdc.config import IngestConfig
    from hudi_cdc.pipeline import IngestResult
    from hudi_cdc.service.cutter import Cutter
    from hudi_cdc.service.offset_watch import OffsetWatch
    from hudi_cdc.sources.base import Source

__all__ = ["RunReport", "Runner", "TableState"]

Repairer = Callable[["SparkSession", "IngestConfig", dict[str, Any], Callable[[], None]], dict[str, Any]]
"""Runs a repair request on a table (its settings, the request, a function that runs one of its rounds) and
returns the outcome: ``hudi_cdc.ops.repair.requested_repair``."""

log = logging.getLogger("hudi_cdc.runner")

_IDLE_POLL_S = 1.0  # how often control files are read while nothing finishes
_JVM_CHECK_S = 5.0  # how often the loop asks whether the driver JVM still answers


@dataclass
class RunReport:
    """The end of a run: every table's state; ``failed`` names the failed ones."""

    pipeline: str
    tables: dict[str, TableState]

    @property
    def failed(self) -> list[str]:
        return sorted(n for n, t in self.tables.items() if t.state == FAILED)

    @property
    def dropped(self) -> list[str]:
        return sorted(n for n, t in self.tables.items() if t.state == DROPPED)

    @property
    def exit_code(self) -> int:
        return 1 if self.failed else 0


class Runner:
    def __init__(
        self,
        spec: PipelineSpec,
        spark: SparkSession,
        *,
        tables: Sequence[str] = (),
        continuous: bool = False,
        max_rounds: int | None = None,
        on_round: Callable[[TableState, IngestResult | None], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        repairer: Repairer | None = None,
    ) -> None:
        """``max_rounds``: rounds per table before the run ends (continuous; one-shot runs one).

        ``repairer`` runs a table's repair request (``control.request_repair``) as its next round, the table's one
        writer (``hudi_cdc.ops.repair.requested_repair``, passed in by the shells: it sits a layer above).
        """
        self.repairer = repairer
        self.spec = spec
        self.spark = spark
        self.wanted = tuple(tables)
        self.continuous = continuous
        self.rounds_wanted = max_rounds if continuous else 1
        self.on_round = on_round
        self.clock = clock
        self.state_dir = spec.run.state_dir
        self.tables: dict[str, TableState] = {}
        # One writer per table (sink.lease): the tables this runner holds; what it saw of the others' holders
        # and of runners waiting for a table (runners sharing a pipeline split its tables through the leases).
        self._leases: dict[str, leases.TableLease] = {}
        self._holders: dict[str, leases.LeaseRecord] = {}
        self._wanting: dict[str, float] = {}  # another runner's owner id -> when it was last seen waiting
        self._refused_since: dict[str, float] = {}  # one-shot runs: since when a table's lease was refused
        self._me: leases.LeaseOwner | None = None  # this runner as the owner of its leases
        # What the tables' own folders say (pause, remove, last resume: control.table_flags), for the tables it
        # holds and those its state folder pauses or removes; read at a lease's taking and at every discovery.
        self._table_flags: dict[str, control.TableFlags] = {}
        # The MERGE_ON_READ tables' compactions (compaction = "async", the default): run off the rounds' path, one
        # at a time, for the tables whose lease this runner holds (made when the first such table is taken).
        self._compactor: Compactor | None = None
        self.lease_expiry_s = float(spec.defaults.get("lease_expiry_seconds", leases.DEFAULT_EXPIRY_S))
        self.metrics = PipelineMetrics(spec.name)
        self.backlog = BacklogWatch(
            spark, spec, self._watched, self.metrics.set_backlog, interval_s=spec.run.backlog_interval_seconds
        )
        self._stop = threading.Event()
        self._next_discovery = 0.0
        self._next_jvm_check = 0.0
        self._discovered_once = False
        self._written: tuple[Any, ...] | None = None  # what status.json was last written from
        self._offsets = self._offset_watch() if continuous else None
        self._cutter = self._new_cutter()
        self._schema_changes = None
        if spec.source.schema_change_topic:
            from hudi_cdc.service.schema_changes import SchemaChangeWatcher
            from hudi_cdc.sources.kafka import client_conf
            from hudi_cdc.sources.kafka_security import KafkaSecurity
            from hudi_cdc.sources.registry import RegistryLogin

            self._schema_changes = SchemaChangeWatcher(
                spec.source.schema_change_topic,
                bootstrap_servers=str(spec.source.bootstrap_servers),
                schema_registry_url=spec.source.schema_registry_url,
                client_conf=client_conf(spec.defaults.get("hoodie_conf", {}), KafkaSecurity.of(spec.source)),
                registry_login=RegistryLogin.of(spec.source),
            )

    def stop(self) -> None:
        """End the run once the rounds under way have finished (a signal handler may call it)."""
        self._stop.set()

    def _new_cutter(self) -> Cutter | None:
        """A continuous Kafka run's consistent cuts, when ``[run] consistent_cut_interval_seconds`` is set."""
        interval = self.spec.run.consistent_cut_interval_seconds
        if not (self.continuous and interval and self.spec.source.kind == "kafka"):
            return None
        from hudi_cdc.service.cutter import Cutter

        return Cutter(self.spec, self.spark, interval, self.clock(), metrics=self.metrics)

    def _offset_watch(self) -> OffsetWatch | None:
        """A continuous Kafka run's watch on its tables' end offsets (other sources: every table every round)."""
        if self.spec.source.kind != "kafka":
            return None
        from hudi_cdc.service.offset_watch import OffsetWatch
        from hudi_cdc.sources.kafka import broker_conf
        from hudi_cdc.sources.kafka_security import KafkaSecurity

        def topics() -> list[str]:
            return sorted({s for t in list(self.tables.values()) if t.arrivals is not None for s in _topics_of(t)})

        return OffsetWatch(
            str(self.spec.source.bootstrap_servers),
            broker_conf(self.spec.defaults.get("hoodie_conf", {}), KafkaSecurity.of(self.spec.source)),
            topics,
            interval_s=self.spec.run.offset_poll_seconds,
            clock=self.clock,
        )

    # -- tables ------------------------------------------------------------
    def _watched(self) -> dict[str, tuple[str, IngestConfig]]:
        """The tables whose backlog is measured: all with settings (running, waiting, paused, failed...)."""
        return {t.name: (t.topic, t.config) for t in list(self.tables.values()) if t.config is not None}

    def _discover(self) -> None:
        from hudi_cdc.service.discovery import discover

        try:
            refs = discover(self.spark, self.spec)
        except Exception as exc:
            # A files source lists through the JVM, and wraps what py4j raises once the JVM is gone.
            self._check_jvm(self.clock(), force=True)
            if not isinstance(exc, HudiCdcError):
                raise
            if not self._discovered_once or not exc.transient:
                raise
            log.warning("discovery failed (%s); the known tables go on", exc)
            return
        if not self._discovered_once:  # before any round: a section that matches no table stops the run here
            self.spec.check_sections(refs)
        refs = [r for r in refs if self.spec.enabled(r)]
        refs, refused = self.spec.routed(refs)  # [[routes]]: targets, merged tables (docs/routing.md)
        refs = [r for r in refs if self.spec.enabled(r)]
        for name, message in refused.items():
            if name not in self.tables and (not self.wanted or name in self.wanted):
                self.tables[name] = self._refused(TableState(name=name, topic=name, target=""), message)
        if self.wanted:
            refs = (
                select(refs, self.wanted)
                if not self._discovered_once
                else [r for r in refs if r.name in self.wanted or r.topic in self.wanted]
            )
        names: dict[str, str] = {}
        for ref in refs:
            if ref.name in names and names[ref.name] != ref.topic:
                raise ConfigError(
                    f"{self.spec.origin}: topics {names[ref.name]} and {ref.topic} are both table {ref.name}: "
                    "narrow [source] tables to one server"
                )
            names[ref.name] = ref.topic
            if ref.merged and ref.name in self.tables:
                self._join_shards(self.tables[ref.name], ref)
            if ref.name not in self.tables:
                self.tables[ref.name] = self._new_table(ref)
                if self._discovered_once:
                    log.info(
                        "new table %s (topic %s, target %s): replicating it from now on",
                        ref.name,
                        ref.topic,
                        self.tables[ref.name].target or "none: its settings were refused",
                    )
        if not self._discovered_once and not self.tables:
            raise ConfigError(
                f"{self.spec.origin}: no table of the source matches [source] tables = {list(self.spec.source.tables)}"
            )
        self._discovered_once = True
        self._follow_schema_changes()

    def _follow_schema_changes(self) -> None:
        """Mark tables dropped at the source (they drain, then stop); a table made again comes back."""
        if self._schema_changes is None:
            return
        try:
            self._schema_changes.poll()
        except HudiCdcError as exc:
            log.warning(
                "schema-change topic %s not read (%s); tried again at the next discovery",
                self._schema_changes.topic,
                exc,
            )
            return
        dropped = self._schema_changes.dropped()
        for table in self.tables.values():
            drop = dropped.get(table.name)
            if drop is not None and table.dropped_at_source is None:
                table.dropped_at_source = drop.describe()
                log.warning(
                    "%s: dropped at the source (%s): applying what came before, then stopping",
                    table.name,
                    table.dropped_at_source,
                )
            elif drop is None and table.dropped_at_source is not None:
                log.info("%s: created again at the source: replicating it again", table.name)
                table.dropped_at_source = None
                if table.state == DROPPED:
                    table.state, table.due = WAITING, 0.0

    def _join_shards(self, table: TableState, ref: TableRef) -> None:
        """A merged table's new shards (topics matching its route since): read from their beginning from its next
        round on, the others from their checkpoint (``hudi_cdc.sources.merged``)."""
        new = [s for s in ref.shards if s not in table.shards]
        if not new or table.config is None:
            return
        try:
            table.config = self.spec.table_config(ref)
        except ConfigError as exc:
            log.error("%s: new shard(s) %s not joined: %s", table.name, ", ".join(new), exc)
            return
        table.shards = ref.shards
        if table.arrivals is not None:  # its watched partitions are numbered anew: unknown until its next round
            table.arrivals = Arrivals()
        log.info("%s: shard(s) %s join the merged table, read from their beginning", table.name, ", ".join(new))

    def _new_table(self, ref: TableRef) -> TableState:
        """A table's state; its settings' problem (or a target another table has) fails it alone."""
        topic = ref.topic if ref.merged else ref.source_topic  # a merged table's topics: its shards
        try:
            config = self.spec.table_config(ref)
        except ConfigError as exc:
            return self._refused(TableState(name=ref.name, topic=topic, target="", shards=ref.shards), str(exc))
        table = TableState(name=ref.name, topic=topic, target=config.target_base_path, config=config, shards=ref.shards)
        table.freshness_target_s = config.max_freshness_seconds
        if self._offsets is not None:
            table.arrivals = Arrivals()
        other = next((t.name for t in self.tables.values() if t.target == table.target), None)
        if other is not None:
            message = (
                f"{self.spec.origin}: tables {other} and {table.name} would both write {table.target}: "
                "put {schema} and {table} in target_base_path"
            )
            return self._refused(table, message)
        return table

    @staticmethod
    def _refused(table: TableState, message: str) -> TableState:
        table.state, table.last_error, table.last_error_kind = FAILED, message, "terminal"
        table.failures = table.failures_total = 1
        log.error("failed table=%s kind=terminal error=%s", table.name, message)
        return table

    # -- the loop ----------------------------------------------------------
    def run(self) -> RunReport:
        self._check_scheduler()
        stop_serving = None
        if self.continuous and self.spec.run.metrics_port:
            stop_serving = self.metrics.serve(self.spec.run.metrics_port, self.spec.run.metrics_address)
            self.backlog.start()
            log.info("metrics on http://%s:%d/metrics", self.spec.run.metrics_address, self.spec.run.metrics_port)
        if self._offsets is not None:
            self._offsets.start()
        try:
            self._loop()
        finally:
            if self._compactor is not None:
                # A run that ends by itself (one-shot, --max-rounds): the plans its last rounds scheduled run now,
                # every round done, under the leases; a stop leaves a plan not yet started to the next run.
                self._compactor.close(drain=not self._stop.is_set())
            self._release_leases()
            if self._offsets is not None:
                self._offsets.stop()
            self.backlog.stop()
            if stop_serving is not None:
                stop_serving()
        self._write_status(ended=True)
        if self.spec.run.pushgateway_url:
            try:
                self.backlog.refresh()
                self.metrics.push(self.spec.run.pushgateway_url)
            except HudiCdcError as exc:
                log.error("%s (the tables' results stand)", exc)
        return RunReport(self.spec.name, dict(self.tables))

    def _loop(self) -> None:
        workers = self.spec.run.max_concurrent_tables
        running: dict[Future[IngestResult], TableState] = {}
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="hudi-cdc-table") as pool:
            while True:
                now = self.clock()
                stopping = self._stop.is_set()  # then no round starts: nothing to discover (its JVM may be gone)
                if now >= self._next_discovery and (self.continuous or not self._discovered_once) and not stopping:
                    self._discover()
                    self._next_discovery = now + self.spec.run.discovery_interval_seconds
                    self._read_table_flags()
                self._apply_control()
                self._check_jvm(now)
                self._take_sightings()
                if self._cutter is not None and not self._stop.is_set():
                    self._cutter.step(now, self.tables.values())
                if not self._stop.is_set():
                    for table in self._due(now, workers - len(running)):
                        self._start(table, now)
                        running[pool.submit(self._round, table)] = table
                self._write_status()
                if not running and (self._stop.is_set() or self._finished()):
                    if self._cutter is not None:
                        self._cutter.release(self.tables.values())  # a cut not whole is not recorded
                    return
                timeout = self._sleep_for(now, workers - len(running)) if not self._stop.is_set() else None
                if not running:  # wait() on no futures returns at once: an idle runner would spin on a core
                    self._stop.wait(timeout)
                    continue
                done, _ = wait(list(running), timeout=timeout, return_when=FIRST_COMPLETED)
                for future in done:
                    self._finish(running.pop(future), future)

    def _check_jvm(self, now: float, *, force: bool = False) -> None:
        """Stop the run when the driver JVM is gone (killed, or out of memory): no round can run again, and a
        process that stayed would hold its tables from the supervisor's restart while it polled Kafka."""
        from hudi_cdc._jvm import jvm_alive

        if not force and now < self._next_jvm_check:
            return
        if self._stop.is_set():  # a JVM gone with the stop's own signal (SIGTERM to the process group) is the stop
            return
        self._next_jvm_check = now + _JVM_CHECK_S
        if not jvm_alive(self.spark):
            raise TerminalError(
                f"pipeline {self.spec.name}: the Spark driver's JVM is gone (killed, or it crashed): the run stops; "
                "committed rounds stand and the next run resumes from each table's checkpoint"
            )

    def _check_scheduler(self) -> None:
        mode = self.spark.sparkContext.getConf().get("spark.scheduler.mode", "FIFO")
        if mode != "FAIR" and self.spec.run.max_concurrent_tables > 1:
            log.warning(
                "the Spark session runs jobs FIFO: a big round of one table can hold the others' rounds. "
                "Start it with spark.scheduler.mode=FAIR (hudi-cdc run does)"
            )

    def _due(self, now: float, slots: int) -> list[TableState]:
        """The tables to start now: with something to do, a repair asked for first (someone waits for its
        outcome, and a runner that took tables over runs it before their catch-up rounds), then earliest
        deadline first."""
        ready = [
            t for t in self.tables.values() if t.state in (WAITING, RETRYING) and t.due <= now and self._has_work(t)
        ]
        ready.sort(key=lambda t: (t.repair is None, deadline(self._waiting_since(t), t.freshness_target_s), t.name))
        chosen: list[TableState] = []
        for table in ready:
            held = table.name in self._leases
            if len(chosen) >= slots and held:
                continue
            # A table another process held is asked for even with no slot free: a dead runner's tables are
            # taken within their lease's expiry, not after this runner's own rounds.
            try:
                writable = self._may_write(table, now)
            except (HudiCdcError, OSError) as exc:  # the lease's store did not answer: a failed round, retried
                self._lease_failed(table, exc, now)
                writable = False
            if writable and len(chosen) < slots:
                chosen.append(table)
        return chosen

    # -- one writer per table: the leases ----------------------------------
    def _lease_failed(self, table: TableState, exc: BaseException, now: float) -> None:
        """A lease that could not be read or written (a full disk, the store down) fails the table's round as
        any write would: counted, shown in status with its cause, retried with backoff (transient unless
        hudi-cdc classed it terminal), and reported to ``on_round``; never a table silently left waiting."""
        if not isinstance(exc, HudiCdcError):
            exc = TransientError(f"{table.name}: its writer lease could not be read or taken: {exc}")
        self._failed(table, exc, now)
        self.metrics.observe(table, None)
        if self.on_round:
            self.on_round(table, None)

    def _may_write(self, table: TableState, now: float) -> bool:
        """Whether this runner holds (or now takes) the table's writer lease; else the table waits and is asked
        for again later. A continuous run takes a free table only while it holds fewer than its share of the
        pipeline's tables among the runners it knows of, so that runners sharing a pipeline split it."""
        assert table.config is not None
        lease = self._leases.get(table.name)
        if lease is not None:
            if lease.held:
                return self._flags_allow(table, fresh=False)
            self._drop_lease(table.name)  # taken over while this process did not renew it (paused)
        configure_table(self.spark, table.config)  # an s3a:// table's buckets, before its folder is first read
        holder = leases.lease_holder(table.target, spark=self.spark)
        mine = holder is not None and holder.owner.id == leases.process_owner_id() and holder.live()
        if holder is not None and holder.live() and not mine:
            return self._held_elsewhere(table, holder, now)
        self._holders.pop(table.name, None)
        if self.continuous and len(self._leases) >= self._share():
            table.writer = "free: another runner of the pipeline takes it (this one holds its share)"
            table.due = now + self._lease_retry_s(table)
            return False
        lease = leases.TableLease(
            table.target, owner=self._owner(table), expiry_s=table.config.lease_expiry_seconds, spark=self.spark
        )
        refused_by = lease.try_acquire()
        if refused_by is not None:
            return self._held_elsewhere(table, refused_by, now)
        leases.register(lease)  # the rounds' own holds (pipeline.ingest_once) are this lease
        self._leases[table.name] = lease
        self._refused_since.pop(table.name, None)
        table.writer = "this runner"
        log.info("%s: writer lease taken (%s)", table.name, table.target)
        if table.config.async_compaction:
            self._compact(table)
        return self._flags_allow(table, fresh=True)

    def _compact(self, table: TableState) -> None:
        """Run the table's compactions off its rounds' path from now on (a plan left pending runs at once)."""
        from hudi_cdc.pipeline import compaction_options

        assert table.config is not None
        if self._compactor is None:
            self._compactor = Compactor(self.spark)
        self._compactor.add(table.target, compaction_options(table.config))

    def _flags_allow(self, table: TableState, *, fresh: bool) -> bool:
        """Whether the table's own folder lets a round start: read when the lease was just taken (``fresh``: a
        pause or remove given through another runner's state folder, or while another runner held the table,
        holds before this runner's first round), else as last read (at the last discovery)."""
        assert table.config is not None
        if fresh or table.name not in self._table_flags:
            self._table_flags[table.name] = control.table_flags(table.target, spark=self.spark)
        found = self._table_flags[table.name]
        flag = control.REMOVED if found.removed is not None else control.PAUSED if found.paused is not None else None
        if flag is None:
            return True
        table.state = REMOVED if flag == control.REMOVED else PAUSED
        log.info(
            "%s: %s in the table's own folder (%s/%s): no round until `hudi-cdc resume`",
            table.name,
            found.describe(flag),
            table.target,
            control.TABLE_CONTROL_FOLDER,
        )
        return False

    def _read_table_flags(self) -> None:
        """At each discovery: read again the own folders of the tables this runner holds, and of those its state
        folder pauses or removes (a resume given through another runner's state folder makes those stale)."""
        local = control.instructions(self.state_dir)
        for table in list(self.tables.values()):
            own = local.get(table.name, set())
            if table.config is not None and (table.name in self._leases or own & {control.PAUSED, control.REMOVED}):
                self._read_flags_of(table, own)

    def _read_flags_of(self, table: TableState, own: set[str]) -> control.TableFlags | None:
        """Read the table's own folder now (``own``: the state folder's flags of it); None if it cannot be read.

        A pause or remove found only in the state folder (a file made by hand, or by ``control.pause`` without the
        table's folder) is not carried to the table's folder: it stays this runner's, and so does its resume."""
        before = self._table_flags.get(table.name)
        try:
            found = control.table_flags(table.target, spark=self.spark)
        except (HudiCdcError, OSError) as exc:
            log.warning(
                "%s: its control flags in %s/%s could not be read (%s): read again at the next discovery",
                table.name,
                table.target,
                control.TABLE_CONTROL_FOLDER,
                exc,
            )
            return None
        self._table_flags[table.name] = found
        resumed = before is not None and found.resumed_at != before.resumed_at
        if resumed and table.state == FAILED and control.RETRY not in own:
            log.info("%s: resumed through another state folder: trying again", table.name)
            table.state, table.failures, table.failing_since, table.failing_since_s = WAITING, 0, None, None
            table.due = 0.0
        return found

    def _held_elsewhere(self, table: TableState, holder: leases.LeaseRecord, now: float) -> bool:
        """Another live process writes the table: note who (status shows it) and ask again later; a one-shot
        run fails the table once its lease_wait_seconds are over."""
        assert table.config is not None
        self._holders[table.name] = holder
        table.writer = holder.describe()
        if self.continuous:
            if holder.owner.pipeline == self.spec.name and len(self._leases) < self._share():
                leases.TableLease(table.target, owner=self._owner(table), spark=self.spark).want()
        else:
            since = self._refused_since.setdefault(table.name, now)
            if now - since >= table.config.lease_wait_seconds:
                self._refused_since.pop(table.name, None)
                self._failed(table, LeaseHeldError(leases.refusal(table.target, holder)), now)
                return False
        table.due = now + self._lease_retry_s(table)
        return False

    def _owner(self, table: TableState) -> leases.LeaseOwner:
        if self._me is None:
            self._me = leases.LeaseOwner.here(
                f"hudi-cdc run {self.spec.name}",
                spark=self.spark,
                pipeline=self.spec.name,
                state_dir=os.path.abspath(self.state_dir),
            )
        return dataclasses.replace(self._me, table=table.name)

    @staticmethod
    def _lease_retry_s(table: TableState) -> float:
        """How often a table another process holds is asked for: a few times per expiry."""
        expiry = table.config.lease_expiry_seconds if table.config is not None else leases.DEFAULT_EXPIRY_S
        return max(0.5, min(expiry / 4, 10.0))

    def _runners(self) -> set[str]:
        """The owner ids of the pipeline's live runners this one knows of: itself, the live holders of its
        tables, and runners that asked for one of its tables within an expiry."""
        now = time.time()
        found = {leases.process_owner_id()}
        found |= {h.owner.id for h in self._holders.values() if h.owner.pipeline == self.spec.name and h.live(now)}
        found |= {o for o, at in self._wanting.items() if now - at <= self.lease_expiry_s}
        return found

    def _share(self) -> int:
        tables = sum(1 for t in self.tables.values() if t.config is not None)
        return max(1, math.ceil(tables / len(self._runners())))

    def _hand_over(self, table: TableState, now: float) -> None:
        """After a round: hand the table to a runner waiting for it, when this one holds more than its share."""
        lease = self._leases.get(table.name)
        if not self.continuous or lease is None or table.state != WAITING or table.repair is not None:
            return
        waiting = leases.waiters(table.target, spark=self.spark, within_s=self.lease_expiry_s)
        waiting.pop(leases.process_owner_id(), None)
        waiting = {k: v for k, v in waiting.items() if v.pipeline == self.spec.name}
        if not waiting:
            return
        wall = time.time()
        for owner in waiting:
            self._wanting[owner] = wall
        if len(self._leases) <= self._share():
            return
        self._drop_lease(table.name)
        table.writer = "handed over to " + ", ".join(o.describe() for o in waiting.values())
        table.due = now + 3 * self._lease_retry_s(table)  # the waiting runner takes it meanwhile
        log.info("%s: handed over to a runner waiting for it (this one held more than its share)", table.name)

    def _drop_lease(self, name: str) -> None:
        self._table_flags.pop(name, None)  # read again when this runner takes the table next
        lease = self._leases.pop(name, None)
        if lease is not None:
            if self._compactor is not None:
                self._compactor.remove(lease.base_path)  # after its compaction under way: the lease covers it
            leases.unregister(lease)

    def _release_leases(self) -> None:
        for name in list(self._leases):
            self._drop_lease(name)

    def _has_work(self, table: TableState) -> bool:
        """False only for a watched table known to hold every message its topic has: it costs no round."""
        if table.until is not None or table.repair is not None:
            return True
        arrivals = table.arrivals
        if arrivals is None or not arrivals.known or self._offsets is None or self._offsets.failing:
            return True
        return table.state == RETRYING or arrivals.pending_since() is not None

    @staticmethod
    def _waiting_since(table: TableState) -> float:
        """Since when the table's oldest unapplied change waits: first seen (Kafka), else since it was due."""
        since = table.arrivals.pending_since() if table.arrivals is not None else None
        return since if since is not None else table.due

    def _take_sightings(self) -> None:
        """Give each watched table what the offset watch saw; a table dropped at the source and idle is done."""
        if self._offsets is None:
            return
        for when, ends in self._offsets.take():
            for table in self.tables.values():
                if table.arrivals is None:
                    continue
                topics = _topics_of(table)
                if len(topics) == 1 and topics[0] in ends:
                    table.arrivals.observe(when, ends[topics[0]])
                elif len(topics) > 1:  # a merged table: every shard's partitions, numbered as one
                    seen = {shard_partition(n, p): o for n, t in enumerate(topics) for p, o in ends.get(t, {}).items()}
                    table.arrivals.observe(when, seen)
        now = self.clock()
        for table in self.tables.values():
            if table.arrivals is None:
                continue
            since = table.arrivals.pending_since()
            self.metrics.set_pending(table.name, 0.0 if since is None else now - since)
            idle = table.arrivals.known and since is None and not self._offsets.failing
            if table.dropped_at_source is not None and idle and table.state == WAITING:
                table.state = DROPPED
                log.warning("%s: dropped at the source and fully applied: no more rounds", table.name)

    def _start(self, table: TableState, now: float) -> None:
        from hudi_cdc.pipeline import RoundSteps

        table.state = RUNNING
        table.steps = RoundSteps()
        table.round_started_s = now
        # Unknown before the watch's first look (the run's first rounds): that round is not judged.
        table.round_waiting_since_s = table.arrivals.pending_since() if table.arrivals is not None else None

    def _finished(self) -> bool:
        return all(t.state in (DONE, FAILED, PAUSED, REMOVED, DROPPED) for t in self.tables.values())

    def _sleep_for(self, now: float, free_slots: int) -> float:
        due_in = [t.due - now for t in self.tables.values() if t.state in (WAITING, RETRYING) and self._has_work(t)]
        others = [self._next_discovery - now] if self.continuous else []
        if self._offsets is not None and free_slots > 0:
            others.append(self.spec.run.offset_poll_seconds)  # what the watch saw meanwhile starts rounds
        return next_wait(due_in, free_slots, others, _IDLE_POLL_S)

    def _apply_control(self) -> None:
        flags = control.instructions(self.state_dir)
        for table in self.tables.values():
            own = flags.get(table.name, set())
            found = self._table_flags.get(table.name)
            if found is not None and control.RETRY in own and table.config is not None:
                found = self._read_flags_of(table, own) or found  # a resume through this folder: now, not later
            if found is not None:
                own = self._with_table_flags(table, own, found)
            if control.RETRY in own and control.take_retry(self.state_dir, table.name) and table.state == FAILED:
                if table.config is None:  # its settings were refused: only a restart re-reads the file
                    log.error("%s: cannot retry: fix its settings in %s and restart", table.name, self.spec.origin)
                else:
                    log.info("%s: retry asked for: trying again", table.name)
                    table.state, table.failures, table.failing_since, table.failing_since_s = WAITING, 0, None, None
                    table.due = 0.0
            if table.state == RUNNING:
                continue  # a round under way finishes; the flags apply after it
            if control.REPAIR in own and table.state in (WAITING, RETRYING) and table.repair is None:
                self._take_repair(table)
            if control.REMOVED in own:
                table.state = REMOVED
            elif control.PAUSED in own:
                table.state = PAUSED if table.state != FAILED else FAILED
            elif table.state in (PAUSED, REMOVED):
                log.info("%s: resumed", table.name)
                table.state = WAITING if not self._done_rounds(table) else DONE

    def _with_table_flags(self, table: TableState, own: set[str], found: control.TableFlags) -> set[str]:
        """The state folder's flags with the table folder's: a pause or remove in the state folder older than the
        table's last resume (given through another runner's state folder) is stale, and deleted."""
        for flag in sorted(control.stale_flags(self.state_dir, table.name, own, found)):
            since = control.flag_time(self.state_dir, table.name, flag)
            control.drop_flag(self.state_dir, table.name, flag)
            log.info(
                "%s: %s in this runner's state folder since %s, resumed since (the table's folder, %s): no longer %s",
                table.name,
                flag,
                control.iso_time(since or 0.0),
                control.iso_time(found.resumed_at or 0.0),
                flag,
            )
            own = own - {flag}
        return own | found.flags

    def _take_repair(self, table: TableState) -> None:
        """A repair request becomes the table's next round, now (a settings-refused table cannot run one)."""
        if self.repairer is None or table.config is None:
            return
        table.repair = control.pending_repair(self.state_dir, table.name)
        if table.repair is not None:
            log.info("%s: repair %s asked for: it runs as the table's next round", table.name, table.repair["id"])
            table.due = 0.0

    def _done_rounds(self, table: TableState) -> bool:
        return self.rounds_wanted is not None and table.rounds >= self.rounds_wanted

    # -- one round of one table (on a worker thread) -------------------------
    def _round(self, table: TableState) -> IngestResult:
        from hudi_cdc.checks.validate import preflight
        from hudi_cdc.pipeline import ingest_once

        assert table.config is not None
        context = self.spark.sparkContext
        context.setLocalProperty("spark.scheduler.pool", table.name)
        context.setJobDescription(f"hudi-cdc {self.spec.name} {table.name}")
        if not table.checked:
            preflight(table.config, spark=self.spark)
            table.checked = True
        if self._compactor is not None:
            self._compactor.check(table.target)  # compaction failing again and again fails the table
        until, until_at = table.until, table.until_at  # read once: the cutter (on the loop) may lift it meanwhile
        if until is not None:
            return self._bounded_round(table, until, planned_at=until_at)
        if table.repair is not None:
            return self._repair_round(table, table.repair)
        return ingest_once(table.config, spark=self.spark, steps=table.steps, source=self._cut_source(table))

    def _cut_source(self, table: TableState) -> Source | None:
        """With consistent cuts, a Kafka table's round tells the cutter where it reads to as it plans, and ends
        at a cut's offsets planned before that (Cutter.claim); None: the configured source."""
        cutter = self._cutter
        config = table.config
        if cutter is None or config is None or config.source != "kafka" or config.shard_sources:
            return None
        from hudi_cdc.envelope.types import reader_schema
        from hudi_cdc.sources.kafka import KafkaSource

        return KafkaSource(
            self.spark, config, reader_schema=reader_schema, bound=lambda highs: cutter.claim(table, highs)
        )

    def _repair_round(self, table: TableState, request: dict[str, Any]) -> IngestResult:
        """Run a repair request as the table's writer: its recheck catches the table up with rounds of its own,
        where another process would wait for the runner. A failed repair leaves its error in the outcome, and
        the table goes on; one killed, or cut short by the runner's stop, runs again at the next start (the request
        stays until settled)."""
        from hudi_cdc.pipeline import IngestResult, ingest_once

        assert table.config is not None and self.repairer is not None
        config = table.config

        def catch_up() -> None:
            ingest_once(config, spark=self.spark, steps=table.steps)

        outcome = self._repaired_elsewhere(table, request)
        if outcome is None:
            started = time.time()
            try:
                outcome = self.repairer(self.spark, config, request, catch_up)
            except Exception as exc:  # noqa: BLE001 - a repair's failure is its outcome, not the table's
                from hudi_cdc._jvm import java_message

                if self._shutting_down():  # not the repair's failure: it runs again at the next start
                    raise TransientError(
                        f"{table.name}: repair {request['id']} interrupted by the runner's stop; its request stays "
                        f"in {self.state_dir}/control/ and runs at the next start"
                    ) from exc
                outcome = {"error": java_message(exc), "error_kind": type(exc).__name__}
                log.error("%s: repair %s failed: %s", table.name, request["id"], outcome["error"])
            else:
                self._record_repair(table, request, outcome, started)
        control.settle_repair(self.state_dir, table.name, request["id"], outcome)
        table.repair = None
        commits = [] if "already_done_by" in outcome else outcome.get("commits") or []  # none of this round's
        return IngestResult(
            table=config.target_table,
            base_path=config.target_base_path,
            commit_time=commits[-1] if commits else None,
            checkpoint=None,
            details={"repair": request["id"]},
        )

    def _repaired_elsewhere(self, table: TableState, request: dict[str, Any]) -> dict[str, Any] | None:
        """The outcome of the same repair done on the table since this request was written (a request left by
        this runner's killed run, the repair asked for again and done by the runner holding the table then);
        None: it runs. A table folder that cannot be read runs it (a repair is idempotent)."""
        assert table.config is not None
        requested_at = control.repair_requested_at(self.state_dir, table.name)
        try:
            done = control.repair_done_elsewhere(table.target, request, requested_at, spark=self.spark)
        except (HudiCdcError, OSError) as exc:
            log.warning(
                "%s: whether repair %s was done elsewhere is unknown (%s): it runs", table.name, request["id"], exc
            )
            return None
        if done is not None:
            log.info("%s: repair %s %s", table.name, request["id"], done["described"])
        return done

    def _record_repair(
        self, table: TableState, request: dict[str, Any], outcome: dict[str, Any], started: float
    ) -> None:
        """Keep the repair in the table's folder, so the same request left in another runner's state folder is
        settled as done there rather than run again."""
        try:
            control.record_repair(
                table.target, request, outcome, started_at=started, by=self._owner(table).describe(), spark=self.spark
            )
        except (HudiCdcError, OSError) as exc:
            log.warning("%s: repair %s not recorded in the table's folder (%s)", table.name, request["id"], exc)

    def _shutting_down(self) -> bool:
        """A stop asked for (SIGTERM reaches the JVM too: it shuts its SparkContext down), or the driver JVM or
        its context gone: whatever fails now failed for that."""
        return self._stop.is_set() or self._context_gone()

    def _context_gone(self) -> bool:
        """The driver JVM gone, or its SparkContext stopped: no Spark job can run any more."""
        from hudi_cdc._jvm import jvm_alive

        if not jvm_alive(self.spark):
            return True
        try:
            return bool(self.spark.sparkContext._jsc.sc().isStopped())
        except Exception:  # noqa: BLE001 - a context that cannot say is going away
            return True

    def _bounded_round(
        self, table: TableState, until: dict[int, int], *, planned_at: float | None = None
    ) -> IngestResult:
        """Rounds of ``table`` that end exactly at a consistent cut's offsets (more than one with
        ``source_limit``); the commit holding exactly those is kept in ``table.cut_commit``. Its details say
        ``cut_bound``, and ``cut_wait_s``: how long after the cut's plan (``planned_at``) it started, since it
        reads only to the offsets planned then (what a cut costs a table's freshness)."""
        from hudi_cdc.envelope.types import reader_schema
        from hudi_cdc.pipeline import ingest_once
        from hudi_cdc.service.cutter import head_commit
        from hudi_cdc.sources.kafka import KafkaSource

        assert table.config is not None
        table.cut_commit = None
        quarantined = 0  # by every round of it: those events are missing from the cut
        while True:
            source = KafkaSource(self.spark, table.config, reader_schema=reader_schema, until=until)
            result = ingest_once(table.config, spark=self.spark, source=source, steps=table.steps)
            quarantined += result.quarantined
            head = head_commit(self.spark, table.config.target_base_path)
            if head is not None and head[1] == until:
                table.cut_commit = head[0]
                waited = {} if planned_at is None or table.round_started_s is None else {
                    "cut_wait_s": round(table.round_started_s - planned_at, 3)}  # fmt: skip
                details = {**result.details, "cut_bound": True, **waited}
                return dataclasses.replace(result, quarantined=quarantined, details=details)
            if head is None or result.events == 0 or any(head[1].get(p, 0) > o for p, o in until.items()):
                raise TransientError(
                    f"{table.name}: a round bounded at {until} for a consistent cut committed "
                    f"{head[1] if head else 'nothing'}: the cut is abandoned"
                )

    def _finish(self, table: TableState, future: Future[IngestResult]) -> None:
        now = self.clock()
        assert table.config is not None
        try:
            result = future.result()
        except Exception as exc:  # noqa: BLE001 - one table's failure must not end the others
            self._round_failed(table, exc, now)
            return
        if self._cutter is not None:  # at a cut under way's offsets, short of them, or not waited for
            self._cutter.round_ended(
                table,
                now,
                quarantined=result.quarantined,
                commit=result.commit_time,
                offsets=committed_offsets(result.checkpoint),
            )
        table.rounds += 1
        table.failures, table.failing_since, table.failing_since_s, table.last_error_kind = 0, None, None, None
        merged = table.config.shard_sources
        if table.arrivals is not None and (offsets := committed_offsets(result.checkpoint, merged)) is not None:
            table.arrivals.apply(offsets)
        self._judge_freshness(table, result, now)
        self._count_round(table, result)
        behind = int(result.details.get("behind_after", 0)) if result.committed else 0
        if table.dropped_at_source is not None and behind == 0:
            table.state = DROPPED  # all it published before the drop is in the table
            log.warning("%s: dropped at the source and fully applied: no more rounds", table.name)
        elif self._done_rounds(table):
            table.state = DONE
        else:
            table.state = WAITING
            table.due = now + max(table.config.min_sync_interval_seconds, 0.0)
            self._hand_over(table, now)
        self.metrics.observe(table, result)
        self.backlog.changed(table.name)
        if self.on_round:
            self.on_round(table, result)
        if self._compactor is not None and result.committed:
            self._compactor.notify(table.target)  # its commit may have scheduled a plan

    def _round_failed(self, table: TableState, exc: Exception, now: float) -> None:
        """A round that raised: cut short by the runner's own stop, or the table's failure."""
        if self._stop.is_set() and self._context_gone():
            # The stop's SIGTERM reached the JVM too (systemd signals the whole group), whose shutdown stopped
            # the SparkContext under the round: the stop's doing, not the table's. Nothing of the round was
            # committed (a pending instant is rolled back by the next writer); the next start resumes.
            if self._cutter is not None:
                self._cutter.round_done(table, None, now)
            table.state, table.due = WAITING, now
            log.warning(
                "%s: round cut short by the stop (the driver JVM's context stopped under it: %s); the next "
                "start resumes from the table's checkpoint",
                table.name,
                type(exc).__name__,
            )
            return
        self._check_jvm(now, force=True)  # unless it failed because no round can run any more
        if self._cutter is not None:
            self._cutter.round_done(table, None, now)
        self._failed(table, exc, now)
        self.metrics.observe(table, None)
        self.backlog.changed(table.name)
        if self.on_round:
            self.on_round(table, None)

    @staticmethod
    def _count_round(table: TableState, result: IngestResult) -> None:
        """Add a committed (or empty) round to the table's totals, its last round and the log."""
        table.events += result.events
        table.upserts += result.upserts
        table.deletes += result.deletes
        table.stale += result.stale
        table.quarantined += result.quarantined
        if result.committed:
            table.commits += 1
            table.last_commit = result.commit_time
        table.last_round = {
            "at": _iso(datetime.now(UTC)),
            "commit": result.commit_time,
            "events": result.events,
            "upserts": result.upserts,
            "deletes": result.deletes,
            "stale": result.stale,
            "quarantined": result.quarantined,
            "duration_s": round(result.duration_s, 3),
            "steps_s": result.steps_s,
        }
        log.info(
            "round table=%s commit=%s events=%d upserts=%d deletes=%d stale=%d superseded=%d quarantined=%d "
            "duration_s=%.2f",
            table.name,
            result.commit_time or "-",
            result.events,
            result.upserts,
            result.deletes,
            result.stale,
            result.superseded,
            result.quarantined,
            result.duration_s,
        )

    def _judge_freshness(self, table: TableState, result: IngestResult, now: float) -> None:
        """Count a committed round whose oldest change missed the table's target, with where its time went."""
        target, since, started = table.freshness_target_s, table.round_waiting_since_s, table.round_started_s
        if "repair" in result.details:  # a repair round applies no change of the stream: not judged
            return
        if not result.committed or table.arrivals is None or since is None or started is None:
            return
        age = now - since
        self.metrics.observe_age(table.name, age)
        if target is None or age <= target:
            return
        spent = {"waiting for a slot": max(0.0, started - since), **result.steps_s}
        cause = max(spent, key=lambda k: spent[k])
        table.freshness_missed += 1
        table.last_miss = f"{age:.1f} s against {target:g} s: " + ", ".join(
            f"{k} {v:.1f} s" for k, v in sorted(spent.items(), key=lambda kv: -kv[1]) if v >= 0.05
        )
        self.metrics.missed(table.name, cause)
        log.warning("freshness table=%s missed: %s", table.name, table.last_miss)

    def _failed(self, table: TableState, exc: BaseException, now: float) -> None:
        from hudi_cdc._jvm import java_message

        assert table.config is not None
        transient = isinstance(exc, HudiCdcError) and exc.transient
        message = str(exc) if isinstance(exc, HudiCdcError) else java_message(exc)
        if not isinstance(exc, HudiCdcError):
            log.debug("%s: unexpected failure", table.name, exc_info=exc)
        table.failures += 1
        table.failures_total += 1
        table.last_error = message
        table.last_error_kind = "transient" if transient else "terminal"
        if table.failing_since_s is None:
            table.failing_since_s = now
            table.failing_since = _iso(datetime.now(UTC))
        failing_for = now - table.failing_since_s
        limit = table.config.retry_timeout_seconds
        if transient and failing_for < limit and not self._stop.is_set():
            backoff = retry_backoff_s(table.failures, limit - failing_for)
            table.state, table.due = RETRYING, now + backoff
            log.warning(
                "failed table=%s kind=transient retry_in_s=%.0f failing_for_s=%.0f error=%s",
                table.name,
                backoff,
                failing_for,
                message,
            )
            return
        table.state = FAILED
        log.error(
            "failed table=%s kind=%s failing_for_s=%.0f error=%s (the other tables go on; "
            "`hudi-cdc resume` retries it)",
            table.name,
            table.last_error_kind,
            failing_for,
            message,
        )

    # -- status ------------------------------------------------------------
    def _write_status(self, *, ended: bool = False) -> None:
        """Rewrite ``status.json`` (and the state gauges) when a table's state, rounds or failures changed,
        and every pass while a table is late (its age and what it waits for move).

        The loop calls this every pass, up to once a second while idle; an unchanged file is not rewritten.
        """
        now, wall = self.clock(), datetime.now(UTC)
        for table in self.tables.values():
            self._freshness_now(table, now, wall)
        cut = self._cutter.underway_now() if self._cutter is not None else None
        cut_blocked = self._cutter.blocked_now() if self._cutter is not None else None
        seen = (
            ended,
            repr(cut),
            repr(cut_blocked),
            tuple(
                (
                    n,
                    t.state,
                    t.rounds,
                    t.failures_total,
                    t.due,
                    t.pending_since is None,
                    t.late and round(now),
                    t.writer,
                )
                for n, t in sorted(self.tables.items())
            ),
            int(now / (self.lease_expiry_s / 4)),  # the runner's heartbeat (control.runner_alive)
        )
        if seen == self._written:
            return
        self._written = seen
        for table in self.tables.values():
            waiting = table.state in (WAITING, RETRYING)
            table.next_round_at = _iso(wall + timedelta(seconds=max(0.0, table.due - now))) if waiting else None
        for table in self.tables.values():
            self.metrics.set_state(table)
        control.write_status(
            self.state_dir,
            {
                "pipeline": self.spec.name,
                "pipeline_file": self.spec.origin,
                "updated_at": _iso(datetime.now(UTC)),
                "pid": os.getpid(),
                "host": socket.gethostname(),
                "owner_id": leases.process_owner_id(),
                "heartbeat_at": time.time(),
                "heartbeat_expiry_s": self.lease_expiry_s,
                "continuous": self.continuous,
                "ended": ended,
                "tables": {n: t.to_dict() for n, t in sorted(self.tables.items())},
                "cut_underway": cut,
                "cut_blocked": cut_blocked,
            },
        )

    def _freshness_now(self, table: TableState, now: float, wall: datetime) -> None:
        """The table's oldest unapplied change as of now, and, past its target, what it is waiting for."""
        since = table.arrivals.pending_since() if table.arrivals is not None else None
        table.pending_since = None if since is None else _iso(wall - timedelta(seconds=now - since))
        table.oldest_pending_s = None if since is None else round(now - since, 1)
        target = table.freshness_target_s
        late = since is not None and target is not None and now - since > target
        table.late = self._waiting_for(table, now) if late else None

    def _waiting_for(self, table: TableState, now: float) -> str:
        if table.state == RUNNING and table.steps is not None and table.round_started_s is not None:
            step = table.steps.current or "finishing"
            return (
                f"its round, under way for {now - table.round_started_s:.0f} s: "
                f"in step {step} for {time.monotonic() - table.steps.since:.0f} s"
            )
        if table.state == WAITING and table.due > now:
            return f"min_sync_interval_seconds: its next round in {table.due - now:.0f} s"
        if table.state == WAITING:
            running = sum(1 for t in self.tables.values() if t.state == RUNNING)
            return (
                f"a free slot: {running} of max_concurrent_tables = {self.spec.run.max_concurrent_tables} "
                "rounds under way, tables nearer their deadline first"
            )
        if table.state == RETRYING:
            return f"a retry after a transient failure: {table.last_error}"
        return f"the table is {table.state}"


def _topics_of(table: TableState) -> tuple[str, ...]:
    """The topics a table reads: a merged table's shards, else its own."""
    merged = table.config.shard_sources if table.config is not None else ()
    return tuple(merged) or (table.topic,)


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="seconds")
