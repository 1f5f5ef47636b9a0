"""``hudi-cdc status``: every table of a pipeline, from the tables and the source; no running process needed."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import click

from hudi_cdc.cli._common import fail, jvm_log, session, split_list
from hudi_cdc.errors import HudiCdcError


@click.command()
@click.option("--pipeline", "pipeline_file", required=True, type=click.Path(dir_okay=False), help="The pipeline file.")
@click.option("--tables", help="Only these tables (schema.table or topic), comma separated.")
@click.option("--json", "as_json", is_flag=True, help="Print the status as one JSON object.")
@click.pass_obj
def status(obj: dict[str, Any] | None, pipeline_file: str, tables: str | None, as_json: bool) -> None:
    """State, last commit, checkpoint, lag (messages or files, and seconds) and recent counts of every table."""
    from hudi_cdc.ops.status import pipeline_status
    from hudi_cdc.service import load_pipeline

    verbose = obj["verbose"] if obj else 0
    log_path: Path | None = None
    try:
        spec = load_pipeline(pipeline_file)
        log_path = jvm_log(verbose)
        wanted = split_list(tables)
        result = pipeline_status(session(log_path), spec, tables=wanted)
    except HudiCdcError as exc:
        fail(f"hudi-cdc status: {exc}", 2, log_path)
    except Exception as exc:  # one line for the shell; the traceback with -v
        from hudi_cdc._jvm import java_message

        logging.getLogger("hudi_cdc").info("status failed", exc_info=True)
        fail(f"hudi-cdc status: {java_message(exc)}", 2, log_path)
    click.echo(json.dumps(result.to_dict(), sort_keys=True, default=str) if as_json else result.describe())
    if log_path is not None:
        log_path.unlink(missing_ok=True)
