"""``hudi-cdc tombstones``: show and expire a table's delete tombstones."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import click

from hudi_cdc.cli._common import split_list
from hudi_cdc.cli.wrappers import Invocation, command


@click.command()
@click.option("--target-base-path", required=True, help="Base path of the Hudi table.")
@click.option("--target-table", required=True, help="Name of the Hudi table.")
@click.option("--record-key-field", required=True, help="Record key column(s), comma separated.")
@click.option(
    "--tombstone-path", help="Where delete tombstones live (default: <target-base-path>_hudi_cdc_tombstones)."
)
@click.option("--purge", is_flag=True, help="Delete tombstones older than the retention.")
@click.option("--tombstone-retention-hours", type=float, default=168.0, show_default=True)
@command()
def tombstones(
    run: Invocation,
    target_base_path: str,
    target_table: str,
    record_key_field: str,
    tombstone_path: str | None,
    purge: bool,
    tombstone_retention_hours: float,
) -> None:
    """Show (and with --purge, expire) the delete tombstones of a table."""
    from hudi_cdc.config import IngestConfig
    from hudi_cdc.sink.tombstones import TombstoneStore

    config = IngestConfig(
        source_path="-",
        target_base_path=target_base_path,
        target_table=target_table,
        record_key_fields=split_list(record_key_field),
        tombstone_path=tombstone_path,
        tombstone_retention_hours=tombstone_retention_hours,
    )
    store = TombstoneStore(run.session(), config.resolved_tombstone_path, key_fields=config.record_key_fields)
    purged = 0
    if purge:
        cutoff = datetime.now(UTC) - timedelta(hours=tombstone_retention_hours)
        purged = store.purge(cutoff)
    click.echo(json.dumps({"tombstone_path": store.path, "held": store.count(), "purged": purged}))
