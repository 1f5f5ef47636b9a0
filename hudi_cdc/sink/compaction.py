"""MERGE_ON_READ compaction off the rounds' path: a round's commit only schedules a plan; this runs it.

Inline, a compaction runs inside the round whose commit scheduled it, so every
change that arrives meanwhile waits for it and then for the next round: at
2,000 changes/s on a 100k-row table, a 3 s compaction in every fifth round,
and the changes that waited for one were the slowest 1%; a 100k-row round that
triggered one took 19-32 s (docs/tuning.md). With ``compaction = "async"`` (the
default) the round's commit only schedules the compaction (a plan on the
timeline) and the plan runs elsewhere, while the next rounds write new log
files, which Hudi keeps apart from the file slices being compacted:

- ``ingest`` and ``hudi-cdc run``: a :class:`Compactor`, one thread per
  process for all its tables, in a Spark fair scheduler pool of its own, runs
  each table's pending plans after a round that committed; a process whose
  rounds end by themselves (one-shot, ``--max-rounds``) runs the plans still
  due before it exits (:meth:`Compactor.close` with ``drain``);
- ``hudi-cdc compact`` (:func:`run_pending`, under the table's writer lease):
  a plan a killed process left, or a compaction run on its own schedule.

The writer lease (``sink.lease``) covers it: the compactor runs a table's plans
only while its process holds the table's lease, and a runner lets a table's
lease go only after the compaction under way on it ended, so two processes never
compact (or write) one table at once. Within the process both writers take
Hudi's in-process lock (``options.write_options``).

Crash safety is Hudi's: a plan killed mid-run stays pending on the timeline and
the next compaction, async or inline, rolls it back and runs it again. A plan an
inline-compacting process left pending is run the same way.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hudi_cdc._jvm import java_message
from hudi_cdc.errors import CompactionError
from hudi_cdc.sink import options as opt
from hudi_cdc.sink.hudi import HudiTable
from hudi_cdc.sink.lease import held_here

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["Compactor", "procedure_options", "run_pending"]

log = logging.getLogger(__name__)

POOL = "hudi_cdc_compaction"
"""The Spark fair scheduler pool the compactions' jobs run in (a round's jobs are not queued behind them)."""


def _sql_string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


_NOT_FOR_COMPACTION = ("hoodie.datasource.", "hoodie.index.", "hoodie.bucket.index.")


def procedure_options(options: Mapping[str, str]) -> str:
    """``k=v,k=v`` for Hudi's ``run_compaction``, from a write's options.

    The procedure splits on commas and cannot escape them: a setting whose value has
    one is left out, with a warning (it reaches the compaction only through the
    session's Spark conf). Writer-only settings (``hoodie.datasource.*``) are left out,
    and so is the index: a compaction rewrites file groups in place and looks up no key,
    while Hudi's bucket index settings want the record key, which these options lack
    (Hudi 1.2 failed with a NullPointerException, seen here).
    """
    kept = []
    for key, value in sorted(options.items()):
        if key.startswith(_NOT_FOR_COMPACTION) or not key.startswith("hoodie."):
            continue
        if "," in value or "," in key or "=" in key:
            log.warning("async compaction runs without %s: Hudi's procedure options cannot carry a comma", key)
            continue
        kept.append(f"{key}={value}")
    return ",".join(kept)


def run_pending(spark: SparkSession, base_path: str, options: Mapping[str, str]) -> list[str]:
    """Run ``base_path``'s pending compaction plans, oldest first; the instants compacted (none: none pending).

    ``options`` are the table's write options (made before a new table had an index: the index its last
    commit recorded is used). The caller holds the table's writer lease. Raises :class:`CompactionError`
    when Hudi ends a plan in another state than completed (it stays pending, to be run again)."""
    table = HudiTable(spark, base_path)
    pending = table.pending_compactions()
    if not pending:
        return []
    last = table.checkpoint_commit()
    recorded = last.extra.get(opt.INDEX_KEY) if last else None
    carried = procedure_options(opt.compaction_options(options, recorded))
    log.info("compacting %s: %s", base_path, ", ".join(pending))
    rows = spark.sql(
        f"call run_compaction(op => 'run', path => {_sql_string(base_path)}, options => {_sql_string(carried)})"
    ).collect()
    ended = {str(r["timestamp"]): str(r["state"]) for r in rows}
    failed = [f"{instant} {state}" for instant, state in ended.items() if state.upper() != "COMPLETED"]
    if failed:
        raise CompactionError(f"Hudi's compaction of {base_path} ended {', '.join(failed)}")
    log.info("compacted %s: %s", base_path, ", ".join(ended))
    return sorted(ended)


@dataclass
class _Table:
    options: Mapping[str, str]
    failures: int = 0
    last_error: str | None = None
    compacted: list[str] = field(default_factory=list)


class Compactor:
    """One thread that runs the pending compactions of a process's tables, one table at a time.

    :meth:`add` a table when the process holds its writer lease (its plans left pending by an earlier process
    run at once), :meth:`notify` after each of its rounds that committed, :meth:`remove` it before letting
    its lease go (waits for its compaction under way). A table's plans run only while this process holds its
    lease (``lease.held_here``). ``failures_allowed`` consecutive failures of a table make :meth:`check` raise:
    the table keeps every change either way (log files), but its reads grow slower without compaction.
    """

    def __init__(self, spark: SparkSession, *, failures_allowed: int = 3) -> None:
        self._spark = spark
        self._failures_allowed = failures_allowed
        self._tables: dict[str, _Table] = {}
        self._due: list[str] = []
        self._current: str | None = None
        self._stopping = False
        self._draining = False
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._loop, name="hudi-cdc-compaction", daemon=True)
        self._thread.start()

    def add(self, base_path: str, options: Mapping[str, str]) -> None:
        """Compact ``base_path`` from now on, with its write options; a plan already pending runs at once."""
        with self._cond:
            self._tables[base_path] = _Table(dict(options))
            self._wake(base_path)

    def notify(self, base_path: str) -> None:
        """A round of ``base_path`` committed: its commit may have scheduled a compaction."""
        with self._cond:
            if base_path in self._tables:
                self._wake(base_path)

    def _wake(self, base_path: str) -> None:
        if base_path not in self._due:
            self._due.append(base_path)
        self._cond.notify_all()

    def compacted(self, base_path: str) -> list[str]:
        """The instants this compactor completed on ``base_path``, in order."""
        with self._cond:
            entry = self._tables.get(base_path)
            return list(entry.compacted) if entry else []

    def check(self, base_path: str) -> None:
        """Raise when compacting ``base_path`` failed ``failures_allowed`` times in a row."""
        with self._cond:
            entry = self._tables.get(base_path)
        if entry is not None and entry.failures >= self._failures_allowed:
            raise CompactionError(
                f"compacting {base_path} failed {entry.failures} times in a row (last: {entry.last_error}); "
                "the table holds every change, but its log files keep growing. Stopping so that it is seen; "
                'compaction = "inline" runs it inside the rounds instead, hudi-cdc compact runs it alone'
            )

    def remove(self, base_path: str) -> None:
        """Stop compacting ``base_path``; returns once no compaction of it is under way."""
        with self._cond:
            self._tables.pop(base_path, None)
            if base_path in self._due:
                self._due.remove(base_path)
            if self._current == base_path:
                log.info("waiting for the compaction of %s under way to finish", base_path)
            while self._current == base_path:
                self._cond.wait()

    def close(self, *, drain: bool = False) -> None:
        """Stop: after the compaction under way (a plan not started waits for the next process), or with
        ``drain`` after every table's due plans ran (a one-shot run's last rounds scheduled them)."""
        with self._cond:
            self._draining = drain
            self._stopping = True
            if self._current is not None:
                log.info("waiting for the compaction of %s under way to finish", self._current)
            self._cond.notify_all()
        self._thread.join()

    def _next(self) -> tuple[str, _Table] | None:
        with self._cond:
            while True:
                if self._stopping and not (self._draining and self._due):
                    return None
                if self._due:
                    base_path = self._due.pop(0)
                    entry = self._tables.get(base_path)
                    if entry is None:
                        continue
                    self._current = base_path
                    return base_path, entry
                self._cond.wait()

    def _loop(self) -> None:
        # Jobs from this thread go to their own fair scheduler pool (a no-op under FIFO scheduling).
        self._spark.sparkContext.setLocalProperty("spark.scheduler.pool", POOL)
        while (due := self._next()) is not None:
            base_path, entry = due
            try:
                lease = held_here(base_path)
                if lease is None:
                    log.warning("not compacting %s: this process does not hold its writer lease", base_path)
                    continue
                lease.check()  # lost to another process: it compacts the table now
                self._spark.sparkContext.setJobDescription(f"hudi-cdc compaction {base_path}")
                entry.compacted.extend(run_pending(self._spark, base_path, entry.options))
                entry.failures = 0
            except Exception as exc:  # noqa: BLE001 - reported through check(), the rounds go on
                entry.failures += 1
                entry.last_error = java_message(exc)
                log.error("compacting %s failed (%d in a row): %s", base_path, entry.failures, entry.last_error)
            finally:
                with self._cond:
                    self._current = None
                    self._cond.notify_all()
