"""``hudi-cdc bootstrap``: the first load of a Postgres table, handed over to its Debezium stream."""

from __future__ import annotations

import json
from typing import Any

import click

from hudi_cdc.cli._common import config_options, options_config, password_options
from hudi_cdc.cli._pipeline import TableOption, ingest_option_names, lazy_session, pipeline_table_options
from hudi_cdc.cli.wrappers import Invocation, command
from hudi_cdc.errors import ConfigError


@click.command()
@config_options
@click.option("--source-url", required=True, help="The database: postgresql://user@host:port/dbname (no password).")
@password_options
@click.option(
    "--source-table", help="The table to load, schema.table (default with --pipeline: the table's schema.table)."
)
@click.option("--slot", required=True, help="The replication slot to create; the Debezium connector goes on from it.")
@click.option("--ranges", type=int, help="Key ranges read in parallel (default: a range per million rows, at least "
              "one per core, at most 256).")  # fmt: skip
@click.option("--fetch-size", type=int, default=10_000, show_default=True, help="Rows per JDBC fetch.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as one JSON object.")
@pipeline_table_options(alternative=ingest_option_names)
@command()
def bootstrap(
    run: Invocation,
    props_file: str | None,
    config_file: str | None,
    hoodie_conf: tuple[str, ...],
    source_url: str,
    password_file: str | None,
    password_env: str | None,
    source_table: str | None,
    slot: str,
    ranges: int | None,
    fetch_size: int,
    as_json: bool,
    pipeline_table: TableOption | None,
    **kw: Any,
) -> None:
    """Copy a table in parallel inside a snapshot, then let Debezium go on from a slot made at that snapshot.

    Takes the ingest's own command line (target, --topic, Kafka), or a pipeline's table
    (--pipeline FILE --table schema.table), so the table's later rounds start where the new connector writes.
    Afterwards start the connector with slot.name=SLOT and snapshot.mode=no_data.
    Run again after a failure: it finishes the job, or says the table is loaded.
    """
    from hudi_cdc.ops.bootstrap import bootstrap as run_bootstrap
    from hudi_cdc.upstream.database import SourceDatabase

    session = lazy_session(run)
    if pipeline_table is not None:
        table = pipeline_table.resolve(session)
        config, source_table = table.config, source_table or table.source_table
    else:
        config = options_config(props_file, config_file, hoodie_conf, kw)
    if not source_table:
        raise ConfigError("name the table to load: --source-table schema.table (or --pipeline FILE --table)")
    database = SourceDatabase(source_url, password_file, password_env)
    result = run_bootstrap(
        config, database, source_table, slot=slot, ranges=ranges, fetch_size=fetch_size, spark=session()
    )
    if as_json:
        click.echo(json.dumps(result.to_dict(), sort_keys=True, default=str))
    elif result.already_loaded:
        click.echo(f"{result.table}: already loaded from {result.source_table} (slot {result.slot}); nothing done")
    else:
        settings = ", ".join(f"{k}={v}" for k, v in result.to_dict()["connector_settings"].items())
        click.echo(
            f"{result.table}: {result.rows} rows of {result.source_table} in {result.ranges} range(s), "
            f"commit {result.commit_time}, slot {result.slot} at {result.consistent_point} "
            f"({result.duration_s:.1f}s). Start the connector with {settings}"
        )
