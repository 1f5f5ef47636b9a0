"""``hudi-cdc verify``: compare a Hudi table with its source table. Exit 0 equal, 1 different, 2 could not run."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any, NoReturn

import click

from hudi_cdc.cli._common import jvm_log, password_options, session
from hudi_cdc.errors import HudiCdcError

EQUAL, DIFFERENT, COULD_NOT_RUN = 0, 1, 2


def _split(value: str | None) -> tuple[str, ...]:
    return tuple(v.strip() for v in (value or "").split(",") if v.strip())


@click.command()
@click.option("--target-base-path", required=True, help="Base path of the Hudi table.")
@click.option("--source-url", required=True, help="The source database: postgresql://user@host:port/dbname.")
@password_options
@click.option("--table", "source_table", required=True, help="The source table, schema.table.")
@click.option("--record-key-field", help="Key column(s), comma separated (default: the source's primary key).")
@click.option("--columns", help="Compare only these columns (and the key), comma separated.")
@click.option("--where", help="Compare only rows matching this predicate (SQL both Postgres and Spark accept).")
@click.option("--max-diffs", type=int, default=20, show_default=True, help="List at most this many differing keys.")
@click.option(
    "--recheck/--no-recheck",
    default=True,
    show_default=True,
    help="When the first pass differs, wait for the ingest to pass the position it saw and compare again.",
)
@click.option("--recheck-timeout", type=float, default=600.0, show_default=True, help="Seconds the recheck waits.")
@click.option("--bootstrap-servers", help="Kafka of the table's topic: the recheck waits for its offsets.")
@click.option("--slot", help="The connector's replication slot (default: every logical slot of the database).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as one JSON object.")
@click.pass_obj
def verify(
    obj: dict[str, Any] | None,
    target_base_path: str,
    source_url: str,
    password_file: str | None,
    password_env: str | None,
    source_table: str,
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
    """Compare a Hudi table with its source table: counts, hashes per key bucket, then the differing keys."""
    from hudi_cdc.ops import verify as ops
    from hudi_cdc.ops.database import SourceDatabase

    verbose = obj["verbose"] if obj else 0
    log_path: Path | None = None
    try:
        database = SourceDatabase(source_url, password_file=password_file, password_env=password_env)
        log_path = jvm_log(verbose)
        spark = session(log_path)
        wait = (
            ops.wait_for_ingest(
                spark, target_base_path, bootstrap_servers=bootstrap_servers, slot=slot, timeout_s=recheck_timeout
            )
            if recheck
            else None
        )
        result = ops.verify(
            spark,
            target_base_path,
            database,
            source_table,
            key_fields=_split(record_key_field),
            columns=_split(columns) or None,
            where=where,
            max_diffs=max_diffs,
            recheck=wait,
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
