"""``hudi-cdc verify``: compare a Hudi table with its source. Exit 0 equal, 1 different, 2 could not run.

The source is a database table (``--source-url`` and ``--table``) or, for a
table fed from change files, the folder they replay from (``--source-path``).
A pipeline's table is named with ``--pipeline FILE --table schema.table``: its
target, settings and source come from the file (a files source's table is
compared with its folder's replay; with ``--source-url``, with that database's
``schema.table`` unless ``--source-table`` names another). ``--pipeline FILE``
alone compares every table of the file that way, in one process and one Spark
session, and exits with the worst table's code.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from hudi_cdc.cli._common import password_options, split_list
from hudi_cdc.cli._pipeline import TableOption, lazy_session, pipeline_table_options
from hudi_cdc.cli.wrappers import CANNOT_ANSWER, EXIT_FOUND, EXIT_OK, Invocation, OnFailure, command, worst
from hudi_cdc.errors import ConfigError, HudiCdcError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from hudi_cdc.config import IngestConfig
    from hudi_cdc.ops.pipeline_table import PipelineTable
    from hudi_cdc.ops.verify import VerifyResult
    from hudi_cdc.upstream.database import SourceDatabase

EQUAL, DIFFERENT, COULD_NOT_RUN = EXIT_OK, EXIT_FOUND, CANNOT_ANSWER
# Whatever stops the comparison is "could not run" (2; 75 when a retry may help): 1 must mean only "different".
_COULD_NOT_RUN = OnFailure("hudi-cdc verify: could not run", terminal=COULD_NOT_RUN, kinds=False)
_TABLE_FAILED = OnFailure("could not verify", terminal=COULD_NOT_RUN)  # one table of --pipeline's, the others go on


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
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the result as one JSON object (--pipeline alone: one line per table, with its name, then a "
    "summary line).",
)
@pipeline_table_options(
    alternative=("target_base_path",),
    table_optional=True,  # --pipeline alone: every table
    table_alone="source_table",
    deprecated_table_flag="--pipeline-topic",
    table_help="Without --pipeline: the source table, schema.table (MySQL: database.table), with --source-url. "
    "With --pipeline FILE: the pipeline's table (schema.table or its topic), its target and settings taken from "
    "the file: a table written with transforms or masks is compared with its source shaped the same way, and a "
    "repair writes with its settings (without --pipeline: the settings the Hudi table records). A files "
    "source renders the folder and checks it exists; Kafka lists the topics once; JDBC and [[routes]] list the "
    "source's tables; a name that matches nothing is refused with the closest names. Without --table, "
    "--pipeline FILE verifies every table of the file as `hudi-cdc run` finds them, one after the other in one "
    "process; the options that name one table's source or rows (--source-table, --source-path, "
    "--record-key-fields, --columns, --where, --repair, --max-repair) then need --table.",
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

    Name the table with --target-base-path, or with --pipeline FILE --table schema.table; --pipeline FILE
    alone compares every table of the file, one after the other in one process: a block (--json: a line)
    per table, then a summary line; the exit code is the worst table's (2 over 75 over 1 over 0).
    """
    from hudi_cdc.upstream.database import SourceDatabase

    session = lazy_session(run)
    database = SourceDatabase(source_url, password_file, password_env) if source_url else None  # a bad URL: now
    asked = _Asked(
        target_base_path, database, source_table_option or source_table, source_path, flavor,
        split_list(record_key_field), recheck, recheck_timeout, bootstrap_servers, slot,
        {"columns": split_list(columns) or None, "where": where, "max_diffs": max_diffs},
    )  # fmt: skip
    if pipeline_table is not None and pipeline_table.table is None:
        if target_base_path:
            raise click.UsageError(
                "--pipeline and --target-base-path both name the table: give one (--pipeline FILE alone compares "
                "every table of the file, with --table one of them, each at the path the file gives it)"
            )
        one_table = {"--source-table": source_table_option, "--source-path": source_path,
                     "--record-key-fields": record_key_field, "--columns": columns, "--where": where,
                     "--repair": apply_repair, "--max-repair": max_repair}  # fmt: skip
        if given := [flag for flag, value in one_table.items() if value not in (None, False)]:
            raise click.UsageError(
                f"{', '.join(given)} {'takes' if len(given) == 1 else 'take'} one table: add --table schema.table "
                f"(--pipeline {pipeline_table.pipeline_file} alone compares every table of the file, each with "
                "its own settings and source)"
            )
        return _every_table(run, session, pipeline_table, asked, as_json)
    table = pipeline_table.resolve(session) if pipeline_table is not None else None
    asked = _named(table, asked)
    if (apply_repair or max_repair is not None) and (asked.source_path or columns or where):
        raise ConfigError(
            "--repair and --max-repair take a database source and whole rows: no --source-path, --columns or --where"
        )
    if apply_repair or max_repair is not None:
        assert database is not None and asked.source_table is not None and asked.target_base_path
        if table is not None and pipeline_table is not None:
            request = {
                "source_url": database.url, "password_env": password_env, "password_file": password_file,
                "source_table": asked.source_table, "apply": apply_repair, "max_repair": max_repair,
                "key_fields": asked.keys, "recheck": recheck, "recheck_timeout_s": recheck_timeout, "slot": slot,
            }  # fmt: skip
            if (handed := _through_runner(pipeline_table.pipeline_file, table.ref.topic, request, as_json)) is not None:
                return handed  # the pipeline's runner repaired it: no Spark of its own
        spark = session()
        config = _configured(spark, table) or _repair_config(spark, asked.target_base_path, asked.keys)
        wait = _recheck(spark, asked, database)
        return _repair(spark, config, database, asked.source_table, asked.keys, wait, apply_repair, max_repair, as_json)
    result = _compare(session(), table, asked)
    click.echo(json.dumps(result.to_dict(), sort_keys=True, default=str) if as_json else result.describe())
    return result.exit_code


@dataclass(frozen=True)
class _Asked:
    """What the command line asks of a table's comparison; a pipeline's table fills in its own (``_named``)."""

    target_base_path: str | None
    database: SourceDatabase | None
    """--source-url's (with its password's options)."""
    source_table: str | None
    source_path: str | None
    flavor: str
    keys: tuple[str, ...]
    recheck: bool
    recheck_timeout: float
    bootstrap_servers: str | None
    slot: str | None
    compare: dict[str, Any]
    """verify's own options: columns, where, max_diffs."""

    @property
    def source_url(self) -> str | None:
        return self.database.url if self.database is not None else None


def _named(table: PipelineTable | None, asked: _Asked) -> _Asked:
    """The table and its source: a pipeline's table gives its path, and its source table or its own folder
    unless given; checked that a table and exactly one source are named."""
    if table is not None:
        wanted, given = table.config.target_base_path, asked.target_base_path
        if given and given.rstrip("/") != wanted.rstrip("/"):  # the deprecated form gave both
            raise ConfigError(
                f"{table.spec.origin}: {table.name} is written to {wanted}, not --target-base-path {given}"
            )
        asked = replace(asked, target_base_path=wanted)
        if asked.source_url and not asked.source_table:
            asked = replace(asked, source_table=table.source_table)
        elif not asked.source_url and not asked.source_path and table.config.source == "files":
            asked = replace(asked, source_path=table.config.source_path)  # its folder's replay, its own settings
    _check_named(table, asked)
    return asked


def _compare(spark: SparkSession, table: PipelineTable | None, asked: _Asked) -> VerifyResult:
    """One table against its source: the replay of its own folder (a pipeline's files table), another folder of
    change files, or its database table."""
    from hudi_cdc.ops import verify as ops

    path, source_path = asked.target_base_path, asked.source_path
    assert path is not None
    config = _configured(spark, table)
    if source_path and config is not None and config.source == "files" and source_path == config.source_path:
        return ops.verify_replay(spark, config, **asked.compare)
    if source_path:
        return _against_files(spark, path, source_path, asked.flavor, asked.keys, asked.compare)
    database = asked.database
    assert database is not None and asked.source_table is not None
    recheck = _recheck(spark, asked, database)
    return _against_database(spark, path, config, database, asked.source_table, asked.keys, asked.compare, recheck)


def _every_table(
    run: Invocation, session: Callable[[], SparkSession], option: TableOption, asked: _Asked, as_json: bool
) -> int:
    """Each table of the pipeline compared as ``--table`` compares it, in one Spark session; a table that cannot be
    compared is reported with its error and the others still run. The worst table's exit code."""
    from hudi_cdc.ops.pipeline_table import source_kind

    spec = option.spec  # read (and refused) before any session starts
    if not asked.source_url and source_kind(spec) != "files":
        raise ConfigError(
            f"name the source database of {spec.origin}'s tables (read from {source_kind(spec)}): --source-url URL "
            "(each table is compared with its own schema.table there)"
        )
    refs = option.every(session)
    if not refs:
        raise ConfigError(f"{spec.origin}: no table of the source matches [source] tables = {list(spec.source.tables)}")
    codes: dict[str, int] = {}
    for number, ref in enumerate(refs):
        try:
            table = option.settings(ref)
            result = _compare(session(), table, _named(table, asked))
        except Exception as exc:  # this table's answer; the others still get theirs
            if not isinstance(exc, HudiCdcError):
                logging.getLogger("hudi_cdc").info("verify %s: unexpected failure", ref.name, exc_info=True)
            line, codes[ref.name] = _TABLE_FAILED.line(exc)
            shown: dict[str, Any] = {"name": ref.name, "error": line, "exit_code": codes[ref.name]}
            text = line
        else:
            codes[ref.name] = result.exit_code
            shown, text = {"name": ref.name, **result.to_dict()}, result.describe()
        block = "\n" * bool(number) + f"== {ref.name}\n{text}"  # a blank line between two tables' blocks
        click.echo(json.dumps(shown, sort_keys=True, default=str) if as_json else block)
    equal = [n for n, c in codes.items() if c == EQUAL]
    different = [n for n, c in codes.items() if c == DIFFERENT]
    failed = [n for n, c in codes.items() if c not in (EQUAL, DIFFERENT)]
    code = worst(codes.values())
    if as_json:
        summary = {"pipeline": spec.name, "equal": len(equal), "different": len(different), "failed": len(failed),
                   "exit_code": code}  # fmt: skip
        click.echo(json.dumps(summary, sort_keys=True))
    else:
        parts = [f"{len(equal)} equal"]
        parts += [f"{len(names)} {what}" + (f" ({', '.join(names)})" if names else "")
                  for what, names in (("different", different), ("failed", failed))]  # fmt: skip
        click.echo(f"\n{spec.name}: {len(codes)} table(s) verified: {', '.join(parts)}")
    if failed:  # a failed table's cause may be in what Spark said on the way
        run.keep_log = True
        if run.log_path is not None and run.log_path.exists():
            click.echo(f"hudi-cdc verify: Spark's log: {run.log_path}", err=True)
    return code


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
    recheck: Callable[[Any, str], str] | None,
) -> VerifyResult:
    """The table against its source table: through the table's shaping when it has any (no recheck then),
    else key by key, rechecking the differing keys once the stream has passed the read (``recheck``: the wait
    for that, or None)."""
    from hudi_cdc.ops import verify as ops

    shaped = _shaped_config(spark, target_base_path, database, config)
    if shaped is not None:
        return ops.verify_transformed(spark, shaped, database, source_table, **compare)
    return ops.verify(spark, target_base_path, database, source_table, key_fields=keys, recheck=recheck, **compare)


def _check_named(table: PipelineTable | None, asked: _Asked) -> None:
    """A table and exactly one source named, or what to give."""
    source_path, source_url, source_table = asked.source_path, asked.source_url, asked.source_table
    if not asked.target_base_path:
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


def _recheck(spark: SparkSession, asked: _Asked, database: SourceDatabase) -> Callable[[Any, str], str] | None:
    """The wait before a second pass (until the ingest has passed the source position the first pass saw), or
    None without --recheck."""
    from hudi_cdc.ops.verify import wait_for_ingest

    if not asked.recheck:
        return None
    assert asked.target_base_path is not None
    return wait_for_ingest(
        spark,
        asked.target_base_path,
        bootstrap_servers=asked.bootstrap_servers,
        slot=asked.slot,
        timeout_s=asked.recheck_timeout,
        database_kind=database.kind,
    )
