"""The writer lease on s3a://, against the stack's S3 server (SeaweedFS), with real processes.

Two worker processes, each a Python process with its own Spark driver JVM (the lease reaches S3 through
s3a's own AWS SDK client in the JVM), take commands from the test on stdin and answer on stdout:

- they race for the same leases at the same instant, fresh ones and expired ones (a takeover race): exactly
  one wins each time, the conditional PUT (``If-None-Match: *``) deciding;
- a worker holds a table's lease as a writer on "another machine" (no same-machine shortcut): this process's
  ``ingest`` is refused (``LeaseHeldError`` naming it) before it writes anything; the worker is SIGKILLed
  with its JVM; an ingest waiting for the table takes it over once the holder's heartbeat is older than the
  expiry, not before, and writes: the table read back equals the source, no key twice, one commit. (The
  writes are this process's: its session is warm; a worker's first Hudi write cost a minute or two more.)

A store that ignores ``If-None-Match`` is refused by name: a minimal S3 server in this process that accepts
every PUT stands in for one (no real store at hand does that).
"""

from __future__ import annotations

import dataclasses
import hashlib
import http.server
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hudi_cdc import ingest
from hudi_cdc.errors import ConfigError, LeaseHeldError, LeaseLostError
from hudi_cdc.sink import lease as lease_mod
from hudi_cdc.sink.lease import LEASE_FOLDER, LeaseOwner, TableLease, lease_holder
from hudi_cdc.testing.samples import SampleCustomers
from tests.sink.test_object_storage import ACCESS_KEY, BUCKET, COLUMNS, SECRET_KEY, reader, s3  # noqa: F401
from tests.support import table_state

pytestmark = [pytest.mark.spark, pytest.mark.hudi]

_WORKER = textwrap.dedent(
    """
    import dataclasses, json, os, sys, time
    from hudi_cdc.sink import lease as lease_mod
    from hudi_cdc.sink.lease import LeaseOwner, TableLease
    from hudi_cdc.sink.object_store import configure
    from hudi_cdc.spark import spark_session

    spark = spark_session(app_name="lease-s3a-worker", conf={"spark.ui.enabled": "false",
                          "spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2"})
    configure(spark, ["s3a://" + sys.argv[1] + "/"], endpoint=sys.argv[2], path_style=True)
    print(json.dumps({"ready": True}), flush=True)
    held = []

    def owner(remote):
        here = LeaseOwner.here(spark=spark)
        return dataclasses.replace(here, machine="") if remote else here  # "" : seen as on another machine

    for line in sys.stdin:
        cmd = json.loads(line)
        time.sleep(max(0.0, cmd.get("start_at", 0.0) - time.time()))
        if cmd["op"] == "race":
            lease = TableLease(cmd["base"], owner=owner(False), expiry_s=60, spark=spark)
            holder = lease.try_acquire()
            held.append(lease)
            answer = {"took": holder is None, "me": lease.owner.id,
                      "holder": None if holder is None else holder.owner.id}
        elif cmd["op"] == "hold":
            lease = TableLease(cmd["base"], owner=owner(True), expiry_s=cmd["expiry"], spark=spark).acquire(0)
            answer = {"me": lease.owner.id, "generation": lease.record.generation}
        elif cmd["op"] == "release":
            answer = {"released": sum(lease.held for lease in held)}
            for lease in held:
                lease.release()
        print(json.dumps(answer), flush=True)
    """
)


class _Worker:
    """A worker process (Python and its Spark driver JVM, in a process group of their own)."""

    def __init__(self, s3_endpoint: str, tmp: Path, name: str) -> None:
        env = {
            **os.environ,
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "SPARK_LOCAL_DIRS": str(tmp / f"scratch-{name}"),
        }
        self.log = tmp / f"worker-{name}.log"
        self.process = subprocess.Popen(
            [sys.executable, "-c", _WORKER, BUCKET, s3_endpoint],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log.open("w"),
            text=True,
            env=env,
            start_new_session=True,
        )

    def send(self, **command: Any) -> None:  # noqa: ANN401
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()

    def answer(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        while True:
            line = self.process.stdout.readline()
            assert line, f"the worker ended (exit {self.process.poll()}): {self.log.read_text()[-3000:]}"
            if line.startswith("{"):  # the JVM writes to the same stdout now and then
                return json.loads(line)

    def kill(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=60)

    def stop(self) -> None:
        if self.process.poll() is None and self.process.stdin is not None:
            self.process.stdin.close()
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.kill()


@pytest.fixture(scope="module")
def workers(s3: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[_Worker, _Worker]]:  # noqa: F811
    tmp = tmp_path_factory.mktemp("lease-s3a")
    pair = (_Worker(s3, tmp, "a"), _Worker(s3, tmp, "b"))
    try:
        for worker in pair:
            assert worker.answer() == {"ready": True}
        yield pair
    finally:
        for worker in pair:
            worker.stop()


def _prefix() -> str:
    return f"s3a://{BUCKET}/lease-s3a/{uuid.uuid4().hex[:12]}"


def _dead(name: str) -> LeaseOwner:
    return LeaseOwner("host-" + name, 4242, "id-" + name, "test " + name)  # no machine: never "known dead"


def test_racing_processes_one_wins_each_lease(reader: Any, workers: tuple[_Worker, _Worker]) -> None:  # noqa: ANN401, F811
    a, b = workers
    prefix = _prefix()
    rounds = 16
    bases = [f"{prefix}/t{i}" for i in range(rounds)]
    # Every other table has an expired lease (generation 1, its holder silent): both workers see it expired
    # at the same instant and race for generation 2, the takeover race.
    for base in bases[1::2]:
        stale = TableLease(base, owner=_dead("gone"), expiry_s=0.5, spark=reader)
        assert stale.try_acquire() is None
        lease_mod._Heartbeat.get().discard(stale)
    start = time.time() + 1.0
    for i, base in enumerate(bases):
        for worker in workers:
            worker.send(op="race", base=base, start_at=start + 0.3 * i)
    answers = [(a.answer(), b.answer()) for _ in bases]
    for i, (first, second) in enumerate(answers):
        assert first["took"] != second["took"], (i, first, second)  # exactly one of the two took it
        winner, loser = (first, second) if first["took"] else (second, first)
        assert loser["holder"] == winner["me"], (i, loser, winner)
        stored = lease_holder(bases[i], spark=reader)
        assert stored is not None and stored.owner.id == winner["me"] and stored.live()
        assert stored.generation == (2 if i % 2 else 1), (i, stored)
    wins = {a_["took"] for a_, _ in answers}
    assert wins == {True, False}, "one worker won every race: the start was not together"
    for worker in workers:
        worker.send(op="release")
    assert [w.answer()["released"] for w in workers] == [
        sum(x["took"] for x, _ in answers),
        sum(y["took"] for _, y in answers),
    ]
    assert lease_holder(bases[0], spark=reader).released  # type: ignore[union-attr]


def test_a_held_table_is_refused_then_taken_over_after_the_killed_holders_expiry(
    reader: Any,  # noqa: ANN401, F811
    s3: str,  # noqa: F811
    workers: tuple[_Worker, _Worker],
    tmp_path: Path,
) -> None:
    """A worker holds the table's lease as a writer on another machine would (no same-machine shortcut); this
    process's ingest is refused, naming it, before it writes anything; the worker is SIGKILLed with its JVM;
    an ingest waiting for the table takes it over once the holder's heartbeat is older than the expiry, not
    before, and writes: the table read back equals the source, no key twice, one commit."""
    a, _ = workers
    sample = SampleCustomers(tmp_path / "events", keys=60)
    sample.snapshot(rows=50)
    sample.changes(seed=3)
    base = f"{_prefix()}/customers"
    settings = {
        "source_path": sample.source_path, "flavor": "postgres", "target_base_path": base,
        "target_table": "customers", "record_key_fields": ["id"], "table_type": "cow", "s3_endpoint": s3,
    }  # fmt: skip
    expiry = 3.0
    a.send(op="hold", base=base, expiry=expiry)
    held = a.answer()
    with pytest.raises(LeaseHeldError, match=f"another process writes this table: host .*, pid {a.process.pid}"):
        ingest(spark=reader, **settings)
    assert not _fs(reader, base).exists(reader._jvm.org.apache.hadoop.fs.Path(base + "/.hoodie"))  # nothing written

    a.kill()  # its Python process and its JVM: no release, no more heartbeats
    killed_at = time.time()
    result = ingest(spark=reader, lease_wait_seconds=30, **settings)
    # Its last heartbeat was at most a quarter of the expiry before the kill: not taken sooner than that allows.
    taken = lease_holder(base, spark=reader)
    assert taken is not None and taken.generation == held["generation"] + 1 and taken.released
    assert expiry * 0.75 - 0.2 <= taken.since - killed_at <= expiry + 10, (taken.since - killed_at, taken)
    assert result.committed and result.upserts == len(sample.state), result
    assert table_state(reader, base, COLUMNS) == sample.rows()
    assert reader.read.format("hudi").load(base).count() == len(sample.state)  # no key twice
    timeline = reader._jvm.org.apache.hadoop.fs.Path(base + "/.hoodie/timeline")
    completed = [
        n for n in (st.getPath().getName() for st in _fs(reader, base).listStatus(timeline)) if n.endswith(".commit")
    ]
    assert len(completed) == 1, completed


def _fs(spark: Any, base: str) -> Any:  # noqa: ANN401
    path = spark._jvm.org.apache.hadoop.fs.Path(base)
    return path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())


def test_a_renewal_is_conditional_on_the_holders_etag(reader: Any) -> None:  # noqa: ANN401, F811
    """The holder rewrites its file only while it is what it wrote last (``If-Match``): rewritten by anyone
    else, the holder's next renewal fails and it knows the lease is no longer its own."""
    base = f"{_prefix()}/t"
    held = TableLease(base, owner=_dead("a"), expiry_s=60, spark=reader)
    assert held.try_acquire() is None
    lease_mod._Heartbeat.get().discard(held)  # renewals by hand here
    assert held.renew() and lease_holder(base, spark=reader).heartbeat == held.record.heartbeat  # type: ignore[union-attr]
    assert lease_mod._store(base, reader).honours_if_match()  # type: ignore[attr-defined]  # the probe says so
    other = lease_mod._store(base, reader)  # another writer's view: it knows no ETag, so it overwrites
    record = lease_holder(base, spark=reader)
    assert record is not None
    # The same owner and generation, so only the ETag tells: a stale copy of the holder written back, say.
    other.replace("000000000001.json", dataclasses.replace(record, released=True).to_json())
    assert not held.renew() and held.lost is not None and held.lost.released
    assert lease_holder(base, spark=reader).released  # type: ignore[union-attr]  # not overwritten by the renewal
    with pytest.raises(LeaseLostError):
        held.check()


class _IgnoresConditions(http.server.BaseHTTPRequestHandler):
    """An S3 endpoint that accepts every PUT, If-None-Match or not, as a store without conditional writes."""

    def _reply(self, code: int, body: bytes = b"") -> None:
        self.send_response(code)
        self.send_header("ETag", f'"{hashlib.md5(body).hexdigest()}"')  # noqa: S324 - S3's ETag is the MD5
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_PUT(self) -> None:  # noqa: N802
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.headers.get("x-amz-content-sha256", "").startswith("STREAMING-"):  # aws-chunked: size;sig\r\ndata\r\n
            data, rest = b"", body
            while rest:
                head, _, rest = rest.partition(b"\r\n")
                size = int(head.split(b";")[0], 16)
                data, rest = data + rest[:size], rest[size + 2 :]
            body = data
        self._reply(200, body)

    def do_DELETE(self) -> None:  # noqa: N802
        self._reply(204)

    def do_HEAD(self) -> None:  # noqa: N802 - no object is ever there: the lease's folder is empty
        self._reply(404)

    def do_GET(self) -> None:  # noqa: N802 - a listing: empty
        body = b'<?xml version="1.0"?><ListBucketResult><IsTruncated>false</IsTruncated><KeyCount>0</KeyCount></ListBucketResult>'
        self.send_response(200)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:  # noqa: ANN401
        pass


def test_a_store_without_conditional_writes_is_refused(reader: Any) -> None:  # noqa: ANN401, F811
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _IgnoresConditions)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    bucket = "no-conditions-" + uuid.uuid4().hex[:6]
    conf = reader.sparkContext._jsc.hadoopConfiguration()
    for key, value in {
        "endpoint": endpoint, "path.style.access": "true", "connection.ssl.enabled": "false",
        "access.key": ACCESS_KEY, "secret.key": SECRET_KEY, "attempts.maximum": "1", "retry.limit": "1",
    }.items():  # fmt: skip
        conf.set(f"fs.s3a.bucket.{bucket}.{key}", value)
    try:
        assert lease_holder(f"s3a://{bucket}/t", spark=reader) is None  # a reader (status) is not probed: no PUT
        with pytest.raises(ConfigError) as refused:
            TableLease(f"s3a://{bucket}/t", owner=_dead("x"), spark=reader).try_acquire()
    finally:
        server.shutdown()
    message = str(refused.value)
    assert f"s3a://{bucket} at {endpoint}: this S3 store does not honour conditional writes" in message
    assert "was accepted (it must answer 412)" in message and "Use a store that honours them" in message
    assert SECRET_KEY not in message
    assert LEASE_FOLDER in message
