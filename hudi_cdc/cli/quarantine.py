"""``hudi-cdc quarantine list|reapply``: a table's quarantined events, and re-applying them after a fix.

Both take the table's ingest settings (the same ``--config`` or options as ``ingest``), or a pipeline's
table (``--pipeline FILE --table schema.table``).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

from hudi_cdc.cli._common import config_options, options_config
from hudi_cdc.cli._pipeline import TableOption, ingest_option_names, lazy_session, pipeline_table_options
from hudi_cdc.cli.wrappers import Invocation, OnFailure, command

if TYPE_CHECKING:
    from hudi_cdc.config import IngestConfig


@click.group()
def quarantine() -> None:
    """Events set aside by --on-bad-event quarantine: list them, re-apply them after a fix."""


@quarantine.command("list")
@config_options
@click.option("--limit", type=int, default=20, show_default=True, help="Show at most this many events.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
@pipeline_table_options(alternative=ingest_option_names)
@command(OnFailure("hudi-cdc quarantine list"))
def list_(
    run: Invocation,
    props_file: str | None,
    config_file: str | None,
    hoodie_conf: tuple[str, ...],
    limit: int,
    as_json: bool,
    pipeline_table: TableOption | None,
    **kw: Any,
) -> None:
    """Counts by reason, and the oldest quarantined events of a table (its ingest's options, or --pipeline/--table)."""
    from hudi_cdc.ops.quarantine import quarantine_report

    session = lazy_session(run)
    config = _table_config(session, pipeline_table, props_file, config_file, hoodie_conf, kw)
    report = quarantine_report(session(), config, limit=limit)
    click.echo(json.dumps(report.to_dict(), sort_keys=True, default=str) if as_json else report.describe())


@quarantine.command()
@config_options
@click.option("--id", "ids", multiple=True, help="Re-apply only this quarantine_id; repeatable (default: all).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as one JSON object.")
@pipeline_table_options(alternative=ingest_option_names)
@command(OnFailure("hudi-cdc quarantine reapply"))
def reapply(
    run: Invocation,
    props_file: str | None,
    config_file: str | None,
    hoodie_conf: tuple[str, ...],
    ids: tuple[str, ...],
    as_json: bool,
    pipeline_table: TableOption | None,
    **kw: Any,
) -> None:
    """Re-apply quarantined events to the table (the checkpoint stays); those still bad stay quarantined.

    Nothing else may write the table meanwhile: pause it in a pipeline first.
    """
    from hudi_cdc.ops.quarantine import reapply as reapply_events

    session = lazy_session(run)
    config = _table_config(session, pipeline_table, props_file, config_file, hoodie_conf, kw)
    result = reapply_events(session(), config, ids=ids)
    click.echo(json.dumps(result.to_dict(), sort_keys=True) if as_json else result.describe())


def _table_config(
    session: Any,  # noqa: ANN401 - the command's lazy session
    pipeline_table: TableOption | None,
    props_file: str | None,
    config_file: str | None,
    hoodie_conf: tuple[str, ...],
    options: dict[str, Any],
) -> IngestConfig:
    """The table's settings: its pipeline's (--pipeline/--table), else its ingest's options."""
    if pipeline_table is not None:
        return pipeline_table.resolve(session).config
    return options_config(props_file, config_file, hoodie_conf, options)
