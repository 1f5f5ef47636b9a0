"""chaos.writers: a table's writers read from its timeline and lease files, and the one-writer check over them.

Real files as Hudi and the lease write them (Avro rollback metadata, lease generations); the check must pass a
rollback of a killed writer's instant and of a writer's own, and name a rollback of a live writer's instant.
"""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path

import fastavro

from chaos.writers import Lives, WriterWatch, check_one_writer, instant_seconds
from hudi_cdc.sink.lease import LEASE_FOLDER, LeaseOwner, LeaseRecord

ROLLBACK_SCHEMA = {
    "type": "record",
    "name": "HoodieRollbackMetadata",
    "fields": [
        {"name": "commitsRollback", "type": {"type": "array", "items": "string"}},
        {
            "name": "instantsRollback",
            "type": {
                "type": "array",
                "items": {
                    "type": "record",
                    "name": "HoodieInstantInfo",
                    "fields": [{"name": "commitTime", "type": "string"}, {"name": "action", "type": "string"}],
                },
            },
        },
    ],
}


def _instant(moment: float) -> str:
    return datetime.fromtimestamp(moment).strftime("%Y%m%d%H%M%S%f")[:17]


class Table:
    def __init__(self, base: Path) -> None:
        self.base = base
        self.timeline = base / ".hoodie" / "timeline"
        self.timeline.mkdir(parents=True)
        (base / LEASE_FOLDER).mkdir(parents=True)

    def lease(self, generation: int, pid: int, since: float) -> None:
        owner = LeaseOwner("here", pid, f"owner-{pid}", "hudi-cdc run")
        record = LeaseRecord(generation, owner, since, since + 1, 8.0)
        (self.base / LEASE_FOLDER / f"{generation:012d}.json").write_bytes(record.to_json())

    def commit(self, started: float, *, done: bool) -> str:
        instant = _instant(started)
        (self.timeline / f"{instant}.deltacommit.requested").touch()
        if done:
            (self.timeline / f"{instant}_{_instant(started + 0.5)}.deltacommit").touch()
        else:
            (self.timeline / f"{instant}.deltacommit.inflight").touch()
        return instant

    def rollback(self, moment: float, of: str) -> None:
        name = f"{_instant(moment)}_{_instant(moment + 0.2)}.rollback"
        with open(self.timeline / name, "wb") as out:
            fastavro.writer(out, ROLLBACK_SCHEMA, [{"commitsRollback": [of], "instantsRollback": [
                {"commitTime": of, "action": "deltacommit"}]}])  # fmt: skip


def test_a_killed_writers_instant_rolled_back_passes_and_a_live_writers_is_named(tmp_path: Path) -> None:
    now = time.time() - 100
    lives = Lives()
    a, b = lives.born("runner a", 101), lives.born("runner b", 202)
    a.started = b.started = now - 10
    killed, alive = Table(tmp_path / "killed"), Table(tmp_path / "alive")
    for table in (killed, alive):
        table.lease(1, 101, now)
        table.commit(now + 1, done=True)
    # a is killed inside its second commit; b takes the table over and rolls that instant back
    pending = killed.commit(now + 5, done=False)
    a.killed, a.ended = now + 6, now + 6.1
    killed.lease(2, 202, now + 7)
    killed.rollback(now + 8, pending)
    # the other table: b takes it while a (as far as the harness knows) lives, and rolls a's instant back
    stolen = alive.commit(now + 2, done=False)
    alive.lease(2, 202, now + 3)
    alive.rollback(now + 4, stolen)

    watch = WriterWatch({"killed": str(killed.base), "alive": str(alive.base)})
    watch.look()
    assert watch.rollbacks["killed"] == {_instant(now + 8): [(pending, "deltacommit")]}
    assert set(watch.instants["killed"]) == {_instant(now + 1), pending, _instant(now + 8)}
    assert abs(instant_seconds(pending) - (now + 5)) < 0.01

    check = check_one_writer(watch, lives)
    assert (check.rollbacks, check.of_dead_writers, check.own_rollbacks) == (2, 1, 0), check
    assert len(check.violations) == 1 and "alive: rollback" in check.violations[0], check.violations
    assert "TWO WRITERS" in check.violations[0] and "runner a (pid 101) was alive" in check.violations[0]
    assert check.unknown == []


def test_a_writers_own_rollback_passes_and_an_instant_outside_any_lease_is_named(tmp_path: Path) -> None:
    now = time.time() - 100
    lives = Lives()
    lives.born("runner a", 101).started = now - 10
    table = Table(tmp_path / "t")
    outside = table.commit(now - 1, done=True)  # before anyone held the lease
    table.lease(1, 101, now)
    failed = table.commit(now + 1, done=False)
    table.rollback(now + 2, failed)  # its next round rolls its own failed one back
    watch = WriterWatch({"t": str(table.base)})
    watch.look()
    check = check_one_writer(watch, lives)
    assert (check.rollbacks, check.own_rollbacks, check.of_dead_writers) == (1, 1, 0), check
    assert check.violations == [f"t: deltacommit {outside} started while no process held the lease"]
