"""``examples/airflow/`` with a real Airflow (``make airflow``): the DAGs import, run, retry and fail as promised.

Airflow lives in ``.venv-airflow`` (its pins clash with ours); its tasks run
``hudi-cdc`` from this venv, as a user's would from theirs. Each test gets an
Airflow home of its own with a SQLite metadata database, read back afterwards
for task states, tries and XCom values.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from hudi_cdc.testing.samples import SampleCustomers

pytestmark = [pytest.mark.airflow, pytest.mark.hudi, pytest.mark.spark]

REPO = Path(__file__).resolve().parents[2]
AIRFLOW = REPO / ".venv-airflow" / "bin" / "airflow"
HUDI_CDC = Path(sys.executable).parent / "hudi-cdc"
INVENTORY_DAGS = REPO / "examples" / "airflow"
MACHINE = ("HUDI_CDC_CACHE_DIR", "HUDI_CDC_JIT", "HUDI_CDC_GC")


class Airflow:
    def __init__(self, home: Path, dags: Path, **env: str) -> None:
        self.home = home
        # A user's environment: none of ours but the machine-wide JVM settings (make test's archive and JIT).
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "HUDI_CDC")) or k in MACHINE}
        self.env.update(
            AIRFLOW_HOME=str(home),
            AIRFLOW__CORE__DAGS_FOLDER=str(dags),
            AIRFLOW__CORE__LOAD_EXAMPLES="false",
            HUDI_CDC_BIN=str(HUDI_CDC),
            HUDI_CDC_PYTHON=sys.executable,
            HUDI_CDC_LAKE=str(home / "lake"),
            **env,
        )
        if not (home / "airflow.db").exists():
            self("db", "migrate")

    def __call__(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [str(AIRFLOW), *args], env=self.env, cwd=self.home, capture_output=True, text=True, timeout=1500
        )
        if check:
            assert done.returncode == 0, f"airflow {' '.join(args)}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        return done

    def task_instances(self, dag_id: str) -> dict[str, tuple[str, int]]:
        with sqlite3.connect(self.home / "airflow.db") as db:
            rows = db.execute("select task_id, state, try_number from task_instance where dag_id = ?", (dag_id,))
            return {task: (state, tries) for task, state, tries in rows}

    def xcom_results(self, dag_id: str) -> dict[str, Any]:
        with sqlite3.connect(self.home / "airflow.db") as db:
            rows = db.execute("select task_id, value from xcom where dag_id = ? and key = 'return_value'", (dag_id,))
            return {task: json.loads(value) for task, value in rows}


@pytest.fixture(scope="module")
def migrated_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty Airflow metadata database, migrated once: each test starts from a copy of it."""
    if not AIRFLOW.exists():
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true but .venv-airflow is missing: run `make airflow`")
        pytest.skip("no .venv-airflow: make airflow")
    home = tmp_path_factory.mktemp("airflow-template")
    Airflow(home, home)
    return home / "airflow.db"


@pytest.fixture
def airflow_home(tmp_path: Path, migrated_db: Path) -> Path:
    (tmp_path / "home").mkdir()
    shutil.copyfile(migrated_db, tmp_path / "home" / "airflow.db")
    return tmp_path / "home"


def _json_list(stdout: str) -> list[Any]:
    # Airflow's CLI prints its warnings (graphviz missing) on stdout before the JSON.
    (listing,) = [line for line in stdout.splitlines() if line.startswith("[")]
    return json.loads(listing)


def test_the_dags_import_without_errors(airflow_home: Path) -> None:
    airflow = Airflow(airflow_home, INVENTORY_DAGS)
    airflow("dags", "reserialize")
    assert _json_list(airflow("dags", "list-import-errors", "-o", "json").stdout) == []
    dags = {d["dag_id"] for d in _json_list(airflow("dags", "list", "-o", "json").stdout)}
    assert {"hudi_cdc_inventory", "hudi_cdc_inventory_cluster"} <= dags


def test_the_dag_replicates_the_embedded_default(spark, airflow_home: Path) -> None:
    events = airflow_home / "events"
    samples = {}
    for seed, table in enumerate(("customers", "accounts"), start=1):
        samples[table] = SampleCustomers(events, topic=f"dbserver1.inventory.{table}")
        samples[table].snapshot()
        samples[table].changes(seed=seed)
    airflow = Airflow(airflow_home, INVENTORY_DAGS, HUDI_CDC_EVENTS=str(events))
    airflow("dags", "test", "hudi_cdc_inventory")

    assert airflow.task_instances("hudi_cdc_inventory") == {"customers": ("success", 1), "accounts": ("success", 1)}
    results = airflow.xcom_results("hudi_cdc_inventory")
    for table, sample in samples.items():
        frame = spark.read.format("hudi").load(str(airflow_home / "lake" / table))
        got = {r["id"]: r.asDict() for r in frame.select("id", "name", "email", "notes").collect()}
        assert got == sample.state, table
        assert results[table]["events"] == sum(1 for _ in _events_in(sample)) and results[table]["commit_time"]


def _events_in(sample: SampleCustomers) -> list[dict]:
    import fastavro

    events = []
    for path in sorted(Path(sample.source_path).rglob("*.avro")):
        with open(path, "rb") as f:
            events.extend(fastavro.reader(f))
    return events


def test_transient_failures_are_retried_and_terminal_ones_are_not(airflow_home: Path) -> None:
    airflow = Airflow(airflow_home, Path(__file__).parent / "airflow_dags")
    done = airflow("dags", "test", "hudi_cdc_errors", check=False)
    assert done.returncode != 0
    # Both tasks have retries=1: the terminal one fails on its first try, the transient one uses its retry.
    assert airflow.task_instances("hudi_cdc_errors") == {"terminal": ("failed", 1), "transient": ("failed", 2)}
    log = done.stdout + done.stderr
    assert "AirflowFailException: hudi-cdc: error: --source-path" in log
    assert "hudi-cdc: transient: cannot reach Kafka at 127.0.0.1:1" in log


@pytest.mark.kafka
def test_the_dag_replicates_the_stack_inventory_database(spark, airflow_home: Path) -> None:
    from tests.stack.conftest import BOOTSTRAP, PORTS, _listening

    down = [name for name, port in PORTS.items() if not _listening(port)]
    if down:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but the local stack is down ({', '.join(down)})")
        pytest.skip(f"the local CDC stack is down ({', '.join(down)}): make stack-up")
    from hudi_cdc.testing.kafka import end_offsets
    from hudi_cdc.testing.postgres import SAMPLE_KEYS, compare_table, connect, run_workload, wait_for_stream

    topics = [f"dbserver1.inventory.{table}" for table in SAMPLE_KEYS]
    with connect() as conn:
        before = end_offsets(BOOTSTRAP, topics)
        run_workload(
            conn, random.Random(13), transactions=40, tag=f"airflow{uuid.uuid4().hex[:8]}"
        )  # unique: the stack outlives runs
        wait_for_stream(conn, BOOTSTRAP, topics, since=before)
        airflow = Airflow(airflow_home, INVENTORY_DAGS)
        airflow("dags", "test", "hudi_cdc_inventory")
        assert airflow.task_instances("hudi_cdc_inventory") == {t: ("success", 1) for t in SAMPLE_KEYS}
        for table in SAMPLE_KEYS:
            comparison = compare_table(spark, str(airflow_home / "lake" / table), conn, table)
            assert comparison.equal, comparison.describe()


def test_the_cluster_dag_submits_to_a_standalone_cluster(
    spark, airflow_home: Path, spark_cluster: tuple[str, Path]
) -> None:
    url, cluster = spark_cluster
    sample = SampleCustomers(airflow_home / "events", topic="dbserver1.inventory.customers")
    sample.snapshot()
    sample.changes(seed=4)
    executors_before = set((cluster / "worker").glob("app-*/*/stderr"))
    host, port = url.rsplit(":", 1)
    airflow = Airflow(
        airflow_home,
        INVENTORY_DAGS,
        HUDI_CDC_EVENTS=str(airflow_home / "events"),
        AIRFLOW_CONN_SPARK_CLUSTER=json.dumps({"conn_type": "spark", "host": host, "port": int(port)}),
    )
    # The Spark provider runs `spark-submit` from PATH.
    airflow.env["PATH"] = f"{Path(sys.executable).parent}:{airflow.env['PATH']}"
    airflow("dags", "test", "hudi_cdc_inventory_cluster")
    executors = set((cluster / "worker").glob("app-*/*/stderr")) - executors_before
    assert airflow.task_instances("hudi_cdc_inventory_cluster") == {"customers": ("success", 1)}
    assert executors, "no executor ran on the worker"
    frame = spark.read.format("hudi").load(str(airflow_home / "lake" / "customers"))
    assert {r["id"]: r.asDict() for r in frame.select("id", "name", "email", "notes").collect()} == sample.state
