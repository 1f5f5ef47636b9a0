"""A whole database, unattended: many tables from one pipeline file, in one process and one Spark application.

``run_pipeline`` runs it (one round of every table, or continuously);
``pause``, ``resume`` and ``remove`` steer a running one from anywhere that
can write to its state folder (a shell, a scheduler, a notebook).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from hudi_cdc.service import control
from hudi_cdc.service.runner import Repairer, Runner, RunReport
from hudi_cdc.service.spec import PipelineSpec, load_pipeline
from hudi_cdc.service.states import TableState

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from hudi_cdc.pipeline import IngestResult

__all__ = [
    "FAIR_SCHEDULING",
    "PipelineSpec",
    "RunReport",
    "Runner",
    "TableState",
    "load_pipeline",
    "pause",
    "remove",
    "resume",
    "run_pipeline",
]

FAIR_SCHEDULING = {"spark.scheduler.mode": "FAIR"}
"""What a session for a pipeline needs: tables' rounds share the executors fairly instead of queueing."""

Pipeline = PipelineSpec | str | os.PathLike[str]


def _spec(pipeline: Pipeline) -> PipelineSpec:
    return pipeline if isinstance(pipeline, PipelineSpec) else load_pipeline(pipeline)


def run_pipeline(
    pipeline: Pipeline,
    *,
    spark: SparkSession | None = None,
    tables: Sequence[str] = (),
    continuous: bool = False,
    max_rounds: int | None = None,
    on_round: Callable[[TableState, IngestResult | None], None] | None = None,
    repairer: Repairer | None = None,
) -> RunReport:
    """Run every table of ``pipeline`` (a file, or a loaded spec): one round each, or ``continuous``.

    A table's failure is in the report (``report.failed``) and never stops the others. ``repairer``: what runs
    a repair request (``hudi_cdc.ops.repair.requested_repair``; ``hudi-cdc run`` passes it).
    """
    from hudi_cdc.spark import spark_session

    spark = spark or spark_session(conf=FAIR_SCHEDULING)
    runner = Runner(
        _spec(pipeline), spark, tables=tables, continuous=continuous, max_rounds=max_rounds, on_round=on_round,
        repairer=repairer,
    )  # fmt: skip
    return runner.run()


def pause(pipeline: Pipeline, table: str, *, spark: SparkSession | None = None) -> str:
    """Start no new round of ``table`` (``schema.table``); the others go on. Written in the pipeline's state folder
    and in the table's own folder, so every runner sharing the pipeline (and one that takes the table over later)
    pauses it; returns the table's base path. ``spark``: for a table on object storage or HDFS (else one is
    started); a local table needs none."""
    spec = _spec(pipeline)
    base_path = _base_path(spec, table)
    control.pause(spec.run.state_dir, table, base_path=base_path, spark=_session_for(base_path, spark))
    return base_path


def resume(pipeline: Pipeline, table: str, *, spark: SparkSession | None = None) -> str:
    """Undo ``pause`` or ``remove`` (in the state folder and the table's own folder: for every runner sharing the
    pipeline), and retry ``table`` if it had failed; it continues from its checkpoint. Returns its base path."""
    spec = _spec(pipeline)
    base_path = _base_path(spec, table)
    control.resume(spec.run.state_dir, table, base_path=base_path, spark=_session_for(base_path, spark))
    return base_path


def remove(pipeline: Pipeline, table: str, *, spark: SparkSession | None = None) -> str:
    """Stop replicating ``table`` in every runner sharing the pipeline; its Hudi table and checkpoint stay
    (``resume`` continues from them). Returns its base path."""
    spec = _spec(pipeline)
    base_path = _base_path(spec, table)
    control.remove(spec.run.state_dir, table, base_path=base_path, spark=_session_for(base_path, spark))
    return base_path


def _base_path(spec: PipelineSpec, table: str) -> str:
    """The table's base path: as the runner of this state folder last listed it (``status.json``: routed tables
    too), else rendered from the pipeline's settings when they name it without the source's server or topic."""
    from hudi_cdc.errors import ConfigError
    from hudi_cdc.service.spec import TableRef

    control.flag_time(spec.run.state_dir, table, control.PAUSED)  # refuses a name that is not one, first
    known = ((control.read_status(spec.run.state_dir) or {}).get("tables") or {}).get(table) or {}
    if known.get("target"):
        return str(known["target"])
    why = "its settings are refused"
    try:
        base_path = spec.table_config(TableRef(table)).target_base_path
        if spec.table_config(TableRef("x-server." + table)).target_base_path == base_path:
            return base_path
        why = "target_base_path names the source's {server} or {topic}, which the table's name does not give"
    except ConfigError as exc:
        why = f"{why}: {exc}"
    raise ConfigError(
        f"{table}: its Hudi table's folder is not known to {spec.origin}: no runner with state folder "
        f"{spec.run.state_dir} has listed the table yet, and {why}. Nothing was written: run the pipeline once "
        "(hudi-cdc run) so that its status lists the table, or check the name (hudi-cdc status lists them)"
    )


def _session_for(base_path: str, spark: SparkSession | None) -> SparkSession | None:
    """A session for a table folder on a Hadoop file system (object storage, HDFS); none for a local one."""
    from urllib.parse import urlsplit

    scheme = urlsplit(base_path).scheme
    if spark is not None or len(scheme) <= 1 or scheme == "file":
        return spark
    from hudi_cdc.spark import spark_session

    return spark_session()
