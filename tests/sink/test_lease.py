"""The table's writer lease (hudi_cdc.sink.lease) on real files, with real processes: no Spark."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from hudi_cdc.errors import LeaseHeldError, LeaseLostError
from hudi_cdc.sink import lease as lease_mod
from hudi_cdc.sink.lease import LEASE_FOLDER, LeaseOwner, TableLease, hold, lease_holder, waiters


def _owner(name: str) -> LeaseOwner:
    """A distinct owner in this process, as another process would be."""
    return LeaseOwner("host-" + name, 4242, "id-" + name, "test " + name)


def _generations(base: Path) -> list[str]:
    return sorted(p.name for p in (base / LEASE_FOLDER).iterdir() if p.name.endswith(".json") and p.name[0].isdigit())


def test_take_refuse_release(tmp_path: Path) -> None:
    base = str(tmp_path / "t")
    first = TableLease(base, owner=_owner("a"), expiry_s=30)
    assert first.try_acquire() is None and first.held
    holder = lease_holder(base)
    assert holder is not None and holder.owner.id == "id-a" and holder.live() and holder.generation == 1

    second = TableLease(base, owner=_owner("b"), expiry_s=30)
    refused_by = second.try_acquire()
    assert refused_by is not None and refused_by.owner.host == "host-a" and not second.held
    with pytest.raises(LeaseHeldError) as refused:
        second.acquire(0.0)
    message = str(refused.value)
    assert "host host-a, pid 4242, `test a`" in message and "Stop that process, or wait" in message
    assert "expires 30 s after its last heartbeat" in message

    first.release()
    stored = lease_holder(base)
    assert stored is not None and stored.released and not stored.live()
    assert second.try_acquire() is None and second.held  # a released lease is free at once
    assert lease_holder(base).owner.id == "id-b"  # type: ignore[union-attr]
    second.release()


def test_renew_moves_the_heartbeat(tmp_path: Path) -> None:
    base = str(tmp_path / "t")
    held = TableLease(base, owner=_owner("a"), expiry_s=0.8)
    assert held.try_acquire() is None
    before = lease_holder(base).heartbeat  # type: ignore[union-attr]
    time.sleep(1.2)  # longer than its expiry: only the heartbeat thread keeps it alive
    after = lease_holder(base)
    assert after is not None and after.heartbeat > before and after.live()
    assert TableLease(base, owner=_owner("b"), expiry_s=0.8).try_acquire() is not None
    held.release()


def test_expired_lease_is_taken_over_and_the_old_holder_knows(tmp_path: Path) -> None:
    base = str(tmp_path / "t")
    stale = TableLease(base, owner=_owner("a"), expiry_s=0.5)
    assert stale.try_acquire() is None
    lease_mod._Heartbeat.get().discard(stale)  # its process "paused": no heartbeat
    time.sleep(0.7)
    assert not lease_holder(base).live()  # type: ignore[union-attr]
    taker = TableLease(base, owner=_owner("b"), expiry_s=5)
    assert taker.try_acquire() is None
    holder = lease_holder(base)
    assert holder is not None and holder.owner.id == "id-b" and holder.generation == 2
    assert not stale.renew() and stale.lost is not None and stale.lost.owner.id == "id-b"
    with pytest.raises(LeaseLostError, match="taken over by host host-b"):
        stale.check()
    stale.release()  # a lost lease's release leaves the new holder's alone
    assert lease_holder(base).live()  # type: ignore[union-attr]
    taker.release()


def test_old_generations_are_pruned(tmp_path: Path) -> None:
    base = str(tmp_path / "t")
    for n in range(5):
        lease = TableLease(base, owner=_owner(str(n)), expiry_s=5)
        assert lease.try_acquire() is None
        lease.release()
    assert _generations(tmp_path / "t") == ["000000000004.json", "000000000005.json"]


def test_wait_for_a_holder_that_lets_go(tmp_path: Path) -> None:
    base = str(tmp_path / "t")
    first = TableLease(base, owner=_owner("a"), expiry_s=0.6)
    assert first.try_acquire() is None
    lease_mod._Heartbeat.get().discard(first)  # it dies: its lease expires 0.6 s after its last heartbeat
    started = time.monotonic()
    TableLease(base, owner=_owner("b"), expiry_s=5).acquire(wait_s=5.0).release()
    assert 0.3 < time.monotonic() - started < 3.0


def test_hold_nests_in_one_process(tmp_path: Path) -> None:
    base = str(tmp_path / "t")
    with hold(base, expiry_s=5, command="outer") as outer:
        with hold("file://" + base + "/", expiry_s=5, command="inner") as inner:
            assert inner is outer
        assert lease_holder(base).live()  # type: ignore[union-attr]  # the outer hold still has it
    stored = lease_holder(base)
    assert stored is not None and stored.released and stored.owner.command == "outer"


def test_waiters_are_recorded(tmp_path: Path) -> None:
    base = str(tmp_path / "t")
    holder = TableLease(base, owner=_owner("a"), expiry_s=5)
    assert holder.try_acquire() is None
    wanting = TableLease(base, owner=_owner("b"), expiry_s=5)
    assert wanting.try_acquire() is not None
    wanting.want()
    assert set(waiters(base, within_s=5)) == {"id-b"}
    holder.release()
    assert wanting.try_acquire() is None
    assert waiters(base, within_s=5) == {}  # taking the table withdraws its request
    wanting.release()


def test_a_store_reached_through_the_jvm_needs_a_session(tmp_path: Path) -> None:
    from hudi_cdc.errors import ConfigError

    with pytest.raises(ConfigError, match="hdfs:// is reached through Spark's JVM"):
        TableLease("hdfs://namenode/lake/t")


_HOLDER = textwrap.dedent(
    """
    import json, sys, time
    from hudi_cdc.sink.lease import TableLease
    base, expiry, hold_s, start_at = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
    time.sleep(max(0.0, start_at - time.time()))  # racers start together, however long their imports took
    lease = TableLease(base, expiry_s=expiry)
    holder = lease.try_acquire()
    print(json.dumps({"took": holder is None, "holder": None if holder is None else holder.owner.id,
                      "me": lease.owner.id}), flush=True)
    if holder is None:
        ends = time.monotonic() + hold_s
        while time.monotonic() < ends and lease.lost is None:
            time.sleep(0.05)
        print(json.dumps({"lost_to": lease.lost.owner.id if lease.lost else None}), flush=True)
        lease.release()
    """
)


def _start(base: str, expiry: float, hold_s: float, start_at: float = 0.0) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", _HOLDER, base, str(expiry), str(hold_s), str(start_at)],
        stdout=subprocess.PIPE,
        text=True,
    )


def _answer(process: subprocess.Popen[str]) -> dict:
    return json.loads(process.stdout.readline())  # type: ignore[union-attr]


def test_processes_racing_for_one_lease_one_wins(tmp_path: Path) -> None:
    base = str(tmp_path / "t")
    # Together: on a loaded machine one racer's imports took seconds longer than another's, and it found the
    # winner's lease already released after its 2 s (a second, later taking, not a race: generation 2).
    start_at = time.time() + 8.0
    procs = [_start(base, 30, 2.0, start_at) for _ in range(6)]
    answers = [_answer(p) for p in procs]
    for p in procs:
        assert p.wait(timeout=60) == 0
    winners = [a for a in answers if a["took"]]
    assert len(winners) == 1
    assert all(a["holder"] == winners[0]["me"] for a in answers if not a["took"])
    assert _generations(tmp_path / "t") == ["000000000001.json"]


def test_a_killed_holder_on_this_machine_is_taken_over_at_once(tmp_path: Path) -> None:
    base = str(tmp_path / "t")
    holder = _start(base, 30, 600)
    first = _answer(holder)
    assert first["took"]
    refused = _start(base, 30, 0)
    second = _answer(refused)
    assert not second["took"] and second["holder"] == first["me"] and refused.wait(timeout=60) == 0
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait(timeout=30)  # reaped: its pid is gone (a zombie counts as gone too)
    assert lease_holder(base) is not None and not lease_holder(base).live()  # type: ignore[union-attr]
    taker = _start(base, 30, 0)
    assert _answer(taker)["took"]  # long before the 30 s expiry: its process is known dead
    assert taker.wait(timeout=60) == 0


def _orphaned_owner(jvm: subprocess.Popen[str]) -> LeaseOwner:
    """A holder on this machine whose process is gone (a finished child) while ``jvm`` (its "driver JVM") runs."""
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    started = lease_mod._process_start(gone.pid)
    gone.wait(timeout=30)
    here = LeaseOwner.here()
    return LeaseOwner(
        here.host, gone.pid, "id-killed", "hudi-cdc ingest", machine=here.machine, started=started or "x",
        jvm_pid=jvm.pid, jvm_started=lease_mod._process_start(jvm.pid) or "",
    )  # fmt: skip


@pytest.mark.parametrize("jvm_exits", [True, False])
def test_a_killed_holder_whose_jvm_still_runs_is_waited_for_not_taken_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jvm_exits: bool
) -> None:
    """A killed driver's JVM may still finish a commit: a writer waits for it to exit (a short grace), and
    refuses, naming it, if it does not."""
    grace = 4.0
    monkeypatch.setattr(lease_mod, "ORPHAN_JVM_GRACE_S", grace)
    base = str(tmp_path / "t")
    # The "JVM" ends when its stdin closes, as PySpark's gateway JVM does when its Python parent is gone.
    jvm = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        owner = _orphaned_owner(jvm)
        assert TableLease(base, owner=owner).try_acquire() is None
        assert owner.orphaned() and not owner.gone()
        if jvm_exits:
            threading.Timer(1.0, jvm.stdin.close).start()  # type: ignore[union-attr]
        threading.Thread(target=jvm.wait, daemon=True).start()  # reaped once it exits, as init would
        started = time.monotonic()
        if jvm_exits:
            taker = TableLease(base, owner=_owner("b")).acquire(0)  # no wait asked for: the grace alone
            assert taker.held and 0.9 < time.monotonic() - started < grace
            assert lease_holder(base).owner.id == "id-b"  # type: ignore[union-attr]
        else:
            with pytest.raises(LeaseHeldError, match=f"driver JVM still runs \\(pid {jvm.pid}\\)"):
                TableLease(base, owner=_owner("b")).acquire(0)
            assert time.monotonic() - started >= grace
            assert lease_holder(base).owner.id == "id-killed"  # type: ignore[union-attr]
    finally:
        jvm.kill()


def test_a_paused_holder_is_taken_over_after_its_expiry_and_knows_it_lost(tmp_path: Path) -> None:
    base = str(tmp_path / "t")
    holder = _start(base, 1.5, 600)
    first = _answer(holder)
    assert first["took"]
    time.sleep(2.0)  # alive past its expiry: its heartbeat keeps it
    refused = _start(base, 1.5, 0)
    assert not _answer(refused)["took"] and refused.wait(timeout=60) == 0
    os.kill(holder.pid, signal.SIGSTOP)  # a long GC pause, a suspended VM: alive, but no heartbeat
    try:
        paused_at = time.monotonic()
        while True:
            taker = _start(base, 1.5, 3)
            third = _answer(taker)
            if third["took"]:
                break
            assert third["holder"] == first["me"]
            assert taker.wait(timeout=60) == 0
            assert time.monotonic() - paused_at < 20, "the paused holder's lease never expired"
        assert time.monotonic() - paused_at >= 1.0  # not before its expiry
    finally:
        os.kill(holder.pid, signal.SIGCONT)
    assert _answer(holder) == {"lost_to": third["me"]}  # its next heartbeat found the newer generation
    assert holder.wait(timeout=60) == 0
    assert _answer(taker) == {"lost_to": None} and taker.wait(timeout=60) == 0
    stored = lease_holder(base)
    assert stored is not None and stored.owner.id == third["me"] and stored.generation == 2 and stored.released


@pytest.mark.spark
@pytest.mark.parametrize("by_rename", [False, True])
def test_the_store_reached_through_hadoop(spark, tmp_path: Path, by_rename: bool) -> None:  # noqa: ANN001
    """The JVM's store (HDFS by rename, object stores by create) against a local folder: every operation
    reads back. Only the create-if-absent of ``by_rename=False`` refuses here: the local file system's
    rename replaces a file (HDFS's refuses, which this machine cannot show)."""
    store = lease_mod._HadoopStore(spark, "file://" + str(tmp_path / "lease"), by_rename=by_rename)
    assert store.names() == [] and store.read("000000000001.json") is None
    assert store.publish("000000000001.json", b'{"a": 1}')
    if not by_rename:
        assert not store.publish("000000000001.json", b'{"a": 2}')
    store.replace("000000000001.json", b'{"a": 3}')
    store.replace("want-x.json", b"{}")
    assert store.read("000000000001.json") == b'{"a": 3}'
    assert sorted(store.names()) == ["000000000001.json", "want-x.json"]  # no temporary or checksum file
    store.delete("want-x.json")
    assert store.names() == ["000000000001.json"]
    assert (tmp_path / "lease" / "000000000001.json").read_bytes() == b'{"a": 3}'
