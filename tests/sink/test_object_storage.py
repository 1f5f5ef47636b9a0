"""Tables on object storage: ``hudi-cdc ingest`` into s3a:// COW and MOR tables on the stack's S3 server.

The server is the local stack's SeaweedFS (stack/start.sh; ``HUDI_CDC_TEST_S3_ENDPOINT`` points the tests at
another one with the same test identity). Each ``hudi-cdc`` runs as its own process, as a user runs it: the
s3a jars come from ``make jars``' folder, the endpoint from ``HUDI_CDC__S3_ENDPOINT`` (or, for ``verify``,
Spark's own ``fs.s3a.*`` through ``PYSPARK_SUBMIT_ARGS``) and the credentials from the environment's
``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY`` by s3a's provider chain; no output may show the secret.
The rows are read back through the test's own session and compared with the source's.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from hudi_cdc.jars import s3a_jars
from hudi_cdc.testing.samples import SampleCustomers
from tests.support import table_state

pytestmark = [pytest.mark.spark, pytest.mark.hudi]

ENDPOINT = os.environ.get("HUDI_CDC_TEST_S3_ENDPOINT", "http://127.0.0.1:58333")
BUCKET = "hudi-cdc"  # made by stack/start.sh
ACCESS_KEY, SECRET_KEY = "hudicdc-test", "hudicdc-test-secret"  # stack/conf/seaweedfs-s3.json: a test identity
COLUMNS = ("id", "name", "email", "notes")
HUDI_CDC = str(Path(sys.executable).parent / "hudi-cdc")


@pytest.fixture(scope="module")
def s3() -> str:
    """The S3 endpoint; skipped when nothing listens there (in CI, where the stack must be up, failed)."""
    where = urlsplit(ENDPOINT)
    with socket.socket() as probe:
        probe.settimeout(0.5)
        down = probe.connect_ex((where.hostname or "127.0.0.1", where.port or 80)) != 0
    if down:
        why = f"no S3 server at {ENDPOINT} (the stack's SeaweedFS): make stack-up"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but {why}")
        pytest.skip(why)
    if not s3a_jars():
        pytest.fail("no s3a jars in .jars/s3a: make jars")
    return ENDPOINT


@pytest.fixture
def reader(spark: Any, s3: str) -> Any:  # noqa: ANN401 - the SparkSession
    """The test's session, able to read the bucket: its Hadoop configuration gets the test identity for this
    bucket only (the JVM was started before the test set any credentials in the environment)."""
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    prefix = f"fs.s3a.bucket.{BUCKET}."
    for key, value in {
        "endpoint": s3, "path.style.access": "true", "connection.ssl.enabled": "false",
        "access.key": ACCESS_KEY, "secret.key": SECRET_KEY,
    }.items():  # fmt: skip
        conf.set(prefix + key, value)
    return spark


def _env(s3: str, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "AWS_ACCESS_KEY_ID": ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
        "HUDI_CDC__S3_ENDPOINT": s3,
        **extra,
    }


def _hudi_cdc(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([HUDI_CDC, *args], capture_output=True, text=True, env=env, timeout=600, check=False)
    assert SECRET_KEY not in done.stdout + done.stderr  # no secret is ever printed
    return done


def _ingest(sample: SampleCustomers, base: str, table_type: str, s3: str) -> dict[str, Any]:
    args = [
        "ingest", "--source", "files", "--source-path", sample.source_path, "--flavor", "postgres",
        "--target-base-path", base, "--target-table", "customers", "--table-type", table_type,
        "--record-key-fields", "id", "--hoodie-conf", "hoodie.compact.inline=false", "--json",
    ]  # fmt: skip
    done = _hudi_cdc(args, _env(s3))
    assert done.returncode == 0, done.stderr[-3000:]
    (result,) = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return result


@pytest.mark.parametrize(("table_type", "second_writer"), [("cow", "spark"), ("mor", "java")])
def test_ingest_into_an_s3a_table_and_read_it_back(
    reader: Any,  # noqa: ANN401
    s3: str,
    tmp_path: Path,
    table_type: str,
    second_writer: str,
) -> None:
    sample = SampleCustomers(tmp_path / "events", keys=200)
    base = f"s3a://{BUCKET}/{uuid.uuid4().hex[:12]}/customers_{table_type}"
    sample.snapshot(rows=150)
    first = _ingest(sample, base, table_type, s3)
    assert first["commit_time"] and first["upserts"] == 150, first
    assert table_state(reader, base, COLUMNS) == sample.rows()

    # A second round: updates with TOAST placeholders, deletes, re-inserts; a small MOR round goes through
    # Hudi's Java write client (sink.small_write), a COW round through Spark's datasource.
    sample.changes(seed=1)
    second = _ingest(sample, base, table_type, s3)
    assert second["commit_time"] and second["details"]["writer"] == second_writer, second["details"]
    assert table_state(reader, base, COLUMNS) == sample.rows()

    # verify, given the store the plain Spark way (fs.s3a.* through PYSPARK_SUBMIT_ARGS): no difference.
    spark_conf = " ".join(
        f"--conf spark.hadoop.fs.s3a.{k}={v}"
        for k, v in {"endpoint": s3, "path.style.access": "true", "connection.ssl.enabled": "false"}.items()
    )
    env = _env(s3, PYSPARK_SUBMIT_ARGS=f"{spark_conf} pyspark-shell")
    del env["HUDI_CDC__S3_ENDPOINT"]
    done = _hudi_cdc(
        [
            "verify",
            "--target-base-path",
            base,
            "--source-path",
            sample.source_path,
            "--record-key-fields",
            "id",
            "--json",
        ],
        env,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    verdict = json.loads(done.stdout.strip().splitlines()[-1])
    assert verdict["equal"] and verdict["target_rows"] == len(sample.state), verdict


def test_an_s3a_table_without_the_connector_is_refused_by_name(s3: str, tmp_path: Path) -> None:
    sample = SampleCustomers(tmp_path / "events", keys=5)
    sample.snapshot(rows=5)
    args = [
        "ingest", "--source", "files", "--source-path", sample.source_path, "--flavor", "postgres",
        "--target-base-path", f"s3a://{BUCKET}/{uuid.uuid4().hex[:12]}/t", "--target-table", "t",
        "--record-key-fields", "id",
    ]  # fmt: skip
    done = _hudi_cdc(args, _env(s3, HUDI_CDC_S3A="off"))
    assert done.returncode == 2, done.stderr[-2000:]
    assert "s3a:// needs Hadoop's s3a connector" in done.stderr and "make jars" in done.stderr, done.stderr[-2000:]
