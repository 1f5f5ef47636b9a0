"""``hudi-cdc verify``: compare a Hudi table with its source. Exit 0 equal, 1 different, 2 could not run.

The source is a database table (``--source-url`` and ``--table``) or, for a
table fed from change files, the folder they replay from (``--source-path``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from hudi_cdc.cli._common import password_options, split_list
from hudi_cdc.cli.wrappers import CANNOT_ANSWER, EXIT_FOUND, EXIT_OK, Invocation, OnFailure, command
from hudi_cdc.errors import ConfigError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from hudi_cdc.config import IngestConfig
    from hudi_cdc.ops.verify import VerifyResult
    from hudi_cdc.upstream.database import SourceDatabase

EQUAL, DIFFERENT, COULD_NOT_RUN = EXIT_OK, EXIT_FOUND, CANNOT_ANSWER
# Whatever stops the comparison is "could not run" (2; 75 when a retry may help): 1 must mean only "different".
_COULD_NOT_RUN = OnFailure("hudi-cdc verify: could not run", terminal=COULD_NOT_RUN, kinds=False)


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
@click.option(
    "--repair",
    "apply_repair",
    is_flag=True,
    help="Write each differing key as the source has it at a known position (Postgres: WAL; MariaDB: binlog). "
    "Without it, "
    "--max-repair only says what a repair would write.",
)
@click.option(
    "--max-repair",
    type=int,
    help="Repair at most this many keys (default with --repair: 1000); more differing keys refuses the repair. "
    "Given without --repair: a dry run.",
)
@click.option(
    "--pipeline",
    help="The pipeline file whose table this is. A table written with transforms or masks is compared with "
    "its source shaped by that table's settings; a repair writes with them (default: the settings the Hudi "
    "table records).",
)
@click.option("--pipeline-topic", help="With --pipeline: the table's topic, e.g. dbserver1.inventory.customers.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as one JSON object.")
@command(_COULD_NOT_RUN)
def verify(
    run: Invocation,
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
    apply_repair: bool,
    max_repair: int | None,
    pipeline: str | None,
    pipeline_topic: str | None,
    as_json: bool,
) -> int:
    """Compare a Hudi table with its source: counts, hashes per key bucket, then the differing keys."""
    from hudi_cdc.ops import verify as ops
    from hudi_cdc.upstream.database import SourceDatabase

    if source_path and (source_url or source_table):
        raise ConfigError("give either --source-path, or --source-url with --table, not both")
    if not source_path and not (source_url and source_table):
        raise ConfigError("name the source: --source-url and --table, or --source-path")
    if (apply_repair or max_repair is not None) and (source_path or columns or where):
        raise ConfigError(
            "--repair and --max-repair take a database source and whole rows: no --source-path, --columns or --where"
        )
    if bool(pipeline) != bool(pipeline_topic):
        raise ConfigError(
            "--pipeline and --pipeline-topic go together (the pipeline's name for the table is its topic)"
        )
    database = (
        SourceDatabase(source_url, password_file=password_file, password_env=password_env) if source_url else None
    )
    keys = split_list(record_key_field)
    if (apply_repair or max_repair is not None) and pipeline and pipeline_topic:
        assert database is not None
        request = {
            "source_url": database.url, "password_env": password_env, "password_file": password_file,
            "source_table": source_table, "apply": apply_repair, "max_repair": max_repair, "key_fields": keys,
            "recheck": recheck, "recheck_timeout_s": recheck_timeout, "slot": slot,
        }  # fmt: skip
        handed = _through_runner(pipeline, pipeline_topic, request, as_json)  # no Spark session of its own
        if handed is not None:
            return handed
    spark = run.session()
    compare: dict[str, Any] = {"columns": split_list(columns) or None, "where": where, "max_diffs": max_diffs}
    if apply_repair or max_repair is not None:
        assert database is not None and source_table is not None
        wait = (
            _recheck(spark, target_base_path, database, bootstrap_servers, slot, recheck_timeout) if recheck else None
        )
        config = _repair_config(spark, target_base_path, keys, pipeline, pipeline_topic)
        return _repair(spark, config, database, source_table, keys, wait, apply_repair, max_repair, as_json)
    if source_path:
        result = _against_files(spark, target_base_path, source_path, flavor, keys, compare)
    else:
        assert database is not None and source_table is not None
        shaped = _shaped_config(spark, target_base_path, database, pipeline, pipeline_topic)
        if shaped is not None:
            result = ops.verify_transformed(spark, shaped, database, source_table, **compare)
        else:
            wait = (
                _recheck(spark, target_base_path, database, bootstrap_servers, slot, recheck_timeout)
                if recheck
                else None
            )
            result = ops.verify(
                spark, target_base_path, database, source_table, key_fields=keys, recheck=wait, **compare
            )
    click.echo(json.dumps(result.to_dict(), sort_keys=True, default=str) if as_json else result.describe())
    return result.exit_code


def _against_files(
    spark: SparkSession,
    target_base_path: str,
    source_path: str,
    flavor: str,
    keys: tuple[str, ...],
    compare: dict[str, Any],
) -> VerifyResult:
    """The table against what its change files replay to; the key is the table's own unless given."""
    from hudi_cdc.config import IngestConfig
    from hudi_cdc.ops.verify import verify_replay
    from hudi_cdc.sink.hudi import HudiTable

    config = IngestConfig(
        target_base_path=target_base_path,
        target_table=Path(target_base_path.rstrip("/")).name,
        source_path=source_path,
        flavor=flavor,  # type: ignore[arg-type]  # click.Choice
        record_key_fields=keys or HudiTable(spark, target_base_path).record_key_fields(),
    )
    return verify_replay(spark, config, **compare)


def _repair_config(
    spark: SparkSession, target_base_path: str, keys: tuple[str, ...], pipeline: str | None, topic: str | None
) -> IngestConfig:
    """The settings the repair writes with: the pipeline table's, else what the Hudi table records."""
    from hudi_cdc.ops.repair import pipeline_table_config, table_config

    if not pipeline:
        return table_config(spark, target_base_path, **({"record_key_fields": keys} if keys else {}))
    assert topic is not None
    config = pipeline_table_config(pipeline, topic)
    if config.target_base_path.rstrip("/") != target_base_path.rstrip("/"):
        raise ConfigError(
            f"{pipeline}: {topic} is written to {config.target_base_path}, not --target-base-path {target_base_path}"
        )
    return config


def _shaped_config(
    spark: SparkSession, target_base_path: str, database: SourceDatabase, pipeline: str | None, topic: str | None
) -> IngestConfig | None:
    """A table written with transforms or masks: the settings to shape the source with (``--pipeline``'s
    table's); None: the table is not shaped. A shaped table without them is refused, not misreported."""
    from hudi_cdc.envelope.shape import recorded
    from hudi_cdc.sink.hudi import HudiTable

    config = _repair_config(spark, target_base_path, (), pipeline, topic) if pipeline else None
    shaped = HudiTable(spark, target_base_path).shape() or (recorded(config) if config is not None else None)
    if shaped is None:
        return None
    what = ", ".join(sorted(shaped))
    if config is None or recorded(config) is None:
        raise ConfigError(
            f"{target_base_path} is written with transforms ({what}): verify compares it with the source shaped "
            "the same way, so it needs the table's settings: pass --pipeline FILE and --pipeline-topic TOPIC "
            "(hudi_cdc.ops.verify.verify_transformed takes an ingest's IngestConfig)"
        )
    if database.kind != "postgres":
        raise ConfigError(
            f"{target_base_path} is written with transforms ({what}): verify shapes a Postgres source only, so far"
        )
    return config


def _through_runner(pipeline: str, topic: str, request: dict[str, Any], as_json: bool) -> int | None:
    """The pipeline's runner repairs the table as its next round, the stream going on; None: no runner runs it."""
    from hudi_cdc.ops.repair import repair_through_runner

    outcome = repair_through_runner(pipeline, topic, request)
    if outcome is None:
        return None
    if "error" in outcome:
        raise ConfigError(f"the runner's repair of {topic} failed: {outcome['error']}")
    click.echo(json.dumps(outcome, sort_keys=True, default=str) if as_json else outcome["described"])
    if outcome["verify"]["equal"]:
        return EQUAL
    done = outcome["applied"] and all(k["outcome"] == "repaired" for k in outcome["keys"])
    return EQUAL if done else DIFFERENT


def _repair(
    spark: SparkSession,
    config: IngestConfig,
    database: SourceDatabase,
    source_table: str,
    keys: tuple[str, ...],
    wait: Callable[[Any, str], str] | None,
    apply: bool,
    max_repair: int | None,
    as_json: bool,
) -> int:
    """Verify, then repair (or say what a repair would write). Exit 0 only when every differing key was repaired."""
    from hudi_cdc.ops.repair import repair

    result = repair(
        spark, config, database, source_table, apply=apply, max_repair=max_repair or 1000, key_fields=keys, recheck=wait
    )
    click.echo(json.dumps(result.to_dict(), sort_keys=True, default=str) if as_json else result.describe())
    if result.verify.equal:
        return EQUAL
    done = apply and all(k.outcome == "repaired" for k in result.keys)
    return EQUAL if done else DIFFERENT


def _recheck(
    spark: SparkSession,
    target_base_path: str,
    database: SourceDatabase,
    bootstrap_servers: str | None,
    slot: str | None,
    timeout_s: float,
) -> Callable[[Any, str], str]:
    """The wait before a second pass: until the ingest has passed the source position the first pass saw."""
    from hudi_cdc.ops.verify import wait_for_ingest

    return wait_for_ingest(
        spark,
        target_base_path,
        bootstrap_servers=bootstrap_servers,
        slot=slot,
        timeout_s=timeout_s,
        database_kind=database.kind,
    )
