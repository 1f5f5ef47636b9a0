"""The wheel ``make wheel`` builds, in a clean venv: no checkout, no Maven, no ``.jars``; Spark resolves the
Maven coordinates, and the wheel's own jars (``hudi_cdc/_jars``) give the checkout's faster paths."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from hudi_cdc.jars import OWN_JARS
from hudi_cdc.sink import options as opt
from hudi_cdc.sink.hudi import HudiTable
from hudi_cdc.testing.samples import SampleCustomers
from tests.install.conftest import OLDEST_PYSPARK, user_env

pytestmark = [pytest.mark.install, pytest.mark.hudi]

_COLUMNS = ("id", "name", "email", "notes")


def _ingest(env: dict[str, str], cwd: Path, sample: SampleCustomers, base: Path, *extra: str) -> list[dict]:
    """``hudi-cdc ingest`` of the sample's files into a MOR table; each round's result."""
    done = subprocess.run(
        [
            "hudi-cdc", "ingest", "--source", "files", "--source-path", sample.source_path,
            "--flavor", "postgres", "--target-base-path", base, "--target-table", "customers",
            "--table-type", "mor", "--record-key-fields", "id", "--json", *extra,
        ],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    assert done.stderr == "", done.stderr  # Spark's and Ivy's output went to the log file
    # stdout carries the results and nothing else (Ivy's resolution report goes to stderr).
    return [json.loads(line) for line in done.stdout.strip().splitlines()]


# Two rounds in one process (one JVM start): the snapshot's file makes a new MOR table (Spark's datasource
# makes its file groups), then the changes' file is a small round the writer jar takes.
TWO_ROUNDS = ("--continuous", "--max-rounds", "2", "--source-limit", "1")


def _writers(spark, base: Path) -> list[str]:  # noqa: ANN001
    """Who wrote each checkpointed commit, oldest first (sink.small_write marks the Java client's)."""
    commits = [c for c in HudiTable(spark, str(base)).commits(newest_first=False) if opt.CHECKPOINT_KEY in c.extra]
    return [c.extra.get(opt.WRITER_KEY, "spark") for c in commits]


def test_wheel_installed_outside_the_checkout_ingests_files_on_the_fast_paths(
    spark, wheel_venv: Path, bare_python: Path, jvm_home: Path, tmp_path: Path
) -> None:
    env = user_env(wheel_venv / "bin", bare_python)
    env["SPARK_SUBMIT_OPTS"] = f"-Duser.home={jvm_home}"
    where = subprocess.run(
        [wheel_venv / "bin" / "python", "-c", "import hudi_cdc, sys; print(hudi_cdc.__file__)"],
        cwd=tmp_path, env=env, capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    assert where.startswith(str(wheel_venv)), where
    wheel_jars = Path(where).parent / "_jars"

    info = subprocess.run(
        ["hudi-cdc", "jars", "--json"], cwd=tmp_path, env=env, capture_output=True, text=True, check=True
    )
    jars = json.loads(info.stdout)
    assert jars["source"] == "packages" and jars["submit_args"][0] == "--packages", jars
    assert Path(jars["launcher"]).is_file() and jars["launcher"].startswith(str(wheel_venv))
    # The wheel carries our own jars: both faster paths are on, from the wheel's files.
    assert jars["own_jars"] == {name: str(wheel_jars / name) for name in OWN_JARS}, jars
    assert all(Path(p).stat().st_size > 0 for p in jars["own_jars"].values())
    text = subprocess.run(["hudi-cdc", "jars"], cwd=tmp_path, env=env, capture_output=True, text=True, check=True)
    for name in OWN_JARS:
        assert f"  {name}: {wheel_jars / name} (from the wheel)" in text.stdout, text.stdout
    assert "faster path is off" not in text.stdout

    sample = SampleCustomers(tmp_path / "events", keys=200)
    sample.snapshot(rows=150)  # every one of the new table's 4 buckets gets a file group
    sample.changes(seed=3)
    base = tmp_path / "lake" / "customers"
    rounds = _ingest(env, tmp_path, sample, base, *TWO_ROUNDS)
    assert len(rounds) == 2 and all(r["commit_time"] for r in rounds), rounds
    assert rounds[1]["events"] > 20
    resolved = [p.name for p in (jvm_home / ".ivy2" / "jars").glob("*.jar")]
    assert "org.apache.hudi_hudi-spark3.5-bundle_2.12-1.2.0.jar" in resolved, resolved
    # The second round was written by the wheel's writer jar (Hudi's Java write client, no Spark job): the
    # wheel's jars reached the session's classpath, the pick jar beside it in the same --jars list.
    assert _writers(spark, base) == ["spark", "java"]

    table = spark.read.format("hudi").load(str(base))
    got = {r["id"]: r.asDict() for r in table.select(*_COLUMNS).collect()}
    assert got == sample.state


def test_the_oldest_pyspark_of_the_range_runs_a_round(
    spark, make_wheel_venv: Callable[[str | None], Path], bare_python: Path, jvm_home: Path, tmp_path: Path
) -> None:
    """The embedded default (files) with PySpark 3.5.0: the jars built against 3.5.7 run in it, and Spark's
    own modules are resolved at its version."""
    wheel_venv = make_wheel_venv(OLDEST_PYSPARK)
    env = user_env(wheel_venv / "bin", bare_python)
    env["SPARK_SUBMIT_OPTS"] = f"-Duser.home={jvm_home}"
    version = subprocess.run(["hudi-cdc", "--version"], env=env, capture_output=True, text=True, check=True).stdout
    assert f"Spark {OLDEST_PYSPARK}\nHudi 1.2.0 (Maven coordinates Spark resolves)\n" in version, version

    sample = SampleCustomers(tmp_path / "events", keys=200)
    sample.snapshot(rows=150)
    sample.changes(seed=3)
    base = tmp_path / "lake"
    # Two rounds in its one process, so both of our jars (built against 3.5.7) run on 3.5.0.
    _ingest(env, tmp_path, sample, base, *TWO_ROUNDS)
    assert _writers(spark, base) == ["spark", "java"]
    resolved = [p.name for p in (jvm_home / ".ivy2" / "jars").glob("*.jar")]
    assert f"org.apache.spark_spark-avro_2.12-{OLDEST_PYSPARK}.jar" in resolved, resolved
    rows = {r["id"]: r.asDict() for r in spark.read.format("hudi").load(str(base)).select(*_COLUMNS).collect()}
    assert rows == sample.state


def test_a_fetched_jar_folder_serves_a_machine_without_maven_central(
    spark, wheel_venv: Path, bare_python: Path, jvm_home: Path, tmp_path: Path
) -> None:
    env = user_env(wheel_venv / "bin", bare_python)
    env["SPARK_SUBMIT_OPTS"] = f"-Duser.home={jvm_home}"
    jars_dir = tmp_path / "jars"
    fetched = subprocess.run(
        ["hudi-cdc", "jars", "--fetch", str(jars_dir)], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert fetched.returncode == 0, fetched.stderr[-3000:]
    names = {p.name for p in jars_dir.glob("*.jar")}
    assert any("hudi-spark3.5-bundle_2.12-1.2.0" in name for name in names), names
    assert set(OWN_JARS) <= names, names  # the wheel's own jars travel with the folder

    # A home with no Ivy cache: nothing may be resolved, the folder must be enough.
    env["SPARK_SUBMIT_OPTS"] = f"-Duser.home={tmp_path / 'home-offline'}"
    env["HUDI_CDC_JARS_DIR"] = str(jars_dir)
    info = json.loads(subprocess.run(["hudi-cdc", "jars", "--json"], env=env, capture_output=True, text=True).stdout)
    assert info["source"] == "folder" and info["submit_args"][0] == "--jars"
    assert info["own_jars"] == {name: str(jars_dir / name) for name in OWN_JARS}
    sample = SampleCustomers(tmp_path / "events")
    sample.snapshot()
    base = tmp_path / "lake"
    done = subprocess.run(
        [
            "hudi-cdc", "ingest", "--source", "files", "--source-path", sample.source_path,
            "--target-base-path", base, "--target-table", "customers", "--record-key-fields", "id",
        ],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert not (tmp_path / "home-offline" / ".ivy2").exists(), "the offline run resolved packages"
    rows = {r["id"]: r.asDict() for r in spark.read.format("hudi").load(str(base)).select(*_COLUMNS).collect()}
    assert rows == sample.state
