"""``hudi_cdc.airflow`` without Airflow: the command it runs, what an exit status means, the missing-extra error."""

from __future__ import annotations

import importlib.util

import pytest

from hudi_cdc.airflow import EXIT_TRANSIENT, _printable, ingest_command, outcome_of
from hudi_cdc.cli._common import options_config
from hudi_cdc.config import IngestConfig
from hudi_cdc.errors import ConfigError


def test_options_become_the_cli_flags() -> None:
    argv = ingest_command(
        {
            "source": "kafka",
            "topic": "dbserver1.inventory.orders",
            "record_key_fields": ["order_id", "line_no"],
            "continuous": False,
            "allow_data_loss": True,
            "partition_path_field": None,
            "source_limit": 5000,
            "hoodie_conf": {"hoodie.cleaner.commits.retained": "5"},
        },
        command=["/opt/hudi-cdc/bin/hudi-cdc"],
    )
    assert argv == [
        "/opt/hudi-cdc/bin/hudi-cdc", "ingest", "--source", "kafka", "--topic", "dbserver1.inventory.orders",
        "--record-key-fields", "order_id", "--record-key-fields", "line_no", "--no-continuous", "--allow-data-loss",
        "--source-limit", "5000", "--hoodie-conf", "hoodie.cleaner.commits.retained=5", "--json",
    ]  # fmt: skip


def _read_back(argv: list[str]) -> IngestConfig:
    """The settings ``hudi-cdc ingest`` makes of ``argv``, parsed by the command's own options."""
    from hudi_cdc.cli import ingest

    assert argv[-1] == "--json"
    params = ingest.make_context("ingest", argv[2:]).params
    files = {k: params.pop(k) for k in ("props_file", "config_file", "hoodie_conf", "as_json")}
    return options_config(files["props_file"], files["config_file"], files["hoodie_conf"], params)


REQUIRED = {"source_path": "/in", "target_base_path": "/out", "target_table": "t", "record_key_fields": ["id"]}


def test_a_list_is_the_option_repeated_and_a_table_its_pairs() -> None:
    argv = ingest_command(
        {**REQUIRED, "columns_drop": ["a", "b"], "masks": {"email": "redact", "ssn": "keep_last:4"}},
        command=["hudi-cdc"],
    )
    assert argv[-9:-1] == [
        "--columns-drop",
        "a",
        "--columns-drop",
        "b",
        "--masks",
        "email=redact",
        "--masks",
        "ssn=keep_last:4",
    ]
    config = _read_back(argv)
    assert config.columns_drop == ("a", "b")  # two columns, not one named "a,b"
    assert config.masks == {"email": "redact", "ssn": "keep_last:4"}


def test_old_names_pass_with_a_warning_as_the_new_flags() -> None:
    with pytest.warns(FutureWarning, match="drop_column is an old name of columns_drop.*use columns_drop"):
        argv = ingest_command({**REQUIRED, "drop_column": ["a", "b"], "on_column_added": "ignore"})
    assert argv[-7:] == ["--columns-drop", "a", "--columns-drop", "b", "--on-column-added", "ignore", "--json"]
    config = _read_back(argv)
    assert config.columns_drop == ("a", "b") and config.schema_changes == {"column_added": "ignore"}
    assert _read_back(ingest_command({**REQUIRED, "catalog_sync_partitions": False})).catalog_sync_partitions is False


def test_an_unknown_option_is_refused_with_the_closest_name() -> None:
    with pytest.raises(
        ConfigError, match=r"option target_path: unknown setting 'target_path'; did you mean target_base_path\?"
    ):
        ingest_command({"target_path": "/lake/t"})
    with pytest.raises(ConfigError, match="shard_sources cannot be set in HudiCdcIngestOperator options"):
        ingest_command({"shard_sources": ["a"]})


@pytest.mark.parametrize(
    ("returncode", "outcome"), [(0, "ok"), (EXIT_TRANSIENT, "retry"), (-9, "retry"), (1, "fail"), (2, "fail")]
)
def test_exit_status_decides_retry_or_fail(returncode: int, outcome: str) -> None:
    assert outcome_of(returncode) == outcome


def test_the_logged_command_hides_secrets() -> None:
    shown = _printable(
        [
            "hudi-cdc", "ingest", "--schema-registry-url", "https://user:s3cret@registry:8081",
            "--hoodie-conf", "kafka.sasl.jaas.config=org.apache.kafka...password=\"s3cret\";",
        ]
    )  # fmt: skip
    assert "s3cret" not in shown and "registry:8081" in shown and "kafka.sasl.jaas.config=***" in shown


@pytest.mark.skipif(importlib.util.find_spec("airflow") is not None, reason="Airflow is installed here")
def test_without_airflow_the_operator_names_the_install() -> None:
    import hudi_cdc.airflow

    with pytest.raises(ImportError, match=r"pip install 'hudi-cdc\[airflow\]'"):
        hudi_cdc.airflow.HudiCdcIngestOperator  # noqa: B018 - the attribute access is the test
