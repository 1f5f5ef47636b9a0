"""``hudi-cdc config show``: every setting of a table, its value with secrets redacted, and where it came from.

A files source on the local disk: the table is found without Spark, so these run in a second.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from hudi_cdc.cli import main
from hudi_cdc.config import IngestConfig
from tests.support import files_pipeline


def _show(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, ["config", "show", *args], env=env, catch_exceptions=False)


@pytest.fixture
def pipeline(tmp_path: Path) -> Path:
    sections = """
[lineage]
lineage_transport = "http"
lineage_url = "http://ol:s3cr3t@marquez:5000"

[tables."*.customers"]
source_limit = 10
masks = { email = "redact" }
[tables."*.customers".hoodie_conf]
"hoodie.x.password" = "hunter2"
"hoodie.parquet.max.file.size" = "1024"

[tables."public.customers"]
masks = { name = "redact" }
"""
    return files_pipeline(tmp_path, sections, folders=["acc.public.customers"], defaults='table_type = "mor"')


def test_a_pipeline_tables_settings_with_their_origins(pipeline: Path) -> None:
    env = {"HUDI_CDC__SOURCE_LIMIT": "25"}
    shown = _show("--pipeline", str(pipeline), "--table", "public.customers", "--json", env=env)
    assert shown.exit_code == 0, shown.output
    report = json.loads(shown.output)
    assert (report["table"], report["topic"], report["sections"]) == (
        "public.customers",
        "acc.public.customers",
        ["*.customers", "public.customers"],
    )
    settings = report["settings"]
    assert {f.name for f in IngestConfig.__dataclass_fields__.values()} == set(settings)  # every setting
    # masks merge column by column: the exact section adds to the pattern's, never lifts them
    masks = {"value": {"email": "redact", "name": "redact"}, "origin": f'{pipeline} [tables."public.customers"]'}
    assert settings["masks"] == masks
    assert settings["source_limit"] == {"value": 25, "origin": "environment variable HUDI_CDC__SOURCE_LIMIT"}
    assert settings["table_type"] == {"value": "MERGE_ON_READ", "origin": f"{pipeline} [defaults]"}
    assert settings["lineage_transport"]["origin"] == f"{pipeline} [lineage]"
    assert settings["source"] == {"value": "files", "origin": f"{pipeline} [source]"}
    assert settings["compaction"]["origin"] == "default"
    assert settings["hoodie_conf"]["value"] == {"hoodie.x.password": "***", "hoodie.parquet.max.file.size": "1024"}
    assert settings["hoodie_conf"]["origin"]["hoodie.x.password"] == f'{pipeline} [tables."*.customers"]'
    assert "s3cr3t" not in shown.output and "hunter2" not in shown.output

    text = _show("--pipeline", str(pipeline), "--table", "acc.public.customers", env=env)
    assert text.exit_code == 0, text.output
    assert '[tables."*.customers"], [tables."public.customers"]' in text.output
    line = next(x for x in text.output.splitlines() if x.startswith("source_limit "))
    assert [p.strip() for p in line.split("=", 1)[1].split("#")] == [
        "25",
        "environment variable HUDI_CDC__SOURCE_LIMIT",
    ]
    assert "s3cr3t" not in text.output and "hunter2" not in text.output


def test_a_table_the_pipeline_does_not_have_gets_the_closest_name(pipeline: Path) -> None:
    shown = _show("--pipeline", str(pipeline), "--table", "public.customer")
    assert shown.exit_code == 2
    assert "did you mean public.customers?" in shown.output


def test_an_ingest_command_line_file_env_and_flags(tmp_path: Path) -> None:
    config = tmp_path / "orders.toml"
    config.write_text(
        'target_base_path = "/lake/orders"\ntarget_table = "orders"\nsource_limit = 5\ntable_type = "cow"\n'
    )
    args = [
        "--config",
        str(config),
        "--source-path",
        "/landing/orders",
        "--record-key-fields",
        "id",
        "--table-type",
        "mor",
    ]
    shown = _show(*args, "--json", env={"HUDI_CDC__SOURCE_LIMIT": "7"})
    assert shown.exit_code == 0, shown.output
    settings = json.loads(shown.output)["settings"]
    assert settings["target_table"] == {"value": "orders", "origin": str(config)}
    assert settings["source_limit"] == {"value": 7, "origin": "HUDI_CDC__SOURCE_LIMIT"}  # env over the file
    assert settings["table_type"] == {"value": "MERGE_ON_READ", "origin": "--table-type"}  # a flag over both
    assert settings["min_sync_interval_seconds"]["origin"] == "default"
