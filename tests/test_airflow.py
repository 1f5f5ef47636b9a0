"""``hudi_cdc.airflow`` without Airflow: the command it runs, what an exit status means, the missing-extra error."""

from __future__ import annotations

import importlib.util

import pytest

from hudi_cdc.airflow import EXIT_TRANSIENT, _printable, ingest_command, outcome_of


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
        "--record-key-field", "order_id,line_no", "--allow-data-loss", "--source-limit", "5000",
        "--hoodie-conf", "hoodie.cleaner.commits.retained=5", "--json",
    ]  # fmt: skip


def test_an_unknown_option_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="'target_path'"):
        ingest_command({"target_path": "/lake/t"})


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
