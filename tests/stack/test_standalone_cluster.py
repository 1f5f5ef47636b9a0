"""One round of the files source and one of the Kafka source on a Spark standalone cluster, as the README shows.

A master and a worker in JVMs of their own on 127.0.0.1; the job goes through
``spark-submit --master spark://...`` with the jars and script ``hudi-cdc
jars`` names, so a driver-only path or a jar only the driver has would fail.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hudi_cdc._jvm import GC_LOCKER_RETRIES, jvm_options
from hudi_cdc.jars import resolve_jars
from hudi_cdc.launcher import SCRIPT
from hudi_cdc.testing import pg_event
from hudi_cdc.testing.cluster import spark_bin
from hudi_cdc.testing.samples import SampleCustomers
from tests.stack.conftest import BOOTSTRAP, REGISTRY
from tests.stack.test_kafka_source import Topic, row
from tests.support import apply_events

pytestmark = [pytest.mark.kafka, pytest.mark.hudi]


@pytest.fixture
def cluster(spark_cluster: tuple[str, Path]) -> tuple[str, Path]:
    return spark_cluster  # one cluster for the run (tests/conftest.py), shared with the Airflow cluster DAG


def submit(master: str, *args: object) -> dict:
    command = [
        spark_bin("spark-submit"), "--master", master, "--deploy-mode", "client",
        "--executor-memory", "1g", "--conf", "spark.ui.enabled=false",
        *resolve_jars().submit_args(), "--driver-java-options", jvm_options(),
        "--conf", f"spark.executor.defaultJavaOptions={jvm_options()}",  # as the README's line passes them
        str(SCRIPT), "ingest", *map(str, args), "--json",
    ]  # fmt: skip
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-4000:]
    (line,) = done.stdout.strip().splitlines()
    return json.loads(line)


def executor_logs(work: Path) -> list[Path]:
    return sorted((work / "worker").glob("app-*/*/stderr"))


def test_files_round_on_a_standalone_cluster(spark, cluster: tuple[str, Path], tmp_path: Path) -> None:
    master, work = cluster
    apps_before = len(executor_logs(work))
    sample = SampleCustomers(tmp_path / "events")
    sample.snapshot()
    sample.changes(seed=5)
    base = tmp_path / "customers"
    result = submit(
        master, "--source", "files", "--source-path", sample.source_path, "--flavor", "postgres",
        "--target-base-path", base, "--target-table", "customers", "--table-type", "cow",
        "--record-key-fields", "id",
    )  # fmt: skip
    assert result["commit_time"] and result["events"] > 20
    # The work ran in the worker's executor JVM, not in the driver; the worker started it with hudi-cdc's options.
    new_logs = executor_logs(work)[apps_before:]
    assert new_logs
    command = new_logs[-1].read_text().splitlines()[0]
    assert (
        command.startswith("Spark Executor Command:")
        and f"-XX:GCLockerRetryAllocationCount={GC_LOCKER_RETRIES}" in command
    )
    got = {
        r["id"]: r.asDict()
        for r in spark.read.format("hudi").load(str(base)).select("id", "name", "email", "notes").collect()
    }
    assert got == sample.state


def test_kafka_round_on_a_standalone_cluster(spark, cluster: tuple[str, Path], tmp_path: Path) -> None:
    master, _ = cluster
    topic = Topic(partitions=2)
    events = [pg_event("c", lsn=10 + k, after=row(k, f"n{k}")) for k in range(40)]
    events += [pg_event("u", lsn=100 + k, after=row(k, f"u{k}")) for k in range(0, 40, 3)]
    events += [pg_event("d", lsn=200 + k, before=row(k, None)) for k in range(0, 40, 7)]
    topic.send(events)
    base = tmp_path / "customers"
    result = submit(
        master, "--source", "kafka", "--topic", topic.name, "--bootstrap-servers", BOOTSTRAP,
        "--schema-registry-url", REGISTRY, "--target-base-path", base, "--target-table", "customers",
        "--table-type", "mor",
    )  # fmt: skip
    assert result["events"] == len(events)
    expected = {k: (v["id"], v["name"]) for k, v in apply_events(events).items()}
    got = {r["id"]: (r["id"], r["name"]) for r in spark.read.format("hudi").load(str(base)).collect()}
    assert got == expected
