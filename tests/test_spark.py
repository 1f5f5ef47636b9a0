"""The session hudi-cdc builds: its Python workers run on the driver's interpreter, not on ``python3`` from PATH;
its JVM runs with hudi-cdc's options, and so does spark-submit's with the README's line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from hudi_cdc._jvm import GC_ENV, GC_LOCKER_RETRIES, JIT_ENV
from hudi_cdc.testing.cluster import spark_bin

pytestmark = pytest.mark.spark

# What the driver JVM runs with: hudi-cdc's GC-locker option (as HotSpot reports it) and a user's own option.
OPTIONS_PROBE = """
import json, sys
import hudi_cdc
spark = hudi_cdc.spark_session(master="local[1]", conf=json.loads(sys.argv[1]) if len(sys.argv) > 1 else None)
jvm = spark._jvm
bean = jvm.java.lang.management.ManagementFactory.getPlatformMXBean(
    jvm.java.lang.Class.forName("com.sun.management.HotSpotDiagnosticMXBean"))
print("PROBE " + json.dumps({
    "retries": bean.getVMOption("GCLockerRetryAllocationCount").getValue(),
    "jit_top_tier": bean.getVMOption("TieredStopAtLevel").getValue(),
    "code_cache": bean.getVMOption("ReservedCodeCacheSize").getValue(),
    "user": jvm.java.lang.System.getProperty("hudi.cdc.probe"),
    # Hudi's JOL starts no second JVM to attach the serviceability agent (hudi_cdc._jvm.JOL_OPTIONS).
    "jol_sa": jvm.java.lang.System.getProperty("jol.skipHotspotSAAttach"),
    "parallel_gc": bean.getVMOption("UseParallelGC").getValue(),
    "rows": spark.range(3).count(),
}))
"""
# And where its Python workers run: a Python UDF runs in a Spark Python worker; pyarrow is what mapInArrow and
# the decimal UDF need there.
WORKER_PROBE = """
from pyspark.sql import functions as F, types as T

@F.udf(T.StringType())
def worker(_):
    import sys, pyarrow
    return sys.executable

print("WORKER", spark.range(1).select(worker("id")).first()[0])
print("DRIVER", sys.executable)
"""
STOP = "spark.stop()\n"


def _probe_output(stdout: str) -> dict:
    return json.loads(next(line for line in stdout.splitlines() if line.startswith("PROBE "))[6:])


def test_a_session_hudi_cdc_starts_keeps_the_users_java_options_and_runs_workers_on_the_drivers_python(
    tmp_path: Path,
) -> None:
    # One session, started as hudi-cdc starts one, shows both (each JVM start costs 10-25 CPU-s):
    # its JVM's options, and its Python workers' interpreter with the PATH a fresh machine has, whose python3
    # holds none of the project's packages.
    bare = tmp_path / "bare"
    venv.EnvBuilder(with_pip=False).create(bare)
    assert subprocess.run([bare / "bin" / "python3", "-c", "import pyarrow"], capture_output=True).returncode != 0
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "VIRTUAL_ENV")}
    env["PATH"] = f"{bare / 'bin'}:/usr/bin:/bin"
    env[JIT_ENV] = "quick"  # Java's default (full) is the JVM's own: nothing of ours to see
    env[GC_ENV] = "parallel"  # likewise
    conf = json.dumps({"spark.driver.extraJavaOptions": "-Dhudi.cdc.probe=kept"})
    done = subprocess.run(
        [sys.executable, "-c", OPTIONS_PROBE + WORKER_PROBE + STOP, conf],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    # quick keeps the full JIT's 240 MB code cache (Java's own for the first tier, 48 MB, ran out: hudi_cdc._jvm)
    expected = {"retries": str(GC_LOCKER_RETRIES), "jit_top_tier": "1", "code_cache": str(240 << 20)}
    assert _probe_output(done.stdout) == {
        **expected,
        "user": "kept",
        "jol_sa": "true",
        "parallel_gc": "true",
        "rows": 3,
    }
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines() if line.startswith(("WORKER", "DRIVER")))
    assert lines["WORKER"] == lines["DRIVER"] == sys.executable


def test_the_spark_submit_line_of_the_readme_gives_the_driver_the_same_options(tmp_path: Path) -> None:
    script = tmp_path / "probe.py"
    script.write_text(OPTIONS_PROBE + STOP)
    hudi_cdc = [sys.executable, "-m", "hudi_cdc", "jars"]
    submit_args = subprocess.run([*hudi_cdc, "--submit-args"], capture_output=True, text=True, check=True).stdout
    java_options = subprocess.run([*hudi_cdc, "--java-options"], capture_output=True, text=True, check=True).stdout
    # As a shell runs the README's line: $(... --submit-args) split on blanks, "$(... --java-options)" as one word.
    command = [
        spark_bin("spark-submit"), "--master", "local[1]", *submit_args.split(),
        "--driver-java-options", f"{java_options.strip()} -Dhudi.cdc.probe=kept", str(script),
    ]  # fmt: skip
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    top_tier = "1" if "-XX:TieredStopAtLevel=1" in java_options else "4"  # as HUDI_CDC_JIT says (make test: quick)
    parallel_gc = "true" if "-XX:+UseParallelGC" in java_options else "false"  # as HUDI_CDC_GC says
    probe = _probe_output(done.stdout)
    assert int(probe.pop("code_cache")) >= 240 << 20  # quick's own option, or the full JIT's default
    expected = {
        "retries": str(GC_LOCKER_RETRIES),
        "jit_top_tier": top_tier,
        "user": "kept",
        "jol_sa": "true",
        "parallel_gc": parallel_gc,
        "rows": 3,
    }
    assert probe == expected
