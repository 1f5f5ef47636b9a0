"""``hudi-cdc status``: every table of a pipeline, from the tables and the source; no running process needed."""

from __future__ import annotations

import json

import click

from hudi_cdc.cli._common import split_list
from hudi_cdc.cli.wrappers import CANNOT_ANSWER, Invocation, OnFailure, command


@click.command()
@click.option("--pipeline", "pipeline_file", required=True, type=click.Path(dir_okay=False), help="The pipeline file.")
@click.option("--tables", help="Only these tables (schema.table or topic), comma separated.")
@click.option("--json", "as_json", is_flag=True, help="Print the status as one JSON object.")
@command(OnFailure("hudi-cdc status", terminal=CANNOT_ANSWER, kinds=False))
def status(run: Invocation, pipeline_file: str, tables: str | None, as_json: bool) -> None:
    """State, last commit, checkpoint, lag (messages or files, and seconds) and recent counts of every table."""
    from hudi_cdc.ops.status import pipeline_status
    from hudi_cdc.service import load_pipeline

    spec = load_pipeline(pipeline_file)
    result = pipeline_status(run.session(), spec, tables=split_list(tables))
    click.echo(json.dumps(result.to_dict(), sort_keys=True, default=str) if as_json else result.describe())
