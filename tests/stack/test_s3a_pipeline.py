"""Every command on s3a:// tables (issue 57; docs/object-storage.md), on the stack's SeaweedFS, Hive metastore and
Postgres: ``hudi-cdc run`` of a two-table pipeline synced to the metastore, ``quarantine``, ``tombstones``, the
table folder's control flags and cut pins, ``bootstrap`` and ``verify --repair``.

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
from hudi_cdc.sink import retention
from hudi_cdc.sink.quarantine import QuarantineStore
from hudi_cdc.sink.tombstones import TombstoneStore
from hudi_cdc.testing import pg_event
from hudi_cdc.testing.postgres import connect
from hudi_cdc.testing.samples import SampleCustomers
from tests.sink.test_catalog import Metastore
from tests.sink.test_object_storage import ACCESS_KEY, BUCKET, HUDI_CDC, SECRET_KEY, s3  # noqa: F401 - the fixture
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


def _source(sample: SampleCustomers) -> dict[int, tuple]:
    return {k: tuple(v[c] for c in COLUMNS) for k, v in sample.state.items()}


def test_run_writes_each_table_and_the_metastore_holds_their_s3a_locations(store: Any, lake: Lake) -> None:  # noqa: ANN401
    tables = lake.report["tables"]
    assert {n: t["state"] for n, t in tables.items()} == {"public.t1": "done", "public.t2": "done"}, lake.report
    assert all(t["commits"] == 1 for t in tables.values()), lake.report
    assert tables["public.t1"]["quarantined"] == 1
    for table, sample in lake.samples.items():
        assert table_state(store, lake.base(table), COLUMNS) == _source(sample), table
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
    assert table_state(store, lake.base("t1"), COLUMNS) == _source(lake.samples["t1"])  # the table untouched


def test_pause_and_resume_and_cut_pins_live_in_the_s3a_table_folder(store: Any, lake: Lake) -> None:  # noqa: ANN401
    base = lake.base("t2")
    _cli("pause", "--pipeline", str(lake.path), "public.t2")
    assert control.table_flags(base, spark=store).flags == {control.PAUSED}
    _cli("resume", "--pipeline", str(lake.path), "public.t2")
    assert control.table_flags(base, spark=store).flags == set()

    commit = lake.report["tables"]["public.t2"]["last_commit"]
    assert retention.pin(base, commit, owner="s3a-test", expires_at=time.time() + 600, why="a cut", spark=store)
    assert [(p.owner, p.keep_from) for p in retention.pins(base, spark=store)] == [("s3a-test", commit)]
    retention.unpin(base, owner="s3a-test", spark=store)
    assert retention.pins(base, spark=store) == []


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


def test_a_command_in_its_own_process_reaches_the_store_by_the_pipelines_endpoint(lake: Lake) -> None:
    # Only the pipeline file names the endpoint, and only the environment holds the credentials (as a user runs
    # it): `quarantine list` had read the quarantine table without the table's bucket settings, so s3a went to
    # AWS's own endpoint.
    env = {**os.environ, "AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY}
    for name in ("HUDI_CDC__S3_ENDPOINT", "PYSPARK_SUBMIT_ARGS"):
        env.pop(name, None)
    command = [HUDI_CDC, "quarantine", "list", "--pipeline", str(lake.path), "--table", "public.t1", "--json"]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600, check=False)
    assert SECRET_KEY not in done.stdout + done.stderr
    assert done.returncode == 0, done.stderr[-3000:]
    listed = _last_json(done.stdout)
    assert (listed["quarantined"], listed["by_reason"]) == (1, {"unknown op 'x'": 1}), listed
