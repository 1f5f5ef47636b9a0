"""``hudi-cdc validate``: the preflight checks, on the same command line as ``ingest`` (or of a pipeline file's tables)."""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

import click

from hudi_cdc.cli._common import config_options, options_config, password_options, split_list
from hudi_cdc.cli._pipeline import TableOption, pipeline_table_options
from hudi_cdc.cli.wrappers import CANNOT_ANSWER, EXIT_FOUND, Invocation, OnFailure, command
from hudi_cdc.errors import ConfigError

if TYPE_CHECKING:
    from hudi_cdc.ops.validate import Check, ValidationReport

# 1: a check failed; 2: the checks could not run at all (bad settings); 75: a transient error stopped them.
EXIT_FAILED, EXIT_CANNOT_RUN = EXIT_FOUND, CANNOT_ANSWER
_CANNOT_RUN = OnFailure("hudi-cdc: cannot validate", terminal=EXIT_CANNOT_RUN, kinds=False)


@click.command()
@config_options
@click.option("--tables", help="With --pipeline: only these tables (schema.table or topic), comma separated.")
@click.option("--source-url", help="The source database: postgresql://user@host:port/dbname (no password here).")
@password_options
@click.option("--source-table", help="schema.table in the database, when the topic is not <prefix>.<schema>.<table>.")
@click.option("--connect-url", help="Kafka Connect's REST API, e.g. http://connect:8083.")
@click.option("--connector", help="The Debezium connector's name (default: the one whose topic.prefix is the topic's).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
@pipeline_table_options(table_optional=True, alternative=("tables",))
@command(_CANNOT_RUN)
def validate(
    run: Invocation,
    props_file: str | None,
    config_file: str | None,
    hoodie_conf: tuple[str, ...],
    tables: str | None,
    source_url: str | None,
    password_file: str | None,
    password_env: str | None,
    source_table: str | None,
    connect_url: str | None,
    connector: str | None,
    as_json: bool,
    pipeline_table: TableOption | None,
    **kw: Any,
) -> int:
    """Check a table's source, services and target before the first ingest (exit 1 if any check fails).

    Takes the ingest's own command line, or --pipeline FILE for every table
    of a pipeline file (with --table: one of them); plus where the database
    and Kafka Connect are. Checks whose input is not given are skipped.
    """
    from hudi_cdc.upstream.database import SourceDatabase

    pipeline_file = pipeline_table.pipeline_file if pipeline_table is not None else None

    if pipeline_file is not None:
        # A repeatable option not given is an empty tuple, not None.
        given = [f"--{k.replace('_', '-')}" for k, v in kw.items() if v is not None and v != ()]
        given += [o for o, v in (("--props", props_file), ("--config", config_file)) if v is not None]
        given += ["--hoodie-conf"] * bool(hoodie_conf) + ["--source-table"] * bool(source_table)
        if given:
            raise ConfigError(
                f"--pipeline takes each table's settings from {pipeline_file}: drop {', '.join(sorted(set(given)))}"
            )
    elif tables:
        raise ConfigError("--tables goes with --pipeline")
    database = SourceDatabase(source_url, password_file, password_env) if source_url else None
    target = pipeline_table.spec if pipeline_table else options_config(props_file, config_file, hoodie_conf, kw)

    started: list[tuple[Any, Check | None]] = []

    def session() -> Any:  # noqa: ANN401 - SparkSession; started only if the table's name needs a listing
        if not started:
            started.append(_spark(run))
        spark, no_spark = started[0]
        if spark is None:
            raise ConfigError(f"finding --table {pipeline_table and pipeline_table.table} needs Spark: {no_spark}")
        return spark

    wanted = split_list(tables)
    if pipeline_table is not None and pipeline_table.table is not None:  # found as run finds it (a typo is refused)
        wanted = (pipeline_table.resolve(session).name,)
    spark, no_spark = started[0] if started else _spark(run)
    services = {"spark": spark, "database": database, "connect_url": connect_url, "connector": connector}
    if pipeline_table is not None:
        ok = _validate_pipeline(target, services, wanted, no_spark, as_json)
    else:
        ok = _validate_table(target, {**services, "source_table": source_table}, no_spark, as_json)
    # A failed check may need what the clients said on the way (librdkafka's retries, Spark's warnings); a Spark
    # that did not start is named in its own check.
    run.keep_log = no_spark is not None or not ok
    if run.log_path is not None and not ok and no_spark is None and run.log_path.exists():
        click.echo(f"hudi-cdc: Spark's and the Kafka clients' log: {run.log_path}", err=True)
    return 0 if ok else EXIT_FAILED


def _spark(run: Invocation) -> tuple[Any, Check | None]:
    """The Spark session (None if it did not start), and the failed check saying why not."""
    from hudi_cdc.ops.validate import Check

    try:
        return run.session(), None
    except Exception as exc:  # Java or the jars missing: the checks that need no JVM still run, and say why
        from hudi_cdc._jvm import java_message

        logging.getLogger("hudi_cdc").info("no Spark session", exc_info=True)
        where = f" (Spark's log: {run.log_path})" if run.log_path is not None and run.log_path.exists() else ""
        no_spark = Check(
            "env.spark",
            "fail",
            f"the Spark session did not start: {java_message(exc)}{where}",
            "see env.java and env.jars; the checks that need Spark are skipped",
        )
        return None, no_spark


def _with(no_spark: Check | None, report: ValidationReport) -> ValidationReport:
    from hudi_cdc.ops.validate import ValidationReport

    return report if no_spark is None else ValidationReport((no_spark, *report.checks))


def _summary(title: str, report: ValidationReport) -> str:
    counts = report.to_dict()["counts"]
    return f"{title}: {counts['fail']} failed, {counts['warn']} warning(s), {counts['ok']} ok, {counts['skip']} skipped"


def _validate_table(config: Any, services: dict[str, Any], no_spark: Check | None, as_json: bool) -> bool:  # noqa: ANN401
    from hudi_cdc.ops.validate import validate as run_checks

    report = _with(no_spark, run_checks(config, **services))
    if as_json:
        click.echo(json.dumps(report.to_dict(), sort_keys=True))
    else:
        for line in report.lines():
            click.echo(line)
        click.echo(_summary(config.target_table, report))
    return report.ok


def _validate_pipeline(
    spec: Any,  # noqa: ANN401 - PipelineSpec
    services: dict[str, Any],
    tables: tuple[str, ...],
    no_spark: Check | None,
    as_json: bool,
) -> bool:
    """Each table's report, as ``validate`` prints one table's, under a line naming it; then the pipeline's."""
    from dataclasses import replace

    from hudi_cdc.ops.validate import ValidationReport
    from hudi_cdc.ops.validate_pipeline import validate_pipeline

    result = validate_pipeline(spec, tables=tables, **services)  # raises when --tables names no table of the source
    result = replace(result, tables=tuple(replace(t, report=_with(no_spark, t.report)) for t in result.tables))
    if as_json:
        click.echo(json.dumps(result.to_dict(), sort_keys=True))
        return result.ok
    pipeline = ValidationReport(result.problems)
    for line in pipeline.lines():
        click.echo(line)
    from hudi_cdc.ops.pipeline_table import source_kind

    source = {"kafka": "topic", "files": "folder", "jdbc": "table"}.get(source_kind(spec), "source")
    for table in result.tables:
        target = f"{table.target_table} at {table.target_base_path}" if table.target_base_path else "no settings"
        click.echo(f"\n== {table.name} ({source} {table.topic} -> {target})")
        for line in table.report.lines():
            click.echo(line)
        click.echo(_summary(table.name, table.report))
    verdict = f"{len(result.failed)} failed ({', '.join(result.failed)})" if result.failed else "none failed"
    verdict += "".join(f"; {c.name} failed" for c in result.problems if c.status == "fail")
    click.echo(f"\n{spec.name}: {len(result.tables)} table(s) checked, {verdict}")
    return result.ok
