"""MERGE_ON_READ compaction on a thread of its own, beside a continuous process's rounds.

Inline, a compaction runs inside the round whose commit scheduled it, so every
change that arrives meanwhile waits for it and then for the next round: at
2,000 changes/s on a 100k-row table, a 3 s compaction in every fifth round,
and the changes that waited for one were the slowest 1%. Async,
the round's commit only schedules the compaction (a plan on the timeline) and
this thread executes pending plans while the next rounds write new log files,
which Hudi keeps apart from the file slices being compacted.

Crash safety is Hudi's: a plan killed mid-run stays pending on the timeline and
the next compaction, async or inline, rolls it back and runs it again. Both
writers in the process take Hudi's in-process lock (``options.async_compaction``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING

from hudi_cdc._jvm import java_message
from hudi_cdc.errors import CompactionError
from hudi_cdc.sink import options as opt
from hudi_cdc.sink.hudi import HudiTable

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["AsyncCompactor"]

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


class AsyncCompactor:
    """Runs ``base_path``'s pending compactions whenever :meth:`notify` says a round committed.

    ``failures_allowed`` consecutive failures make :meth:`check` raise: the table keeps
    every change either way (log files), but its reads grow slower without compaction.
    """

    def __init__(
        self,
        spark: SparkSession,
        base_path: str,
        options: Mapping[str, str],
        *,
        failures_allowed: int = 3,
    ) -> None:
        self._spark = spark
        self._table = HudiTable(spark, base_path)
        self._write_options = dict(options)
        self._options: str | None = None  # procedure_options, once the table has a commit (_procedure_options)
        self._failures_allowed = failures_allowed
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"hudi-cdc-compaction {base_path}", daemon=True)
        self._failures = 0
        self._last_error: str | None = None
        self._busy = False
        self._wake.set()  # a plan an earlier process left pending runs without waiting for new data
        self._thread.start()

    def notify(self) -> None:
        """A round committed: its commit may have scheduled a compaction."""
        self._wake.set()

    def check(self) -> None:
        """Raise when compaction failed ``failures_allowed`` times in a row."""
        if self._failures >= self._failures_allowed:
            raise CompactionError(
                f"compacting {self._table.base_path} failed {self._failures} times in a row (last: {self._last_error}); "
                "the table holds every change, but its log files keep growing. Stopping so that it is seen; "
                "--compaction inline runs it inside the rounds instead"
            )

    def close(self) -> None:
        """Stop after the compaction under way, if any (a pending plan waits for the next process)."""
        self._stopping.set()
        self._wake.set()
        if self._busy:
            log.info("waiting for the compaction of %s under way to finish", self._table.base_path)
        self._thread.join()

    def _loop(self) -> None:
        # Jobs from this thread go to their own fair scheduler pool (a no-op under FIFO scheduling).
        self._spark.sparkContext.setLocalProperty("spark.scheduler.pool", POOL)
        while True:
            self._wake.wait()
            self._wake.clear()
            if self._stopping.is_set():
                return
            self._busy = True
            try:
                self._run_pending()
            except Exception as exc:  # noqa: BLE001 - reported through check(), the rounds go on
                self._failures += 1
                self._last_error = java_message(exc)
                log.error(
                    "compacting %s failed (%d in a row): %s", self._table.base_path, self._failures, self._last_error
                )
            finally:
                self._busy = False

    def _procedure_options(self) -> str:
        """The procedure's options, with the index the table recorded: a plan is pending, so it has commits.
        The options were made before a new table existed, and its index stays what it was created with."""
        if self._options is None:
            last = self._table.checkpoint_commit()
            recorded = last.extra.get(opt.INDEX_KEY) if last else None
            self._options = procedure_options(opt.compaction_options(self._write_options, recorded))
        return self._options

    def _run_pending(self) -> None:
        pending = self._table.pending_compactions()
        if not pending:
            return
        log.info("compacting %s: %s", self._table.base_path, ", ".join(pending))
        rows = self._spark.sql(
            f"call run_compaction(op => 'run', path => {_sql_string(self._table.base_path)}, "
            f"options => {_sql_string(self._procedure_options())})"
        ).collect()
        ended = {str(r["timestamp"]): str(r["state"]) for r in rows}
        failed = [f"{instant} {state}" for instant, state in ended.items() if state.upper() != "COMPLETED"]
        if failed:
            raise CompactionError(f"Hudi's compaction of {self._table.base_path} ended {', '.join(failed)}")
        self._failures = 0
        log.info("compacted %s: %s", self._table.base_path, ", ".join(ended))
