"""``hudi-cdc init`` from a folder of Debezium Avro files: a commented pipeline file that ``validate`` passes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from hudi_cdc.cli import main
from hudi_cdc.service.spec import TableRef, load_pipeline
from hudi_cdc.testing.samples import SampleCustomers

TOPICS = ("dbserver1.public.customers", "dbserver1.public.orders", "dbserver1.crm.customers")


def _landing(tmp_path: Path) -> Path:
    landing = tmp_path / "landing"
    for topic in TOPICS:
        SampleCustomers(landing, keys=4, topic=topic).snapshot(3)
    (landing / "_spark_metadata").mkdir()  # not a table
    return landing


def _init(*args: str) -> tuple[int, str]:
    done = CliRunner().invoke(main, ["init", *args])
    return done.exit_code, done.output


def test_every_table_is_listed_with_a_commented_section_and_the_file_reads(tmp_path: Path) -> None:
    landing, out = _landing(tmp_path), tmp_path / "landing.toml"
    code, said = _init("--source-path", str(landing), "--record-key-fields", "id", "--output", str(out))
    assert code == 0, said
    assert f"{out}: 3 table(s) from the folder {landing}" in said
    text = out.read_text()
    sections = re.findall(r'^# \[tables\."([^"]+)"\]   # folder (\S+)$', text, flags=re.MULTILINE)
    assert sorted(sections) == sorted((TableRef(t).name, t) for t in TOPICS)
    for header in ("# [source]:", "# [defaults]:", '# [tables."schema.table"]:', "# [run]:"):
        assert header in text  # each section says what it is for

    spec = load_pipeline(out)
    assert spec.name == "landing" and sorted(spec.source.tables) == sorted(TOPICS)
    configs = {t: spec.table_config(TableRef(t)) for t in TOPICS}
    assert configs["dbserver1.crm.customers"].target_base_path == f"{tmp_path / 'lake'}/crm/customers"
    assert configs["dbserver1.crm.customers"].target_table == "crm_customers"
    assert {c.record_key_fields for c in configs.values()} == {("id",)}
    assert {c.source_path for c in configs.values()} == {str(landing / t) for t in TOPICS}

    # Every commented-out section is a valid one: uncommented, the file still reads and every table's settings hold.
    opened = re.sub(r'^# (\[tables\."[^"]+"\]   #|masks|columns_drop|enabled)', r"\1", text, flags=re.MULTILINE)
    out.write_text(opened)
    spec = load_pipeline(out)
    for topic in TOPICS:
        config = spec.table_config(TableRef(topic))
        assert dict(config.masks) == {"email": "redact"}
        assert not spec.enabled(TableRef(topic))


def test_it_refuses_to_overwrite_without_force_and_prints_without_output(tmp_path: Path) -> None:
    landing, out = _landing(tmp_path), tmp_path / "p.toml"
    out.write_text("mine")
    code, said = _init("--source-path", str(landing), "--output", str(out))
    assert code == 2 and f"{out} exists: pass --force" in said and out.read_text() == "mine"
    code, said = _init("--source-path", str(landing), "--output", str(out), "--force",
                       "--target-base-path-template", "s3a://lake/{server}/{schema}/{table}")  # fmt: skip
    assert code == 0, said
    assert 'target_base_path = "s3a://lake/{server}/{schema}/{table}"' in out.read_text()
    assert 'record_key_fields = ["id"]   # TO CHECK' in out.read_text()  # files carry no key: said, not hidden
    code, printed = _init("--source-path", str(landing), "--name", "landing")
    assert (
        code == 0
        and printed.startswith("# The hudi-cdc pipeline 'landing'")
        and not (tmp_path / "landing.toml").exists()
    )


@pytest.mark.parametrize(
    ("args", "refusal"),
    [
        ([], "say where the tables are"),
        (["--source-path", "/x", "--jdbc-url", "jdbc:postgresql://h/db"], "given: --jdbc-url, --source-path"),
        (["--connector", "c"], "--connect-url and --connector go together"),
        (["--source-path", "/nonexistent/landing"], "--source-path /nonexistent/landing is not a folder"),
        (["--jdbc-url", "jdbc:postgresql://h/db?password=x"], "carries a password"),
    ],
)
def test_what_init_refuses(args: list[str], refusal: str) -> None:
    code, said = _init(*args)
    assert code == 2 and refusal in said, said


@pytest.mark.spark
@pytest.mark.hudi
def test_the_written_file_passes_validate_and_run_and_names_tables_for_the_other_commands(
    spark,  # noqa: ANN001
    tmp_path: Path,
) -> None:
    landing, out = _landing(tmp_path), tmp_path / "landing.toml"
    assert _init("--source-path", str(landing), "--record-key-fields", "id", "--output", str(out))[0] == 0

    checked = CliRunner().invoke(main, ["validate", "--pipeline", str(out)], catch_exceptions=False)
    assert checked.exit_code == 0, checked.output
    assert checked.output.splitlines()[-1] == "landing: 3 table(s) checked, none failed", checked.output

    ran = CliRunner().invoke(main, ["run", "--pipeline", str(out)], catch_exceptions=False)
    assert ran.exit_code == 0, ran.output
    table = ["--pipeline", str(out), "--table", "crm.customers"]
    verified = CliRunner().invoke(main, ["verify", *table, "--json"], catch_exceptions=False)
    assert verified.exit_code == 0, verified.output  # compared with its folder's replay
    assert '"equal": true' in verified.output
    held = CliRunner().invoke(main, ["tombstones", *table], catch_exceptions=False)
    assert held.exit_code == 0 and f'"tombstone_path": "{tmp_path / "lake"}/crm/customers' in held.output, held.output
    one = CliRunner().invoke(main, ["validate", *table], catch_exceptions=False)
    assert one.exit_code == 0 and one.output.splitlines()[-1] == "landing: 1 table(s) checked, none failed"
    status = CliRunner().invoke(main, ["status", *table], catch_exceptions=False)
    assert status.exit_code == 0 and "crm.customers: " in status.output and "public.orders" not in status.output
