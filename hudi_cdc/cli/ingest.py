"""``hudi-cdc ingest``: one round, or --continuous."""

from __future__ import annotations

import json
import logging
import sys
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import click

from hudi_cdc.cli._common import config_options, fail, jvm_log, options_config, session
from hudi_cdc.errors import HudiCdcError


@click.command()
@config_options
@click.option("--json", "as_json", is_flag=True, help="Print each round's result as one JSON line.")
@click.pass_obj
def ingest(
    obj: dict[str, Any],
    props_file: str | None,
    config_file: str | None,
    hoodie_conf: tuple[str, ...],
    as_json: bool,
    **kw: Any,
) -> None:
    """Ingest new change events into a Hudi table (one round, or --continuous)."""
    from hudi_cdc.console import TerminalProgress
    from hudi_cdc.pipeline import run

    verbose = obj["verbose"] if obj else 0
    log_path: Path | None = None
    try:
        config = options_config(props_file, config_file, hoodie_conf, kw)
        log_path = jvm_log(verbose)  # named in the error line if the JVM fails to start, too
        spark = session(log_path)
        rounds = run(config, spark=spark)
        progress = TerminalProgress.wanted(sys.stderr, as_json=as_json, verbose=verbose)
        while True:
            # A progress line per round: it draws while the round runs, and is erased before its result prints.
            with TerminalProgress(spark, sys.stderr) if progress else nullcontext():
                result = next(rounds, None)
            if result is None:
                break
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
    except HudiCdcError as exc:
        kind = "transient" if exc.transient else "error"
        fail(f"hudi-cdc: {kind}: {exc}", 75 if exc.transient else 1, log_path)  # 75 = EX_TEMPFAIL: may retry
    except Exception as exc:  # one line for the shell; the traceback with -v
        from hudi_cdc._jvm import java_message

        logging.getLogger("hudi_cdc").info("unexpected failure", exc_info=True)
        fail(f"hudi-cdc: unexpected error: {java_message(exc)}", 1, log_path)
    if log_path is not None:
        log_path.unlink(missing_ok=True)  # kept only when the run failed
