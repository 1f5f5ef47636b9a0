"""``--pipeline FILE --table NAME``: one way every per-table command names a pipeline's table.

A files source in a temporary folder: names resolve without Spark (the folder is rendered and looked up, or
listed), so none of these tests starts a JVM.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from hudi_cdc.cli import main
from hudi_cdc.errors import ConfigError
from hudi_cdc.ops.pipeline_table import pipeline_table, resolve_table
from hudi_cdc.service.spec import load_pipeline


def _pipeline(tmp_path: Path, tables: str = '["dbserver1.public.*"]', extra: str = "") -> Path:
    landing = tmp_path / "landing"
    for topic in ("dbserver1.public.customers", "dbserver1.public.orders", "dbserver1.crm.customers"):
        (landing / topic).mkdir(parents=True, exist_ok=True)
    (landing / "_tmp").mkdir(exist_ok=True)
    path = tmp_path / "shop.toml"
    path.write_text(
        f"""
[source]
source = "files"
source_path = "{landing}"
tables = {tables}

[defaults]
target_base_path = "{tmp_path / "lake"}/{{schema}}/{{table}}"
target_table = "{{schema}}_{{table}}"
record_key_fields = ["id"]
tombstone_retention_hours = 24
{extra}
"""
    )
    return path


def test_a_table_is_named_by_schema_table_or_topic_and_gets_run_s_settings(tmp_path: Path) -> None:
    path = _pipeline(tmp_path)
    by_name = pipeline_table(path, "public.orders")
    assert (by_name.ref.topic, by_name.name) == ("dbserver1.public.orders", "public.orders")
    assert by_name.config.target_base_path == f"{tmp_path / 'lake'}/public/orders"
    assert by_name.config.source_path == str(tmp_path / "landing" / "dbserver1.public.orders")
    assert by_name.source_table == "public.orders"
    by_topic = pipeline_table(path, "dbserver1.public.orders")
    assert by_topic.ref == by_name.ref and by_topic.config == by_name.config


def test_a_name_that_matches_nothing_is_refused_with_the_closest(tmp_path: Path) -> None:
    spec = load_pipeline(_pipeline(tmp_path))
    with pytest.raises(ConfigError) as refused:
        resolve_table(spec, "public.custmers")
    message = str(refused.value)
    assert "no table 'public.custmers'" in message and "did you mean public.customers" in message
    assert "Its tables: public.customers, public.orders." in message  # crm is not matched by [source] tables
    with pytest.raises(ConfigError, match="did you mean dbserver1.public.orders"):
        resolve_table(spec, "dbserver1.public.ordres")  # a topic is compared with topics
    with pytest.raises(ConfigError, match="no table 'crm.customers'"):
        resolve_table(spec, "crm.customers")  # a folder of the source that the pipeline does not take


def test_a_name_under_two_topic_prefixes_asks_for_the_topic(tmp_path: Path) -> None:
    path = _pipeline(tmp_path, tables='["dbserver1.*.customers", "dbserver2.public.*"]')
    (tmp_path / "landing" / "dbserver2.public.customers").mkdir()
    spec = load_pipeline(path)
    with pytest.raises(ConfigError, match=r"public.customers names 2 tables \(dbserver1.public.customers, "):
        resolve_table(spec, "public.customers")
    assert resolve_table(spec, "dbserver2.public.customers").topic == "dbserver2.public.customers"
    assert resolve_table(spec, "crm.customers").topic == "dbserver1.crm.customers"  # listed: * in the prefix


@pytest.mark.parametrize(
    ("command", "own"),
    [
        (["tombstones"], ["--target-base-path", "/lake/t"]),
        (["tombstones"], ["--record-key-fields", "id"]),
        (["quarantine", "list"], ["--target-table", "t"]),
        (["quarantine", "reapply"], ["--config", "t.toml"]),
        (["verify", "--source-url", "postgresql://u@h/db"], ["--target-base-path", "/lake/t"]),
        (["bootstrap", "--source-url", "postgresql://u@h/db", "--slot", "s"], ["--record-key-fields", "id"]),
        (["status"], ["--tables", "public.orders"]),
        (["validate"], ["--tables", "public.orders"]),
    ],
    ids=lambda v: " ".join(v[:2]),
)
def test_the_pipeline_s_table_or_the_command_s_own_options_not_both(
    tmp_path: Path, command: list[str], own: list[str]
) -> None:
    path = str(_pipeline(tmp_path))
    both = CliRunner().invoke(main, [*command, "--pipeline", path, "--table", "public.orders", *own])
    assert both.exit_code == 2, both.output
    assert f"--pipeline/--table and {own[0]} both name the table" in both.output


@pytest.mark.parametrize(
    "command",
    [["tombstones"], ["quarantine", "list"], ["bootstrap", "--source-url", "postgresql://u@h/db", "--slot", "s"]],
)
def test_pipeline_and_table_go_together(tmp_path: Path, command: list[str]) -> None:
    path = str(_pipeline(tmp_path))
    alone = CliRunner().invoke(main, [*command, "--pipeline", path])
    assert alone.exit_code == 2 and "--pipeline FILE goes with --table schema.table" in alone.output, alone.output
    orphan = CliRunner().invoke(main, [*command, "--table", "public.orders"])
    assert orphan.exit_code == 2 and "--table names a table of --pipeline FILE" in orphan.output, orphan.output


@pytest.mark.parametrize(
    "command",
    [
        ["tombstones"],
        ["quarantine", "list"],
        ["quarantine", "reapply"],
        ["verify"],
        ["status"],
        ["validate"],
        ["bootstrap", "--source-url", "postgresql://u@h/db", "--slot", "s"],
    ],
    ids=lambda v: " ".join(v[:2]),
)
def test_every_per_table_command_refuses_a_typo_with_the_closest_name(tmp_path: Path, command: list[str]) -> None:
    path = str(_pipeline(tmp_path))
    typo = CliRunner().invoke(main, [*command, "--pipeline", path, "--table", "public.ordrs"])
    assert typo.exit_code == 2, typo.output
    assert "no table 'public.ordrs'" in typo.output and "did you mean public.orders" in typo.output


def test_verify_s_old_pipeline_topic_still_names_the_table_with_a_warning(tmp_path: Path) -> None:
    path = str(_pipeline(tmp_path))
    args = ["verify", "--pipeline", path, "--pipeline-topic", "dbserver1.public.ordrs"]
    old = CliRunner().invoke(main, args)
    assert old.exit_code == 2, old.output
    assert "--pipeline-topic is deprecated and goes in the next release: use --table" in old.output
    assert "did you mean dbserver1.public.orders" in old.output  # resolved as --table is
    help_text = CliRunner().invoke(main, ["verify", "--help"]).output
    assert "--pipeline-topic" not in help_text and "--table" in help_text
