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


def pause(pipeline: Pipeline, table: str) -> None:
    """Start no new round of ``table`` (``schema.table``); the others go on."""
    control.pause(_spec(pipeline).run.state_dir, table)


def resume(pipeline: Pipeline, table: str) -> None:
    """Undo ``pause`` or ``remove``, and retry ``table`` if it had failed; it continues from its checkpoint."""
    control.resume(_spec(pipeline).run.state_dir, table)


def remove(pipeline: Pipeline, table: str) -> None:
    """Stop replicating ``table``; its Hudi table and checkpoint stay (``resume`` continues from them)."""
    control.remove(_spec(pipeline).run.state_dir, table)
