"""A continuous runner stopped as systemd stops a service: SIGTERM to its whole process group, its Spark driver JVM
included, while rounds are under way.

The JVM's own shutdown stops the SparkContext under those rounds, so they fail: that failure is the stop's, not
the tables'. The run must exit 0 with no table failed (nothing was committed past their checkpoints; the next
start resumes), not 1 naming tables as failed ("Cannot call methods on a stopped SparkContext"), nor 2 ("the
Spark driver's JVM is gone"). Found by the two-runner chaos run, whose final clean stop exited 1 so.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hudi_cdc.testing.samples import SampleCustomers

pytestmark = pytest.mark.hudi

HUDI_CDC = str(Path(sys.executable).parent / "hudi-cdc")


def _pipeline(tmp_path: Path) -> Path:
    path = tmp_path / "inventory.toml"
    path.write_text(
        f"""
[source]
source = "files"
source_path = "{tmp_path / "landing"}"
tables = "dbserver1.public.*"

[defaults]
target_base_path = "{tmp_path / "lake"}/{{table}}"
target_table = "{{table}}"
record_key_fields = "id"
table_type = "cow"

[run]
max_concurrent_tables = 2
discovery_interval_seconds = 0
state_dir = "{tmp_path / "state"}"
"""
    )
    return path


def _states(tmp_path: Path) -> dict[str, str]:
    try:
        shown = json.loads((tmp_path / "state" / "status.json").read_text())
    except (OSError, ValueError):
        return {}
    return {name: table.get("state", "") for name, table in (shown.get("tables") or {}).items()}


def test_a_stop_of_the_whole_process_group_under_rounds_fails_no_table_and_exits_0(tmp_path: Path) -> None:
    for n, table in enumerate(("t1", "t2")):
        sample = SampleCustomers(tmp_path / "landing", keys=200, topic=f"dbserver1.public.{table}")
        sample.snapshot(100)
        sample.changes(n)
    log = tmp_path / "runner.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [HUDI_CDC, "-v", "run", "--pipeline", str(_pipeline(tmp_path)), "--continuous"],
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 300
        while "running" not in _states(tmp_path).values():  # a first round under way (it creates its table)
            assert process.poll() is None, f"the runner ended with {process.returncode}:\n{log.read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"no round under way within 300 s:\n{log.read_text()[-3000:]}"
            time.sleep(0.05)
        os.killpg(process.pid, signal.SIGTERM)  # systemd's KillMode=control-group: Python and its JVM alike
        code = process.wait(180)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(60)
    text = log.read_text(errors="replace")
    states = _states(tmp_path)
    assert code == 0, f"exit {code}, tables {states}:\n{text[-4000:]}"
    assert set(states) == {"public.t1", "public.t2"} and "failed" not in states.values(), states
    assert "FAILED" not in text
    assert "round cut short by the stop" in text  # the stop did land under a round (its first takes seconds)
