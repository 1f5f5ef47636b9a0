"""``hudi-cdc tombstones``: show and expire a table's delete tombstones."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import click

from hudi_cdc.cli._common import split_list
from hudi_cdc.cli._pipeline import TableOption, lazy_session, pipeline_table_options
from hudi_cdc.cli.wrappers import Invocation, command
from hudi_cdc.errors import ConfigError

_OWN = ("target_base_path", "target_table", "record_key_field", "tombstone_path")


@click.command()
@click.option("--target-base-path", help="Base path of the Hudi table (or --pipeline FILE --table schema.table).")
@click.option("--target-table", help="Name of the Hudi table.")
@click.option(
    "--record-key-fields", "--record-key-field", "record_key_field", help="Record key column(s), comma separated."
)
@click.option(
    "--tombstone-path", help="Where delete tombstones live (default: <target-base-path>_hudi_cdc_tombstones)."
)
@click.option("--purge", is_flag=True, help="Delete tombstones older than the retention.")
@click.option(
    "--tombstone-retention-hours",
    type=float,
    help="With --purge: expire tombstones older than this (default: the table's setting, else 168).",
)
@pipeline_table_options(alternative=_OWN)
@command()
def tombstones(
    run: Invocation,
    target_base_path: str | None,
    target_table: str | None,
    record_key_field: str | None,
    tombstone_path: str | None,
    purge: bool,
    tombstone_retention_hours: float | None,
    pipeline_table: TableOption | None,
) -> None:
    """Show (and with --purge, expire) the delete tombstones of a table.

    Name the table with --target-base-path, --target-table and --record-key-fields, or with
    --pipeline FILE --table schema.table.
    """
    from hudi_cdc.config import IngestConfig
    from hudi_cdc.sink.tombstones import TombstoneStore

    session = lazy_session(run)
    if pipeline_table is not None:
        config = pipeline_table.resolve(session).config
    else:
        given = {"--target-base-path": target_base_path, "--target-table": target_table}
        missing = [flag for flag, value in {**given, "--record-key-fields": record_key_field}.items() if not value]
        if missing:
            raise ConfigError(f"name the table: {', '.join(missing)}, or --pipeline FILE --table schema.table")
        assert target_base_path and target_table and record_key_field
        config = IngestConfig(
            source_path="-",
            target_base_path=target_base_path,
            target_table=target_table,
            record_key_fields=split_list(record_key_field),
            tombstone_path=tombstone_path,
        )
    from hudi_cdc.sink.object_store import configure_table

    hours = config.tombstone_retention_hours if tombstone_retention_hours is None else tombstone_retention_hours
    configure_table(session(), config)  # a pipeline's s3a:// table: its buckets' settings (a bare path: Spark's)
    store = TombstoneStore(session(), config.resolved_tombstone_path, key_fields=config.record_key_fields)
    purged = 0
    if purge:
        cutoff = datetime.now(UTC) - timedelta(hours=hours)
        purged = store.purge(cutoff)
    click.echo(json.dumps({"tombstone_path": store.path, "held": store.count(), "purged": purged}))
