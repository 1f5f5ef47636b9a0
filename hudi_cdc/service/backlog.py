"""How far each table of a pipeline is behind its source: one computation for ``status`` and the runner's gauges.

- *behind*: Kafka: the topic's end offsets minus the table's committed
  checkpoint, summed over partitions (a table with no checkpoint is behind by
  every message); files: the files the checkpoint has not taken; JDBC: unknown
  (it would take a query of the database).
- *lag*: 0 when nothing is behind, else now minus the newest source commit
  time the table holds (``source_ts_ms_max`` in the stats of its newest
  commits); unknown when it holds none.

``hudi-cdc status`` and the runner's ``hudi_cdc_behind`` and
``hudi_cdc_lag_seconds`` both come from :func:`measure`, so they cannot
disagree. It reads the Hudi timeline and the brokers' end offsets (through the
process's planning consumer) or the source folder's listing: never a Spark job.

:class:`BacklogWatch` keeps a running pipeline's figures current whatever its
tables do (running, waiting, paused, failed): every ``interval_s`` for all
tables, and as soon as one's round ends for that one.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hudi_cdc._jvm import java_message
from hudi_cdc.errors import HudiCdcError
from hudi_cdc.sink import options as opt
from hudi_cdc.sink.hudi import HudiTable
from hudi_cdc.sources.files import FileSource
from hudi_cdc.sources.kafka import broker_conf, end_offsets, parse_kafka_checkpoint
from hudi_cdc.sources.kafka_security import KafkaSecurity
from hudi_cdc.sources.merged import shard_config

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from hudi_cdc.config import IngestConfig
    from hudi_cdc.service.spec import PipelineSpec
    from hudi_cdc.sink.hudi import CommitInfo

__all__ = ["RECENT_COMMITS", "Backlog", "BacklogWatch", "Position", "lag_seconds", "measure", "position", "stats"]

log = logging.getLogger("hudi_cdc.runner")

RECENT_COMMITS = 10
"""How many of a table's newest commits are searched for the newest source commit time (and summed by status)."""


@dataclass(frozen=True)
class Position:
    """Where a table stands: its topic (or folder) and settings, its committed checkpoint, its newest change."""

    topic: str
    config: IngestConfig
    checkpoint: str | None = None
    newest_source_ts_ms: int | None = None


@dataclass(frozen=True)
class Backlog:
    behind: int | None  # messages (Kafka) or files not in the table yet; None when unknown
    lag_s: float | None  # None when unknown
    problems: tuple[str, ...] = ()  # what could not be read


def stats(commit: CommitInfo) -> dict[str, Any]:
    """The round's counts hudi-cdc keeps in a commit's extra metadata."""
    return json.loads(commit.extra.get(opt.STATS_KEY, "{}"))


def position(topic: str, config: IngestConfig, commits: Iterable[CommitInfo]) -> Position:
    """From a table's commits, newest first (lazily: it stops as soon as it knows)."""
    checkpoint, newest = None, None
    ours = (c for c in commits if opt.CHECKPOINT_KEY in c.extra)  # compactions and cleans carry no checkpoint
    for n, commit in enumerate(ours):
        if n >= RECENT_COMMITS:
            break
        checkpoint = checkpoint or commit.extra[opt.CHECKPOINT_KEY]
        ts = stats(commit).get("source_ts_ms_max")
        if ts:
            newest = int(ts)
            break
    return Position(topic, config, checkpoint, newest)


def lag_seconds(behind: int | None, newest_source_ts_ms: int | None, now: float) -> float | None:
    if behind == 0:
        return 0.0
    if newest_source_ts_ms is None:
        return None
    return max(0.0, now - newest_source_ts_ms / 1000)


def measure(
    spark: SparkSession, spec: PipelineSpec, positions: Mapping[str, Position], *, now: float | None = None
) -> dict[str, Backlog]:
    """Every table's backlog from its position (table name -> position), as of ``now`` (epoch seconds)."""
    now = time.time() if now is None else now
    if spec.source.kind == "kafka":
        behind = _kafka_behind(spec, positions)
    elif spec.source.kind == "files":
        behind = {name: _files_behind(spark, s) for name, p in positions.items() for s in [_shards_summed(p)]}
    else:
        behind = {name: (None, ()) for name in positions}
    return {
        name: Backlog(count, lag_seconds(count, positions[name].newest_source_ts_ms, now), problems)
        for name, (count, problems) in behind.items()
    }


def _shard_checkpoint(held: Position, shard: str) -> str | None:
    """A merged table's checkpoint of one shard (its composite checkpoint's part), as text."""
    if not held.checkpoint:
        return None
    part = json.loads(held.checkpoint).get("shards", {}).get(shard)
    return json.dumps(part) if part is not None else None


def _shards_summed(held: Position) -> list[Position]:
    """A table's positions: a merged table's one per shard (its backlog is theirs summed), else its own."""
    if not held.config.shard_sources:
        return [held]
    return [Position(s, shard_config(held.config, s), _shard_checkpoint(held, s)) for s in held.config.shard_sources]


def _files_behind(spark: SparkSession, held: list[Position]) -> tuple[int | None, tuple[str, ...]]:
    counts = [_folder_behind(spark, p) for p in held]
    problems = tuple(p for _, found in counts for p in found)
    return (None if problems else sum(c or 0 for c, _ in counts)), problems


def _folder_behind(spark: SparkSession, held: Position) -> tuple[int | None, tuple[str, ...]]:
    try:
        source = FileSource(spark, held.config)
        return source.not_taken(source.parse_checkpoint(held.checkpoint) if held.checkpoint else None), ()
    except HudiCdcError as exc:
        return None, (f"the source folder: {exc}",)


def _kafka_behind(
    spec: PipelineSpec, positions: Mapping[str, Position]
) -> dict[str, tuple[int | None, tuple[str, ...]]]:
    conf = broker_conf(spec.defaults.get("hoodie_conf", {}), KafkaSecurity.of(spec.source))
    shards = {name: _shards_summed(p) for name, p in positions.items()}
    topics = sorted({s.topic for held in shards.values() for s in held})
    try:
        ends = end_offsets(str(spec.source.bootstrap_servers), topics, conf) if topics else {}
    except HudiCdcError as exc:
        return {name: (None, (f"Kafka: {exc}",)) for name in positions}
    found: dict[str, tuple[int | None, tuple[str, ...]]] = {}
    for name, held in shards.items():
        counts = [_topic_behind(s, ends) for s in held]
        problems = tuple(p for _, found_ in counts for p in found_)
        found[name] = (None if problems else sum(c or 0 for c, _ in counts)), problems
    return found


def _topic_behind(held: Position, ends: Mapping[tuple[str, int], int]) -> tuple[int | None, tuple[str, ...]]:
    mine = {p: end for (t, p), end in ends.items() if t == held.topic}
    if not mine:
        return None, (f"Kafka: topic {held.topic} not found",)
    offsets: dict[str, Any] = {}
    if held.checkpoint:
        try:
            offsets = parse_kafka_checkpoint(held.checkpoint, held.topic).get("offsets", {})
        except HudiCdcError as exc:
            return None, (f"checkpoint: {exc}",)
    return sum(max(0, end - int(offsets.get(str(p), 0))) for p, end in mine.items()), ()


class BacklogWatch:
    """A running pipeline's backlog, kept current on a thread of its own and handed to ``publish``.

    A table's position is read from its timeline when first seen and again after each of its rounds
    (``changed``): the runner's rounds are the only writer of its tables while it runs.
    """

    def __init__(
        self,
        spark: SparkSession,
        spec: PipelineSpec,
        tables: Callable[[], Mapping[str, tuple[str, IngestConfig]]],
        publish: Callable[[str, Backlog], None],
        *,
        interval_s: float,
    ) -> None:
        """``tables``: name -> (topic or folder, settings) of the tables to watch, asked at each refresh."""
        self._spark, self._spec, self._tables, self._publish = spark, spec, tables, publish
        self.interval_s = interval_s
        self._positions: dict[str, Position] = {}
        self._changed: set[str] = set()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def changed(self, name: str) -> None:
        """``name``'s round ended: read its position again, now rather than at the next interval."""
        with self._lock:
            self._changed.add(name)
        self._wake.set()

    def refresh(self, names: Collection[str] | None = None) -> dict[str, Backlog]:
        """Measure (``names``, or every table) now, publish and return the figures."""
        with self._lock:
            changed = set(self._changed) if names is None else self._changed & set(names)
            self._changed -= changed
        positions: dict[str, Position] = {}
        unread: dict[str, Backlog] = {}
        for name, (topic, config) in self._tables().items():
            if names is not None and name not in names:
                continue
            held = self._positions.get(name)
            if held is None or name in changed or held.config is not config:
                try:
                    held = position(topic, config, HudiTable(self._spark, config.target_base_path).iter_commits())
                except Exception as exc:  # noqa: BLE001 - an unreadable table is unknown, not fatal
                    self._positions.pop(name, None)
                    unread[name] = Backlog(None, None, (f"the Hudi table: {java_message(exc)}",))
                    continue
                self._positions[name] = held
            positions[name] = held
        figures = {**measure(self._spark, self._spec, positions), **unread}
        for name, backlog in figures.items():
            self._publish(name, backlog)
        return figures

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="hudi-cdc-backlog", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def _loop(self) -> None:
        due = 0.0
        while not self._stop.is_set():
            self._wake.clear()  # a round ending from here on wakes the next pass
            with self._lock:
                changed = set(self._changed)
            everything = time.monotonic() >= due
            try:
                self.refresh(None if everything else changed)
            except Exception:  # noqa: BLE001 - the gauges wait for the next try; the tables go on
                log.warning(
                    "measuring the tables' backlog failed; tried again in %.0fs", self.interval_s, exc_info=True
                )
            if everything:
                due = time.monotonic() + self.interval_s
            self._wake.wait(timeout=max(0.0, due - time.monotonic()))
