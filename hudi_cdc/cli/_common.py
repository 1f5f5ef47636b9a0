"""The options the commands share: an ingest's settings, --hoodie-conf, the database password, lists."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from hudi_cdc.errors import ConfigError

if TYPE_CHECKING:
    from hudi_cdc.config import IngestConfig

__all__ = ["config_options", "options_config", "parse_hoodie_conf", "password_options", "split_list"]


def password_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """--password-file and --password-env: how a command that talks to the source database gets its password."""
    command = click.option("--password-env", help="Environment variable holding the database password.")(command)
    return click.option("--password-file", type=click.Path(dir_okay=False), help="File holding the database password.")(
        command
    )


def split_list(value: str | None) -> tuple[str, ...]:
    """``a, b,c`` -> ``("a", "b", "c")``: the comma-separated options (--tables, --columns...)."""
    return tuple(v.strip() for v in (value or "").split(",") if v.strip())


def parse_hoodie_conf(values: tuple[str, ...]) -> dict[str, str]:
    conf = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--hoodie-conf expects key=value, got {item!r}")
        conf[key.strip()] = value.strip()
    return conf


_F = TypeVar("_F", bound=Callable[..., Any])

# The settings of an ingest (IngestConfig, --hoodie-conf, --props, --config): shared by the commands that
# take an ingest's command line, so `validate` accepts the very line `ingest` will run.
_CONFIG_OPTIONS = [
    click.option(
        "--source", type=click.Choice(["files", "kafka", "jdbc"]), default=None, help="Where change events come from."
    ),
    click.option("--source-path", help="Files source: folder (local or Hadoop URI) of Debezium Avro files."),
    click.option("--topic", help="Kafka source: the Debezium topic of one table."),
    click.option("--bootstrap-servers", help="Kafka source: host:port[,host:port]."),
    click.option("--schema-registry-url", help="Kafka source: a Confluent-compatible schema registry (Avro)."),
    click.option(
        "--kafka-value-format",
        type=click.Choice(["avro", "json"]),
        help="Kafka source: avro (Confluent wire format; default) or json (Kafka Connect's JsonConverter).",
    ),
    click.option(
        "--kafka-value-schema-file",
        help="Kafka source, JSON with schemas.enable=false: the envelope's Connect schema (or one message with it).",
    ),
    click.option(
        "--kafka-starting-offsets",
        type=click.Choice(["earliest", "latest"]),
        help="Kafka source: where a table without a checkpoint starts (default earliest).",
    ),
    click.option(
        "--allow-data-loss",
        is_flag=True,
        default=None,
        help="Kafka source: continue when the checkpoint is older than what Kafka retains.",
    ),
    click.option("--jdbc-url", help="JDBC source: jdbc:postgresql://host:port/db, jdbc:mariadb:// or jdbc:mysql://."),
    click.option("--jdbc-table", help="JDBC source: the table (schema.table) to pull from."),
    click.option("--jdbc-query", help="JDBC source: a SELECT to pull from instead of a table."),
    click.option("--jdbc-user", help="JDBC source: the database user."),
    click.option(
        "--jdbc-password-file", type=click.Path(dir_okay=False), help="JDBC source: file holding the password."
    ),
    click.option("--jdbc-password-env", help="JDBC source: environment variable holding the password."),
    click.option(
        "--jdbc-mode",
        type=click.Choice(["incrementing", "timestamp", "timestamp+incrementing", "full"]),
        help="JDBC source: the cursor (default timestamp+incrementing); full: no cursor, each round reads the "
        "whole table and writes what changed, deletes included.",
    ),
    click.option("--jdbc-timestamp-column", help="JDBC source: the column every insert and update sets."),
    click.option("--jdbc-incrementing-column", help="JDBC source: a column that grows with every new row."),
    click.option(
        "--jdbc-lookback-seconds",
        type=float,
        help="JDBC source: also re-read rows this close below the cursor each round (late commits).",
    ),
    click.option("--jdbc-fetch-size", type=int, help="JDBC source: rows per fetch from the database (default 10000)."),
    click.option(
        "--jdbc-reconcile-deletes",
        is_flag=True,
        default=None,
        help="JDBC source: each round, find keys deleted in the source (hashed key ranges) and delete them.",
    ),
    click.option(
        "--flavor",
        type=click.Choice(["postgres", "mysql", "sqlserver", "oracle"], case_sensitive=False),
        help="Source database (its Debezium connector); mysql also reads MariaDB's.",
    ),
    click.option("--target-base-path", help="Base path of the Hudi table."),
    click.option("--target-table", help="Name of the Hudi table."),
    click.option(
        "--table-type",
        type=click.Choice(["COPY_ON_WRITE", "MERGE_ON_READ", "cow", "mor"], case_sensitive=False),
        help="Hudi table type (cow/mor accepted).",
    ),
    click.option("--record-key-field", help="Record key column(s), comma separated."),
    click.option("--partition-path-field", help="Partition column, if the table is partitioned."),
    click.option(
        "--source-limit", type=int, help="Most bytes of new files (files), messages (kafka) or rows (jdbc) per round."
    ),
    click.option("--checkpoint", help="Start from this checkpoint ('earliest' or a stored JSON checkpoint)."),
    click.option("--continuous", is_flag=True, default=None, help="Keep ingesting in rounds."),
    click.option("--min-sync-interval-seconds", type=float, help="Continuous mode: least seconds between rounds."),
    click.option("--max-rounds", type=int, help="Continuous mode: stop after this many rounds."),
    click.option(
        "--retry-timeout-seconds",
        type=float,
        help="Continuous mode: how long transient failures are retried with backoff before the run stops (default 900).",
    ),
    click.option("--toast-placeholder", help="Debezium's unavailable.value.placeholder."),
    click.option("--tombstone-retention-hours", type=float, help="How long delete tombstones are kept."),
    click.option(
        "--tombstone-path", help="Where delete tombstones live (default: <target-base-path>_hudi_cdc_tombstones)."
    ),
    click.option(
        "--schema-change-behavior",
        type=click.Choice(["fail", "evolve", "ignore"]),
        help="The schema-change policy in one word (default fail; evolve: incompatible types become text; "
        "ignore: new columns are left out); --on-<kind> sets each kind (docs/types.md#schema-changes).",
    ),
    click.option(
        "--truncate-behavior",
        type=click.Choice(["fail", "apply", "ignore"]),
        help="What a TRUNCATE event does (default fail): apply it (rows older than it are deleted), or ignore it.",
    ),
    click.option(
        "--history",
        type=click.Choice(["none", "soft_delete", "scd2"]),
        help="What the table keeps of the past (default none, fixed at its first commit): soft_delete keeps deleted "
        "rows, marked _source_deleted; scd2 keeps every version of a row with _valid_from/_valid_to "
        "(docs/history.md).",
    ),
    click.option(
        "--compaction",
        type=click.Choice(["inline", "async"]),
        help="MERGE_ON_READ: where compactions run (default inline, inside the round that schedules one). async: "
        "on a thread of their own, so later rounds of a --continuous process do not wait for them.",
    ),
    click.option(
        "--on-bad-event",
        type=click.Choice(["fail", "quarantine"]),
        help="What an event that cannot be applied does (default fail): quarantine sets it aside in an error "
        "table beside the target, and the rest of the batch commits (docs/operations.md#quarantine).",
    ),
    click.option(
        "--quarantine-path", help="Where quarantined events live (default: <target-base-path>_hudi_cdc_quarantine)."
    ),
    # Column transforms and masking (docs/transforms.md); each repeatable.
    click.option("--keep-column", multiple=True, help="Write only these data columns (columns_keep); repeatable."),
    click.option("--drop-column", multiple=True, help="Do not write this column (columns_drop); repeatable."),
    click.option("--rename-column", multiple=True, help="SRC=DST: source column SRC is table column DST; repeatable."),
    click.option(
        "--computed-column", multiple=True, help="NAME=EXPR: a column computed with Spark SQL; repeatable, in order."
    ),
    click.option("--row-filter", help="Spark SQL predicate: rows it does not hold for are deleted from the table."),
    click.option("--mask", multiple=True, help="COL=KIND: hash, redact or keep_last:N; repeatable."),
    click.option("--mask-salt-env", help="Environment variable holding the secret salt of hash masks."),
    click.option("--mask-salt-file", type=click.Path(dir_okay=False), help="File holding the salt of hash masks."),
    # Type mappings and the schema-change policy per kind (docs/types.md).
    click.option(
        "--type-mapping",
        multiple=True,
        help='KIND=TYPE: how every column of a source type lands, e.g. "tinyint(1)=boolean".',
    ),
    click.option("--column-type", multiple=True, help="COL=TYPE: how one column lands (wins over --type-mapping)."),
    click.option("--on-column-added", type=click.Choice(["evolve", "ignore", "fail"]), help="A new source column."),
    click.option("--on-column-dropped", type=click.Choice(["keep", "fail"]), help="A column dropped at the source."),
    click.option(
        "--on-type-widened", type=click.Choice(["evolve", "fail"]), help="int -> bigint, decimal precision up."
    ),
    click.option(
        "--on-type-changed",
        type=click.Choice(["fail", "quarantine", "evolve"]),
        help="A narrowed or incompatible type: fail, quarantine the events, or evolve (the column becomes text).",
    ),
    click.option(
        "--on-column-renamed", type=click.Choice(["keep_both", "fail"]), help="A drop and an add in one change."
    ),
    # OpenLineage run events for each committed round (docs/lineage.md).
    click.option(
        "--lineage-transport",
        type=click.Choice(["none", "http", "file", "console"]),
        help="Send OpenLineage events for each committed round (default none): to an HTTP endpoint, a file, the log.",
    ),
    click.option("--lineage-url", help="Lineage over http: the endpoint's base URL, e.g. http://marquez:5000."),
    click.option("--lineage-endpoint", help="Lineage over http: the path events are POSTed to (api/v1/lineage)."),
    click.option("--lineage-api-key-env", help="Lineage over http: environment variable holding the API key."),
    click.option("--lineage-file", help="Lineage to a file: events appended, one JSON line each."),
    click.option("--lineage-namespace", help="Lineage: the job namespace (default hudi-cdc)."),
    click.option(
        "--lineage-source-namespace",
        help="Lineage: the source database (postgres://host:5432): its table is named as an input too.",
    ),
    click.option(
        "--lineage-source-name",
        help="Lineage: that table's name template (default {database}.{schema}.{table}; mysql: {database}.{table}).",
    ),
    click.option(
        "--lineage-timeout-seconds", type=float, help="Lineage: the most a round waits for its events (default 2)."
    ),
    # Catalog sync (issue 45; docs/catalog.md).
    click.option(
        "--catalog",
        type=click.Choice(["none", "hms", "glue", "datahub", "bigquery"]),
        help="Register the table by name after commits that change its schema or partitions: hms (a Hive "
        "Metastore, --catalog-uri thrift://host:port); glue, datahub, bigquery: Hudi's sync tools, untested here.",
    ),
    click.option("--catalog-uri", help="The catalog's address, e.g. thrift://127.0.0.1:59083."),
    click.option("--catalog-database", help="Catalog database name template (default {schema})."),
    click.option("--catalog-table", help="Catalog table name template (default {table}; MOR adds _ro and _rt)."),
    click.option(
        "--catalog-sync-partitions/--no-catalog-sync-partitions",
        default=None,
        help="Register the table's partitions (default yes).",
    ),
    click.option(
        "--catalog-option", multiple=True, help="A raw sync setting KEY=VALUE, winning over ours; repeatable."
    ),
    click.option("--hoodie-conf", multiple=True, help="A Hudi setting k=v; repeatable."),
    click.option(
        "--props", "props_file", type=click.Path(dir_okay=False), help="Java properties file of Hudi settings."
    ),
    click.option("--config", "config_file", type=click.Path(dir_okay=False), help="TOML file of hudi-cdc settings."),
]


def options_config(
    props_file: str | None, config_file: str | None, hoodie_conf: tuple[str, ...], options: dict[str, Any]
) -> IngestConfig:
    """The ingest settings of a command with :func:`config_options` (file, then env, then options)."""
    from hudi_cdc.config import load_config

    options = dict(options)
    options["record_key_fields"] = options.pop("record_key_field")
    options.update(_transform_options(options))
    options.update(_types_options(options))
    options["catalog_options"] = _key_values("catalog-option", options.pop("catalog_option", ()) or ())
    return load_config(
        config_file=config_file, props_file=props_file, hoodie_conf=parse_hoodie_conf(hoodie_conf), **options
    )


def _key_values(flag: str, values: tuple[str, ...]) -> dict[str, str] | None:
    """A repeatable KEY=VALUE option as a mapping (None when not given)."""
    out = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--{flag} expects KEY=VALUE, got {item!r}")
        out[key.strip()] = value.strip()
    return out or None


def _types_options(options: dict[str, Any]) -> dict[str, Any]:
    """--type-mapping, --column-type and --on-<kind> as their settings (popped from ``options``)."""
    out: dict[str, Any] = {}
    for flag, setting in (("type_mapping", "type_mappings"), ("column_type", "column_types")):
        pairs = {}
        for item in options.pop(flag, ()) or ():
            name, sep, value = item.rpartition("=")
            if not sep or not name.strip() or not value.strip():
                raise ConfigError(f"--{flag.replace('_', '-')} expects NAME=TYPE, got {item!r}")
            pairs[name.strip()] = value.strip()
        out[setting] = pairs or None
    kinds = ("column_added", "column_dropped", "type_widened", "type_changed", "column_renamed")
    actions = {kind: options.pop(f"on_{kind}") for kind in kinds if options.get(f"on_{kind}") is not None}
    for kind in kinds:
        options.pop(f"on_{kind}", None)
    out["schema_changes"] = actions or None
    return out


def _transform_options(options: dict[str, Any]) -> dict[str, Any]:
    """The repeatable transform options as their settings (popped from ``options``; None when not given)."""

    def pairs(flag: str, values: tuple[str, ...]) -> dict[str, str] | None:
        out = {}
        for item in values:
            name, sep, value = item.partition("=")
            if not sep or not name.strip() or not value.strip():
                raise ConfigError(f"--{flag} expects NAME=VALUE, got {item!r}")
            out[name.strip()] = value.strip()
        return out or None

    keep, drop = options.pop("keep_column", ()), options.pop("drop_column", ())
    return {
        "columns_keep": tuple(keep) or None,
        "columns_drop": tuple(drop) or None,
        "column_renames": pairs("rename-column", options.pop("rename_column", ())),
        "computed_columns": pairs("computed-column", options.pop("computed_column", ())),
        "masks": pairs("mask", options.pop("mask", ())),
    }


def config_options(command: _F) -> _F:
    """Add the ingest settings' options to ``command`` (in --help order)."""
    for option in reversed(_CONFIG_OPTIONS):
        command = option(command)
    return command
