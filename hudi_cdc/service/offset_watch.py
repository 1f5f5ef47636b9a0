"""The runner's eyes on Kafka: every table's end offsets, asked on a thread of its own every half second.

On its own thread because a broker that has gone away makes the request wait its
timeout (``kafka.socket.timeout.ms``, 15 s by default): the runner's loop must
go on finishing and starting rounds meanwhile. One request for all topics
(:func:`hudi_cdc.sources.kafka.end_offsets`), never a Spark job.
"""

from __future__ import annotations

import logging
import threading
from collections import defaultdict
from collections.abc import Callable, Mapping

from hudi_cdc.errors import HudiCdcError
from hudi_cdc.sources.kafka import end_offsets

__all__ = ["OffsetWatch", "Sighting"]

log = logging.getLogger("hudi_cdc.runner")

_KEPT = 100  # sightings held for a loop that has not taken them (it takes them every pass)

Sighting = tuple[float, dict[str, dict[int, int]]]
"""``(when, topic -> partition -> end offset)``: one successful look at the topics."""


class OffsetWatch:
    def __init__(
        self,
        bootstrap_servers: str,
        conf: Mapping[str, str],
        topics: Callable[[], list[str]],
        *,
        interval_s: float,
        clock: Callable[[], float],
    ) -> None:
        self._bootstrap, self._conf, self._topics = bootstrap_servers, dict(conf), topics
        self._interval_s, self._clock = interval_s, clock
        self._lock = threading.Lock()
        self._sightings: list[Sighting] = []
        self._failing: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._watch, name="hudi-cdc-offsets", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def take(self) -> list[Sighting]:
        """The sightings not taken yet, oldest first (each one's time matters: when a message was first seen)."""
        with self._lock:
            taken, self._sightings = self._sightings, []
        return taken

    @property
    def failing(self) -> str | None:
        """Why the last look failed (the broker unreachable), None when it succeeded."""
        return self._failing

    def look(self) -> None:
        """One look at every watched topic (the thread's loop; a test may call it directly)."""
        topics = self._topics()
        if not topics:
            return
        when = self._clock()  # before the request: a message seen now arrived at the latest then
        try:
            ends = end_offsets(self._bootstrap, topics, self._conf)
        except HudiCdcError as exc:
            if self._failing is None:
                log.warning("cannot read the topics' end offsets (%s): every table gets rounds until it can", exc)
            self._failing = str(exc)
            return
        if self._failing is not None:
            log.info("the topics' end offsets can be read again")
        self._failing = None
        by_topic: dict[str, dict[int, int]] = defaultdict(dict)
        for (topic, partition), end in ends.items():
            by_topic[topic][partition] = end
        with self._lock:
            self._sightings = [*self._sightings[-(_KEPT - 1) :], (when, dict(by_topic))]

    def _watch(self) -> None:
        while not self._stop.is_set():
            try:
                self.look()
            except Exception:  # noqa: BLE001 - the watch must outlive a surprise; rounds go on without it
                log.exception("watching the topics' end offsets failed")
                self._failing = "the offset watch failed (see the log)"
            self._stop.wait(self._interval_s)
