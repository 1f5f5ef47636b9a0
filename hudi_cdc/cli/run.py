"""``hudi-cdc run``: every table of a pipeline file, in one process (one round each, or --continuous)."""

from __future__ import annotations

import dataclasses
import json
import signal
from typing import Any

import click

from hudi_cdc.cli._common import split_list
from hudi_cdc.cli.wrappers import CANNOT_ANSWER, Invocation, OnFailure, command, stop_signals


@click.command()
@click.option(
    "--pipeline", "pipeline_file", required=True, type=click.Path(dir_okay=False), help="The pipeline file (TOML)."
)
@click.option("--tables", help="Only these tables (schema.table or topic), comma separated.")
@click.option(
    "--continuous", is_flag=True, help="Keep every table current, in rounds, until stopped (SIGTERM, Ctrl-C)."
)
@click.option("--max-rounds", type=int, help="Continuous mode: stop after this many rounds of each table.")
@click.option(
    "--metrics-port", type=int, help="Continuous mode: serve Prometheus metrics on this port ([run] metrics_port)."
)
@click.option("--json", "as_json", is_flag=True, help="One JSON line per round, and the final report as JSON.")
@command(OnFailure("hudi-cdc run", terminal=CANNOT_ANSWER))
def run(
    run: Invocation,
    pipeline_file: str,
    tables: str | None,
    continuous: bool,
    max_rounds: int | None,
    metrics_port: int | None,
    as_json: bool,
) -> int:
    """Replicate every table of a pipeline file. Exit 1 if any table failed (the others still ran)."""
    from hudi_cdc.service import FAIR_SCHEDULING, Runner, TableState, load_pipeline

    def on_round(table: TableState, result: Any) -> None:  # noqa: ANN401 - IngestResult | None
        if as_json:
            line = {"table": table.name, "state": table.state, "error": table.last_error if result is None else None}
            # "table" is the pipeline's name for it (as in status and control); the Hudi table is "target_table".
            own = {**result.to_dict(), "target_table": result.table} if result else {}
            click.echo(json.dumps({**own, **line}, sort_keys=True, default=str))
        elif result is None:
            click.echo(f"{table.name}: {table.state} ({table.last_error_kind}): {table.last_error}")
        elif result.committed:
            click.echo(
                f"{table.name}: commit {result.commit_time}: {result.events} events -> {result.upserts} upserts, "
                f"{result.deletes} deletes, {result.stale} stale ({result.duration_s:.1f}s)"
            )
        elif run.verbose or not continuous:
            click.echo(f"{table.name}: nothing new")

    spec = load_pipeline(pipeline_file)
    if metrics_port is not None:
        spec = dataclasses.replace(spec, run=dataclasses.replace(spec.run, metrics_port=metrics_port))
    spark = run.session(conf=FAIR_SCHEDULING)
    from hudi_cdc.ops.repair import requested_repair

    runner = Runner(
        spec, spark, tables=split_list(tables), continuous=continuous, max_rounds=max_rounds, on_round=on_round,
        repairer=requested_repair,
    )  # fmt: skip
    with stop_signals(runner.stop, signal.SIGTERM, signal.SIGINT):
        report = runner.run()
    if as_json:
        click.echo(json.dumps({"pipeline": report.pipeline, "failed": report.failed, "dropped": report.dropped,
                               "tables": {n: t.to_dict() for n, t in report.tables.items()}}, sort_keys=True, default=str))  # fmt: skip
    else:
        for name in report.failed:
            click.echo(f"{name}: FAILED: {report.tables[name].last_error}", err=True)
        for name in report.dropped:
            click.echo(f"{name}: DROPPED at the source: {report.tables[name].dropped_at_source}", err=True)
    run.keep_log = bool(report.failed)  # the failed tables' errors may need what Spark logged
    return report.exit_code
