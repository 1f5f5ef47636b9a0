"""``hudi-cdc status``: every table of a pipeline, from the tables and the source; no running process needed."""

from __future__ import annotations

import json

import click

from hudi_cdc.cli._common import split_list
from hudi_cdc.cli._pipeline import TableOption, lazy_session, pipeline_table_options
from hudi_cdc.cli.wrappers import CANNOT_ANSWER, Invocation, OnFailure, command


@click.command()
@click.option("--tables", help="Only these tables (schema.table or topic), comma separated.")
@click.option("--json", "as_json", is_flag=True, help="Print the status as one JSON object.")
@pipeline_table_options(pipeline_required=True, table_optional=True, alternative=("tables",))
@command(OnFailure("hudi-cdc status", terminal=CANNOT_ANSWER, kinds=False))
def status(run: Invocation, tables: str | None, as_json: bool, pipeline_table: TableOption) -> None:
    """State, last commit, checkpoint, lag (messages or files, and seconds) and recent counts of every table
    (or, with --table, of one)."""
    from hudi_cdc.ops.status import pipeline_status

    session = lazy_session(run)
    spec = pipeline_table.spec  # read (and refused) before any session starts
    wanted = split_list(tables)
    if pipeline_table.table is not None:
        wanted = (pipeline_table.resolve(session).name,)
    result = pipeline_status(session(), spec, tables=wanted)
    click.echo(json.dumps(result.to_dict(), sort_keys=True, default=str) if as_json else result.describe())
