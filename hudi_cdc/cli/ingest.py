"""``hudi-cdc ingest``: one round, or --continuous."""

from __future__ import annotations

import json
import sys
from contextlib import nullcontext
from typing import Any

import click

from hudi_cdc.cli._common import config_options, options_config
from hudi_cdc.cli.wrappers import Invocation, command


@click.command()
@config_options
@click.option("--json", "as_json", is_flag=True, help="Print each round's result as one JSON line.")
@command()
def ingest(
    run: Invocation,
    props_file: str | None,
    config_file: str | None,
    hoodie_conf: tuple[str, ...],
    as_json: bool,
    **kw: Any,
) -> None:
    """Ingest new change events into a Hudi table (one round, or --continuous).

    Settings come from the built-in defaults, then --config FILE, then HUDI_CDC__* variables, then these
    options; every setting, its flag and its variable: docs/settings.md.
    """
    from hudi_cdc.console import TerminalProgress
    from hudi_cdc.pipeline import run as rounds_of

    config = options_config(props_file, config_file, hoodie_conf, kw)
    spark = run.session()
    rounds = rounds_of(config, spark=spark)
    progress = TerminalProgress.wanted(sys.stderr, as_json=as_json, verbose=run.verbose)
    while True:
        # A progress line per round: it draws while the round runs, and is erased before its result prints.
        with TerminalProgress(spark, sys.stderr) if progress else nullcontext():
            result = next(rounds, None)
        if result is None:
            return None
        if as_json:
            click.echo(json.dumps(result.to_dict(), sort_keys=True, default=str))
        elif result.committed:
            click.echo(
                f"{result.table}: commit {result.commit_time}: {result.events} events -> "
                f"{result.upserts} upserts, {result.deletes} deletes, {result.stale} stale, "
                f"{result.superseded} superseded; {result.tombstones_held} tombstones held"
                + (f"; {result.quarantined} quarantined" if result.quarantined else "")
                + f" ({result.duration_s:.1f}s)"
            )
        else:
            click.echo(f"{result.table}: nothing new")
