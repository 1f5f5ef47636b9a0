"""A tiny run of the benchmark harness (`make bench`): it must run end to end and every table must be right.

No timing is asserted: a benchmark is not a test.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.kafka, pytest.mark.hudi]

REPO = Path(__file__).resolve().parents[2]


def test_bench_harness_smoke(tmp_path: Path) -> None:
    args = ["--events", "3000", "--keys", "300", "--partitions", "2", "--work", str(tmp_path), "--only-same-settings"]
    if not any((REPO / ".jars" / "hoodiestreamer").glob("hudi-utilities*.jar")):
        args.append("--skip-hoodiestreamer")
    done = subprocess.run([sys.executable, "-m", "bench.run", *args], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (report,) = tmp_path.glob("*/report.json")
    data = json.loads(report.read_text())
    assert data["events"] == 3000
    assert data["decode"]["spark_from_avro"]["events"] == data["decode"]["python_fastavro_count"]["events"] > 0
    tools = {(r["tool"], r["table_type"]) for r in data["runs"]}
    assert {("hudi-cdc", "COPY_ON_WRITE"), ("hudi-cdc", "MERGE_ON_READ")} <= tools
    assert all(r["rows_ok"] for r in data["runs"]), data["runs"]
