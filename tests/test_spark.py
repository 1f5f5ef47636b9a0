"""The session hudi-cdc builds runs its Python workers on the driver's interpreter, not on ``python3`` from PATH."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

# A Python UDF runs in a Spark Python worker; pyarrow is what mapInArrow and
# the decimal UDF need there.
PROBE = """
import sys
import hudi_cdc
from pyspark.sql import functions as F, types as T
spark = hudi_cdc.spark_session(master="local[1]")

@F.udf(T.StringType())
def worker(_):
    import sys, pyarrow
    return sys.executable

print("WORKER", spark.range(1).select(worker("id")).first()[0])
print("DRIVER", sys.executable)
spark.stop()
"""


def test_python_workers_run_the_driver_interpreter_whatever_python3_is_on_path(tmp_path: Path) -> None:
    # The PATH a fresh machine has: its python3 holds none of the project's packages.
    bare = tmp_path / "bare"
    venv.EnvBuilder(with_pip=False).create(bare)
    assert subprocess.run([bare / "bin" / "python3", "-c", "import pyarrow"], capture_output=True).returncode != 0
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "VIRTUAL_ENV")}
    env["PATH"] = f"{bare / 'bin'}:/usr/bin:/bin"
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines() if line.startswith(("WORKER", "DRIVER")))
    assert lines["WORKER"] == lines["DRIVER"] == sys.executable
