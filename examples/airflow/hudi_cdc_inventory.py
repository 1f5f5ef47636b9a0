"""hudi-cdc in Airflow: one task per table, each one ``hudi-cdc ingest`` round, every 10 minutes.

Two DAGs:

- ``hudi_cdc_inventory``: a ``HudiCdcIngestOperator`` per table of the local
  stack's ``inventory`` database (Debezium topics ``dbserver1.inventory.*`` in
  Kafka with the Apicurio registry). With ``HUDI_CDC_EVENTS`` set it reads the
  embedded default instead, one task per topic folder of Debezium Avro files
  found there. Transient failures are retried with backoff; a terminal one
  (bad configuration or input) fails the task at once. Each round's result is
  the task's XCom value.
- ``hudi_cdc_inventory_cluster``: the same rounds on a Spark cluster through
  the Spark provider's ``SparkSubmitOperator`` (connection ``spark_cluster``).
  It cannot tell a transient failure from a terminal one: every failure is
  retried. ``HudiCdcIngestOperator(command=["spark-submit", ...])`` keeps the
  distinction on a cluster too.

hudi-cdc runs in its own venv (Airflow's pins and PySpark's differ): point
``HUDI_CDC_BIN`` at its ``hudi-cdc`` and ``HUDI_CDC_PYTHON`` at its ``python``.
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta
from pathlib import Path

from hudi_cdc.airflow import HudiCdcIngestOperator
from hudi_cdc.jars import EXCLUDES, resolve_jars
from hudi_cdc.launcher import SCRIPT

try:
    from airflow.sdk import DAG  # Airflow 3
except ImportError:  # Airflow 2
    from airflow import DAG

LAKE = Path(os.environ.get("HUDI_CDC_LAKE", "/tmp/hudi-cdc-lake"))
HUDI_CDC_BIN = os.environ.get("HUDI_CDC_BIN", "hudi-cdc")
HUDI_CDC_PYTHON = os.environ.get("HUDI_CDC_PYTHON", "python3")
EVENTS = os.environ.get("HUDI_CDC_EVENTS")
KAFKA = {
    "source": "kafka",
    "bootstrap_servers": os.environ.get("HUDI_CDC_BOOTSTRAP", "127.0.0.1:59092"),
    "schema_registry_url": os.environ.get("HUDI_CDC_REGISTRY", "http://127.0.0.1:58080/apis/ccompat/v7"),
}
INVENTORY = ("customers", "orders", "documents")  # stack/conf/init.sql; record keys come from the Kafka key schema

DEFAULTS = {
    "retries": 3,
    "retry_delay": timedelta(seconds=30),
    "retry_exponential_backoff": True,
    "max_retry_delay": timedelta(minutes=10),
}


def table_sources() -> dict[str, dict[str, str]]:
    """Table name -> the source options of its round."""
    if EVENTS:  # the embedded default: a folder per topic, as Kafka Connect's storage sinks write them
        folders = sorted(p for p in Path(EVENTS).iterdir() if p.is_dir())
        return {
            p.name.rsplit(".", 1)[-1]: {"source": "files", "source_path": str(p), "record_key_fields": "id"}
            for p in folders
        }
    return {table: {**KAFKA, "topic": f"dbserver1.inventory.{table}"} for table in INVENTORY}


def table_options(table: str, source: dict[str, str]) -> dict[str, str]:
    return {
        **source,
        "flavor": "postgres",
        "target_base_path": str(LAKE / table),
        "target_table": table,
        "table_type": "mor",
    }


with DAG(
    "hudi_cdc_inventory",
    schedule=timedelta(minutes=10),
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,  # rounds of one table never overlap
    default_args=DEFAULTS,
    tags=["hudi-cdc"],
):
    for table, source in table_sources().items():
        HudiCdcIngestOperator(task_id=table, options=table_options(table, source), command=[HUDI_CDC_BIN])


with DAG(
    "hudi_cdc_inventory_cluster",
    schedule=timedelta(minutes=10),
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    default_args=DEFAULTS,
    tags=["hudi-cdc"],
):
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    from hudi_cdc.airflow import ingest_command

    jars = resolve_jars()
    for table, source in table_sources().items():
        SparkSubmitOperator(
            task_id=table,
            conn_id="spark_cluster",
            application=str(SCRIPT),
            application_args=ingest_command(table_options(table, source), command=()),
            packages=",".join(jars.packages) or None,
            exclude_packages=",".join(EXCLUDES) if jars.packages else None,
            jars=",".join(jars.jars) or None,
            executor_memory="1g",
            conf={"spark.ui.enabled": "false"},
            env_vars={"PYSPARK_PYTHON": HUDI_CDC_PYTHON},
        )
