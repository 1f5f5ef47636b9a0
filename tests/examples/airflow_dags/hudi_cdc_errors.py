"""A DAG whose two rounds fail: one terminally (a source folder that does not exist), one transiently (no broker)."""

import os
from datetime import datetime, timedelta

from hudi_cdc.airflow import HudiCdcIngestOperator

try:
    from airflow.sdk import DAG
except ImportError:
    from airflow import DAG

BIN = os.environ["HUDI_CDC_BIN"]
LAKE = os.environ["HUDI_CDC_LAKE"]

with DAG(
    "hudi_cdc_errors",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    catchup=False,
    default_args={"retries": 1, "retry_delay": timedelta(seconds=1)},
):
    HudiCdcIngestOperator(
        task_id="terminal",
        command=[BIN],
        options={
            "source": "files",
            "source_path": f"{LAKE}/no-such-folder",
            "target_base_path": f"{LAKE}/terminal",
            "target_table": "terminal",
            "record_key_fields": "id",
        },
    )
    HudiCdcIngestOperator(
        task_id="transient",
        command=[BIN],
        options={
            "source": "kafka",
            "topic": "dbserver1.inventory.customers",
            "bootstrap_servers": "127.0.0.1:1",  # nothing listens there
            "schema_registry_url": "http://127.0.0.1:1",
            "hoodie_conf": {"kafka.socket.timeout.ms": "2000"},  # each try waits 2 s for the broker, not 15
            "target_base_path": f"{LAKE}/transient",
            "target_table": "transient",
        },
    )
