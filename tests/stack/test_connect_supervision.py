"""The stack's Connect supervisor brings the Debezium task back after a schema registry outage, losing no row.

Kafka Connect fails a task for good when its converter cannot reach the
registry (issue 14). Here the registry is stopped while a throwaway table gets a
new column, so the next rows need a schema the converter has never seen: the
task goes FAILED, the registry comes back through ``stack/start.sh``, and the
supervisor that script runs (``python -m hudi_cdc -v connect supervise``)
restarts the task without anyone else asking. Every row, those written during
the outage too, must then be in Kafka.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from hudi_cdc.errors import TransientError
from hudi_cdc.ops.connect import (
    ConnectorNotFound,
    ConnectorState,
    RestartBackoff,
    TaskState,
    connector_states,
    restart_failed,
    supervise,
)
from hudi_cdc.testing.postgres import connect
from tests.stack.conftest import BOOTSTRAP

pytestmark = [
    pytest.mark.kafka,
    pytest.mark.postgres,
    pytest.mark.exclusive,
]  # exclusive: it stops a service the other tests use

REPO = Path(__file__).resolve().parents[2]
STACK = Path(os.environ.get("HUDI_CDC_STACK_DIR", REPO / ".stack"))
CONNECT = "http://127.0.0.1:58083"
CONNECTOR = "inventory-connector"
KEY_SCHEMA = {"type": "record", "name": "Key", "fields": [{"name": "id", "type": "int"}]}


def _alive(pid_file: Path) -> bool:
    try:
        os.kill(int(pid_file.read_text()), 0)
    except (OSError, ValueError):
        return False
    return True


def _start_stack() -> None:
    done = subprocess.run(["bash", str(REPO / "stack" / "start.sh")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


def _state() -> ConnectorState:
    return connector_states(CONNECT, [CONNECTOR])[0]


def _wait_running(timeout_s: float, *, steady_s: float = 0.0) -> float:
    """Seconds until the connector is RUNNING (and stays so for ``steady_s``); fails after ``timeout_s``."""
    start = time.monotonic()
    since = None
    while time.monotonic() - start < timeout_s:
        if _state().running:
            since = since or time.monotonic()
            if time.monotonic() - since >= steady_s:
                return since - start
        else:
            since = None
        time.sleep(0.5)
    raise AssertionError(f"{CONNECTOR} not RUNNING after {timeout_s:.0f}s: {_state()}")


def _keys(topic: str, expected: set[int], timeout_s: float = 90.0) -> list[int]:
    """The ``id`` of every keyed message in ``topic``, read until all ``expected`` ids came and the topic is drained."""
    import fastavro
    from confluent_kafka import Consumer, TopicPartition

    schema = fastavro.parse_schema(KEY_SCHEMA)
    consumer = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": f"supervision-{uuid.uuid4().hex}"})
    ids: list[int] = []
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is None:
                if expected <= set(ids):
                    break
                continue
            if message.error() or message.key() is None or message.value() is None:
                continue  # tombstones and partition-end events carry no row
            key = message.key()
            assert key[0] == 0, f"key not in the Confluent framing: {key[:5]!r}"
            ids.append(fastavro.schemaless_reader(io.BytesIO(key[5:]), schema, schema)["id"])
    finally:
        consumer.close()
    return ids


def _insert(conn, table: str, ids: range, **extra: str) -> None:  # noqa: ANN001
    columns = ", ".join(["id", "note", *extra])
    marks = ", ".join(["%s"] * (2 + len(extra)))
    with conn.transaction(), conn.cursor() as cur:
        for i in ids:
            cur.execute(f"insert into inventory.{table} ({columns}) values ({marks})", (i, f"row {i}", *extra.values()))


def _registry_ready() -> bool:
    try:
        with urllib.request.urlopen("http://127.0.0.1:58080/health/ready", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def _stop_registry() -> None:
    pid = int((STACK / "apicurio" / "apicurio.pid").read_text())
    os.kill(pid, signal.SIGTERM)
    for _ in range(60):
        try:
            os.kill(pid, 0)
        except OSError:
            return
        time.sleep(0.5)
    os.kill(pid, signal.SIGKILL)


@pytest.fixture
def supervised() -> Iterator[Path]:
    """The stack with its supervisor (``stack/start.sh`` starts whatever is missing); yields the supervisor's log."""
    if not _alive(STACK / "connect" / "supervisor.pid"):
        _start_stack()
    assert _alive(STACK / "connect" / "supervisor.pid"), "stack/start.sh did not start the Connect supervisor"
    _wait_running(120)
    yield STACK / "connect" / "supervisor.log"


# --- the client against the real Connect --------------------------------------------------------------


def test_a_running_connector_is_parsed() -> None:
    state = _state()
    assert state.name == CONNECTOR
    assert state.state == "RUNNING" and state.running and not state.failed
    assert [t.id for t in state.tasks] == [0]
    assert state.tasks[0].state == "RUNNING" and state.tasks[0].worker == "127.0.0.1:58083"
    assert state.tasks[0].trace_head is None
    assert state.config["connector.class"] == "io.debezium.connector.postgresql.PostgresConnector"
    assert state.config["database.password"] == "[hidden]"
    assert [s.name for s in connector_states(CONNECT)].count(CONNECTOR) == 1


def test_an_unknown_connector_is_a_clear_error() -> None:
    with pytest.raises(ConnectorNotFound, match=r"no connector 'no-such-connector'.*it has: .*inventory-connector"):
        connector_states(CONNECT, ["no-such-connector"])
    with pytest.raises(ConnectorNotFound, match="no-such-connector"):
        restart_failed(CONNECT, "no-such-connector")


def test_restart_failed_leaves_a_running_connector_running() -> None:
    restart_failed(CONNECT, CONNECTOR)  # onlyFailed=true: nothing to restart
    assert _state().running


def test_unreachable_connect_is_transient_and_redacted() -> None:
    with pytest.raises(TransientError, match=r"http://admin:\*\*\*@127\.0\.0\.1:1 cannot be reached") as caught:
        connector_states("http://admin:s3cr3t@127.0.0.1:1")
    assert "s3cr3t" not in str(caught.value)
    # The loop logs it and polls again instead of stopping.
    summary = supervise("http://127.0.0.1:1", interval_s=0.01, max_cycles=2, timeout=1)
    assert (summary.cycles, summary.restarts, summary.unreachable) == (2, 0, 2)


def test_supervise_restarts_nothing_while_all_runs() -> None:
    summary = supervise(CONNECT, interval_s=0.01, max_cycles=3)
    assert (summary.cycles, summary.restarts, summary.unreachable) == (3, 0, 0)


def test_backoff_doubles_while_failed_and_resets_after_staying_running() -> None:
    task = TaskState(0, "FAILED", "w", "ConnectException: Tolerance exceeded in error handler")
    failed = ConnectorState("c", "RUNNING", "w", (task,))
    running = ConnectorState("c", "RUNNING", "w", (TaskState(0, "RUNNING", "w"),))
    backoff = RestartBackoff(initial_s=5, max_s=30, healthy_s=60)
    assert backoff.due(failed, 0) and backoff.restarted("c", 0) == 5
    assert not backoff.due(failed, 4) and backoff.due(failed, 5)
    assert [backoff.restarted("c", 5), backoff.restarted("c", 15), backoff.restarted("c", 35)] == [10, 20, 30]
    assert backoff.restarted("c", 65) == 30  # capped
    assert not backoff.due(running, 66) and not backoff.due(failed, 70)  # a brief RUNNING spell keeps the delay
    assert not backoff.due(running, 100) and not backoff.due(running, 160)  # RUNNING for 60s: reset
    assert backoff.due(failed, 161) and backoff.restarted("c", 161) == 5


# --- the outage ----------------------------------------------------------------------------------------


def test_the_task_failed_by_a_registry_outage_is_restarted_and_no_row_is_lost(supervised: Path) -> None:
    table = f"supervision_{uuid.uuid4().hex[:8]}"
    topic = f"dbserver1.inventory.{table}"
    log_from = supervised.stat().st_size
    before, during, after = range(1, 6), range(101, 121), range(201, 206)
    timings: dict[str, float] = {}
    conn = connect()
    registry_stopped = False
    try:
        with conn.cursor() as cur:
            cur.execute(f"create table inventory.{table} (id integer primary key, note text)")
        _insert(conn, table, before)
        assert sorted(_keys(topic, set(before))) == list(before)  # the schemas of this table are registered

        t0 = time.monotonic()
        _stop_registry()
        registry_stopped = True
        # A new column: the next rows need a value schema the converter has not cached, so it must call the registry.
        with conn.cursor() as cur:
            cur.execute(f"alter table inventory.{table} add column extra text")
        _insert(conn, table, during, extra="during the outage")

        failed: ConnectorState | None = None
        while failed is None and time.monotonic() - t0 < 60:
            state = _state()
            failed = state if any(t.state == "FAILED" for t in state.tasks) else None
            time.sleep(0.2)
        assert failed is not None, f"the task did not fail while the registry was down: {_state()}"
        failed_at = time.monotonic()
        timings["FAILED after the registry stopped"] = failed_at - t0
        task = next(t for t in failed.tasks if t.state == "FAILED")
        assert task.trace_head is not None and "Tolerance exceeded in error handler" in task.trace_head, task
        assert task.trace_cause is not None and "Connection refused" in task.trace_cause, task

        time.sleep(8)  # long enough for the supervisor's first restarts, which must fail again: the registry is down
        # stack/start.sh restarts the registry, then waits for the task; watch both from here.
        starting = subprocess.Popen(
            ["bash", str(REPO / "stack" / "start.sh")], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        registry_up = running = None
        while running is None and time.monotonic() - t0 < 240:
            now = time.monotonic()
            registry_up = registry_up or (now if _registry_ready() else None)
            running = now if registry_up and _state().running else None
            time.sleep(0.5)
        output, _ = starting.communicate(timeout=180)
        assert starting.returncode == 0, output
        registry_stopped = False
        assert registry_up is not None and running is not None, f"not RUNNING again: {_state()}"
        _wait_running(60, steady_s=10)  # and it stays so: not one of the brief RUNNING spells between failures
        timings["registry down"] = registry_up - t0
        timings["FAILED"] = running - failed_at
        timings["RUNNING after the registry was up"] = running - registry_up

        restarts = [
            line for line in supervised.read_text()[log_from:].splitlines() if "restarted inventory-connector" in line
        ]
        assert restarts, "the supervisor logged no restart of inventory-connector"
        assert any("Tolerance exceeded" in line and "task 0" in line for line in restarts), restarts

        _insert(conn, table, after, extra="after")
        expected = [*before, *during, *after]
        ids = _keys(topic, set(expected))
        # At least once: a restarted task may publish again what it had sent but not yet committed.
        assert set(ids) == set(expected), (
            f"missing {sorted(set(expected) - set(ids))}, extra {sorted(set(ids) - set(expected))}"
        )
        print(
            f"\n{len(restarts)} restart(s), {len(ids)} messages for {len(expected)} rows; "
            + ", ".join(f"{k} {v:.1f}s" for k, v in timings.items())
        )
    finally:
        if registry_stopped:
            _start_stack()
        with conn.cursor() as cur:
            cur.execute(f"drop table if exists inventory.{table}")
        conn.close()
        # The topic stays: deleted, it comes back at once, as Connect's producer still asks for its metadata
        # and the stack's broker auto-creates topics.
    assert _state().running


def test_cli_status_and_supervise() -> None:
    from click.testing import CliRunner

    from hudi_cdc.cli import main

    url = "http://127.0.0.1:58083"
    done = CliRunner().invoke(main, ["connect", "status", "--connect-url", url, "--json"])
    states = json.loads(done.output)
    assert any(s["name"] == "inventory-connector" for s in states)
    assert done.exit_code == (0 if all(s["running"] for s in states) else 1)
    unknown = CliRunner().invoke(main, ["connect", "status", "--connect-url", url, "--connector", "nope"])
    assert unknown.exit_code == 2 and "no connector 'nope'" in unknown.output
    # The supervisor ends (exit 2) on what a retry cannot fix: a connector the cluster does not have.
    assert (
        CliRunner().invoke(main, ["connect", "supervise", "--connect-url", url, "--connector", "nope"]).exit_code == 2
    )
