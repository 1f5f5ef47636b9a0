"""``hudi-cdc validate``: the preflight checks, on the same command line as ``ingest``."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any

import click

from hudi_cdc.cli._common import config_options, jvm_log, options_config, password_options, session
from hudi_cdc.errors import HudiCdcError

# 1: a check failed; 2: the checks could not run at all (bad settings).
EXIT_FAILED, EXIT_CANNOT_RUN = 1, 2


@click.command()
@config_options
@click.option("--source-url", help="The source database: postgresql://user@host:port/dbname (no password here).")
@password_options
@click.option("--source-table", help="schema.table in the database, when the topic is not <prefix>.<schema>.<table>.")
@click.option("--connect-url", help="Kafka Connect's REST API, e.g. http://connect:8083.")
@click.option("--connector", help="The Debezium connector's name (default: the one whose topic.prefix is the topic's).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
@click.pass_obj
def validate(
    obj: dict[str, Any] | None,
    props_file: str | None,
    config_file: str | None,
    hoodie_conf: tuple[str, ...],
    source_url: str | None,
    password_file: str | None,
    password_env: str | None,
    source_table: str | None,
    connect_url: str | None,
    connector: str | None,
    as_json: bool,
    **kw: Any,
) -> None:
    """Check a table's source, services and target before the first ingest (exit 1 if any check fails).

    Takes the ingest's own command line, plus where the database and Kafka
    Connect are; checks whose input is not given are skipped.
    """
    from hudi_cdc.ops.database import SourceDatabase
    from hudi_cdc.ops.validate import Check, ValidationReport
    from hudi_cdc.ops.validate import validate as run_checks

    verbose = obj["verbose"] if obj else 0
    log_path: Path | None = None
    try:
        config = options_config(props_file, config_file, hoodie_conf, kw)
        database = SourceDatabase(source_url, password_file, password_env) if source_url else None
    except HudiCdcError as exc:
        click.echo(f"hudi-cdc: cannot validate: {exc}", err=True)
        sys.exit(EXIT_CANNOT_RUN)

    spark, no_spark = None, None
    try:
        log_path = jvm_log(verbose)
        spark = session(log_path)
    except Exception as exc:  # Java or the jars missing: the checks that need no JVM still run, and say why
        from hudi_cdc._jvm import java_message

        logging.getLogger("hudi_cdc").info("no Spark session", exc_info=True)
        where = f" (Spark's log: {log_path})" if log_path is not None and log_path.exists() else ""
        no_spark = Check(
            "env.spark",
            "fail",
            f"the Spark session did not start: {java_message(exc)}{where}",
            "see env.java and env.jars; the checks that need Spark are skipped",
        )
    report = run_checks(
        config, spark=spark, database=database, connect_url=connect_url, connector=connector, source_table=source_table
    )
    if no_spark is not None:
        report = ValidationReport((no_spark, *report.checks))
    if as_json:
        click.echo(json.dumps(report.to_dict(), sort_keys=True))
    else:
        for line in report.lines():
            click.echo(line)
        counts = report.to_dict()["counts"]
        click.echo(
            f"{config.target_table}: {counts['fail']} failed, {counts['warn']} warning(s), "
            f"{counts['ok']} ok, {counts['skip']} skipped"
        )
    if log_path is not None and no_spark is None:
        log_path.unlink(missing_ok=True)
    sys.exit(0 if report.ok else EXIT_FAILED)
