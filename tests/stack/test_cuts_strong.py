"""Consistent cuts under everything at once, every recorded cut checked against a ledger (issue 56).

A Debezium Postgres connector of the test's own (``provide.transaction.metadata=true``) publishes four tables
that :class:`~hudi_cdc.testing.ledger.LedgerWorkload` writes in every transaction: a ledger numbering the
transactions, account balances, the move lines behind them (a few, or up to 150 per transaction: hundreds of
events) and tags, whose table is renamed by a ``[[routes]]`` route. Their topics have 3 partitions each.
``hudi-cdc run --continuous`` cuts every 4 s with Hudi's default cleaner and the default ``cut_retention``
(the pins alone keep the retained cuts readable), and meanwhile:

- it is killed (SIGKILL to its process group) while a cut's bounded rounds are under way, and restarted;
- while it is down, an account's row is corrupted past hudi-cdc, and the newest messages of three topics are
  produced again (a producer's resend of messages already delivered);
- the restarted runner repairs that table (``verify --repair --pipeline``: the runner's repair request) while
  the workload goes on: a repair is a cut boundary.

Every cut the runner records is read with ``read_consistent`` as soon as it is in ``cuts.json`` (no cut id may
be skipped): each table must hold exactly the ledger's transactions, a prefix ``1..n`` of the commit order,
the money total conserved; cut after cut ``n`` never goes back. The newest cut after the workload's last
transaction equals Postgres, and the oldest cut still retained at the end reads again, the same.

Short form in CI. The long form (``HUDI_CDC_LONG_CUTS=1``, or ``make test-cuts-long``): more kills, a longer
workload.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hudi_cdc import read_consistent
from hudi_cdc.service.cuts import CutStore
from hudi_cdc.testing.faults import kill_group, timeline_of
from hudi_cdc.testing.kafka import create_topic, end_offsets
from hudi_cdc.testing.ledger import ROLES, LedgerWorkload, broken, rows_of, source_rows
from hudi_cdc.testing.postgres import connect
from payloads.base import is_data_column
from tests.stack.conftest import BOOTSTRAP, REGISTRY
from tests.stack.connectors import postgres_connector
from tests.support import start_runner, tamper

pytestmark = [pytest.mark.kafka, pytest.mark.postgres, pytest.mark.hudi]

LONG = os.environ.get("HUDI_CDC_LONG_CUTS") == "1"
KILLS = 4 if LONG else 1
CUTS_AFTER_KILLS = 8 if LONG else 2
PARTITIONS = 3
RESENT_PER_PARTITION = 25
RUN = f"sc{uuid.uuid4().hex[:6]}"
PREFIX = f"strong{RUN[2:]}"
DATABASE_URL = "postgresql://debezium@127.0.0.1:55432/inventory"
PASSWORD_ENV = "STRONG_CUTS_PASSWORD"
# The routed table's name in the pipeline (its target), and each table's role in the workload.
NAMES = {
    "ledger": f"inventory.{RUN}_ledger",
    "acct": f"inventory.{RUN}_acct",
    "moves": f"inventory.{RUN}_moves",
    "tags": f"inventory.{RUN}_labels",
}
ROLE_OF = {name: role for role, name in NAMES.items()}


def _pipeline(tmp_path: Path) -> Path:
    path = tmp_path / "strong.toml"
    path.write_text(
        f"""
[source]
source = "kafka"
bootstrap_servers = "{BOOTSTRAP}"
schema_registry_url = "{REGISTRY}"
tables = "{PREFIX}.inventory.{RUN}_*"
flavor = "postgres"

[defaults]
target_base_path = "{tmp_path}/lake/{{table}}"
target_table = "{{table}}"
table_type = "mor"
min_sync_interval_seconds = 1

[[routes]]
tables = ["inventory.{RUN}_tags"]
target = "{NAMES["tags"]}"

[tables."{NAMES["moves"]}"]
table_type = "cow"

[tables."{NAMES["ledger"]}"]
table_type = "cow"

[run]
max_concurrent_tables = 2
consistent_cut_interval_seconds = 4
"""
    )
    return path


def _status(state: Path) -> dict[str, Any]:
    try:
        return json.loads((state / "status.json").read_text())
    except (OSError, ValueError):
        return {}


def _mid_cut(state: Path) -> bool:
    """Whether the runner's status says a cut is planned and some of its bounded rounds have not committed."""
    underway = _status(state).get("cut_underway")
    return bool(underway and underway["transaction"] and underway["pending"])


class CutChecker:
    """Reads every cut the runner records, as soon as it is in ``cuts.json``, and checks the ledger's invariants."""

    def __init__(self, spark: Any, pipeline: Path, state: Path) -> None:  # noqa: ANN401
        self.spark, self.pipeline, self.state = spark, pipeline, state
        self.checked: dict[int, dict[str, Any]] = {}  # id -> the cut, with "top": the ledger's newest transaction
        self.read_s = 0.0
        self.runner: subprocess.Popen | None = None  # the runner that must stay up while the test waits

    def poll(self) -> None:
        for cut in CutStore.load(str(self.state)).cuts:
            if cut["id"] in self.checked:
                continue
            # ids are consecutive: a cut dropped from cuts.json before it was read would show as a gap
            assert not self.checked or cut["id"] == max(self.checked) + 1, (sorted(self.checked)[-3:], cut["id"])
            self.checked[cut["id"]] = {**cut, "top": self.check(cut)}

    def _tail(self) -> str:
        """The end of the runner's log and its status: what a failure shows of the process under test."""
        log = (self.state.parent / "runner.log").read_text(errors="replace")[-3000:]
        return f"status {json.dumps(_status(self.state), default=str)[-1500:]}; runner log: {log}"

    def check(self, cut: dict[str, Any]) -> int | None:
        """The cut's invariants hold; the ledger's newest transaction in it (None: the ledger is left out)."""
        started = time.monotonic()
        frames = read_consistent(self.spark, self.pipeline, at=cut["transaction"])
        assert set(frames) == set(cut["tables"]) and set(frames) <= set(ROLE_OF), (cut["id"], sorted(frames))
        rows = rows_of({ROLE_OF[name]: frame for name, frame in frames.items()})
        problems, top = broken(rows)
        assert problems == [], (cut["id"], cut["transaction"], sorted(frames), problems)
        self.read_s += time.monotonic() - started
        return top if "ledger" in rows else None

    def wait(self, what: str, ready: Callable[[], Any], timeout_s: float = 300.0) -> Any:  # noqa: ANN401
        """``ready()``'s first truthy value, checking every new cut meanwhile."""
        deadline = time.monotonic() + timeout_s
        while True:
            self.poll()
            if got := ready():
                return got
            if self.runner is not None and self.runner.poll() is not None:
                raise AssertionError(f"the runner exited {self.runner.returncode} waiting for {what}: {self._tail()}")
            assert time.monotonic() < deadline, f"timed out after {timeout_s:.0f}s waiting for {what}: {self._tail()}"
            time.sleep(0.2)


def _redeliver(topic: str, per_partition: int) -> int:
    """Produce the newest ``per_partition`` messages of each partition of ``topic`` again, to the same partition,
    keys, values and headers, as a producer's resend after a lost acknowledgement does; how many."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    ends = {p: o for (t, p), o in end_offsets(BOOTSTRAP, [topic]).items() if t == topic}
    consumer = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": f"resend-{RUN}", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, p, max(0, end - per_partition)) for p, end in ends.items()])
        wanted = sum(min(per_partition, end) for end in ends.values())
        messages: list[Any] = []
        deadline = time.monotonic() + 60
        while len(messages) < wanted:
            assert time.monotonic() < deadline, f"read {len(messages)} of {wanted} messages of {topic}"
            message = consumer.poll(1.0)
            if message is not None and message.error() is None and message.offset() < ends[message.partition()]:
                messages.append(message)
    finally:
        consumer.close()
    producer = Producer({"bootstrap.servers": BOOTSTRAP})
    for m in messages:
        producer.produce(topic, key=m.key(), value=m.value(), partition=m.partition(), headers=m.headers())
    assert producer.flush(60) == 0
    return len(messages)


def _corrupt_reserve(spark: Any, base: str) -> None:  # noqa: ANN401
    """Account 0 (never written by the workload) gets a wrong note, past hudi-cdc, with its own ``_source_order``
    (a repair at a later position outranks it); no clean by this write (it is not hudi-cdc's and takes no pin)."""
    stored = spark.read.format("hudi").load(base)
    row = stored.where("id = 0").select(*[c for c in stored.columns if is_data_column(c)]).first().asDict()
    tamper(spark, base, table_name=f"{RUN}_acct", table_type="mor", keys=("id",), upserts=[{**row, "note": "corrupt"}],
           conf={"hoodie.clean.automatic": "false", "hoodie.archive.automatic": "false"})  # fmt: skip


def test_every_cut_holds_exactly_the_ledgers_transactions(spark, tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    started = time.monotonic()
    monkeypatch.setenv(PASSWORD_ENV, "dbz")  # the runner's environment: the repair request names the variable only
    workload = LedgerWorkload(RUN, pause_s=0.1 if LONG else 0.2)
    with connect() as conn:
        workload.create(conn)
    for source in workload.tables.values():  # several partitions: Debezium keeps a topic it finds
        create_topic(BOOTSTRAP, f"{PREFIX}.inventory.{source}", partitions=PARTITIONS)
    try:
        _run_and_check(spark, tmp_path, workload)
    finally:
        with connect() as conn:
            workload.drop(conn)
    print(f"\nstrong cuts: {time.monotonic() - started:.0f} s, {workload.seq} transactions, {workload.events} events")


def _run_and_check(spark: Any, tmp_path: Path, workload: LedgerWorkload) -> None:  # noqa: ANN401
    path, log, state = _pipeline(tmp_path), tmp_path / "runner.log", tmp_path / "strong.state"
    acct_base = str(tmp_path / "lake" / f"{RUN}_acct")
    cuts = CutChecker(spark, path, state)
    tables = ",".join(f"inventory.{t}" for t in workload.tables.values())
    resent = 0
    with postgres_connector(
        f"strong-{RUN}", slot=f"slot_{RUN}", topic_prefix=PREFIX, table=tables, **{"provide.transaction.metadata": "true"}
    ), connect() as conn:  # fmt: skip
        workload.start(conn)
        runner = cuts.runner = start_runner(path, log)
        try:
            for kill in range(KILLS):
                cuts.wait("a cut recorded", lambda k=kill: len(cuts.checked) > k)
                cuts.wait("a cut's bounded rounds under way", lambda: _mid_cut(state))
                cuts.runner = None
                kill_group(runner)
                if kill == 0:  # while no runner writes: corruption past hudi-cdc, and a producer's resend
                    _corrupt_reserve(spark, acct_base)
                    for role in ("acct", "moves", "tags"):
                        resent += _redeliver(f"{PREFIX}.inventory.{workload.tables[role]}", RESENT_PER_PARTITION)
                runner = cuts.runner = start_runner(path, log)
                if kill == 0:
                    cuts.wait("the restarted runner", lambda r=runner: _status(state).get("pid") == r.pid)
                    outcome = _repair(cuts, path, workload)
            # A cut every 4 s asked; under load one came every 30-40 s (the long form's first run timed out here)
            more = max(cuts.checked) + CUTS_AFTER_KILLS
            cuts.wait("more cuts", lambda: max(cuts.checked) >= more, timeout_s=60.0 * CUTS_AFTER_KILLS + 180)
            workload.stop()
            last = workload.seq
            # The newest cut reaches the workload's last transaction.
            cuts.wait("a cut at the last transaction", lambda: cuts.checked[max(cuts.checked)]["top"] == last)
        finally:
            workload.stop()
            if runner.poll() is None:
                os.killpg(runner.pid, signal.SIGTERM)
                runner.wait(timeout=120)
        cuts.poll()  # the cuts recorded after the last wait, up to the runner's stop, are checked too
        with connect() as check:
            source = source_rows(check, workload)
    newest = cuts.checked[max(cuts.checked)]
    lake = rows_of({ROLE_OF[n]: f for n, f in read_consistent(spark, path, at=newest["transaction"]).items()})
    assert {r: sorted(lake[r]) for r in ROLES} == {r: sorted(source[r]) for r in ROLES}

    checked = [cuts.checked[i] for i in sorted(cuts.checked)]
    assert [c["id"] for c in checked] == list(range(1, len(checked) + 1))
    tops = [c["top"] for c in checked if c["top"] is not None]
    assert tops == sorted(tops) and tops[-1] == workload.seq, tops  # cut after cut, the ledger never goes back
    whole = [c for c in checked if set(c["tables"]) == set(ROLE_OF)]
    assert len(whole) >= 3, [(c["id"], c["left_out"]) for c in checked]
    for cut in checked:  # only a table with no commit yet, or one under or waiting after its repair, is left out
        reasons = cut["left_out"].values()
        assert all(w in ("new: no commit yet", "repair under way") or w.startswith("repaired at") for w in reasons), cut
    assert workload.biggest >= 100 and resent == 3 * PARTITIONS * RESENT_PER_PARTITION, (workload.biggest, resent)

    # The repair: account 0 repaired, and every cut that holds the repaired commit shows it repaired.
    assert outcome["repaired_by"] == "runner" and ("0", "repaired") in {
        (k["key"]["id"], k["outcome"]) for k in outcome["keys"]
    }, outcome
    after = [c for c in checked if c["tables"].get(NAMES["acct"], {}).get("repaired")]
    assert after, "no cut after the repair held the repaired table"
    reserve = read_consistent(spark, path, at=after[0]["transaction"])[NAMES["acct"]].where("id = 0").first()
    assert reserve["note"] == "reserve", reserve

    # With the default cleaner, the newest 10 cuts are retained, and the oldest, the one a clean would reach
    # first, still reads whole and the same.
    retained = CutStore.load(str(state)).cuts
    assert [c["id"] for c in retained] == [c["id"] for c in checked][-10:]
    assert cuts.check(retained[0]) == cuts.checked[retained[0]["id"]]["top"]
    cleaned = [n for n in NAMES.values() if any(timeline_of(_base(tmp_path, n)).glob("*.clean"))]
    reasons = sorted({w for c in checked for w in c["left_out"].values()})
    print(f"strong cuts: {len(checked)} cuts ({len(whole)} whole) read in {cuts.read_s:.0f} s; left out: {reasons}; "
          f"repair: {len(outcome['keys'])} keys; tables cleaned: {cleaned}")  # fmt: skip
    if len(checked) > 10:  # the oldest cuts' commits were unpinned: the cleaner passed them
        assert cleaned, "no table was cleaned"


def _base(tmp_path: Path, name: str) -> Path:
    return tmp_path / "lake" / name.split(".", 1)[1]


def _repair(cuts: CutChecker, path: Path, workload: LedgerWorkload) -> dict[str, Any]:
    """``verify --repair`` of the accounts, handed to the running runner; its outcome. The cuts are checked
    while the repair runs."""
    # --slot: the recheck waits for this connector's slot alone (by default every logical slot of the database
    # must confirm the position, and an idle slot of another connector never does).
    command = [
        str(Path(sys.executable).parent / "hudi-cdc"), "verify", "--source-url", DATABASE_URL,
        "--password-env", PASSWORD_ENV, "--pipeline", str(path), "--table", f"inventory.{workload.tables['acct']}",
        "--bootstrap-servers", BOOTSTRAP, "--slot", f"slot_{RUN}", "--repair", "--json",
    ]  # fmt: skip
    out = path.parent / "verify.out"
    with out.open("wb") as sink:
        verify = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, env=dict(os.environ))
    try:
        cuts.wait("the repair", lambda: verify.poll() is not None)
    finally:
        if verify.poll() is None:
            verify.kill()
            verify.wait()
    text = out.read_text()
    assert "dbz" not in text and verify.returncode in (0, 1), text[-3000:]
    return json.loads(text.strip().splitlines()[-1])
