"""``verify --repair --pipeline``: a running pipeline's runner repairs its table as the table's next round, the
one writer, while the stream goes on. A table corrupted past hudi-cdc (a value at a position the WAL never
reached, a missing row) is repaired while a workload changes other rows; the runner keeps committing the
stream's changes before and after; the table ends equal to Postgres."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from hudi_cdc.cli import main
from hudi_cdc.ops.verify import verify
from hudi_cdc.service import run_pipeline
from hudi_cdc.sink.hudi import HudiTable
from hudi_cdc.testing.postgres import connect, wait_for_stream
from hudi_cdc.upstream.database import SourceDatabase
from payloads.base import ORDER_COLUMN, is_data_column
from tests.stack.conftest import BOOTSTRAP, REGISTRY
from tests.support import start_runner, tamper

pytestmark = [pytest.mark.stack, pytest.mark.kafka, pytest.mark.postgres, pytest.mark.hudi]

NAME = f"rr_{uuid.uuid4().hex[:8]}"
TOPIC = f"dbserver1.inventory.{NAME}"
DATABASE = SourceDatabase("postgresql://debezium@127.0.0.1:55432/inventory", password_env="RUNNER_REPAIR_PASSWORD")


def _pipeline(tmp_path: Path) -> Path:
    path = tmp_path / "repair.toml"
    path.write_text(
        f"""
[source]
source = "kafka"
bootstrap_servers = "{BOOTSTRAP}"
schema_registry_url = "{REGISTRY}"
tables = "{TOPIC}"

[defaults]
target_base_path = "{tmp_path}/lake/{{table}}"
target_table = "{{table}}"
table_type = "mor"
min_sync_interval_seconds = 1
hoodie_conf = {{ "hoodie.index.type" = "SIMPLE" }}

[run]
discovery_interval_seconds = 5
"""
    )
    return path


def _workload(stop: threading.Event, done: list[int]) -> None:
    with connect() as conn:
        step = 0
        while not stop.is_set():
            step += 1
            conn.execute(f"update inventory.{NAME} set label = 'w{step}' where id = %s", (100 + step % 200,))  # noqa: S608
            done.append(step)
            time.sleep(0.2)


def _status(state: Path) -> dict[str, Any]:
    try:
        return json.loads((state / "status.json").read_text())
    except (OSError, ValueError):
        return {}


def _wait(what: str, ready: Any, timeout_s: float = 180.0) -> None:  # noqa: ANN401
    deadline = time.monotonic() + timeout_s
    while not ready():
        assert time.monotonic() < deadline, f"{what} not within {timeout_s:.0f}s"
        time.sleep(1)


def test_the_runner_repairs_its_table_while_the_stream_goes_on(spark, tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setenv("RUNNER_REPAIR_PASSWORD", "dbz")  # the runner's environment: the request names it only
    with connect() as conn:
        conn.execute(f"create table inventory.{NAME} (id int primary key, label text)")
        conn.execute(f"insert into inventory.{NAME} select i, 'v' || i from generate_series(1, 300) i")  # noqa: S608
        wait_for_stream(conn, BOOTSTRAP, [TOPIC], since={})
    pipeline = _pipeline(tmp_path)
    base, state = str(tmp_path / "lake" / NAME), tmp_path / "repair.state"
    assert not run_pipeline(pipeline, spark=spark).failed  # one round: the table exists
    stored = spark.read.format("hudi").load(base)
    one = stored.where("id = 1").select(*[c for c in stored.columns if is_data_column(c)]).first().asDict()
    tamper(spark, base, table_name=NAME, table_type="mor", keys=("id",),
           upserts=[{**one, "label": "wrong", ORDER_COLUMN: "9" * 21}], deletes=[{**one, "id": 2}])  # fmt: skip

    runner = start_runner(pipeline, tmp_path / "runner.log")
    stop, done = threading.Event(), []
    workload = threading.Thread(target=_workload, args=(stop, done), daemon=True)
    try:
        # The one-shot run above left a status of its own (ended): wait for the continuous runner's.
        _wait("the runner", lambda: _status(state).get("continuous") and _status(state).get("pid") != os.getpid())
        workload.start()
        commits_before = len(HudiTable(spark, base).commits())
        # The pipeline's table by its schema.table: its target and settings, and the source table, from the file.
        args = ["verify", "--source-url", DATABASE.url, "--password-env", "RUNNER_REPAIR_PASSWORD",
                "--pipeline", str(pipeline), "--table", f"inventory.{NAME}", "--bootstrap-servers", BOOTSTRAP,
                "--repair", "--json"]  # fmt: skip
        repaired = CliRunner().invoke(main, args, catch_exceptions=False)
        assert repaired.exit_code == 0, repaired.output
        outcome = json.loads(repaired.output.strip().splitlines()[-1])
        assert outcome["repaired_by"] == "runner" and outcome["applied"]
        found = {(k["key"]["id"], k["outcome"]) for k in outcome["keys"]}
        corrupted = {("1", "repaired"), ("2", "repaired")}
        # A row the workload changes in both of verify's windows differs in both passes (lag): repaired at the
        # snapshot's position, where the stream's later changes outrank it (the table ends equal, below).
        assert corrupted <= found and all(int(key) >= 100 for key, _ in found - corrupted), found
        assert "dbz" not in repaired.output and not list((state / "control").glob("*.repair"))
        changes = len(done)
        _wait("the stream's changes after the repair", lambda: len(done) > changes + 10)
    finally:
        stop.set()
        workload.join(timeout=30)
    try:
        # The stream went on: the runner committed the workload's changes around the repair's own commits.
        _wait("the runner to catch up", lambda: verify(spark, base, DATABASE, f"inventory.{NAME}").equal, 240)
        assert len(HudiTable(spark, base).commits()) > commits_before + len(outcome["commits"])
    finally:
        os.killpg(runner.pid, signal.SIGTERM)
        runner.wait(timeout=120)
        with connect() as conn:
            conn.execute(f"drop table inventory.{NAME}")
