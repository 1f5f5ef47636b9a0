"""``hudi-cdc verify --pipeline FILE`` without ``--table``: every table of the pipeline, each compared as
``--table`` compares it, in one process and one Spark session; the worst table's exit code.

A files source (a folder of Debezium Avro files per table): each table is compared with its own folder's
replay, with its own settings. The usage errors need no JVM.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from hudi_cdc.cli import main
from hudi_cdc.service import run_pipeline
from hudi_cdc.testing.samples import SampleCustomers
from payloads.base import ORDER_COLUMN, is_data_column
from tests.support import files_pipeline, tamper

# t1 masks a column (its replay must be masked the same way); t4 is disabled (run does not write it, so verify must
# not compare it: it would fail with no table at all). Two tables written: the ingest is what this test costs.
SECTIONS = """
[tables."public.t1"]
masks = { name = "redact" }

[tables."public.t4"]
enabled = false
"""


def _verify(*args: str) -> Result:
    return CliRunner().invoke(main, ["verify", *args], catch_exceptions=False)


@pytest.mark.hudi
def test_every_table_compared_with_its_own_replay_then_the_differing_and_the_failing_one_named(
    spark,  # noqa: ANN001
    tmp_path: Path,
) -> None:
    for n, table in enumerate(("t1", "t2", "t4")):
        SampleCustomers(tmp_path / "landing", keys=4, topic=f"acc.public.{table}").snapshot(3 + n)
    path = files_pipeline(tmp_path, SECTIONS)
    assert run_pipeline(path, spark=spark).failed == []
    lake = tmp_path / "lake"
    names = [r.name for r in spark.read.format("hudi").load(str(lake / "t1")).select("name").collect()]
    assert len(names) == 3 and not any(n and n.startswith("customer ") for n in names), names  # t1's replay: masked too

    equal = _verify("--pipeline", str(path), "--json")
    assert equal.exit_code == 0, equal.output
    *tables, summary = [json.loads(line) for line in equal.output.splitlines()]  # one JSON object a line
    assert [(t["name"], t["table"], t["source_rows"], t["target_rows"], t["equal"]) for t in tables] == [
        ("public.t1", "t1", 3, 3, True),
        ("public.t2", "t2", 4, 4, True),
    ]
    assert summary == {"pipeline": "acc", "equal": 2, "different": 0, "failed": 0, "exit_code": 0}

    # One row of t2 changed straight through Hudi, past hudi-cdc.
    frame = spark.read.format("hudi").load(str(lake / "t2"))
    row = frame.select(*[c for c in frame.columns if is_data_column(c)]).where("id = 2").first().asDict()
    wrong = {**row, "name": "tampered", ORDER_COLUMN: "9" * 40}
    tamper(spark, str(lake / "t2"), table_name="t2", table_type="cow", keys=("id",), upserts=[wrong])
    different = _verify("--pipeline", str(path))
    assert different.exit_code == 1, different.output
    lines = different.output.splitlines()
    assert [line for line in lines if line.startswith("== ")] == ["== public.t1", "== public.t2"]
    assert lines[lines.index("== public.t1") + 1] == "t1: source 3 rows, hudi 3 rows: EQUAL", different.output
    assert lines[lines.index("== public.t2") + 1] == "t2: source 4 rows, hudi 4 rows: DIFFERENT", different.output
    assert [line.split(":")[:2] for line in lines if line.startswith("  id=")] == [["  id=2", " changed"]]
    assert lines[-1] == "acc: 2 table(s) verified: 1 equal, 1 different (public.t2), 0 failed", different.output

    # t1's table gone: its error is reported and t2 still compared; an error outranks a difference.
    shutil.move(lake / "t1", tmp_path / "t1-moved")
    failed = _verify("--pipeline", str(path), "--json")
    assert failed.exit_code == 2, failed.output
    t1, t2, summary = [json.loads(line) for line in failed.output.splitlines()]
    assert t1["name"] == "public.t1" and t1["exit_code"] == 2 and t1["error"].startswith("could not verify: error: ")
    assert (t2["name"], t2["equal"], [d["key"] for d in t2["differences"]]) == ("public.t2", False, [{"id": "2"}])
    assert summary == {"pipeline": "acc", "equal": 0, "different": 1, "failed": 1, "exit_code": 2}


@pytest.mark.parametrize(
    "one_table",
    [
        ["--source-table", "public.other"],
        ["--record-key-field", "id"],
        ["--columns", "name"],
        ["--where", "id < 3"],
        ["--repair", "--source-url", "postgresql://u@127.0.0.1:1/db"],
        ["--max-repair", "5", "--source-url", "postgresql://u@127.0.0.1:1/db"],
        ["--source-path", "/landing/acc.public.t1"],
    ],
    ids=lambda v: v[0],
)
def test_an_option_of_one_table_with_pipeline_alone_asks_for_table(tmp_path: Path, one_table: list[str]) -> None:
    path = files_pipeline(tmp_path, folders=("acc.public.t1",))
    refused = _verify("--pipeline", str(path), *one_table)
    assert refused.exit_code == 2, refused.output
    flag = {"--record-key-field": "--record-key-fields"}.get(one_table[0], one_table[0])
    assert f"{flag} takes one table: add --table schema.table" in refused.output, refused.output
    assert "Traceback" not in refused.output


def test_pipeline_alone_and_a_table_s_path_are_refused_naming_both(tmp_path: Path) -> None:
    path = files_pipeline(tmp_path, folders=("acc.public.t1",))
    refused = _verify("--pipeline", str(path), "--target-base-path", "/lake/t1")
    assert refused.exit_code == 2, refused.output
    assert "--pipeline and --target-base-path both name the table: give one" in refused.output


def test_a_database_pipeline_alone_needs_source_url_before_its_source_is_listed(tmp_path: Path) -> None:
    path = tmp_path / "inventory.toml"
    path.write_text(
        '[source]\nsource = "kafka"\nbootstrap_servers = "127.0.0.1:1"\nschema_registry_url = "http://127.0.0.1:2"\n'
        'tables = "dbserver1.inventory.*"\n\n[defaults]\ntarget_base_path = "/lake/{table}"\n'
    )
    refused = _verify("--pipeline", str(path))
    assert refused.exit_code == 2, refused.output
    assert "--source-url URL (each table is compared with its own schema.table there)" in refused.output
    several = _verify("--pipeline", str(path), "--columns", "a", "--where", "b > 1")
    assert several.exit_code == 2 and "--columns, --where take one table: add --table" in several.output
