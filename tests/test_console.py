"""A CLI run shows hudi-cdc's lines only: Spark's go to a log file named when the run fails; a terminal gets progress."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from hudi_cdc.testing.samples import SampleCustomers

pytestmark = [pytest.mark.spark, pytest.mark.hudi]

HUDI_CDC = str(Path(sys.executable).parent / "hudi-cdc")


def _args(source: str, base: Path) -> list[str]:
    return [
        HUDI_CDC, "ingest", "--source", "files", "--source-path", source, "--flavor", "postgres",
        "--target-base-path", str(base), "--target-table", "customers", "--record-key-field", "id",
    ]  # fmt: skip


def test_only_our_lines_and_the_spark_log_named_on_failure(tmp_path: Path) -> None:
    sample = SampleCustomers(tmp_path / "events")
    sample.snapshot()
    env = {**os.environ, "HUDI_CDC_LOG_DIR": str(tmp_path / "logs")}

    ok = subprocess.run(_args(sample.source_path, tmp_path / "t"), env=env, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert ok.stderr == "", ok.stderr  # no Spark, Hudi or Ivy warnings
    assert ok.stdout.startswith("customers: commit ") and len(ok.stdout.splitlines()) == 1
    assert not list((tmp_path / "logs").glob("*.log")), "a successful run keeps no log"

    bad = subprocess.run(_args(str(tmp_path / "missing"), tmp_path / "t"), env=env, capture_output=True, text=True)
    assert bad.returncode == 1
    (line,) = bad.stderr.splitlines()
    assert line.startswith("hudi-cdc: error: --source-path") and "(Spark's log: " in line
    log = Path(line.rsplit("(Spark's log: ", 1)[1].rstrip(")"))
    assert log.parent == tmp_path / "logs" and "WARN" in log.read_text()

    verbose = subprocess.run(
        [HUDI_CDC, "-v", *_args(str(tmp_path / "missing"), tmp_path / "t")[1:]], env=env, capture_output=True, text=True
    )
    assert verbose.returncode == 1 and "WARN" in verbose.stderr and "Spark's log" not in verbose.stderr


def test_a_terminal_gets_a_progress_line(tmp_path: Path) -> None:
    sample = SampleCustomers(tmp_path / "events")
    sample.snapshot()
    sample.changes(seed=1)
    primary, secondary = pty.openpty()
    process = subprocess.Popen(
        _args(sample.source_path, tmp_path / "t"), stdin=secondary, stdout=secondary, stderr=secondary
    )
    os.close(secondary)
    screen = b""
    while True:
        try:
            chunk = os.read(primary, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        screen += chunk
    assert process.wait() == 0
    text = screen.decode(errors="replace")
    assert "customers: reading, decoding and deciding" in text
    assert "events decided: writing" in text
    assert "\r" in text and text.rstrip().splitlines()[-1].strip().startswith("customers: commit ")
