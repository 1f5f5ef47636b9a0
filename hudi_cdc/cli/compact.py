"""``hudi-cdc compact``: run a MERGE_ON_READ table's pending compaction plans, off its rounds' path."""

from __future__ import annotations

import json
from typing import Any

import click

from hudi_cdc.cli._common import config_options, options_config
from hudi_cdc.cli.wrappers import Invocation, command


@click.command()
@config_options
@click.option("--json", "as_json", is_flag=True, help="Print the result as one JSON line.")
@command()
def compact(
    run: Invocation,
    props_file: str | None,
    config_file: str | None,
    hoodie_conf: tuple[str, ...],
    as_json: bool,
    **kw: Any,
) -> None:
    """Run the compaction plans a MERGE_ON_READ table's rounds scheduled (compaction = "async", the default).

    Give it the table's ingest settings (the same flags, --config FILE or HUDI_CDC__* variables). It holds
    the table's writer lease while it runs: refused (or it waits --lease-wait-seconds) while an ingest or a
    runner writes the table. ingest and hudi-cdc run compact their tables themselves (a one-shot one before
    it exits); this runs what a killed one left, or compactions on a schedule of their own.
    """
    from hudi_cdc.pipeline import compact as compact_table

    config = options_config(props_file, config_file, hoodie_conf, kw)
    result = compact_table(config, spark=run.session())
    if as_json:
        click.echo(json.dumps(result.to_dict(), sort_keys=True))
    elif result.compacted:
        click.echo(f"{result.table}: compacted {', '.join(result.compacted)} ({result.duration_s:.1f}s)")
    else:
        click.echo(f"{result.table}: no compaction pending")
