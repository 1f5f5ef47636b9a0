"""``hudi-cdc verify``: compare a Hudi table with its source. Exit 0 equal, 1 different, 2 could not run.

The source is a database table (``--source-url`` and ``--table``) or, for a
table fed from change files, the folder they replay from (``--source-path``).
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any, NoReturn

import click

from hudi_cdc.cli._common import jvm_log, password_options, session, split_list
from hudi_cdc.errors import ConfigError, HudiCdcError

EQUAL, DIFFERENT, COULD_NOT_RUN = 0, 1, 2


@click.command()
@click.option("--target-base-path", required=True, help="Base path of the Hudi table.")
@click.option(
    "--source-url", help="The source database: postgresql://user@host:port/dbname or mysql://user@host:port/dbname."
)
@password_options
@click.option(
    "--table", "source_table", help="The source table, schema.table (MySQL: database.table), with --source-url."
)
@click.option(
    "--source-path",
    help="Instead of a database: the folder of Debezium Avro files the table is fed from; the table is "
    "compared with what the files its checkpoint covers replay to.",
)
@click.option(
    "--flavor",
    type=click.Choice(["postgres", "mysql", "sqlserver", "oracle"]),
    default="postgres",
    show_default=True,
    help="With --source-path: the connector that wrote the files.",
)
@click.option(
    "--record-key-field",
    help="Key column(s), comma separated (default: the source's primary key, or the Hudi table's record key).",
)
@click.option("--columns", help="Compare only these columns (and the key), comma separated.")
@click.option("--where", help="Compare only rows matching this predicate (SQL both the database and Spark accept).")
@click.option("--max-diffs", type=int, default=20, show_default=True, help="List at most this many differing keys.")
@click.option(
    "--recheck/--no-recheck",
    default=True,
    show_default=True,
    help="When the first pass differs, wait for the ingest to pass the position it saw and compare again.",
)
@click.option("--recheck-timeout", type=float, default=600.0, show_default=True, help="Seconds the recheck waits.")
@click.option("--bootstrap-servers", help="Kafka of the table's topic: the recheck waits for its offsets.")
@click.option(
    "--slot", help="Postgres: the connector's replication slot (default: every logical slot of the database)."
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as one JSON object.")
@click.pass_obj
def verify(
    obj: dict[str, Any] | None,
    target_base_path: str,
    source_url: str | None,
    password_file: str | None,
    password_env: str | None,
    source_table: str | None,
    source_path: str | None,
    flavor: str,
    record_key_field: str | None,
    columns: str | None,
    where: str | None,
    max_diffs: int,
    recheck: bool,
    recheck_timeout: float,
    bootstrap_servers: str | None,
    slot: str | None,
    as_json: bool,
) -> None:
    """Compare a Hudi table with its source: counts, hashes per key bucket, then the differing keys."""
    from hudi_cdc.config import IngestConfig
    from hudi_cdc.ops import verify as ops
    from hudi_cdc.sink.hudi import HudiTable
    from hudi_cdc.upstream.database import SourceDatabase

    verbose = obj["verbose"] if obj else 0
    log_path: Path | None = None
    try:
        if source_path and (source_url or source_table):
            raise ConfigError("give either --source-path, or --source-url with --table, not both")
        if not source_path and not (source_url and source_table):
            raise ConfigError("name the source: --source-url and --table, or --source-path")
        database = None
        if source_url:
            database = SourceDatabase(source_url, password_file=password_file, password_env=password_env)
        log_path = jvm_log(verbose)
        spark = session(log_path)
        compare: dict[str, Any] = {"columns": split_list(columns) or None, "where": where, "max_diffs": max_diffs}
        if source_path:
            keys = split_list(record_key_field) or HudiTable(spark, target_base_path).record_key_fields()
            config = IngestConfig(
                target_base_path=target_base_path,
                target_table=Path(target_base_path.rstrip("/")).name,
                source_path=source_path,
                flavor=flavor,  # type: ignore[arg-type]  # click.Choice
                record_key_fields=keys,
            )
            result = ops.verify_replay(spark, config, **compare)
        else:
            assert database is not None and source_table is not None
            wait = (
                ops.wait_for_ingest(
                    spark,
                    target_base_path,
                    bootstrap_servers=bootstrap_servers,
                    slot=slot,
                    timeout_s=recheck_timeout,
                    database_kind=database.kind,
                )
                if recheck
                else None
            )
            result = ops.verify(
                spark,
                target_base_path,
                database,
                source_table,
                key_fields=split_list(record_key_field),
                recheck=wait,
                **compare,
            )
    except HudiCdcError as exc:
        _could_not_run(f"{exc}", log_path)
    except Exception as exc:  # a Spark or database failure: one line, the traceback with -v
        from hudi_cdc._jvm import java_message

        logging.getLogger("hudi_cdc").info("verify failed", exc_info=True)
        _could_not_run(java_message(exc), log_path)
    click.echo(json.dumps(result.to_dict(), sort_keys=True, default=str) if as_json else result.describe())
    if log_path is not None:
        log_path.unlink(missing_ok=True)
    sys.exit(result.exit_code)


def _could_not_run(message: str, log_path: Path | None) -> NoReturn:
    from hudi_cdc.cli._common import fail

    fail(f"hudi-cdc verify: could not run: {message}", COULD_NOT_RUN, log_path)
