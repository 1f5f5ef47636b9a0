"""Every command on s3a:// tables (issue 57; docs/object-storage.md), on the stack's SeaweedFS, Hive metastore and
Postgres: ``hudi-cdc run`` of a two-table pipeline synced to the metastore, ``quarantine``, ``tombstones``, the
table folder's control flags, a consistent cut of the run's commits (its pins, and ``read_consistent`` from a
notebook's session), ``bootstrap`` and ``verify --repair``.

One pipeline run serves the module (two tables, one round each). The commands run in this process through the
CLI, on the test's session, whose Hadoop configuration holds the test identity for the bucket only (as
tests/sink/test_object_storage.py's reader; that file runs ``ingest`` and ``verify`` as their own processes with
the credentials in the environment); the endpoint comes from the pipeline's ``s3_endpoint``. What each command
did is read back from the store: table rows, quarantine rows, tombstones, flag and pin files.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from hudi_cdc.cli import main
from hudi_cdc.service import control
from hudi_cdc.service.cut_retention import CutPins, oldest_commits
from hudi_cdc.service.cuts import CutPlan, CutStore, new_cut
from hudi_cdc.service.spec import load_pipeline
from hudi_cdc.sink import retention
from hudi_cdc.sink.quarantine import QuarantineStore
from hudi_cdc.sink.tombstones import TombstoneStore
from hudi_cdc.sources.transactions import TransactionEnd
from hudi_cdc.testing import pg_event
from hudi_cdc.testing.postgres import connect
from hudi_cdc.testing.samples import SampleCustomers
from tests.sink.test_catalog import Metastore
from tests.sink.test_object_storage import ACCESS_KEY, BUCKET, SECRET_KEY, s3  # noqa: F401 - the fixture
from tests.stack.conftest import BOOTSTRAP, REGISTRY
from tests.support import table_state

pytestmark = [pytest.mark.spark, pytest.mark.hudi, pytest.mark.stack, pytest.mark.postgres]

COLUMNS = ("id", "name", "email", "notes")
PASSWORD_ENV = "S3A_PIPELINE_TEST_PASSWORD"
SOURCE_URL = "postgresql://debezium@127.0.0.1:55432/inventory"


@dataclass
class Lake:
    """The module's pipeline after its run: its file, where its tables are, its samples, its run's report."""

    path: Path
    prefix: str
    database: str
    metastore_uri: str
    samples: dict[str, SampleCustomers]
    report: dict[str, Any]
    seconds: float

    def base(self, table: str) -> str:
        return f"{self.prefix}/{table}"


def _cli(*args: str, code: int = 0) -> str:
    done = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert done.exit_code == code, done.output[-3000:]
    assert SECRET_KEY not in done.output
    return done.output


def _last_json(output: str) -> dict[str, Any]:
    parsed: dict[str, Any] = json.loads(next(line for line in reversed(output.splitlines()) if line.startswith("{")))
    return parsed


@pytest.fixture(scope="module")
def store(spark: Any, s3: str) -> Any:  # noqa: ANN401, F811
    """The test's session, able to reach the bucket: the test identity for this bucket only (the JVM started
    before any credential was in the environment). The endpoint itself comes from each table's settings."""
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    conf.set(f"fs.s3a.bucket.{BUCKET}.access.key", ACCESS_KEY)
    conf.set(f"fs.s3a.bucket.{BUCKET}.secret.key", SECRET_KEY)
    return spark


@pytest.fixture(scope="module")
def lake(store: Any, s3: str, metastore_uri: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lake]:  # noqa: ANN401, F811
    """``hudi-cdc run`` of two tables (COW ``t1`` with deletes and one bad event, MOR ``t2``) at s3a:// paths."""
    root = tmp_path_factory.mktemp("s3a-pipeline")
    run = uuid.uuid4().hex[:10]
    prefix, database = f"s3a://{BUCKET}/s3a-pipeline-{run}", f"s3a_pipeline_{run}"
    t1 = SampleCustomers(root / "landing", keys=16, topic="dbserver1.public.t1")
    t1.snapshot(rows=12)
    t1.changes(seed=5)  # inserts, TOAST updates, deletes
    t1.write([pg_event("x", lsn=t1.lsn + 1, after={"id": 1, "name": "x", "email": "x", "notes": "x"})])  # unknown op
    assert t1.deleted, "the sample's changes delete nothing: pick another seed"
    t2 = SampleCustomers(root / "landing", keys=8, topic="dbserver1.public.t2")
    t2.snapshot(rows=6)
    path = root / "lake.toml"
    path.write_text(
        f"""
[source]
source = "files"
source_path = "{root / "landing"}"
tables = "dbserver1.public.*"

[defaults]
target_base_path = "{prefix}/{{table}}"
target_table = "{{table}}"
record_key_fields = "id"
s3_endpoint = "{s3}"
on_bad_event = "quarantine"

[tables."public.t2"]
table_type = "mor"

[catalog]
catalog = "hms"
catalog_uri = "{metastore_uri}"
catalog_database = "{database}"

[run]
max_concurrent_tables = 2
discovery_interval_seconds = 0
"""
    )
    metastore = Metastore(store, metastore_uri)
    metastore.created.append(database)
    began = time.monotonic()
    report = _last_json(_cli("run", "--pipeline", str(path), "--json"))
    try:
        yield Lake(path, prefix, database, metastore_uri, {"t1": t1, "t2": t2}, report, time.monotonic() - began)
    finally:
        metastore.drop_created()
        metastore.client.close()


def test_run_writes_each_table_and_the_metastore_holds_their_s3a_locations(store: Any, lake: Lake) -> None:  # noqa: ANN401
    tables = lake.report["tables"]
    assert {n: t["state"] for n, t in tables.items()} == {"public.t1": "done", "public.t2": "done"}, lake.report
    assert all(t["commits"] == 1 for t in tables.values()), lake.report
    assert tables["public.t1"]["quarantined"] == 1
    for table, sample in lake.samples.items():
        assert table_state(store, lake.base(table), COLUMNS) == sample.rows(), table
    reader = Metastore(store, lake.metastore_uri)
    try:
        for name, table in (("t1", "t1"), ("t2", "t2"), ("t2_ro", "t2"), ("t2_rt", "t2")):
            registered = reader.table(lake.database, name)
            assert registered is not None, name
            assert registered["location"].rstrip("/") == lake.base(table), registered
            assert {"id", "name", "email", "notes"} <= registered["columns"].keys()
    finally:
        reader.client.close()


def test_quarantine_and_tombstones_of_an_s3a_table(store: Any, lake: Lake) -> None:  # noqa: ANN401
    table = ["--pipeline", str(lake.path), "--table", "public.t1"]
    listed = _last_json(_cli("quarantine", "list", *table, "--json"))
    assert (listed["quarantined"], listed["path"]) == (1, lake.base("t1") + "_hudi_cdc_quarantine"), listed
    assert listed["by_reason"] == {"unknown op 'x'": 1}
    stored = QuarantineStore(store, listed["path"], target_table="t1").read()
    assert stored is not None and [r["op"] for r in stored.collect()] == ["x"]
    kept = _last_json(_cli("quarantine", "reapply", *table, "--json"))  # an unknown op stays bad
    assert (kept["reapplied"], kept["still_quarantined"]) == (0, 1), kept

    deleted = lake.samples["t1"].deleted
    shown = _last_json(_cli("tombstones", *table))
    assert (shown["tombstone_path"], shown["held"]) == (lake.base("t1") + "_hudi_cdc_tombstones", len(deleted))
    tombstones = TombstoneStore(store, shown["tombstone_path"], key_fields=("id",)).read()
    assert tombstones is not None and sorted(r["id"] for r in tombstones.collect()) == sorted(deleted)
    purged = _last_json(_cli("tombstones", *table, "--purge", "--tombstone-retention-hours", "0"))
    assert (purged["purged"], purged["held"]) == (len(deleted), 0), purged
    assert table_state(store, lake.base("t1"), COLUMNS) == lake.samples["t1"].rows()  # the table untouched


@dataclass
class Cut:
    """A consistent cut of the module's run, recorded in the pipeline's state folder, and the pins it holds."""

    record: dict[str, Any]
    pins: CutPins
    owner: str  # the pipeline's state folder: the pins' owner


@pytest.fixture(scope="module")
def cut(store: Any, lake: Lake) -> Cut:  # noqa: ANN401
    """A cut at each table's commit of the run, recorded and pinned as the runner's cutter does once a cut is
    whole (:mod:`hudi_cdc.service.cutter`). A files run takes no cut of its own: cuts need a Kafka run and its
    transaction topic (tests/stack/test_cuts.py); what a cut adds on s3a is its pins and its reading."""
    spec = load_pipeline(lake.path)
    tables = {
        name: {
            "path": lake.base(name.split(".")[1]),
            "commit": done["last_commit"],
            "offsets": {},
            "collections": [name],
        }
        for name, done in lake.report["tables"].items()
    }
    plan = CutPlan(TransactionEnd(7, "571:24023128"), dict.fromkeys(tables, {}))
    cuts = CutStore.load(spec.run.state_dir)
    cuts.record(new_cut(plan, "dbserver1.transaction", tables, {}, 1), keep=spec.run.cut_retention)
    pins = CutPins(spec.run.state_dir, store)
    pins.keep(oldest_commits(cuts.cuts), why="consistent cut 1")
    return Cut(cuts.cuts[-1], pins, spec.run.state_dir)


def test_pause_and_resume_and_cut_pins_live_in_the_s3a_table_folder(store: Any, lake: Lake, cut: Cut) -> None:  # noqa: ANN401
    base = lake.base("t2")
    _cli("pause", "--pipeline", str(lake.path), "public.t2")
    assert control.table_flags(base, spark=store).flags == {control.PAUSED}
    _cli("resume", "--pipeline", str(lake.path), "public.t2")
    assert control.table_flags(base, spark=store).flags == set()

    # The cut's pins: each table kept from its commit in the cut (every writer reads them: sink.retention).
    for name, table in cut.record["tables"].items():
        assert table["commit"] == lake.report["tables"][name]["last_commit"]
        held = [(p.owner, p.keep_from) for p in retention.pins(table["path"], spark=store)]
        assert held == [(cut.owner, table["commit"])], name
        assert retention.keep_from(table["path"], spark=store) == table["commit"]
    cut.pins.keep({})  # the table in no retained cut any more: let go
    assert retention.pins(base, spark=store) == [] and retention.keep_from(lake.base("t1"), spark=store) is None


def test_bootstrap_then_verify_and_repair_an_s3a_table(store: Any, s3: str, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN401, F811
    run = uuid.uuid4().hex[:8]
    source, slot = f"inventory.s3a_boot_{run}", f"s3a_boot_{run}"
    base = f"s3a://{BUCKET}/s3a-bootstrap-{run}/boot"
    monkeypatch.setenv(PASSWORD_ENV, "dbz")
    with connect() as conn:
        conn.execute(f"create table {source} (id bigint primary key, name text, amount numeric(12,2))")
        conn.execute(f"insert into {source} select i, 'name ' || i, i * 1.25 from generate_series(1, 40) i")  # noqa: S608
    database = ["--source-url", SOURCE_URL, "--password-env", PASSWORD_ENV]
    try:
        loaded = _last_json(
            _cli(
                "bootstrap",
                "--source",
                "kafka",
                "--topic",
                f"s3aboot{run}.{source}",
                "--bootstrap-servers",
                BOOTSTRAP,
                "--schema-registry-url",
                REGISTRY,
                "--target-base-path",
                base,
                "--target-table",
                "boot",
                "--s3-endpoint",
                s3,
                *database,
                "--source-table",
                source,
                "--slot",
                slot,
                "--json",
            )  # fmt: skip
        )
        assert loaded["rows"] == 40 and loaded["commit_time"], loaded
        assert _rows(store, base) == _postgres(source)

        # Changes the table has not received (no connector streams the slot here): verify finds them, repair
        # writes them, ranked at the WAL position it read them at.
        with connect() as conn:
            conn.execute(f"update {source} set name = 'changed' where id = 7")  # noqa: S608
            conn.execute(f"delete from {source} where id = 8")  # noqa: S608
        verify = ["verify", "--target-base-path", base, *database, "--source-table", source, "--no-recheck"]
        found = _last_json(_cli(*verify, "--json", code=1))
        assert not found["equal"] and found["target_rows"] == 40, found
        repaired = _last_json(_cli(*verify, "--repair", "--json"))
        done = sorted((k["key"]["id"], k["action"], k["outcome"]) for k in repaired["keys"])
        assert done == [("7", "upsert", "repaired"), ("8", "delete", "repaired")], repaired
        assert _rows(store, base) == _postgres(source)
        assert _last_json(_cli(*verify, "--json"))["equal"]
    finally:
        with connect() as conn:
            conn.execute(f"drop table if exists {source}")
            conn.execute(
                "select pg_drop_replication_slot(slot_name) from pg_replication_slots where slot_name = %s", (slot,)
            )


def _rows(spark: Any, base: str) -> list[tuple]:  # noqa: ANN401
    return sorted(tuple(r) for r in spark.read.format("hudi").load(base).select("id", "name", "amount").collect())


def _postgres(source: str) -> list[tuple]:
    with connect() as conn:
        return sorted(tuple(r) for r in conn.execute(f"select id, name, amount from {source}").fetchall())  # noqa: S608


NOTEBOOK = f"""
import json, sys

import hudi_cdc
from hudi_cdc.cli import main

pipeline = sys.argv[1]
spark = hudi_cdc.spark_session()  # a notebook's session: nothing of the store set on it
tables = hudi_cdc.read_consistent(spark, pipeline)
rows = {{name: [list(r) for r in frame.select(*{COLUMNS!r}).collect()] for name, frame in tables.items()}}
print("read_consistent " + json.dumps(rows, sort_keys=True), flush=True)

# As in a process of its own, `quarantine list` starts from no settings of the bucket and no file system of it
# (Hadoop's cache keeps one per bucket for the JVM's life): without this, read_consistent's would serve it.
conf = spark.sparkContext._jsc.hadoopConfiguration()
for key in ("endpoint", "path.style.access", "connection.ssl.enabled"):
    conf.unset("fs.s3a.bucket.{BUCKET}." + key)
uri = spark._jvm.java.net.URI("s3a://{BUCKET}/")
spark._jvm.org.apache.hadoop.fs.FileSystem.get(uri, conf).close()  # a closed file system leaves Hadoop's cache
main(["quarantine", "list", "--pipeline", pipeline, "--table", "public.t1", "--json"], standalone_mode=False)
"""


def test_a_notebook_and_a_command_in_a_process_of_their_own_reach_the_store_by_the_pipelines_endpoint(
    lake: Lake, cut: Cut
) -> None:
    # Only the pipeline file names the endpoint, and only the environment holds the credentials (as a user runs
    # it). A notebook reads the cut with read_consistent on a session of its own; then `quarantine list` runs.
    # Each had read its tables without the tables' bucket settings, so s3a went to AWS's own endpoint.
    env = {**os.environ, "AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY}
    for name in ("HUDI_CDC__S3_ENDPOINT", "PYSPARK_SUBMIT_ARGS"):
        env.pop(name, None)
    command = [sys.executable, "-c", NOTEBOOK, str(lake.path)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600, check=False)
    assert SECRET_KEY not in done.stdout + done.stderr
    assert done.returncode == 0, done.stderr[-3000:]
    read = next(line for line in done.stdout.splitlines() if line.startswith("read_consistent "))
    tables = json.loads(read.split(" ", 1)[1])
    assert set(tables) == set(cut.record["tables"]) == {"public.t1", "public.t2"}
    for name, rows in tables.items():  # the source at the cut: the tables as the run left them
        assert sorted(rows) == sorted(list(row) for row in lake.samples[name.split(".")[1]].rows().values()), name
    listed = _last_json(done.stdout)
    assert (listed["quarantined"], listed["by_reason"]) == (1, {"unknown op 'x'": 1}), listed
