"""``hudi-cdc validate --pipeline``: every table ``run`` would replicate, checked with its own settings, one report each.

The source is a folder per table of Debezium Avro files; no service is needed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from hudi_cdc.cli import main
from hudi_cdc.service import run_pipeline
from hudi_cdc.testing.samples import SampleCustomers
from tests.support import files_pipeline, read_rows

pytestmark = pytest.mark.hudi


def _pipeline(tmp_path: Path, *, tables: str = '"dbserver1.public.*"', t2: str = "") -> Path:
    path = tmp_path / "inventory.toml"
    path.write_text(
        f"""
[source]
source = "files"
source_path = "{tmp_path / "landing"}"
tables = {tables}

[defaults]
target_base_path = "{tmp_path / "lake"}/{{table}}"
target_table = "inventory_{{table}}"
record_key_fields = "id"
table_type = "cow"

[tables."public.t2"]
table_type = "mor"
{t2}

[tables."public.t3"]
enabled = false
"""
    )
    return path


def _validate(*args: str) -> Result:
    return CliRunner().invoke(main, ["validate", *args], catch_exceptions=False)


def test_each_table_is_checked_with_its_own_settings(spark, tmp_path: Path) -> None:  # noqa: ANN001
    for n, table in enumerate(("t1", "t2", "t3")):
        SampleCustomers(tmp_path / "landing", keys=5, topic=f"dbserver1.public.{table}").snapshot(3 + n)
    path = _pipeline(tmp_path)
    assert run_pipeline(path, spark=spark).failed == []  # t1 COW, t2 MOR; t3 is disabled

    checked = _validate("--pipeline", str(path))
    assert checked.exit_code == 0, checked.output
    lake = tmp_path / "lake"
    assert f"== public.t1 (folder dbserver1.public.t1 -> inventory_t1 at {lake / 't1'})" in checked.output
    assert "ok    target.table_config: COPY_ON_WRITE table 'inventory_t1', key id" in checked.output
    assert "ok    target.table_config: MERGE_ON_READ table 'inventory_t2', key id" in checked.output
    assert "public.t3" not in checked.output
    assert checked.output.splitlines()[-1] == "inventory: 2 table(s) checked, none failed", checked.output

    # One command line for every table is what --pipeline spares: the pipeline's path with the defaults' type fails.
    single = ["--source", "files", "--source-path", str(tmp_path / "landing" / "dbserver1.public.t2")]
    single += ["--target-base-path", str(lake / "t2"), "--target-table", "inventory_t2", "--record-key-fields", "id"]
    assert _validate(*single).exit_code == 1

    path.write_text(path.read_text().replace('table_type = "mor"', 'table_type = "cow"'))  # t2's setting changed
    changed = _validate("--pipeline", str(path), "--json")
    assert changed.exit_code == 1, changed.output
    report = json.loads(changed.output)
    assert report["ok"] is False and set(report["tables"]) == {"public.t1", "public.t2"}
    assert report["tables"]["public.t1"]["ok"] is True
    t2 = {c["name"]: c for c in report["tables"]["public.t2"]["checks"]}
    assert t2["target.table_config"]["status"] == "fail" and "MERGE_ON_READ" in t2["target.table_config"]["detail"]
    assert report["tables"]["public.t2"]["target_table"] == "inventory_t2"

    only = _validate("--pipeline", str(path), "--tables", "public.t1")
    assert only.exit_code == 0 and "public.t2" not in only.output, only.output
    unknown = _validate("--pipeline", str(path), "--tables", "public.nope")
    assert unknown.exit_code == 2 and "public.nope" in unknown.output
    mixed = _validate("--pipeline", str(path), "--target-table", "t", "--table-type", "mor")
    assert mixed.exit_code == 2 and "drop --table-type, --target-table" in mixed.output


def test_a_source_that_cannot_be_listed_and_a_table_whose_settings_are_wrong(spark, tmp_path: Path) -> None:  # noqa: ANN001
    exact = '["dbserver1.public.t1", "dbserver1.public.t2"]'  # no landing folder at all
    path = _pipeline(tmp_path, tables=exact, t2="tombstone_retention_hours = -1")
    result = _validate("--pipeline", str(path))
    assert result.exit_code == 1, result.output
    assert "FAIL  pipeline.tables: cannot list the source's tables (" in result.output
    assert "FAIL  files.folder:" in result.output  # t1, named exactly, is still checked: its folder is missing
    assert "FAIL  pipeline.table_settings:" in result.output and "tombstone_retention_hours" in result.output
    last = result.output.splitlines()[-1]
    assert last == "inventory: 2 table(s) checked, 2 failed (public.t1, public.t2); pipeline.tables failed", last


def test_a_section_one_letter_short_is_refused_by_validate_and_run_before_anything_is_written(
    spark, tmp_path: Path
) -> None:  # noqa: ANN001
    # The reproduction: the folder acc.public.customers, a mask in [tables."public.customer"].
    sample = SampleCustomers(tmp_path / "landing", keys=5, topic="acc.public.customers")
    sample.snapshot(5)
    path = files_pipeline(tmp_path, '[tables."public.customer"]\nmasks = { name = "redact" }\n')
    checked = _validate("--pipeline", str(path))
    assert checked.exit_code == 2, checked.output
    assert '[tables."public.customer"] matches no table of the source; did you mean public.customers?' in checked.output
    ran = CliRunner().invoke(main, ["run", "--pipeline", str(path)], catch_exceptions=False)
    assert ran.exit_code == 2, ran.output
    assert "did you mean public.customers?" in ran.output and str(path) in ran.output
    assert not (tmp_path / "lake").exists() and not (tmp_path / "acc.state" / "status.json").exists()

    path.write_text(path.read_text().replace('"public.customer"', '"public.customers"'))
    assert _validate("--pipeline", str(path)).exit_code == 0
    assert run_pipeline(path, spark=spark).failed == []
    names = [r[1] for r in read_rows(spark, str(tmp_path / "lake" / "customers"), ("id", "name"))]
    assert len(names) == 5 and not any(n and n.startswith("customer ") for n in names), names  # masked
