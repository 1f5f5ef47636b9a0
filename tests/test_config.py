from __future__ import annotations

from pathlib import Path

import pytest

from hudi_cdc.config import IngestConfig, load_config, parse_props, redact
from hudi_cdc.errors import ConfigError

REQUIRED = dict(source_path="/in", target_base_path="/out", target_table="t", record_key_fields="id")


def test_aliases_and_composite_keys() -> None:
    config = load_config(env={}, **{**REQUIRED, "table_type": "mor", "record_key_fields": "a, b"})
    assert config.table_type == "MERGE_ON_READ"
    assert config.record_key_fields == ("a", "b")
    assert load_config(env={}, **{**REQUIRED, "table_type": "cow"}).table_type == "COPY_ON_WRITE"


def test_precedence_file_then_env_then_arguments(tmp_path: Path) -> None:
    config_file = tmp_path / "hudi-cdc.toml"
    config_file.write_text(
        'source_path = "/from-file"\ntarget_table = "file_table"\nflavor = "mysql"\n'
        'source_limit = 10\n[hoodie_conf]\n"hoodie.a" = "file"\n"hoodie.b" = "file"\n'
    )
    env = {"HUDI_CDC__TARGET_TABLE": "env_table", "HUDI_CDC__SOURCE_LIMIT": "20", "HUDI_CDC__FLAVOR": "postgres"}
    config = load_config(
        config_file=config_file,
        env=env,
        hoodie_conf={"hoodie.b": "arg"},
        target_base_path="/out",
        record_key_fields="id",
        flavor="mysql",
    )
    assert config.source_path == "/from-file"
    assert config.target_table == "env_table"
    assert config.source_limit == 20
    assert config.flavor == "mysql"
    assert config.hoodie_conf == {"hoodie.a": "file", "hoodie.b": "arg"}


def test_props_file_then_hoodie_conf(tmp_path: Path) -> None:
    props = tmp_path / "job.properties"
    props.write_text("# comment\nhoodie.x=1\nhoodie.y : 2\n! also comment\n")
    config = load_config(env={}, props_file=props, hoodie_conf={"hoodie.y": "3"}, **REQUIRED)
    assert config.hoodie_conf == {"hoodie.x": "1", "hoodie.y": "3"}


def test_props_syntax_error_names_file_and_line() -> None:
    with pytest.raises(ConfigError, match=r"job.properties:2: expected key=value"):
        parse_props("a=1\nnot a pair\n", origin="job.properties")


def test_unknown_setting_is_rejected_with_its_origin() -> None:
    with pytest.raises(
        ConfigError, match=r"^HUDI_CDC__TARGET_TABEL: unknown setting 'target_tabel'; did you mean target_table"
    ):
        load_config(env={"HUDI_CDC__TARGET_TABEL": "x"}, **REQUIRED)


def test_missing_required_names_the_flags() -> None:
    with pytest.raises(ConfigError, match=r"--target-base-path, --record-key-fields$"):
        load_config(env={}, source_path="/in", target_table="t")


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"table_type": "bogus"}, "table_type='BOGUS' is not one of"),
        ({"flavor": "db2"}, "flavor='db2' is not one of"),
        ({"source_limit": "0"}, "source_limit must be positive"),
        ({"source_limit": "ten"}, "source_limit='ten' is not a number"),
        ({"record_key_fields": " , "}, "record_key_fields is empty"),
    ],
)
def test_bad_values(override: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(env={}, **{**REQUIRED, **override})


def test_secrets_are_redacted_in_repr() -> None:
    config = load_config(
        env={},
        hoodie_conf={"hoodie.aws.secret.key": "s3cr3t", "sasl.jaas.config": "pw", "hoodie.table.x": "plain"},
        **REQUIRED,
    )
    text = repr(config)
    assert "s3cr3t" not in text and "'pw'" not in text
    assert "plain" in text
    assert redact({"db.password": "x"}) == {"db.password": "***"}


def test_config_is_frozen() -> None:
    config = IngestConfig(source_path="/in", target_base_path="/o", target_table="t", record_key_fields=("id",))
    with pytest.raises(AttributeError):
        config.target_table = "other"  # type: ignore[misc]
    assert config.resolved_tombstone_path == "/o_hudi_cdc_tombstones"


def test_jdbc_settings_are_checked_where_they_are_given() -> None:
    jdbc = dict(
        source="jdbc",
        jdbc_url="jdbc:postgresql://db:5432/shop",
        jdbc_timestamp_column="updated_at",
        jdbc_incrementing_column="id",
        target_base_path="/out",
        target_table="t",
        record_key_fields="id",
    )
    config = load_config(env={"HUDI_CDC__JDBC_RECONCILE_DELETES": "true"}, **jdbc, jdbc_table="public.orders")
    assert config.jdbc_reconcile_deletes is True
    with pytest.raises(ConfigError, match="jdbc_reconcile_deletes compares a table's keys"):
        load_config(env={}, **jdbc, jdbc_query="select * from orders", jdbc_reconcile_deletes=True)
    with pytest.raises(ConfigError, match="carries a password"):
        load_config(env={}, **{**jdbc, "jdbc_url": "jdbc:postgresql://db/shop?password=x"}, jdbc_table="t")
    full = load_config(env={}, **jdbc, jdbc_query="select * from orders", jdbc_mode="full")
    assert full.jdbc_mode == "full"  # a query is fine: the keys gone are found by comparing with the table
    with pytest.raises(ConfigError, match="drop source_limit, jdbc_reconcile_deletes"):
        load_config(env={}, **jdbc, jdbc_table="t", jdbc_mode="full", source_limit=10, jdbc_reconcile_deletes=True)


@pytest.mark.parametrize(
    ("table_type", "compaction", "continuous", "is_async"),
    [
        ("MERGE_ON_READ", "async", True, True),
        ("MERGE_ON_READ", "async", False, True),
        ("MERGE_ON_READ", "inline", True, False),
        ("COPY_ON_WRITE", "async", True, False),
    ],
)
def test_async_compaction_is_asked_for_and_only_for_mor(
    table_type: str, compaction: str, continuous: bool, is_async: bool
) -> None:
    config = load_config(
        source_path="/in", target_base_path="/o", target_table="t", record_key_fields="id",
        table_type=table_type, compaction=compaction, continuous=continuous,
    )  # fmt: skip
    assert config.async_compaction is is_async
    with pytest.raises(ConfigError, match="compaction"):
        load_config(
            source_path="/in", target_base_path="/o", target_table="t", record_key_fields="id", compaction="auto"
        )
    default = load_config(source_path="/in", target_base_path="/o", target_table="t", record_key_fields="id",
                          table_type="mor")  # fmt: skip
    assert default.async_compaction  # MERGE_ON_READ's rounds only schedule compactions by default


def test_a_password_is_read_from_its_reference_only(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    from hudi_cdc.config import resolve_password

    secret = tmp_path / "pw"
    secret.write_text("s3cret\n")
    monkeypatch.setenv("HUDI_CDC_TEST_PW", "from-env")
    assert resolve_password(str(secret), "HUDI_CDC_TEST_PW") == "s3cret"  # the file first, its newline dropped
    assert resolve_password(None, "HUDI_CDC_TEST_PW") == "from-env"
    assert resolve_password(None, None) is None
    with pytest.raises(ConfigError, match=r"environment variable HUDI_CDC_NO_SUCH \(the JDBC password\) is not set"):
        resolve_password(None, "HUDI_CDC_NO_SUCH", what="the JDBC password")
    with pytest.raises(ConfigError, match="cannot read the password file .*missing") as refused:
        resolve_password(str(tmp_path / "missing"), None)
    assert "s3cret" not in str(refused.value)


def test_the_retry_backoff_doubles_to_a_minute_within_the_budget() -> None:
    from hudi_cdc.errors import retry_backoff_s

    assert [retry_backoff_s(n, 900) for n in (1, 2, 3, 6, 7)] == [2.0, 4.0, 8.0, 60.0, 60.0]
    assert retry_backoff_s(3, 5.5) == 5.5 and retry_backoff_s(3, -2) == 1.0


def test_history_from_the_file_the_environment_and_a_pipelines_table_section(tmp_path: Path) -> None:
    from hudi_cdc.service.spec import TableRef, load_pipeline

    config_file = tmp_path / "hudi-cdc.toml"
    config_file.write_text('history = "SOFT_DELETE"\n')
    assert load_config(config_file=config_file, env={}, **REQUIRED).history == "soft_delete"
    assert load_config(config_file=config_file, env={"HUDI_CDC__HISTORY": "scd2"}, **REQUIRED).history == "scd2"
    with pytest.raises(ConfigError, match="history"):
        load_config(env={}, history="scd3", **REQUIRED)
    pipeline = tmp_path / "pipe.toml"
    pipeline.write_text(
        'name = "p"\n[source]\nsource = "kafka"\nbootstrap_servers = "127.0.0.1:1"\n'
        'schema_registry_url = "http://127.0.0.1:2"\ntables = ["s.inv.*"]\n'
        '[defaults]\ntarget_base_path = "/lake/{table}"\ntarget_table = "{table}"\n'
        '[tables."inv.audit"]\nhistory = "scd2"\n'
    )
    spec = load_pipeline(pipeline)
    assert spec.table_config(TableRef("s.inv.audit"), env={}).history == "scd2"
    assert spec.table_config(TableRef("s.inv.other"), env={}).history == "none"


def test_history_refuses_a_truncate_that_would_erase_it() -> None:
    with pytest.raises(ConfigError, match="history='scd2' with truncate_behavior='apply'.*--truncate-behavior"):
        load_config(env={}, history="scd2", truncate_behavior="apply", **REQUIRED)
    assert load_config(env={}, history="scd2", truncate_behavior="ignore", **REQUIRED).history == "scd2"
