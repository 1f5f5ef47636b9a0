"""``hudi-cdc`` command line. Flag names follow HoodieStreamer's where one exists."""

from __future__ import annotations

import json
import logging
import os
import shlex
import sys
from contextlib import nullcontext
from datetime import UTC
from pathlib import Path
from typing import Any, NoReturn

import click

from hudi_cdc.config import load_config
from hudi_cdc.errors import ConfigError, HudiCdcError


def _hoodie_conf(values: tuple[str, ...]) -> dict[str, str]:
    conf = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--hoodie-conf expects key=value, got {item!r}")
        conf[key.strip()] = value.strip()
    return conf


@click.group()
@click.option("-v", "--verbose", count=True, help="More log output, Spark's included (-v info, -vv debug).")
@click.pass_context
def main(ctx: click.Context, verbose: int) -> None:
    """Replicate relational tables into Apache Hudi from Debezium change events."""
    level = logging.WARNING if verbose == 0 else logging.INFO if verbose == 1 else logging.DEBUG
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    for handler in logging.getLogger().handlers:
        handler.setLevel(level)  # a progress line may lower hudi_cdc's logger level; the terminal keeps this one
    if verbose == 0:
        logging.getLogger("librdkafka").setLevel(logging.CRITICAL)  # our own error says what failed
    ctx.obj = {"verbose": verbose}


def _jvm_log(verbose: int) -> Path | None:
    """Where the JVM this run starts writes (None with -v, or when a JVM is already running)."""
    from pyspark.sql import SparkSession

    from hudi_cdc.console import jvm_log_path

    starts_jvm = SparkSession.getActiveSession() is None and "PYSPARK_GATEWAY_PORT" not in os.environ
    return jvm_log_path() if starts_jvm and verbose == 0 else None


def _session(log_path: Path | None):  # noqa: ANN202 - SparkSession
    """The Spark session, its JVM writing to ``log_path`` (or, without one, stdout sent to stderr).

    stdout belongs to the command's output (--json lines). A JVM started here
    (and Spark's launcher before it, which prints Ivy's resolution) inherits the
    log file as its stdout and stderr, or stderr as its stdout; a running one
    gets System.out pointed at System.err, for libraries inside it (Hudi's
    shaded JOL) that print there.
    """
    from hudi_cdc._jvm import jvm
    from hudi_cdc.console import stdout_to_stderr
    from hudi_cdc.spark import spark_session

    if log_path is not None:
        spark = spark_session(jvm_log=log_path)
    else:
        with stdout_to_stderr():
            spark = spark_session()
    system = jvm(spark).java.lang.System
    system.setOut(system.err)
    return spark


def _fail(message: str, code: int, log_path: Path | None) -> NoReturn:
    if log_path is not None and log_path.exists() and log_path.stat().st_size:
        message += f" (Spark's log: {log_path})"
    click.echo(message, err=True)
    sys.exit(code)


@main.command()
@click.option("--source", type=click.Choice(["files", "kafka"]), default=None, help="Where change events come from.")
@click.option("--source-path", help="Files source: folder (local or Hadoop URI) of Debezium Avro files.")
@click.option("--topic", help="Kafka source: the Debezium topic of one table.")
@click.option("--bootstrap-servers", help="Kafka source: host:port[,host:port].")
@click.option("--schema-registry-url", help="Kafka source: a Confluent-compatible schema registry.")
@click.option(
    "--kafka-starting-offsets",
    type=click.Choice(["earliest", "latest"]),
    help="Kafka source: where a table without a checkpoint starts (default earliest).",
)
@click.option(
    "--allow-data-loss",
    is_flag=True,
    default=None,
    help="Kafka source: continue when the checkpoint is older than what Kafka retains.",
)
@click.option("--flavor", type=click.Choice(["postgres", "mysql"], case_sensitive=False), help="Source database.")
@click.option("--target-base-path", help="Base path of the Hudi table.")
@click.option("--target-table", help="Name of the Hudi table.")
@click.option(
    "--table-type",
    type=click.Choice(["COPY_ON_WRITE", "MERGE_ON_READ", "cow", "mor"], case_sensitive=False),
    help="Hudi table type (cow/mor accepted).",
)
@click.option("--record-key-field", help="Record key column(s), comma separated.")
@click.option("--partition-path-field", help="Partition column, if the table is partitioned.")
@click.option("--source-limit", type=int, help="Most bytes of new files (files) or messages (kafka) per round.")
@click.option("--checkpoint", help="Start from this checkpoint ('earliest' or a stored JSON checkpoint).")
@click.option("--continuous", is_flag=True, default=None, help="Keep ingesting in rounds.")
@click.option("--min-sync-interval-seconds", type=float, help="Continuous mode: least seconds between rounds.")
@click.option("--max-rounds", type=int, help="Continuous mode: stop after this many rounds.")
@click.option("--toast-placeholder", help="Debezium's unavailable.value.placeholder.")
@click.option("--tombstone-retention-hours", type=float, help="How long delete tombstones are kept.")
@click.option(
    "--tombstone-path", help="Where delete tombstones live (default: <target-base-path>_hudi_cdc_tombstones)."
)
@click.option(
    "--schema-change-behavior",
    type=click.Choice(["fail", "evolve", "ignore"]),
    help="What an incompatible column type change does (default fail).",
)
@click.option("--hoodie-conf", multiple=True, help="A Hudi setting k=v; repeatable.")
@click.option("--props", "props_file", type=click.Path(dir_okay=False), help="Java properties file of Hudi settings.")
@click.option("--config", "config_file", type=click.Path(dir_okay=False), help="TOML file of hudi-cdc settings.")
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
    kw["record_key_fields"] = kw.pop("record_key_field")
    log_path: Path | None = None
    try:
        config = load_config(
            config_file=config_file,
            props_file=props_file,
            hoodie_conf=_hoodie_conf(hoodie_conf),
            **kw,
        )
        log_path = _jvm_log(verbose)  # named in the error line if the JVM fails to start, too
        spark = _session(log_path)
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
                    f"{result.superseded} superseded; {result.tombstones_held} tombstones held "
                    f"({result.duration_s:.1f}s)"
                )
            else:
                click.echo(f"{result.table}: nothing new")
    except HudiCdcError as exc:
        kind = "transient" if exc.transient else "error"
        _fail(f"hudi-cdc: {kind}: {exc}", 75 if exc.transient else 1, log_path)  # 75 = EX_TEMPFAIL: may retry
    except Exception as exc:  # one line for the shell; the traceback with -v
        from hudi_cdc._jvm import java_message

        logging.getLogger("hudi_cdc").info("unexpected failure", exc_info=True)
        _fail(f"hudi-cdc: unexpected error: {java_message(exc)}", 1, log_path)
    if log_path is not None:
        log_path.unlink(missing_ok=True)  # kept only when the run failed


@main.command()
@click.option("--target-base-path", required=True, help="Base path of the Hudi table.")
@click.option("--target-table", required=True, help="Name of the Hudi table.")
@click.option("--record-key-field", required=True, help="Record key column(s), comma separated.")
@click.option(
    "--tombstone-path", help="Where delete tombstones live (default: <target-base-path>_hudi_cdc_tombstones)."
)
@click.option("--purge", is_flag=True, help="Delete tombstones older than the retention.")
@click.option("--tombstone-retention-hours", type=float, default=168.0, show_default=True)
def tombstones(
    target_base_path: str,
    target_table: str,
    record_key_field: str,
    tombstone_path: str | None,
    purge: bool,
    tombstone_retention_hours: float,
) -> None:
    """Show (and with --purge, expire) the delete tombstones of a table."""
    from datetime import datetime, timedelta

    from hudi_cdc.config import IngestConfig
    from hudi_cdc.sink.tombstones import TombstoneStore
    from hudi_cdc.spark import spark_session

    try:
        config = IngestConfig(
            source_path="-",
            target_base_path=target_base_path,
            target_table=target_table,
            record_key_fields=tuple(k.strip() for k in record_key_field.split(",") if k.strip()),
            tombstone_path=tombstone_path,
            tombstone_retention_hours=tombstone_retention_hours,
        )
        store = TombstoneStore(spark_session(), config.resolved_tombstone_path, key_fields=config.record_key_fields)
        purged = 0
        if purge:
            cutoff = datetime.now(UTC) - timedelta(hours=tombstone_retention_hours)
            purged = store.purge(cutoff)
        click.echo(json.dumps({"tombstone_path": store.path, "held": store.count(), "purged": purged}))
    except HudiCdcError as exc:
        click.echo(f"hudi-cdc: error: {exc}", err=True)
        sys.exit(1)


@main.command()
@click.option("--packages", "show", flag_value="packages", help="Print only the Maven coordinates, comma separated.")
@click.option(
    "--submit-args",
    "show",
    flag_value="submit-args",
    help="Print only the spark-submit arguments that put the jars on the classpath.",
)
@click.option("--launcher", "show", flag_value="launcher", help="Print only the path of the spark-submit script.")
@click.option(
    "--fetch",
    "fetch_dir",
    type=click.Path(file_okay=False),
    help="Resolve the coordinates with Spark's Ivy and copy the jars into this folder (for air-gapped clusters).",
)
@click.option("--json", "as_json", is_flag=True, help="Print everything as one JSON object.")
def jars(show: str | None, fetch_dir: str | None, as_json: bool) -> None:
    """Where hudi-cdc's Spark jars come from, and the spark-submit line that uses them."""
    from hudi_cdc import jars as jarmod
    from hudi_cdc.launcher import SCRIPT

    try:
        if fetch_dir:
            fetched = jarmod.fetch_jars(fetch_dir)
            click.echo(f"{len(fetched)} jars in {fetch_dir}; use them with {jarmod.JARS_DIR_ENV}={fetch_dir}", err=True)
        source = jarmod.resolve_jars()
    except HudiCdcError as exc:
        click.echo(f"hudi-cdc: error: {exc}", err=True)
        sys.exit(75 if exc.transient else 1)
    submit = " ".join(shlex.quote(a) for a in source.submit_args())
    if show == "packages":
        click.echo(",".join(jarmod.PACKAGES))
    elif show == "submit-args":
        click.echo(submit)
    elif show == "launcher":
        click.echo(str(SCRIPT))
    elif as_json:
        info = {
            "source": source.kind,
            "folder": source.folder,
            "jars": list(source.jars),
            "packages": list(jarmod.PACKAGES),
            "submit_args": source.submit_args(),
            "launcher": str(SCRIPT),
        }
        click.echo(json.dumps(info, sort_keys=True))
    else:
        where = f"the jars in {source.folder}" if source.kind == "folder" else "Maven coordinates Spark resolves"
        click.echo(f"A session hudi-cdc builds uses {where}.")
        click.echo("Maven coordinates:")
        for coordinate in jarmod.PACKAGES:
            click.echo(f"  {coordinate}")
        click.echo("spark-submit:")
        click.echo(f'  PYSPARK_PYTHON="$(command -v python)" spark-submit {submit} \\')
        click.echo(f"    {shlex.quote(str(SCRIPT))} ingest ...")


if __name__ == "__main__":  # pragma: no cover - `python -m hudi_cdc.cli`
    main()
