"""A tiny run of the benchmark harness (`make bench`): it must run end to end and every table must be right.

No timing is asserted: a benchmark is not a test.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench import run as bench_run

pytestmark = [pytest.mark.kafka, pytest.mark.hudi]

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("schema_versions", ["1", "3"])
def test_bench_harness_smoke(
    spark: Any,  # noqa: ANN401, ARG001 - the worker's session, active: the harness reuses it
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    schema_versions: str,
) -> None:
    args = ["--events", "3000", "--keys", "300", "--partitions", "2", "--work", str(tmp_path), "--only-same-settings",
            "--schema-versions", schema_versions]  # fmt: skip
    # Each tool's JVM run costs 25-40 CPU-seconds and a table type is one option of the same harness code, so
    # each table type runs once: the one-version stream on MERGE_ON_READ (hudi-cdc, HoodieStreamer and the
    # anchor: each tool's harder path), the several-version stream (hudi-cdc alone: the anchors read one
    # version) on COPY_ON_WRITE. `make bench` runs both types for every tool.
    table_types = {"MERGE_ON_READ"} if schema_versions == "1" else {"COPY_ON_WRITE"}
    args += ["--table-types", ",".join(sorted(table_types))]
    if not any((REPO / ".jars" / "hoodiestreamer").glob("hudi-utilities*.jar")):
        args.append("--skip-hoodiestreamer")
    # The harness itself runs in this process on the worker's session (hudi_cdc.spark_session reuses an
    # active one): a JVM of its own would cost a start-up and measures nothing. Each tool it measures still
    # runs in a spark-submit of its own, as in `make bench`.
    code = bench_run.main(args)
    stdout = capsys.readouterr().out
    assert code == 0, stdout[-3000:]
    (report,) = tmp_path.glob("*/report.json")
    data = json.loads(report.read_text())
    assert data["events"] == 3000
    assert data["decode"]["spark_from_avro"]["events"] == data["decode"]["python_fastavro_count"]["events"] > 0
    tools = {(r["tool"], r["table_type"]) for r in data["runs"]}
    assert {("hudi-cdc", t) for t in table_types} <= tools
    assert all(r["rows_ok"] for r in data["runs"] if r["tool"] == "hudi-cdc"), data["runs"]
    # The hand-written Hudi 1.2 job runs on one-version streams only; its tables are checked and may be wrong
    # (the TOAST placeholders Hudi keeps): a finding, not a failure of the harness.
    anchors = [r for r in data["runs"] if r["tool"] == "Hudi 1.2 by hand"]
    if schema_versions == "1":
        assert {r["table_type"] for r in anchors} == {"MERGE_ON_READ"}
        assert all(r["rows_ok"] is not None and not r["note"].startswith("exit") for r in anchors), anchors
    else:
        assert not anchors and "reads a one-version stream only" in stdout
