"""One declaration per setting drives every surface: a setting declared here, at test time, is
typed, read from the environment, a file and keywords, offered as a flag, passed by the Airflow
operator and listed in the reference; unknown names get the closest ones, naming their origin."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from hudi_cdc.airflow import ingest_command
from hudi_cdc.cli._common import config_options, options_config
from hudi_cdc.config import IngestConfig, load_config, load_config_with_origins
from hudi_cdc.errors import ConfigError
from hudi_cdc.settings import declared, setting
from hudi_cdc.settings_doc import DOC_PATH, REGENERATE, render

REQUIRED = {"source_path": "/in", "target_base_path": "/out", "target_table": "t", "record_key_fields": ("id",)}


@dataclass(frozen=True)
class WithOneMore(IngestConfig):
    """IngestConfig and one setting more, declared as every setting is."""

    rounds_per_hour: int = setting("A setting declared only by this test.", default=3)
    owners: tuple[str, ...] = setting("Another, a list.", default=(), aliases=("owner",))


def _command(seen: list[IngestConfig]) -> click.Command:
    def probe(props_file: str | None, config_file: str | None, hoodie_conf: tuple[str, ...], **kw: object) -> None:
        seen.append(options_config(props_file, config_file, hoodie_conf, dict(kw), config_class=WithOneMore))

    return click.command()(config_options(probe, config_class=WithOneMore))


def test_a_declared_setting_appears_on_every_surface(tmp_path: Path) -> None:
    names = [d.name for d in declared(WithOneMore)]
    assert names[-2:] == ["rounds_per_hour", "owners"]

    # the command line: the flag derived from the name, typed; the list repeatable
    seen: list[IngestConfig] = []
    argv = ["--source-path", "/in", "--target-base-path", "/out", "--target-table", "t", "--record-key-fields", "id"]
    result = CliRunner().invoke(_command(seen), [*argv, "--rounds-per-hour", "5", "--owners", "ann", "--owners", "bo"])
    assert result.exit_code == 0, result.output
    assert (seen[-1].rounds_per_hour, seen[-1].owners) == (5, ("ann", "bo"))
    refused = CliRunner().invoke(_command(seen), [*argv, "--rounds-per-hour", "many"])
    assert refused.exit_code == 2 and "'many' is not a valid integer" in refused.output

    # the environment: HUDI_CDC__ and the name, its text typed by the declared type; the origin kept
    config, origins = load_config_with_origins(
        env={"HUDI_CDC__ROUNDS_PER_HOUR": "7"}, config_class=WithOneMore, **REQUIRED
    )
    assert config.rounds_per_hour == 7 and origins["rounds_per_hour"] == "HUDI_CDC__ROUNDS_PER_HOUR"

    # the ingest --config file: the name as its TOML key
    toml = tmp_path / "ingest.toml"
    toml.write_text('rounds_per_hour = 11\nowners = ["cy"]\n')
    config, origins = load_config_with_origins(config_file=toml, env={}, config_class=WithOneMore, **REQUIRED)
    assert (config.rounds_per_hour, config.owners, origins["owners"]) == (11, ("cy",), str(toml))

    # the Python keywords: the name; a typo gets the closest name
    config = load_config_with_origins(env={}, config_class=WithOneMore, rounds_per_hour=9, **REQUIRED)[0]
    assert config.rounds_per_hour == 9
    with pytest.raises(ConfigError, match=r"^keyword argument rounds_per_hr: .*did you mean rounds_per_hour\?$"):
        load_config_with_origins(env={}, config_class=WithOneMore, rounds_per_hr=9, **REQUIRED)

    # the Airflow operator's options: the flags of the very command line above, read back through it
    airflow = ingest_command(
        {**REQUIRED, "rounds_per_hour": 13, "owners": ["dee", "eve"]}, command=["hudi-cdc"], config_class=WithOneMore
    )
    assert airflow[-5:] == ["--owners", "dee", "--owners", "eve", "--json"]
    result = CliRunner().invoke(_command(seen), airflow[2:-1])
    assert result.exit_code == 0, result.output
    assert (seen[-1].rounds_per_hour, seen[-1].owners) == (13, ("dee", "eve"))

    # the reference
    doc = render(WithOneMore)
    row = next(line for line in doc.splitlines() if line.startswith("| `rounds_per_hour` |"))
    assert "integer" in row and "`3`" in row and "A setting declared only by this test." in row
    assert "`--rounds-per-hour N`" in row and "`HUDI_CDC__ROUNDS_PER_HOUR`" in row
    assert "rounds_per_hour" not in render()


def test_an_old_name_works_with_a_warning_naming_the_new_one() -> None:
    with pytest.warns(FutureWarning, match="owner is an old name of owners.*use owners"):
        config = load_config_with_origins(env={}, config_class=WithOneMore, owner=["ann"], **REQUIRED)[0]
    assert config.owners == ("ann",)
    with pytest.warns(FutureWarning, match="mask is an old name of masks"):
        config = load_config(env={}, mask={"email": "redact"}, **REQUIRED)
    assert config.masks == {"email": "redact"}
    seen: list[IngestConfig] = []
    argv = ["--source-path", "/in", "--target-base-path", "/out", "--target-table", "t", "--record-key-fields", "id"]
    result = CliRunner().invoke(_command(seen), [*argv, "--owner", "bo", "--drop-column", "notes"])
    assert result.exit_code == 0, result.output
    assert (seen[-1].owners, seen[-1].columns_drop) == (("bo",), ("notes",))
    assert result.stderr.splitlines() == [
        "hudi-cdc warning: --owner is deprecated (goes in the next release): use --owners",
        "hudi-cdc warning: --drop-column is deprecated (goes in the next release): use --columns-drop",
    ]


@pytest.mark.parametrize(
    ("where", "message"),
    [
        ("env", r"^HUDI_CDC__TABLE_TYP: unknown setting 'table_typ'; did you mean table_type\?$"),
        ("file", r"ingest\.toml: unknown setting 'columns_dorp'; did you mean columns_drop\?$"),
        ("keyword", r"^keyword argument maks: unknown setting 'maks'; did you mean masks\?$"),
        (
            "airflow",
            r"^HudiCdcIngestOperator option sorce_limit: unknown setting 'sorce_limit'; did you mean source_limit",
        ),
    ],
)
def test_an_unknown_name_gets_the_closest_and_its_origin(tmp_path: Path, where: str, message: str) -> None:
    toml = tmp_path / "ingest.toml"
    toml.write_text('columns_dorp = ["a"]\n')
    with pytest.raises(ConfigError, match=message) as refused:
        if where == "env":
            load_config(env={"HUDI_CDC__TABLE_TYP": "mor"}, **REQUIRED)
        elif where == "file":
            load_config(config_file=toml, env={}, **REQUIRED)
        elif where == "keyword":
            load_config(env={}, maks={"a": "hash"}, **REQUIRED)
        else:
            ingest_command({"sorce_limit": 10})
    assert "known:" not in str(refused.value) and len(str(refused.value)) < 160  # not the list of all names


def test_a_name_with_nothing_close_points_to_the_reference() -> None:
    with pytest.raises(
        ConfigError, match=r"^HUDI_CDC__ZZZ: unknown setting 'zzz'; every setting is listed in docs/settings.md$"
    ):
        load_config(env={"HUDI_CDC__ZZZ": "1"}, **REQUIRED)


def test_a_setting_is_refused_where_it_is_not_declared() -> None:
    with pytest.raises(
        ConfigError, match=r"^HUDI_CDC__SHARD_SOURCES: shard_sources cannot be set in HUDI_CDC__\* .*\[\[routes\]\]"
    ):
        load_config(env={"HUDI_CDC__SHARD_SOURCES": "a,b"}, **REQUIRED)


def test_a_bad_value_names_where_it_came_from(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^HUDI_CDC__SOURCE_LIMIT: source_limit='ten' is not a number$"):
        load_config(env={"HUDI_CDC__SOURCE_LIMIT": "ten"}, **REQUIRED)
    with pytest.raises(ConfigError, match=r"^HUDI_CDC__CONTINUOUS: continuous='maybe' is not true or false$"):
        load_config(env={"HUDI_CDC__CONTINUOUS": "maybe"}, **REQUIRED)
    with pytest.raises(
        ConfigError, match=r"source_limit must be positive, got 0 \(source_limit from HUDI_CDC__SOURCE_LIMIT\)$"
    ):
        load_config(env={"HUDI_CDC__SOURCE_LIMIT": "0"}, **REQUIRED)
    seen: list[IngestConfig] = []
    argv = ["--source-path", "/in", "--target-base-path", "/out", "--target-table", "t", "--record-key-fields", "id"]
    result = CliRunner().invoke(_command(seen), [*argv, "--masks", "email"])
    assert isinstance(result.exception, ConfigError)
    assert str(result.exception) == "--masks expects COL=KIND, got 'email'"
    result = CliRunner().invoke(_command(seen), [*argv, "--source-limit", "0"])
    assert str(result.exception) == "source_limit must be positive, got 0 (source_limit from --source-limit)"


def test_each_type_is_read_from_text_by_its_declaration() -> None:
    env = {
        "HUDI_CDC__SOURCE_LIMIT": "12",
        "HUDI_CDC__RETRY_TIMEOUT_SECONDS": "1.5",
        "HUDI_CDC__ALLOW_DATA_LOSS": "yes",
        "HUDI_CDC__CATALOG_SYNC_PARTITIONS": "off",
        "HUDI_CDC__TABLE_TYPE": "mor",
        "HUDI_CDC__FLAVOR": "MySQL",
        "HUDI_CDC__COLUMNS_DROP": "a, b",
        "HUDI_CDC__MASKS": '{"email": "redact"}',
        "HUDI_CDC__COLUMN_RENAMES": "a=x;b=y",
    }
    config = load_config(env=env, **REQUIRED)
    assert (config.source_limit, config.retry_timeout_seconds) == (12, 1.5)
    assert (config.allow_data_loss, config.catalog_sync_partitions) == (True, False)
    assert (config.table_type, config.flavor) == ("MERGE_ON_READ", "mysql")
    assert config.columns_drop == ("a", "b") and config.masks == {"email": "redact"}
    assert config.column_renames == {"a": "x", "b": "y"}


def test_the_file_takes_a_table_sections_keys_and_tables(tmp_path: Path) -> None:
    toml = tmp_path / "ingest.toml"
    toml.write_text(
        'masks = { email = "redact" }\nhistory = "soft_delete"\n'
        '[hoodie_conf]\n"hoodie.a" = "1"\n"hoodie.b" = 2\n[schema_changes]\ncolumn_added = "ignore"\n'
    )
    env = {"HUDI_CDC__HOODIE_CONF": "hoodie.b=3", "HUDI_CDC__SCHEMA_CHANGES": "column_dropped=fail"}
    config, origins = load_config_with_origins(config_file=toml, env=env, **REQUIRED)
    assert config.masks == {"email": "redact"} and config.history == "soft_delete"
    assert config.hoodie_conf == {"hoodie.a": "1", "hoodie.b": "3"}  # by key: the variable changes one key
    assert config.schema_changes == {"column_added": "ignore", "column_dropped": "fail"}
    assert origins == {
        "masks": str(toml),
        "history": str(toml),
        "hoodie_conf": "HUDI_CDC__HOODIE_CONF",
        "schema_changes": "HUDI_CDC__SCHEMA_CHANGES",
        "source_path": "keyword argument source_path",
        "target_base_path": "keyword argument target_base_path",
        "target_table": "keyword argument target_table",
        "record_key_fields": "keyword argument record_key_fields",
    }


def test_secrets_are_redacted_by_their_declaration() -> None:
    config = load_config(
        env={},
        jdbc_url="jdbc:postgresql://db/shop?password=s3cret",
        **{**REQUIRED, "source": "kafka", "topic": "t", "bootstrap_servers": "b:1"},
        schema_registry_url="https://user:s3cret@registry:8081",
        catalog_options={"hive.metastore.sasl.password": "s3cret", "x": "plain"},
    )
    text = repr(config)
    assert "s3cret" not in text and "user:***@registry:8081" in text and "plain" in text
    secret = {d.name: d.meta.secret for d in declared(IngestConfig) if d.meta.secret}
    assert secret["jdbc_password_env"] == "reference" and secret["catalog_uri"] == "redacted"


def test_the_python_api_takes_exactly_the_declared_names() -> None:
    import inspect

    import hudi_cdc

    keywords = set(inspect.signature(hudi_cdc.ingest).parameters) - {
        "config",
        "spark",
        "config_file",
        "props_file",
        "env",
    }
    assert keywords == {d.name for d in declared(IngestConfig) if "python" in d.where}
    assert "masks" in keywords and "mask" not in keywords and "shard_sources" not in keywords


def test_the_reference_is_current() -> None:
    assert DOC_PATH.read_text() == render(), f"docs/settings.md is stale: run `{REGENERATE}`"


def test_no_warning_for_the_canonical_names() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_config(env={}, masks={"a": "redact"}, columns_drop=["b"], **REQUIRED)


def test_ingest_and_validate_offer_every_command_line_setting() -> None:
    from hudi_cdc.cli import ingest, validate

    wanted = {d.flag for d in declared(IngestConfig) if "cli" in d.where}
    for command in (ingest, validate):
        flags = {opt for param in command.params for opt in param.opts}
        assert wanted <= flags, sorted(wanted - flags)
        hidden = {param.opts[0] for param in command.params if getattr(param, "hidden", False)}
        assert {"--record-key-field", "--drop-column", "--mask", "--type-mapping", "--catalog-option"} <= hidden
    assert "--shard-sources" not in {opt for param in ingest.params for opt in param.opts}
