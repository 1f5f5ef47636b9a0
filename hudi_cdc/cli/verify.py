"""``hudi-cdc verify``: compare a Hudi table with its source. Exit 0 equal, 1 different, 2 could not run.

The source is a database table (``--source-url`` and ``--table``) or, for a
table fed from change files, the folder they replay from (``--source-path``).
A pipeline's table is named with ``--pipeline FILE --table schema.table``: its
target, settings and source come from the file (a files source's table is
compared with its folder's replay; with ``--source-url``, with that database's
``schema.table`` unless ``--source-table`` names another).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from hudi_cdc.cli._common import password_options, split_list
from hudi_cdc.cli._pipeline import TableOption, lazy_session, pipeline_table_options
from hudi_cdc.cli.wrappers import CANNOT_ANSWER, EXIT_FOUND, EXIT_OK, Invocation, OnFailure, command
from hudi_cdc.errors import ConfigError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from hudi_cdc.config import IngestConfig
    from hudi_cdc.ops.pipeline_table import PipelineTable
    from hudi_cdc.ops.verify import VerifyResult
    from hudi_cdc.upstream.database import SourceDatabase

EQUAL, DIFFERENT, COULD_NOT_RUN = EXIT_OK, EXIT_FOUND, CANNOT_ANSWER
# Whatever stops the comparison is "could not run" (2; 75 when a retry may help): 1 must mean only "different".
_COULD_NOT_RUN = OnFailure("hudi-cdc verify: could not run", terminal=COULD_NOT_RUN, kinds=False)


@click.command()
@click.option("--target-base-path", help="Base path of the Hudi table (or --pipeline FILE --table schema.table).")
@click.option(
    "--source-url", help="The source database: postgresql://user@host:port/dbname or mysql://user@host:port/dbname."
)
@password_options
@click.option(
    "--source-table",
    "source_table_option",
    help="With --source-url: the source table, schema.table (MySQL: database.table); default with --pipeline: the "
    "table's own schema.table. Without --pipeline, --table names it too.",
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
    "--record-key-fields",
    "--record-key-field",
    "record_key_field",
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
@click.option("--json", "as_json", is_flag=True, help="Print the result as one JSON object.")
@pipeline_table_options(
    alternative=("target_base_path",),
    table_alone="source_table",
    deprecated_table_flag="--pipeline-topic",
    table_help="Without --pipeline: the source table, schema.table (MySQL: database.table), with --source-url. "
    "With --pipeline FILE: the pipeline's table (schema.table or its topic), its target and settings taken from "
    "the file: a table written with transforms or masks is compared with its source shaped the same way, and a "
    "repair writes with its settings (without --pipeline: the settings the Hudi table records). A files "
    "source renders the folder and checks it exists; Kafka lists the topics once; JDBC and [[routes]] list the "
    "source's tables; a name that matches nothing is refused with the closest names.",
)
@command(_COULD_NOT_RUN)
def verify(
    run: Invocation,
    target_base_path: str | None,
    source_url: str | None,
    password_file: str | None,
    password_env: str | None,
    source_table_option: str | None,
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
    as_json: bool,
    source_table: str | None,
    pipeline_table: TableOption | None,
) -> int:
    """Compare a Hudi table with its source: counts, hashes per key bucket, then the differing keys.

    Name the table with --target-base-path, or with --pipeline FILE --table schema.table.
    """
    from hudi_cdc.ops import verify as ops
    from hudi_cdc.upstream.database import SourceDatabase

    session = lazy_session(run)
    source_table = source_table_option or source_table
    table = pipeline_table.resolve(session) if pipeline_table is not None else None
    if table is not None:
        target_base_path, source_table, source_path = _from_pipeline(
            table, target_base_path, source_url, source_table, source_path
        )
    _check_named(table, target_base_path, source_url, source_table, source_path)
    if (apply_repair or max_repair is not None) and (source_path or columns or where):
        raise ConfigError(
            "--repair and --max-repair take a database source and whole rows: no --source-path, --columns or --where"
        )
    assert target_base_path is not None
    database = (
        SourceDatabase(source_url, password_file=password_file, password_env=password_env) if source_url else None
    )
    keys = split_list(record_key_field)
    if (apply_repair or max_repair is not None) and table is not None and pipeline_table is not None:
        assert database is not None
        request = {
            "source_url": database.url, "password_env": password_env, "password_file": password_file,
            "source_table": source_table, "apply": apply_repair, "max_repair": max_repair, "key_fields": keys,
            "recheck": recheck, "recheck_timeout_s": recheck_timeout, "slot": slot,
        }  # fmt: skip
        if (handed := _through_runner(pipeline_table.pipeline_file, table.ref.topic, request, as_json)) is not None:
            return handed  # the pipeline's runner repaired it: no Spark of its own
    spark = session()
    compare: dict[str, Any] = {"columns": split_list(columns) or None, "where": where, "max_diffs": max_diffs}
    config = _configured(spark, table)

    def rechecked() -> Callable[[Any, str], str] | None:  # a second pass waits for the ingest to pass the first
        assert database is not None and target_base_path is not None
        return (
            _recheck(spark, target_base_path, database, bootstrap_servers, slot, recheck_timeout) if recheck else None
        )

    if apply_repair or max_repair is not None:
        assert database is not None and source_table is not None
        config = config or _repair_config(spark, target_base_path, keys)
        return _repair(spark, config, database, source_table, keys, rechecked(), apply_repair, max_repair, as_json)
    if source_path and config is not None and config.source == "files" and source_path == config.source_path:
        result = ops.verify_replay(spark, config, **compare)
    elif source_path:
        result = _against_files(spark, target_base_path, source_path, flavor, keys, compare)
    else:
        assert database is not None and source_table is not None
        result = _against_database(spark, target_base_path, config, database, source_table, keys, compare, rechecked)
    click.echo(json.dumps(result.to_dict(), sort_keys=True, default=str) if as_json else result.describe())
    return result.exit_code


def _configured(spark: SparkSession, table: PipelineTable | None) -> IngestConfig | None:
    """A pipeline table's settings, its s3a:// buckets' applied to Spark (a bare path: Spark's fs.s3a.*)."""
    if table is None:
        return None
    from hudi_cdc.sink.object_store import configure_table

    configure_table(spark, table.config)
    return table.config


def _against_database(
    spark: SparkSession,
    target_base_path: str,
    config: IngestConfig | None,
    database: SourceDatabase,
    source_table: str,
    keys: tuple[str, ...],
    compare: dict[str, Any],
    rechecked: Callable[[], Callable[[Any, str], str] | None],
) -> VerifyResult:
    """The table against its source table: through the table's shaping when it has any (no recheck then),
    else key by key, rechecking the differing keys once the stream has passed the read (``rechecked``: the wait
    for that, or None)."""
    from hudi_cdc.ops import verify as ops

    shaped = _shaped_config(spark, target_base_path, database, config)
    if shaped is not None:
        return ops.verify_transformed(spark, shaped, database, source_table, **compare)
    return ops.verify(spark, target_base_path, database, source_table, key_fields=keys, recheck=rechecked(), **compare)


def _from_pipeline(
    table: PipelineTable,
    target_base_path: str | None,
    source_url: str | None,
    source_table: str | None,
    source_path: str | None,
) -> tuple[str, str | None, str | None]:
    """The table's path, source table and source folder as the pipeline file gives them, unless given."""
    wanted = table.config.target_base_path
    if target_base_path and target_base_path.rstrip("/") != wanted.rstrip("/"):  # the deprecated form gave both
        raise ConfigError(
            f"{table.spec.origin}: {table.name} is written to {wanted}, not --target-base-path {target_base_path}"
        )
    if source_url and not source_table:
        source_table = table.source_table
    elif not source_url and not source_path and table.config.source == "files":
        source_path = table.config.source_path  # its folder's replay, with the table's own settings
    return wanted, source_table, source_path


def _check_named(
    table: PipelineTable | None,
    target_base_path: str | None,
    source_url: str | None,
    source_table: str | None,
    source_path: str | None,
) -> None:
    """A table and exactly one source named, or what to give."""
    if not target_base_path:
        raise ConfigError("name the table: --target-base-path, or --pipeline FILE --table schema.table")
    if source_path and (source_url or source_table):
        raise ConfigError("give either --source-path, or --source-url with --table, not both")
    if source_path or (source_url and source_table):
        return
    if table is not None:
        raise ConfigError(
            f"name the source database of {table.name} (read from {table.config.source}): --source-url URL "
            f"(its table {table.source_table} there, or --source-table), or --source-path"
        )
    raise ConfigError("name the source: --source-url and --table, or --source-path")


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


def _repair_config(spark: SparkSession, target_base_path: str, keys: tuple[str, ...]) -> IngestConfig:
    """The settings a repair without ``--pipeline`` writes with: what the Hudi table records."""
    from hudi_cdc.ops.repair import table_config

    return table_config(spark, target_base_path, **({"record_key_fields": keys} if keys else {}))


def _shaped_config(
    spark: SparkSession, target_base_path: str, database: SourceDatabase, config: IngestConfig | None
) -> IngestConfig | None:
    """A table written with transforms or masks: the settings to shape the source with (``--pipeline``'s
    table's); None: the table is not shaped. A shaped table without them is refused, not misreported."""
    from hudi_cdc.envelope.shape import recorded
    from hudi_cdc.sink.hudi import HudiTable

    shaped = HudiTable(spark, target_base_path).shape() or (recorded(config) if config is not None else None)
    if shaped is None:
        return None
    what = ", ".join(sorted(shaped))
    if config is None or recorded(config) is None:
        raise ConfigError(
            f"{target_base_path} is written with transforms ({what}): verify compares it with the source shaped "
            "the same way, so it needs the table's settings: pass --pipeline FILE and --table schema.table "
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
