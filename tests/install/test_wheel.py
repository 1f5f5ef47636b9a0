"""The wheel in a clean venv: no checkout, no Maven, no ``.jars``; Spark resolves the pinned coordinates."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from hudi_cdc.testing.samples import SampleCustomers
from tests.install.conftest import user_env

pytestmark = [pytest.mark.install, pytest.mark.hudi]


def test_wheel_installed_outside_the_checkout_ingests_files(
    spark, wheel_venv: Path, bare_python: Path, tmp_path: Path
) -> None:
    env = user_env(wheel_venv / "bin", bare_python)
    # A home of its own for the JVM: no Ivy cache and no ~/.m2 (which `make jars` filled), so the
    # coordinates really come from Maven Central, as on a user's machine.
    env["SPARK_SUBMIT_OPTS"] = f"-Duser.home={tmp_path / 'home'}"
    where = subprocess.run(
        [wheel_venv / "bin" / "python", "-c", "import hudi_cdc, sys; print(hudi_cdc.__file__)"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert where.startswith(str(wheel_venv)), where

    info = subprocess.run(
        ["hudi-cdc", "jars", "--json"], cwd=tmp_path, env=env, capture_output=True, text=True, check=True
    )
    jars = json.loads(info.stdout)
    assert jars["source"] == "packages" and jars["submit_args"][0] == "--packages", jars
    assert Path(jars["launcher"]).is_file() and jars["launcher"].startswith(str(wheel_venv))

    sample = SampleCustomers(tmp_path / "events")
    sample.snapshot()
    sample.changes(seed=3)
    base = tmp_path / "lake" / "customers"
    done = subprocess.run(
        [
            "hudi-cdc", "ingest", "--source", "files", "--source-path", sample.source_path, "--flavor", "postgres",
            "--target-base-path", base, "--target-table", "customers", "--table-type", "mor",
            "--record-key-fields", "id", "--json",
        ],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    assert done.stderr == "", done.stderr  # Spark's and Ivy's output went to the log file
    resolved = [p.name for p in (tmp_path / "home" / ".ivy2" / "jars").glob("*.jar")]
    assert "org.apache.hudi_hudi-spark3.5-bundle_2.12-1.2.0.jar" in resolved, resolved
    # stdout carries the result and nothing else (Ivy's resolution report goes to stderr).
    (line,) = done.stdout.strip().splitlines()
    result = json.loads(line)
    assert result["commit_time"] and result["events"] > 20

    table = spark.read.format("hudi").load(str(base))
    got = {r["id"]: r.asDict() for r in table.select("id", "name", "email", "notes").collect()}
    assert got == sample.state


def test_a_fetched_jar_folder_serves_a_machine_without_maven_central(
    spark, wheel_venv: Path, bare_python: Path, tmp_path: Path
) -> None:
    env = user_env(wheel_venv / "bin", bare_python)
    env["SPARK_SUBMIT_OPTS"] = f"-Duser.home={tmp_path / 'home-online'}"
    jars_dir = tmp_path / "jars"
    fetched = subprocess.run(
        ["hudi-cdc", "jars", "--fetch", str(jars_dir)], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert fetched.returncode == 0, fetched.stderr[-3000:]
    assert any("hudi-spark3.5-bundle_2.12-1.2.0" in p.name for p in jars_dir.glob("*.jar"))

    # A home with no Ivy cache: nothing may be resolved, the folder must be enough.
    env["SPARK_SUBMIT_OPTS"] = f"-Duser.home={tmp_path / 'home-offline'}"
    env["HUDI_CDC_JARS_DIR"] = str(jars_dir)
    info = json.loads(subprocess.run(["hudi-cdc", "jars", "--json"], env=env, capture_output=True, text=True).stdout)
    assert info["source"] == "folder" and info["submit_args"][0] == "--jars"
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


_COLUMNS = ("id", "name", "email", "notes")
