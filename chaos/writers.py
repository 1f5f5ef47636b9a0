"""Never two writers on one table: what the chaos harness sees of each table's writers, and the check over it.

Hudi's instants do not say which process wrote them, so the harness watches, while the run goes on, each
table's timeline (every instant, the moments its ``.inflight`` file appeared, what each rollback rolled
back) and each table's writer lease (every generation: its owner's pid and since when it held the table),
and it knows each process it started: when it started, when it was SIGKILLed, when it ended. An instant's
writer is the lease's holder at the moment the instant started. Then:

- every instant started while a live process held the table's lease;
- every rollback rolled back an instant of its own writer (a failed round of its own), or of a writer that
  was dead (killed, or stopped) before the rollback started. A rollback of an instant whose writer was still
  alive is a second writer: the bug the leases exist to prevent.

Reads files only (Avro rollback metadata through fastavro): no JVM beside the runners under test.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from hudi_cdc.sink.lease import LEASE_FOLDER, LeaseRecord
from hudi_cdc.testing.faults import timeline_of

__all__ = ["Instant", "Life", "Lives", "WriterCheck", "WriterWatch", "check_one_writer"]


# --- the processes the harness started ------------------------------------------------------------------


@dataclass
class Life:
    """One process the harness started (wall-clock seconds)."""

    role: str
    pid: int
    started: float
    killed: float | None = None  # SIGKILL sent: it makes no progress after this
    ended: float | None = None  # gone (its whole process group, for a kill)

    def dead_by(self, moment: float) -> bool:
        last = self.killed if self.killed is not None else self.ended
        return last is not None and last <= moment


class Lives:
    def __init__(self) -> None:
        self.by_pid: dict[int, Life] = {}
        self._lock = threading.Lock()

    def born(self, role: str, pid: int) -> Life:
        life = Life(role, pid, time.time())
        with self._lock:
            self.by_pid[pid] = life
        return life

    def get(self, pid: int) -> Life | None:
        with self._lock:
            return self.by_pid.get(pid)


# --- what the watch records ----------------------------------------------------------------------------


@dataclass
class Instant:
    time: str  # its requested instant time
    action: str
    inflight_at: list[float] = field(default_factory=list)  # each time an .inflight file appeared (mtime)
    completed: bool = False

    def started_before(self, moment: float) -> float:
        """When its last attempt before ``moment`` started: its newest .inflight then, else its requested time
        (a compaction is scheduled by one holder and may be run, or run again, by a later one)."""
        earlier = [t for t in self.inflight_at if t < moment]
        return max(earlier) if earlier else instant_seconds(self.time)


def instant_seconds(instant: str) -> float:
    """A Hudi instant time (yyyyMMddHHmmssSSS, the JVM's local time zone, as this process's) in epoch seconds."""
    return datetime.strptime(instant[:17], "%Y%m%d%H%M%S%f").timestamp()


def _parse_name(name: str) -> tuple[str, str, str] | None:
    """(instant time, action, state) of a timeline file name: ``<t>.<action>.requested``, ``<t>.inflight`` (a
    commit's), ``<t>.<action>.inflight``, ``<t>_<completed>.<action>``."""
    stem, _, rest = name.partition(".")
    if not rest or not stem[:1].isdigit():
        return None
    instant, _, completed = stem.partition("_")
    if rest.endswith(".requested"):
        return instant, rest.removesuffix(".requested"), "requested"
    if rest == "inflight":
        return instant, "commit", "inflight"
    if rest.endswith(".inflight"):
        return instant, rest.removesuffix(".inflight"), "inflight"
    return (instant, rest, "completed") if completed else None


def _rolled_back(path: Path, state: str) -> list[tuple[str, str]] | None:
    """(instant, action) pairs a rollback's plan (requested) or metadata (completed) names; None: not readable
    yet (a file being written is read again at the next look)."""
    import fastavro

    try:
        with open(path, "rb") as f:
            record = next(iter(fastavro.reader(f)), None)
    except Exception:  # noqa: BLE001 - half written: read again at the next look
        return None
    if not isinstance(record, dict):
        return None
    if state == "requested":
        wanted = record.get("instantToRollback") or {}
        return [(str(wanted.get("commitTime")), str(wanted.get("action")))] if wanted else None
    listed = [(str(i["commitTime"]), str(i.get("action"))) for i in record.get("instantsRollback") or []]
    return listed or [(str(c), "?") for c in record.get("commitsRollback") or []]


class WriterWatch(threading.Thread):
    """Looks at every table's timeline and lease every ``poll_s``: instants, rollbacks, lease generations."""

    def __init__(self, bases: dict[str, str], poll_s: float = 0.2) -> None:
        super().__init__(daemon=True, name="writer-watch")
        self.bases = bases
        self.poll_s = poll_s
        self.instants: dict[str, dict[str, Instant]] = {t: {} for t in bases}
        self.rollbacks: dict[str, dict[str, list[tuple[str, str]]]] = {t: {} for t in bases}
        self.generations: dict[str, dict[int, LeaseRecord]] = {t: {} for t in bases}
        self._settled: set[tuple[str, str]] = set()  # rollbacks whose completed metadata was read
        self._halt = threading.Event()
        self._lock = threading.Lock()

    def run(self) -> None:
        while not self._halt.is_set():
            self.look()
            self._halt.wait(self.poll_s)

    def stop(self) -> None:
        self._halt.set()
        self.join(30)
        self.look()  # what the last moments left

    def look(self) -> None:
        with self._lock:
            for table, base in self.bases.items():
                self._look_at_timeline(table, timeline_of(base))
                self._look_at_lease(table, Path(base) / LEASE_FOLDER)

    def _look_at_timeline(self, table: str, timeline: Path) -> None:
        try:
            names = os.listdir(timeline)
        except FileNotFoundError:
            return
        for name in names:
            parsed = _parse_name(name)
            if parsed is None:
                continue
            instant, action, state = parsed
            seen = self.instants[table].setdefault(instant, Instant(instant, action))
            if state == "inflight":
                self._note_inflight(seen, timeline / name)
            seen.completed |= state == "completed"
            if action == "rollback" and state != "inflight":
                self._note_rollback(table, instant, timeline / name, state)

    @staticmethod
    def _note_inflight(seen: Instant, path: Path) -> None:
        try:
            mtime = path.stat().st_mtime
        except FileNotFoundError:
            return
        if mtime not in seen.inflight_at:
            seen.inflight_at.append(mtime)

    def _note_rollback(self, table: str, instant: str, path: Path, state: str) -> None:
        """What a rollback rolls back: from its plan at once, then from its completed metadata (read once)."""
        if (table, instant) in self._settled or (state == "requested" and instant in self.rollbacks[table]):
            return
        rolled = _rolled_back(path, state)
        if rolled is not None:
            self.rollbacks[table][instant] = rolled
            if state == "completed":
                self._settled.add((table, instant))

    def _look_at_lease(self, table: str, folder: Path) -> None:
        try:
            names = os.listdir(folder)
        except FileNotFoundError:
            return
        for name in names:
            stem, _, ext = name.partition(".")
            if ext != "json" or not stem.isdigit():
                continue
            try:
                record = LeaseRecord.from_json((folder / name).read_bytes())
            except (OSError, ValueError, TypeError, KeyError):
                continue  # being replaced: read at the next look
            self.generations[table][record.generation] = record  # the newest heartbeat (and release) wins


# --- the check --------------------------------------------------------------------------------------------


@dataclass
class WriterCheck:
    instants: int = 0
    rollbacks: int = 0
    own_rollbacks: int = 0  # a writer rolled back an instant of its own (a failed round)
    of_dead_writers: int = 0  # of an instant whose writer was dead before the rollback started
    violations: list[str] = field(default_factory=list)  # a second writer, or an instant outside any lease
    unknown: list[str] = field(default_factory=list)  # could not be attributed (a lease generation not seen)


def holder_at(generations: list[LeaseRecord], moment: float) -> LeaseRecord | None:
    """The lease generation that held the table at ``moment`` (None: no one, or it had been released)."""
    held = [g for g in generations if g.since <= moment]
    if not held:
        return None
    last = max(held, key=lambda g: g.generation)
    return None if last.released and last.heartbeat < moment else last


def check_one_writer(watch: WriterWatch, lives: Lives) -> WriterCheck:
    check = WriterCheck()
    for table, instants in watch.instants.items():
        generations = list(watch.generations[table].values())
        for instant in instants.values():
            _check_instant(check, table, instant, generations, lives)
        for rollback, rolled in watch.rollbacks[table].items():
            check.rollbacks += 1
            for target, action in rolled:
                _check_rollback(
                    check, table, rollback, instants.get(target) or Instant(target, action), generations, lives
                )
    return check


def _check_instant(
    check: WriterCheck, table: str, instant: Instant, generations: list[LeaseRecord], lives: Lives
) -> None:
    """The instant started while a live process held the table's lease."""
    check.instants += 1
    started = instant_seconds(instant.time)
    holder = holder_at(generations, started)
    if holder is None:
        check.violations.append(f"{table}: {instant.action} {instant.time} started while no process held the lease")
        return
    life = lives.get(holder.owner.pid)
    if life is None:
        check.unknown.append(
            f"{table}: {instant.action} {instant.time}: its lease holder pid {holder.owner.pid} is no process of this run"
        )
    elif life.dead_by(started):
        check.violations.append(
            f"{table}: {instant.action} {instant.time} started under the lease of {life.role} (pid {life.pid}), dead by then"
        )


def _check_rollback(
    check: WriterCheck, table: str, rollback: str, target: Instant, generations: list[LeaseRecord], lives: Lives
) -> None:
    """The rolled-back instant's writer is the rollback's own, or was dead before the rollback started."""
    at = instant_seconds(rollback)
    writer, roller = holder_at(generations, target.started_before(at)), holder_at(generations, at)
    what = f"{table}: rollback {rollback} of {target.action} {target.time}"
    if writer is None or roller is None:
        check.unknown.append(f"{what}: no lease holder known at {'its start' if writer is None else 'the rollback'}")
        return
    if writer.owner.id == roller.owner.id:
        check.own_rollbacks += 1
        return
    life = lives.get(writer.owner.pid)
    if life is None:
        check.unknown.append(f"{what}: its writer pid {writer.owner.pid} is no process of this run")
    elif life.dead_by(at):
        check.of_dead_writers += 1
    else:
        check.violations.append(
            f"{what}: TWO WRITERS: rolled back by pid {roller.owner.pid} while its writer {life.role} "
            f"(pid {life.pid}) was alive (killed {life.killed}, ended {life.ended}, rollback at {at:.3f})"
        )
