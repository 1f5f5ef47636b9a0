"""``hudi-cdc quarantine list|reapply``: a table's quarantined events, and re-applying them after a fix.

Both take the table's ingest settings (the same ``--config`` or options as ``ingest``).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import click

from hudi_cdc.cli._common import config_options, fail, jvm_log, options_config, session
from hudi_cdc.errors import HudiCdcError


@click.group()
def quarantine() -> None:
    """Events set aside by --on-bad-event quarantine: list them, re-apply them after a fix."""


def _run(obj: dict[str, Any] | None, what: str, action: Any) -> None:  # noqa: ANN401
    verbose = obj["verbose"] if obj else 0
    log_path: Path | None = None
    try:
        log_path = jvm_log(verbose)
        action(session(log_path))
    except HudiCdcError as exc:
        kind = "transient" if exc.transient else "error"
        fail(f"hudi-cdc quarantine {what}: {kind}: {exc}", 75 if exc.transient else 1, log_path)
    except Exception as exc:
        from hudi_cdc._jvm import java_message

        logging.getLogger("hudi_cdc").info("quarantine %s failed", what, exc_info=True)
        fail(f"hudi-cdc quarantine {what}: unexpected error: {java_message(exc)}", 1, log_path)
    if log_path is not None:
        log_path.unlink(missing_ok=True)


@quarantine.command("list")
@config_options
@click.option("--limit", type=int, default=20, show_default=True, help="Show at most this many events.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
@click.pass_obj
def list_(
    obj: dict[str, Any] | None,
    props_file: str | None,
    config_file: str | None,
    hoodie_conf: tuple[str, ...],
    limit: int,
    as_json: bool,
    **kw: Any,
) -> None:
    """Counts by reason, and the oldest quarantined events of a table."""
    from hudi_cdc.ops.quarantine import quarantine_report

    try:
        config = options_config(props_file, config_file, hoodie_conf, kw)
    except HudiCdcError as exc:
        fail(f"hudi-cdc quarantine list: error: {exc}", 1, None)

    def show(spark: Any) -> None:  # noqa: ANN401
        report = quarantine_report(spark, config, limit=limit)
        click.echo(json.dumps(report.to_dict(), sort_keys=True, default=str) if as_json else report.describe())

    _run(obj, "list", show)


@quarantine.command()
@config_options
@click.option("--id", "ids", multiple=True, help="Re-apply only this quarantine_id; repeatable (default: all).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as one JSON object.")
@click.pass_obj
def reapply(
    obj: dict[str, Any] | None,
    props_file: str | None,
    config_file: str | None,
    hoodie_conf: tuple[str, ...],
    ids: tuple[str, ...],
    as_json: bool,
    **kw: Any,
) -> None:
    """Re-apply quarantined events to the table (the checkpoint stays); those still bad stay quarantined.

    Nothing else may write the table meanwhile: pause it in a pipeline first.
    """
    from hudi_cdc.ops.quarantine import reapply as reapply_events

    try:
        config = options_config(props_file, config_file, hoodie_conf, kw)
    except HudiCdcError as exc:
        fail(f"hudi-cdc quarantine reapply: error: {exc}", 1, None)

    def apply(spark: Any) -> None:  # noqa: ANN401
        result = reapply_events(spark, config, ids=ids)
        click.echo(json.dumps(result.to_dict(), sort_keys=True) if as_json else result.describe())

    _run(obj, "reapply", apply)
