"""What a person at a terminal sees of a CLI run: our lines only, Spark's in a log file, a progress line.

The JVM (Spark, Hudi, Ivy) and librdkafka print warnings meant for their own
developers. A CLI run sends the JVM's stdout and stderr to a log file from the
moment it starts (a started process keeps the descriptors it inherited), and
names that file when the run fails. ``-v`` keeps everything on the terminal.
librdkafka's log goes the same way: every Kafka client hudi-cdc makes logs
through the ``librdkafka`` Python logger (:func:`kafka_logger`), which a CLI
run sends to that file (:func:`route_kafka_log`); unrouted, librdkafka prints
a line to stderr for every failed connection, ~20 a second while a broker is down.
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import IO, Any

__all__ = [
    "KAFKA_LOGGER",
    "LOG_DIR_ENV",
    "TerminalProgress",
    "jvm_log_path",
    "kafka_logger",
    "process_output_to",
    "route_kafka_log",
    "stdout_to_stderr",
]

LOG_DIR_ENV = "HUDI_CDC_LOG_DIR"
KAFKA_LOGGER = "librdkafka"


def jvm_log_path() -> Path:
    """A new log file for this run's JVM under ``HUDI_CDC_LOG_DIR`` (default: the temp folder's ``hudi-cdc``)."""
    folder = Path(os.environ.get(LOG_DIR_ENV) or Path(tempfile.gettempdir()) / "hudi-cdc")
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"spark-{datetime.now():%Y%m%dT%H%M%S}-{os.getpid()}.log"


def kafka_logger() -> logging.Logger:
    """The logger a confluent-kafka client's ``logger`` setting names: librdkafka logs there, not on stderr.

    Its lines are handed over when the client is polled or closed (the
    client forwards them to its poll queue), in the thread that does so.
    """
    return logging.getLogger(KAFKA_LOGGER)


class _KafkaLogFile(logging.FileHandler):
    """The handler :func:`route_kafka_log` adds, told apart from anyone else's."""


def route_kafka_log(path: Path | None, *, terminal: bool) -> None:
    """Where librdkafka's lines go: the root logger's handlers (``terminal``), else ``path``, else nowhere.

    Each call replaces what the previous one set, so CLI runs in one process
    (tests, a notebook) do not pile up handlers on files since deleted.
    """
    logger = kafka_logger()
    for handler in [h for h in logger.handlers if isinstance(h, (_KafkaLogFile, logging.NullHandler))]:
        logger.removeHandler(handler)
        handler.close()
    logger.setLevel(logging.NOTSET)
    logger.propagate = terminal
    if terminal:
        return
    if path is None:
        logger.addHandler(logging.NullHandler())  # not Python's last resort, which writes to stderr
        return
    handler = _KafkaLogFile(path, delay=True)  # the file is the JVM's too: both append
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)  # the file keeps what librdkafka says at its default log_level, not the terminal's


@contextmanager
def _descriptors_to(target: int, *descriptors: int) -> Iterator[None]:
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    saved = [os.dup(fd) for fd in descriptors]
    for fd in descriptors:
        os.dup2(target, fd)
    try:
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        for fd, copy in zip(descriptors, saved, strict=True):
            os.dup2(copy, fd)
            os.close(copy)


@contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Descriptor 1 points at stderr while the block runs; processes started in it keep that."""
    with _descriptors_to(2, 1):
        yield


@contextmanager
def process_output_to(path: Path) -> Iterator[None]:
    """Descriptors 1 and 2 point at ``path`` while the block runs; processes started in it keep that."""
    with open(path, "ab") as log, _descriptors_to(log.fileno(), 1, 2):
        yield


class TerminalProgress(logging.Handler):
    """One status line on a terminal: the round's latest step and Spark's running tasks, redrawn twice a second.

    Fed by hudi-cdc's own INFO log records (what was read, what was decided,
    what is being written) and Spark's status tracker; erased when it stops.
    """

    def __init__(self, spark: Any, stream: IO[str]) -> None:
        super().__init__(level=logging.INFO)
        self._spark = spark
        self._stream = stream
        self._step = "starting"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._draw, name="hudi-cdc-progress", daemon=True)
        self._width = 0
        self._last = ""

    @staticmethod
    def wanted(stream: IO[str], *, as_json: bool, verbose: int) -> bool:
        return stream.isatty() and not as_json and verbose == 0

    def emit(self, record: logging.LogRecord) -> None:
        self._step = record.getMessage().splitlines()[0]

    def _tasks(self) -> str:
        tracker = self._spark.sparkContext.statusTracker()
        done = total = 0
        for stage_id in tracker.getActiveStageIds():
            info = tracker.getStageInfo(stage_id)
            if info is not None:
                done, total = done + info.numCompletedTasks, total + info.numTasks
        return f" [Spark tasks {done}/{total}]" if total else ""

    def _draw(self) -> None:
        while not self._stop.wait(0.5):
            try:
                line = (self._step + self._tasks())[:160]
            except Exception:  # the context is stopping
                return
            if line == self._last:
                continue
            self._last = line
            self._stream.write("\r" + line.ljust(self._width))
            self._stream.flush()
            self._width = len(line)

    def __enter__(self) -> TerminalProgress:
        logger = logging.getLogger("hudi_cdc")
        logger.addHandler(self)
        if logger.getEffectiveLevel() > logging.INFO:
            logger.setLevel(logging.INFO)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        logging.getLogger("hudi_cdc").removeHandler(self)
        self._stream.write("\r" + " " * self._width + "\r")
        self._stream.flush()
