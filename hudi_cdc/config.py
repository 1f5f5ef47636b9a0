"""Typed configuration: the settings of one table's ``ingest``, each declared once as a field of
:class:`IngestConfig` (``hudi_cdc.settings``), read in one precedence: the built-in defaults, then
the ``--config`` TOML file, then ``HUDI_CDC__*`` environment variables, then arguments (flags or
keywords), later ones winning.

Hudi's own settings pass through untouched, as with HoodieStreamer: ``--props FILE``
(Java properties) first, then each ``--hoodie-conf k=v``.
"""

from __future__ import annotations

import os
import re
import tomllib
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args
from urllib.parse import urlsplit, urlunsplit

from hudi_cdc.errors import ConfigError
from hudi_cdc.settings import (
    ENV_PREFIX,
    INGEST,
    PIPELINE_TABLE,
    PLACES,
    Declared,
    coerce,
    declared,
    flag_name,
    lookup,
    setting,
)
from payloads.postgres import DEFAULT_TOAST_PLACEHOLDER

__all__ = [
    "IngestConfig",
    "TableType",
    "Flavor",
    "FLAVORS_WITH_PLACEHOLDERS",
    "SchemaChangeBehavior",
    "SCHEMA_CHANGE_KINDS",
    "BEHAVIOR_POLICY",
    "type_spec_problem",
    "TruncateBehavior",
    "SourceKind",
    "CatalogKind",
    "CATALOG_NAME_FIELDS",
    "JdbcMode",
    "KAFKA_SECURITY_SETTINGS",
    "KafkaSaslMechanism",
    "KafkaSecurityProtocol",
    "kafka_security_problem",
    "REGISTRY_AUTH_SETTINGS",
    "registry_auth_problem",
    "ENV_PREFIX",
    "load_config",
    "load_config_with_origins",
    "normalise_settings",
    "settings_from_env",
    "with_origins",
    "merge_settings",
    "parse_mask",
    "parse_props",
    "redact",
    "redact_url",
    "redact_jdbc_url",
    "resolve_password",
]

TableType = Literal["COPY_ON_WRITE", "MERGE_ON_READ"]
Flavor = Literal["postgres", "mysql", "sqlserver", "oracle"]
FLAVORS_WITH_PLACEHOLDERS = ("postgres", "oracle")  # TOAST, and Oracle LOBs a change left alone
SourceKind = Literal["files", "kafka", "jdbc"]
JdbcMode = Literal["incrementing", "timestamp", "timestamp+incrementing", "full"]
SchemaChangeBehavior = Literal["fail", "evolve", "ignore"]
TruncateBehavior = Literal["fail", "apply", "ignore"]
OnBadEvent = Literal["fail", "quarantine"]
History = Literal["none", "soft_delete", "scd2"]
Compaction = Literal["inline", "async"]
ValueFormat = Literal["avro", "json"]
KafkaSecurityProtocol = Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]
KafkaSaslMechanism = Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
LineageTransport = Literal["none", "http", "file", "console"]  # OpenLineage events (issue 45; sink.lineage)
CatalogKind = Literal["none", "hms", "glue", "datahub", "bigquery"]  # catalog sync (issue 45)


# Type mappings and schema changes (issue 44 items 3-4): each kind's actions, the first the default.
SCHEMA_CHANGE_KINDS: dict[str, tuple[str, ...]] = {
    "column_added": ("evolve", "ignore", "fail"),
    "column_dropped": ("keep", "fail"),
    "type_widened": ("evolve", "fail"),
    "type_changed": ("fail", "quarantine", "evolve"),  # evolve: the column becomes text (the old behavior's)
    "column_renamed": ("keep_both", "fail"),
}
# The single schema_change_behavior, as the policy per kind it stands for.
BEHAVIOR_POLICY: dict[str, dict[str, str]] = {
    "fail": {k: v[0] for k, v in SCHEMA_CHANGE_KINDS.items()},
    "evolve": {**{k: v[0] for k, v in SCHEMA_CHANGE_KINDS.items()}, "type_changed": "evolve"},
    "ignore": {**{k: v[0] for k, v in SCHEMA_CHANGE_KINDS.items()}, "column_added": "ignore"},
}
_SIMPLE_TYPES = ("boolean", "string", "text", "int", "bigint", "double", "timestamp", "json")
_DECIMAL_SPEC = re.compile(r"decimal\((\d+),\s*(\d+)\)")


def type_spec_problem(spec: str) -> str | None:
    """What is wrong with a type mapping's target (``decimal(12,2)``, ``timestamp:Europe/Paris``, ``json:<ddl>``)."""
    spec = spec.strip().lower() if not spec.lower().startswith(("timestamp:", "json:")) else spec.strip()
    if spec in _SIMPLE_TYPES:
        return None
    decimal = _DECIMAL_SPEC.fullmatch(spec)
    if decimal:
        p, s = int(decimal[1]), int(decimal[2])
        return None if 0 < p <= 38 and s <= p else f"decimal({p},{s}) needs 0 < precision <= 38 and scale <= precision"
    if spec.lower().startswith("timestamp:"):
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        zone = spec.split(":", 1)[1]
        try:
            ZoneInfo(zone)
        except (ZoneInfoNotFoundError, ValueError):
            return f"unknown time zone {zone!r} (an IANA name such as Europe/Paris)"
        return None
    if spec.lower().startswith("json:"):
        return None if spec.split(":", 1)[1].strip() else "json: needs a Spark DDL type, e.g. json:struct<a:int>"
    return (
        "not a type mapping target: one of boolean, string, text, int, bigint, double, decimal(p,s), "
        "timestamp, timestamp:<zone>, json, json:<Spark DDL type>"
    )


_TABLE_TYPE_ALIASES = {"cow": "COPY_ON_WRITE", "mor": "MERGE_ON_READ"}
_SECRET_MARKERS = ("password", "secret", "token", "credential", "jaas", "access.key", "accesskey", "private")


def redact_url(url: str) -> str:
    """``url`` with its password, if any, replaced by ``***`` (the user name stays: it says who connects)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def redact_jdbc_url(url: str) -> str:
    """A JDBC URL with any ``password=`` parameter or ``user:password@`` replaced by ``***``."""
    url = re.sub(r"(?i)(password=)[^&;]*", r"\1***", url)
    return re.sub(r"//([^/:@]+):[^/@]*@", r"//\1:***@", url)


def redact(conf: Mapping[str, str]) -> dict[str, str]:
    """A copy of ``conf`` with values of secret-looking keys replaced."""
    return {k: ("***" if any(m in k.lower() for m in _SECRET_MARKERS) else v) for k, v in conf.items()}


# Where each setting may be set (hudi_cdc.settings.PLACES): most are per table, in a pipeline's
# [defaults] and table sections and every way of running ingest; some are the source's, one per pipeline.
_TABLE = INGEST | PIPELINE_TABLE
_SOURCE = INGEST | {"source"}
_RUN = INGEST  # in a pipeline, `hudi-cdc run`'s own options
_CATALOG = _TABLE | {"catalog"}
_LINEAGE = INGEST | {"lineage"}
_ROUTES = frozenset({"routes"})


@dataclass(frozen=True)
class IngestConfig:
    """Everything one ``ingest`` run needs. Build it with :func:`load_config`.

    Each field is one setting, declared once with :func:`hudi_cdc.settings.setting`: its meaning,
    where it may be set, secret or not, old names. The CLI options, environment variables, Python
    keywords, Airflow options and docs/settings.md are derived from these declarations.
    """

    target_base_path: str = setting(
        "Base path (local or Hadoop URI) of the Hudi table; in a pipeline a template over "
        "{topic} {server} {schema} {table}.",
        metavar="PATH",
    )
    target_table: str = setting("Name of the Hudi table; in a pipeline a template like target_base_path.")
    record_key_fields: tuple[str, ...] = setting(
        "Record key column(s). Empty: the Kafka source takes the Debezium key schema's fields, a JDBC "
        "pipeline the table's primary key.",
        default=(),
        aliases=("record_key_field",),
        metavar="COL",
    )
    source_path: str | None = setting(
        "Files source: the folder (local or Hadoop URI) of Debezium Avro files.", default=None, where=_SOURCE
    )
    flavor: Flavor = setting(
        "The source database (its Debezium connector); mysql also reads MariaDB's.", default="postgres", where=_SOURCE
    )
    source: SourceKind = setting("Where change events come from.", default="files", where=_SOURCE)
    table_type: TableType = setting(
        "Hudi table type (cow and mor are accepted).",
        default="COPY_ON_WRITE",
        value_aliases=_TABLE_TYPE_ALIASES,
    )
    partition_path_field: str | None = setting("The partition column, if the table is partitioned.", default=None)
    source_limit: int | None = setting(
        "The most a round takes: bytes of new files (files; at least one file), messages (kafka) or rows (jdbc).",
        default=None,
    )
    source_file_suffix: str = setting("Files source: the suffix of the event files a round reads.", default=".avro")
    topic: str | None = setting("Kafka source: the Debezium topic of one table.", default=None, where=_SOURCE)
    bootstrap_servers: str | None = setting(
        "Kafka source: host:port[,host:port].", default=None, where=_SOURCE, secret="redacted", redact=redact_url
    )
    schema_registry_url: str | None = setting(
        "Kafka source: a Confluent-compatible schema registry (Avro values).",
        default=None,
        where=_SOURCE,
        secret="redacted",
        redact=redact_url,
    )
    kafka_starting_offsets: Literal["earliest", "latest"] = setting(
        "Kafka source: where a table with no checkpoint starts reading the topic.", default="earliest"
    )
    kafka_value_format: ValueFormat = setting(
        "Kafka source: how the connector wrote the topic: avro (Confluent wire format, a registry) or json "
        "(Kafka Connect's JsonConverter).",
        default="avro",
        where=_SOURCE,
    )
    kafka_value_schema_file: str | None = setting(
        "Kafka source, JSON without embedded schemas (schemas.enable=false): the envelope's Connect schema, "
        "or one message written with schemas on.",
        default=None,
    )
    allow_data_loss: bool = setting(
        "Kafka source: continue when the checkpoint is outside the offsets Kafka still retains.", default=False
    )
    kafka_driver_read_max_messages: int = setting(
        "Kafka source: a round of at most this many messages is read by the process's own consumer instead of "
        "a Spark Kafka read (about 0.4 s less per round); 0: always Spark's.",
        default=20_000,
    )
    kafka_security_protocol: KafkaSecurityProtocol = setting(
        "Kafka source: how clients talk to the brokers: PLAINTEXT, SSL (TLS), SASL_PLAINTEXT or SASL_SSL "
        "(a login over TLS); given to librdkafka and to Spark's Java client (docs/secured-kafka.md).",
        default="PLAINTEXT",
        where=_SOURCE,
    )
    kafka_sasl_mechanism: KafkaSaslMechanism | None = setting(
        "Kafka source, SASL protocols: the login mechanism: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512.",
        default=None,
        where=_SOURCE,
    )
    kafka_sasl_username: str | None = setting(
        "Kafka source, SASL protocols: the user hudi-cdc logs in as.", default=None, where=_SOURCE
    )
    kafka_sasl_password_env: str | None = setting(
        "Kafka source, SASL protocols: the environment variable holding the password (read when used).",
        default=None,
        where=_SOURCE,
        secret="reference",
        metavar="VAR",
    )
    kafka_sasl_password_file: str | None = setting(
        "Kafka source, SASL protocols: the file holding the password (read when used).",
        default=None,
        where=_SOURCE,
        secret="reference",
        metavar="FILE",
    )
    kafka_ssl_ca_file: str | None = setting(
        "Kafka source, SSL and SASL_SSL: the PEM file of the CA(s) that signed the brokers' certificates "
        "(default: the system's trusted CAs).",
        default=None,
        where=_SOURCE,
        metavar="FILE",
    )
    schema_registry_username: str | None = setting(
        "Kafka source: the user hudi-cdc logs in to the schema registry as (HTTP basic; docs/secured-kafka.md).",
        default=None,
        where=_SOURCE,
    )
    schema_registry_password_env: str | None = setting(
        "Kafka source: the environment variable holding the schema registry's password (read when used).",
        default=None,
        where=_SOURCE,
        secret="reference",
        metavar="VAR",
    )
    schema_registry_password_file: str | None = setting(
        "Kafka source: the file holding the schema registry's password (read when used).",
        default=None,
        where=_SOURCE,
        secret="reference",
        metavar="FILE",
    )
    java_writer_max_rows: int = setting(
        "A MERGE_ON_READ round of at most this many rows into an unpartitioned table with the bucket index is "
        "written by Hudi's Java write client in the driver (no Spark job); 0: always the datasource.",
        default=20_000,
    )
    java_writer_max_bytes: int | None = setting(
        "The most bytes such a round's rows may hold (text by its length) for the Java write client to take it; "
        "unset: a sixteenth of the driver's heap.",
        default=None,
    )
    bucket_max_mb: float = setting(
        "An unpartitioned table on hudi-cdc's bucket index gets more buckets, in one replace commit after a round, "
        "when a bucket's base file passes this many MiB (docs/tuning.md#buckets-that-grow); 0: the count stays.",
        default=256.0,
    )
    jdbc_url: str | None = setting(
        "JDBC source: jdbc:postgresql://host:port/db, jdbc:mariadb:// or jdbc:mysql:// (no password in it).",
        default=None,
        where=_SOURCE,
        secret="redacted",
        redact=redact_jdbc_url,
    )
    jdbc_table: str | None = setting(
        "JDBC source: the table (schema.table) to pull from; in a pipeline, [source] tables.",
        default=None,
        where=_SOURCE,
    )
    jdbc_query: str | None = setting(
        "JDBC source: a SELECT read instead of a table (its columns include the key and cursor columns).",
        default=None,
        where=_SOURCE,
    )
    jdbc_user: str | None = setting("JDBC source: the database user.", default=None, where=_SOURCE)
    jdbc_password_file: str | None = setting(
        "JDBC source: the file holding the password (read when used).",
        default=None,
        where=_SOURCE,
        secret="reference",
        metavar="FILE",
    )
    jdbc_password_env: str | None = setting(
        "JDBC source: the environment variable holding the password (read when used).",
        default=None,
        where=_SOURCE,
        secret="reference",
        metavar="VAR",
    )
    jdbc_mode: JdbcMode = setting(
        "JDBC source: the cursor; full: no cursor, each round reads the whole table and writes what changed, "
        "deletes included.",
        default="timestamp+incrementing",
    )
    jdbc_timestamp_column: str | None = setting(
        "JDBC source: the column every insert and update sets (timestamp modes).", default=None
    )
    jdbc_incrementing_column: str | None = setting(
        "JDBC source: a column that grows with every new row (incrementing modes).", default=None
    )
    jdbc_lookback_seconds: float = setting(
        "JDBC source, timestamp modes: each round also re-reads rows this close below the cursor (late commits "
        "with an older timestamp); applying them again changes nothing.",
        default=0.0,
    )
    jdbc_fetch_size: int = setting("JDBC source: rows per fetch from the database.", default=10_000)
    jdbc_reconcile_deletes: bool = setting(
        "JDBC source (a table): each round also finds keys the source no longer has (hashed key ranges) and "
        "deletes them; incrementing mode also warns of rows changed after they were read.",
        default=False,
    )
    checkpoint: str | None = setting(
        "Start from this checkpoint ('earliest' or a stored JSON checkpoint) instead of the table's (recovery).",
        default=None,
        where=_RUN,
    )
    continuous: bool = setting("Keep ingesting in rounds.", default=False, where=_RUN)
    min_sync_interval_seconds: float = setting("Continuous mode: the least seconds between rounds.", default=0.0)
    max_freshness_seconds: float | None = setting(
        "The table's freshness target (hudi-cdc run): a change should be in the table this many seconds after "
        "the runner saw it; the runner serves the table nearest to (or furthest past) it first, and status and "
        "the metrics say when it is missed. None: no target.",
        default=None,
    )
    max_rounds: int | None = setting(
        "Continuous mode: stop after this many rounds (None: until stopped).", default=None, where=_RUN
    )
    retry_timeout_seconds: float = setting(
        "Continuous mode: how long transient failures (a broker or registry restarting) are retried with backoff "
        "before the run gives up, counted from the first failure of a series.",
        default=900.0,
    )
    lease_expiry_seconds: float = setting(
        "The table's writer lease (docs/many-processes.md): a holder whose heartbeat is this many seconds old "
        "is taken for dead, and another process may take the table over.",
        default=60.0,
    )
    lease_wait_seconds: float = setting(
        "How long a writer waits for the table's lease another live process holds before it is refused.",
        default=0.0,
    )
    toast_placeholder: str = setting(
        "Debezium's unavailable.value.placeholder (a column a change left alone).", default=DEFAULT_TOAST_PLACEHOLDER
    )
    tombstone_retention_hours: float = setting("How long delete tombstones are kept.", default=168.0)
    tombstone_path: str | None = setting(
        # Never inside the table's base path: a Hudi table nested there broke MOR compaction of the outer
        # table (Hudi 1.2, seen here: compacted files went missing).
        "Where delete tombstones live; default <target_base_path>_hudi_cdc_tombstones (never inside the table).",
        default=None,
        metavar="PATH",
    )
    schema_change_behavior: SchemaChangeBehavior = setting(
        "The schema-change policy in one word (fail: the defaults; evolve: type_changed = evolve; ignore: "
        "column_added = ignore); schema_changes sets each kind over it (docs/types.md#schema-changes).",
        default="fail",
    )
    truncate_behavior: TruncateBehavior = setting(
        "What a TRUNCATE event does: fail the round, apply it (rows older than it go), or ignore it.", default="fail"
    )
    history: History = setting(
        "What a table keeps of the past (docs/history.md): none, the source's current rows; soft_delete, deleted "
        "rows stay, marked _source_deleted; scd2, one row per version of a key. Fixed at the table's first commit.",
        default="none",
    )
    on_bad_event: OnBadEvent = setting(
        "What an event that cannot be applied does: fail the round, or go to the quarantine table and let the "
        "rest commit (docs/operations.md#quarantine).",
        default="fail",
    )
    quarantine_path: str | None = setting(
        "Where quarantined events live (a Hudi table); default <target_base_path>_hudi_cdc_quarantine.",
        default=None,
        metavar="PATH",
    )
    compaction: Compaction = setting(
        "MERGE_ON_READ: where compactions run: async, off the rounds' path (a round's commit only schedules the "
        "plan; a thread of ingest or hudi-cdc run runs it, a one-shot one before it exits); inline, inside the "
        "round whose commit schedules one (docs/tuning.md#compaction).",
        default="async",
    )
    # --- Type mappings and the schema-change policy per kind (issue 44 items 3-4; docs/types.md) ---
    type_mappings: Mapping[str, str] = setting(
        'By source type, how every column of that type lands, e.g. "tinyint(1)" = "boolean" '
        "(docs/types.md#type-mappings).",
        default_factory=dict,
        merged_by_key=True,
        aliases=("type_mapping",),
        metavar="TYPE=TARGET",
    )
    column_types: Mapping[str, str] = setting(
        'Per column, how it lands, e.g. price = "decimal(12,2)"; wins over type_mappings.',
        default_factory=dict,
        merged_by_key=True,
        aliases=("column_type",),
        metavar="COL=TARGET",
    )
    schema_changes: Mapping[str, str] = setting(
        "What each kind of schema change does: column_added, column_dropped, type_widened, type_changed, "
        "column_renamed (docs/types.md#schema-changes); kinds not given follow schema_change_behavior.",
        default_factory=dict,
        merged_by_key=True,
        metavar="KIND=ACTION",
    )
    # --- Column transforms and masking (issue 44 item 2; docs/transforms.md) ---
    columns_keep: tuple[str, ...] = setting(
        "Only these data columns are written (the key, _source_* and computed columns always are).",
        default=(),
        aliases=("keep_column",),
        metavar="COL",
    )
    columns_drop: tuple[str, ...] = setting(
        "These data columns are not written (never a key column or a _source_* column).",
        default=(),
        aliases=("drop_column",),
        metavar="COL",
    )
    column_renames: Mapping[str, str] = setting(
        'Source column -> table column, e.g. email_address = "email".',
        default_factory=dict,
        aliases=("rename_column",),
        metavar="SRC=DST",
    )
    computed_columns: Mapping[str, str] = setting(
        "Table column -> Spark SQL over the row's (renamed) columns and _source_*; in order.",
        default_factory=dict,
        aliases=("computed_column",),
        metavar="NAME=EXPR",
    )
    row_filter: str | None = setting(
        "A Spark SQL predicate: rows it does not hold for (NULL included) are deleted from the table.", default=None
    )
    masks: Mapping[str, str] = setting(
        "Column -> hash (HMAC-SHA256 with the salt), redact or keep_last:N; text columns only. Merged column by "
        "column across layers: a later section changes a column's mask, never lifts one an earlier layer set.",
        default_factory=dict,
        # A mask is a protection: a table's own section naming other columns must not drop a pattern's masks.
        merged_by_key=True,
        aliases=("mask",),
        metavar="COL=KIND",
    )
    mask_salt_env: str | None = setting(
        "The environment variable holding the secret salt of hash masks (read when used).",
        default=None,
        secret="reference",
        metavar="VAR",
    )
    mask_salt_file: str | None = setting(
        "The file holding the secret salt of hash masks (read when used).",
        default=None,
        secret="reference",
        metavar="FILE",
    )
    hoodie_conf: Mapping[str, str] = setting(
        "Hudi settings passed through (hoodie.*), over --props FILE's; secret-looking keys are redacted.",
        default_factory=dict,
        merged_by_key=True,
        secret="redacted",
        redact=redact,
        metavar="KEY=VALUE",
    )
    # --- Routing and merged shards (issue 44 item 1; docs/routing.md): set by the pipeline file's [[routes]] ---
    shard_sources: tuple[str, ...] = setting(
        "A merged table's shards: the Kafka topics (or folders) it reads, each from a checkpoint of its own held "
        "in one composite checkpoint. Empty: a table of one source.",
        default=(),
        where=_ROUTES,
    )
    shard_columns: tuple[str, ...] = setting(
        "A merged table's shard identity columns, written into every row (_source_server, _source_database, "
        "_source_schema, _source_table); in its record key unless unique_keys.",
        default=(),
        where=_ROUTES,
    )
    unique_keys: bool = setting(
        "A merged table whose keys are unique across its shards: the key stays the source's, and a key live in "
        "two shards at once is a bad event.",
        default=False,
        where=_ROUTES,
    )
    # --- Tables on object storage (issue 57; docs/object-storage.md): set per bucket on the session's Hadoop
    #     configuration (fs.s3a.bucket.<bucket>.*) for each s3a:// path of the table. Credentials are never a
    #     setting: s3a's provider chain finds them (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, an instance role).
    s3_endpoint: str | None = setting(
        "s3a:// tables: the S3 endpoint of the table's bucket (http://127.0.0.1:58333 for the local stack's "
        "SeaweedFS); none: s3a's own (AWS, or fs.s3a.endpoint given to Spark).",
        default=None,
        metavar="URL",
    )
    s3_path_style_access: bool = setting(
        "s3a:// tables with s3_endpoint: address the bucket in the path (http://host/bucket/key), as most "
        "S3-compatible servers need; false: as a host name (bucket.host).",
        default=True,
    )
    # --- Catalog sync (issue 45; docs/catalog.md) ---
    catalog: CatalogKind = setting(
        "Where the table is registered by name after each commit that needs it: hms (a Hive Metastore by thrift "
        "URI, tested), or glue, datahub, bigquery (Hudi's own sync tools, passed through; untested here).",
        default="none",
        where=_CATALOG,
    )
    catalog_uri: str | None = setting(
        "The catalog's address: thrift://host:9083 for hms; redacted in logs if it carries credentials.",
        default=None,
        where=_CATALOG,
        secret="redacted",
        redact=redact_url,
    )
    catalog_database: str = setting(
        "Catalog database name: a template over {server} {database} {schema} {table} {target}.",
        default="{schema}",
        where=_CATALOG,
    )
    catalog_table: str = setting(
        "Catalog table name, a template like catalog_database; a MERGE_ON_READ table is also registered as "
        "<name>_ro and <name>_rt.",
        default="{table}",
        where=_CATALOG,
    )
    catalog_sync_partitions: bool = setting(
        "Register the table's partitions (and sync when a commit adds one); false: registered unpartitioned.",
        default=True,
        where=_CATALOG,
    )
    catalog_options: Mapping[str, str] = setting(
        "Raw sync settings (hoodie.datasource.hive_sync.*, hoodie.meta.sync.*, Glue's, hive.* client settings), "
        "passed through and winning over hudi-cdc's.",
        default_factory=dict,
        merged_by_key=True,
        where=_CATALOG,
        secret="redacted",
        redact=redact,
        aliases=("catalog_option",),
    )
    # --- Lineage (issue 45 item 5; docs/lineage.md): OpenLineage run events, the pipeline file's [lineage] ---
    lineage_transport: LineageTransport = setting(
        "Where each committed round's OpenLineage events go: none (off), http (an endpoint such as Marquez), "
        "file (one JSON line per event appended to lineage_file) or console (the log).",
        default="none",
        where=_LINEAGE,
    )
    lineage_url: str | None = setting(
        "Lineage over http: the endpoint's base URL (http://marquez:5000); redacted in logs if it carries credentials.",
        default=None,
        where=_LINEAGE,
        secret="redacted",
        redact=redact_url,
    )
    lineage_endpoint: str = setting(
        "Lineage over http: the path under lineage_url the events are POSTed to.",
        default="api/v1/lineage",
        where=_LINEAGE,
    )
    lineage_api_key_env: str | None = setting(
        "Lineage over http: the environment variable holding the API key (a bearer token), read when used.",
        default=None,
        where=_LINEAGE,
        secret="reference",
        metavar="VAR",
    )
    lineage_file: str | None = setting(
        "Lineage to a file: the file the events are appended to, one JSON line each.", default=None, where=_LINEAGE
    )
    lineage_namespace: str = setting(
        "Lineage: the job namespace; the job is hudi-cdc.ingest.<target_table>.", default="hudi-cdc", where=_LINEAGE
    )
    lineage_timeout_seconds: float = setting(
        "Lineage: the most a round waits for its events to be sent; later, the round goes on (they may be lost).",
        default=2.0,
        where=_LINEAGE,
    )
    lineage_source_namespace: str | None = setting(
        "Lineage: the source database as OpenLineage names it (postgres://host:5432, mysql://host:3306): a "
        "Debezium source's events then also name the database table as an input.",
        default=None,
        where=_LINEAGE,
    )
    lineage_source_name: str | None = setting(
        "Lineage: that table's name, a template over {server} {database} {schema} {table} (default "
        "{database}.{schema}.{table} for postgres://, {database}.{table} for mysql://).",
        default=None,
        where=_LINEAGE,
    )

    def __post_init__(self) -> None:
        for d in declared(type(self)):  # each choice against its declared Literal
            value = getattr(self, d.name)
            if d.kind == "choice" and value not in d.choices and not (d.optional and value is None):
                raise ConfigError(f"{d.name}={getattr(self, d.name)!r} is not one of {', '.join(d.choices)}")
        self._check_types_and_schema_changes()
        _check_shards(self)
        _check_catalog(self)
        _check_transforms(self)
        _check_lineage(self)
        if self.history != "none" and self.truncate_behavior == "apply":
            raise ConfigError(
                f"history={self.history!r} with truncate_behavior='apply' is not supported: a TRUNCATE would "
                "erase the history; set --truncate-behavior fail or ignore"
            )
        keyless = self.source in ("files", "jdbc") and not self.record_key_fields
        if any(not k for k in self.record_key_fields) or keyless:
            raise ConfigError("record_key_fields is empty: set --record-key-fields id[,k2]")
        required = ["target_base_path", "target_table"]
        required += {
            "files": ["source_path"],
            "kafka": ["topic", "bootstrap_servers"]
            + (["schema_registry_url"] if self.kafka_value_format == "avro" else []),
            "jdbc": ["jdbc_url"],
        }[self.source]
        if self.source == "jdbc":
            required += [f"jdbc_{c}_column" for c in ("timestamp", "incrementing") if c in self.jdbc_mode]
        for name in required:
            if not getattr(self, name):
                raise ConfigError(f"{name} is required with --source {self.source}: set --{name.replace('_', '-')}")
        if self.source == "jdbc":
            self._check_jdbc()
        if self.kafka_value_schema_file and self.kafka_value_format != "json":
            raise ConfigError(
                "kafka_value_schema_file is for JSON without embedded schemas: set --kafka-value-format json"
            )
        problem = kafka_security_problem(self) or registry_auth_problem(self)
        if problem:
            raise ConfigError(problem)
        if self.kafka_driver_read_max_messages < 0:
            raise ConfigError(f"kafka_driver_read_max_messages must be >= 0, got {self.kafka_driver_read_max_messages}")
        if self.java_writer_max_rows < 0:
            raise ConfigError(f"java_writer_max_rows must be >= 0, got {self.java_writer_max_rows}")
        if self.bucket_max_mb < 0:
            raise ConfigError(f"bucket_max_mb must be >= 0 (0: the bucket count stays), got {self.bucket_max_mb}")
        if self.java_writer_max_bytes is not None and self.java_writer_max_bytes <= 0:
            raise ConfigError(f"java_writer_max_bytes must be positive, got {self.java_writer_max_bytes}")
        if self.source_limit is not None and self.source_limit <= 0:
            raise ConfigError(f"source_limit must be positive, got {self.source_limit}")
        if self.tombstone_retention_hours < 0:
            raise ConfigError("tombstone_retention_hours must be >= 0")
        if self.retry_timeout_seconds < 0:
            raise ConfigError("retry_timeout_seconds must be >= 0")
        if self.min_sync_interval_seconds < 0:
            raise ConfigError("min_sync_interval_seconds must be >= 0")
        if not self.lease_expiry_seconds > 0 or self.lease_wait_seconds < 0:
            raise ConfigError("lease_expiry_seconds must be > 0 and lease_wait_seconds >= 0")
        if self.max_freshness_seconds is not None and not self.max_freshness_seconds > 0:
            raise ConfigError(f"max_freshness_seconds must be > 0, got {self.max_freshness_seconds}")

    def _check_types_and_schema_changes(self) -> None:
        for kind, allowed in SCHEMA_CHANGE_KINDS.items():
            value = self.schema_changes.get(kind)
            if value is not None and value not in allowed:
                raise ConfigError(
                    f"schema_changes.{kind}={value!r} is not one of {', '.join(allowed)} "
                    f"(--on-{kind.replace('_', '-')})"
                )
        unknown = set(self.schema_changes) - set(SCHEMA_CHANGE_KINDS)
        if unknown:
            raise ConfigError(
                f"schema_changes: unknown kind(s) {', '.join(sorted(unknown))}; known: {', '.join(SCHEMA_CHANGE_KINDS)}"
            )
        if self.schema_change_policy["type_changed"] == "quarantine" and self.on_bad_event != "quarantine":
            raise ConfigError(
                "schema_changes.type_changed = quarantine sets the affected events aside in the quarantine table: "
                "set on_bad_event = quarantine too (--on-bad-event quarantine)"
            )
        for name, mapping in (("type_mappings", self.type_mappings), ("column_types", self.column_types)):
            for source, target in mapping.items():
                problem = type_spec_problem(target)
                if problem:
                    raise ConfigError(f"{name}: {source!r} = {target!r}: {problem}")

    @property
    def schema_change_policy(self) -> dict[str, str]:
        """Each kind of schema change's action: ``schema_changes`` over what ``schema_change_behavior`` implies."""
        base = dict(BEHAVIOR_POLICY[self.schema_change_behavior])
        base.update(self.schema_changes)
        return base

    def _check_jdbc(self) -> None:
        if bool(self.jdbc_table) == bool(self.jdbc_query):
            raise ConfigError("give the JDBC source one of --jdbc-table or --jdbc-query")
        problem = jdbc_url_problem(self.jdbc_url or "", "jdbc_url", "--jdbc-password-file or --jdbc-password-env")
        if problem:
            raise ConfigError(problem)
        if self.jdbc_lookback_seconds < 0 or self.jdbc_fetch_size <= 0:
            raise ConfigError("jdbc_lookback_seconds must be >= 0 and jdbc_fetch_size positive")
        if self.jdbc_mode == "full":
            # One round reads the whole relation and writes the difference: nothing to page, look back or reconcile.
            clashing = [
                n
                for n, v in (
                    ("source_limit", self.source_limit),
                    ("jdbc_lookback_seconds", self.jdbc_lookback_seconds),
                    ("jdbc_reconcile_deletes", self.jdbc_reconcile_deletes),
                )
                if v
            ]
            if clashing:
                raise ConfigError(
                    f"jdbc_mode full reads the whole table each round and deletes what is gone by itself: "
                    f"drop {', '.join(clashing)}"
                )
        if self.jdbc_reconcile_deletes and not self.jdbc_table:
            raise ConfigError("jdbc_reconcile_deletes compares a table's keys: give --jdbc-table, not --jdbc-query")
        if self.jdbc_mode == "timestamp" and self.source_limit is not None:
            raise ConfigError(
                "source_limit pages by the cursor, which needs a tie-breaker: use jdbc_mode timestamp+incrementing"
            )

    @property
    def async_compaction(self) -> bool:
        """Whether this table's compactions run beside its rounds (MERGE_ON_READ only)."""
        return self.table_type == "MERGE_ON_READ" and self.compaction == "async"

    @property
    def resolved_tombstone_path(self) -> str:
        return self.tombstone_path or self.target_base_path.rstrip("/") + "_hudi_cdc_tombstones"

    @property
    def resolved_quarantine_path(self) -> str:
        return self.quarantine_path or self.target_base_path.rstrip("/") + "_hudi_cdc_quarantine"

    def __repr__(self) -> str:
        shown = []
        for d in declared(type(self)):
            value = getattr(self, d.name)
            if d.meta.redact is not None and value:
                value = d.meta.redact(value)
            shown.append(f"{d.name}={value!r}")
        return f"{type(self).__name__}({', '.join(shown)})"

    __str__ = __repr__


def parse_mask(column: str, kind: str) -> tuple[str, int]:
    """A mask setting as ``(kind, N)``: ``hash``, ``redact`` or ``keep_last`` with its N (else 0)."""
    name, _, arg = kind.strip().partition(":")
    if name in ("hash", "redact") and not arg:
        return name, 0
    if name == "keep_last" and arg.strip().isdigit():
        return name, int(arg)
    raise ConfigError(f"masks: {column!r} = {kind!r}: expected hash, redact or keep_last:N (N a whole number)")


def _check_transforms(config: IngestConfig) -> None:
    """The column transforms' settings, as far as they can be checked without the source's columns."""
    keys, renames = set(config.record_key_fields), config.column_renames
    if config.columns_keep and config.columns_drop:
        raise ConfigError("give columns_keep or columns_drop, not both (--columns-keep / --columns-drop)")
    needed = [c for c in config.columns_drop if c in keys or c.startswith("_source_") or c.startswith("_hoodie")]
    if needed:
        raise ConfigError(
            f"columns_drop: {', '.join(needed)} cannot be dropped: the record key and the _source_* columns are what "
            "the merge policy orders and matches rows by"
        )
    renamed_keys = [c for c in (*renames, *renames.values()) if c in keys]
    if renamed_keys:
        raise ConfigError(f"column_renames: {', '.join(renamed_keys)} is a record key column, which is not renamed")
    targets = list(renames.values())
    clash = sorted({t for t in targets if targets.count(t) > 1 and t in renames})
    if clash:
        raise ConfigError(f"column_renames: {', '.join(clash)} is both renamed and a rename's target")
    for column, kind in config.masks.items():
        if parse_mask(column, kind)[0] != "hash" and column in keys:
            raise ConfigError(
                f"masks: {column!r} is a record key column: only hash keeps distinct keys distinct ({kind!r} would "
                "merge rows)"
            )
    wants_salt = any(parse_mask(c, k)[0] == "hash" for c, k in config.masks.items())
    if wants_salt and not (config.mask_salt_env or config.mask_salt_file):
        raise ConfigError("masks: a hash mask needs the secret salt: set mask_salt_env or mask_salt_file")
    if config.mask_salt_env and config.mask_salt_file:
        raise ConfigError("give the mask salt with one of mask_salt_env or mask_salt_file")
    if config.row_filter is not None and not config.row_filter.strip():
        raise ConfigError("row_filter is empty: give a Spark SQL predicate, e.g. \"status <> 'test'\"")
    if config.row_filter and config.history != "none":
        raise ConfigError(
            f"row_filter with history={config.history!r} is not supported: a row leaving the filter is deleted"
        )
    computed_keys = [c for c in config.computed_columns if c in keys or c.startswith("_")]
    if computed_keys:
        raise ConfigError(f"computed_columns: {', '.join(computed_keys)} is a key or reserved column name")


def _check_lineage(config: IngestConfig) -> None:
    """The lineage settings (issue 45; docs/lineage.md): each transport's own, and the client installed."""
    import importlib.util

    transport = config.lineage_transport
    needed = {"http": "lineage_url", "file": "lineage_file"}.get(transport)
    if needed and not getattr(config, needed):
        raise ConfigError(f"lineage_transport {transport!r} needs {needed} (--{needed.replace('_', '-')})")
    if config.lineage_api_key_env and transport != "http":
        raise ConfigError("lineage_api_key_env is for lineage_transport 'http'")
    if transport == "http" and not str(config.lineage_url).startswith(("http://", "https://")):
        raise ConfigError(f"lineage_url {redact_url(str(config.lineage_url))!r}: expected http(s)://host[:port]")
    timeout = config.lineage_timeout_seconds
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= 60:
        raise ConfigError(f"lineage_timeout_seconds must be a number of seconds in (0, 60], got {timeout!r}")
    source = config.lineage_source_namespace
    if source is not None and not re.fullmatch(r"[a-z][a-z0-9+.-]*://[^/\s]+", source):
        raise ConfigError(
            f"lineage_source_namespace {redact_url(source)!r}: expected scheme://host:port, e.g. postgres://db:5432"
        )
    if source is not None and "@" in source:
        raise ConfigError("lineage_source_namespace: no credentials in it, it is sent in every event")
    if source is not None and config.source == "jdbc":
        raise ConfigError("lineage_source_namespace is for Debezium sources: a jdbc source names its table already")
    if config.lineage_source_name is not None and source is None:
        raise ConfigError("lineage_source_name needs lineage_source_namespace (the source database's address)")
    if not config.lineage_namespace.strip():
        raise ConfigError('lineage_namespace is empty: give the job namespace, e.g. "hudi-cdc"')
    if transport != "none" and importlib.util.find_spec("openlineage") is None:
        raise ConfigError(
            f"lineage_transport {transport!r} needs the OpenLineage client: pip install 'hudi-cdc[lineage]'"
        )


KAFKA_SECURITY_SETTINGS = (
    "kafka_security_protocol",
    "kafka_sasl_mechanism",
    "kafka_sasl_username",
    "kafka_sasl_password_env",
    "kafka_sasl_password_file",
    "kafka_ssl_ca_file",
)
"""The Kafka security settings, translated to both Kafka clients by ``hudi_cdc.sources.kafka_security``."""


def kafka_security_problem(settings: Any) -> str | None:  # noqa: ANN401 - IngestConfig or the pipeline's [source]
    """What is wrong with the Kafka security settings of ``settings`` (attributes by the settings' names), or
    None. The message names the setting and the fix; where the value came from is added by the caller."""
    protocol = getattr(settings, "kafka_security_protocol", None) or "PLAINTEXT"
    mechanism = getattr(settings, "kafka_sasl_mechanism", None)
    username = getattr(settings, "kafka_sasl_username", None)
    password_env = getattr(settings, "kafka_sasl_password_env", None)
    password_file = getattr(settings, "kafka_sasl_password_file", None)
    ca_file = getattr(settings, "kafka_ssl_ca_file", None)
    protocols = get_args(KafkaSecurityProtocol)
    if protocol not in protocols:
        return f"kafka_security_protocol={protocol!r} is not one of {', '.join(protocols)}"
    if mechanism is not None and mechanism not in get_args(KafkaSaslMechanism):
        return f"kafka_sasl_mechanism={mechanism!r} is not one of {', '.join(get_args(KafkaSaslMechanism))}"
    sasl = protocol.startswith("SASL_")
    if not sasl:
        given = [
            name
            for name, value in (
                ("kafka_sasl_mechanism", mechanism),
                ("kafka_sasl_username", username),
                ("kafka_sasl_password_env", password_env),
                ("kafka_sasl_password_file", password_file),
            )
            if value
        ]
        if given:
            return (
                f"{given[0]} is a SASL login setting, but kafka_security_protocol={protocol!r}: set "
                "kafka_security_protocol to SASL_SSL (a login over TLS) or SASL_PLAINTEXT"
            )
    else:
        if not mechanism:
            return (
                f"kafka_security_protocol={protocol!r} needs kafka_sasl_mechanism: PLAIN, SCRAM-SHA-256 or "
                "SCRAM-SHA-512 (the one the broker's listener enables in sasl.enabled.mechanisms)"
            )
        if not username:
            return f"kafka_security_protocol={protocol!r} needs kafka_sasl_username: the user hudi-cdc logs in as"
        if bool(password_env) == bool(password_file):
            return (
                f"kafka_security_protocol={protocol!r} needs the password by reference, in one of "
                "kafka_sasl_password_env (an environment variable) or kafka_sasl_password_file (a file)"
                + (", not both" if password_env else "")
            )
    if ca_file and protocol not in ("SSL", "SASL_SSL"):
        return (
            f"kafka_ssl_ca_file is for TLS, but kafka_security_protocol={protocol!r}: set kafka_security_protocol "
            "to SSL or SASL_SSL"
        )
    return None


REGISTRY_AUTH_SETTINGS = ("schema_registry_username", "schema_registry_password_env", "schema_registry_password_file")
"""The schema registry's login (HTTP basic), used by every registry client (``hudi_cdc.sources.registry``)."""


def registry_auth_problem(settings: Any) -> str | None:  # noqa: ANN401 - IngestConfig or the pipeline's [source]
    """What is wrong with the registry login settings of ``settings``, or None: a user needs exactly one
    password reference, and a password reference needs the user."""
    username = getattr(settings, "schema_registry_username", None)
    password_env = getattr(settings, "schema_registry_password_env", None)
    password_file = getattr(settings, "schema_registry_password_file", None)
    if username and bool(password_env) == bool(password_file):
        return (
            "schema_registry_username needs the password by reference, in one of schema_registry_password_env "
            "(an environment variable) or schema_registry_password_file (a file)"
            + (", not both" if password_env else "")
        )
    if not username and (password_env or password_file):
        given = "schema_registry_password_env" if password_env else "schema_registry_password_file"
        return f"{given} needs schema_registry_username: the user hudi-cdc logs in to the registry as"
    return None


def jdbc_url_problem(url: str, setting: str, password_settings: str) -> str | None:
    """What is wrong with a JDBC URL named ``setting`` (a driver we do not ship, a password in it), or None."""
    if not url.startswith(("jdbc:postgresql:", "jdbc:mariadb:", "jdbc:mysql:")):
        return (
            f"{setting} {redact_jdbc_url(url)!r}: expected jdbc:postgresql://host:port/db, "
            "jdbc:mariadb://host:port/db or jdbc:mysql://host:port/db"
        )
    if "password=" in url.lower():
        return f"{setting} carries a password: give it with {password_settings}"
    return None


def resolve_password(file: str | None, env: str | None, *, what: str = "the password") -> str | None:
    """A password given by reference, read only now: from ``file`` (its trailing newline dropped), else the
    environment variable ``env``; None when neither is set. The error names the reference, never a value."""
    if file:
        try:
            return Path(file).read_text().rstrip("\r\n")
        except OSError as exc:
            raise ConfigError(f"cannot read the password file {file}: {exc.strerror}") from None
    if env:
        if env not in os.environ:
            raise ConfigError(f"environment variable {env} ({what}) is not set")
        return os.environ[env]
    return None


def parse_props(text: str, *, origin: str) -> dict[str, str]:
    """Parse Java-properties text (``k=v`` or ``k: v`` lines, ``#``/``!`` comments)."""
    props: dict[str, str] = {}
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        sep = min((i for i in (line.find("="), line.find(":")) if i > 0), default=-1)
        if sep < 0:
            raise ConfigError(f"{origin}:{lineno}: expected key=value, got {line!r}")
        props[line[:sep].strip()] = line[sep + 1 :].strip()
    return props


def _check_shards(config: IngestConfig) -> None:
    """A merged table's routing settings (made by [[routes]]; docs/routing.md)."""
    known = ("_source_server", "_source_database", "_source_schema", "_source_table")
    if any(c not in known for c in config.shard_columns):
        raise ConfigError(f"shard_columns must be among {', '.join(known)}, got {list(config.shard_columns)}")
    if config.shard_sources and config.source not in ("kafka", "files"):
        raise ConfigError("a merged table (shard_sources) reads Kafka topics or folders: source kafka or files")
    if config.shard_sources and not config.shard_columns:
        raise ConfigError("a merged table needs shard_columns (set shard_columns in its [[routes]])")
    if config.unique_keys and not config.shard_sources:
        raise ConfigError("unique_keys is for a merged table: set it in a [[routes]] that merges shards")


CATALOG_NAME_FIELDS = ("server", "database", "schema", "table", "target")


def _check_catalog(config: IngestConfig) -> None:
    """The catalog sync settings (issue 45; docs/catalog.md), as far as they can be checked without the source."""
    import string

    if config.catalog == "hms" and not (config.catalog_uri or "").startswith("thrift://"):
        raise ConfigError(
            "catalog 'hms' needs catalog_uri = \"thrift://host:port\" (--catalog-uri), got "
            + (repr(redact_url(config.catalog_uri)) if config.catalog_uri else "none")
        )
    for name in ("catalog_database", "catalog_table"):
        template = getattr(config, name)
        try:
            fields = [f for _, f, _, _ in string.Formatter().parse(template) if f is not None]
        except ValueError as exc:
            raise ConfigError(f"{name} {template!r}: {exc}") from None
        unknown = [f for f in fields if f not in CATALOG_NAME_FIELDS]
        if unknown or not template.strip():
            raise ConfigError(
                f"{name} {template!r}: a name template over {', '.join('{' + f + '}' for f in CATALOG_NAME_FIELDS)}"
                + (f"; unknown: {', '.join(unknown)}" if unknown else "")
            )


def normalise_settings(
    values: Mapping[str, Any],
    origin: str | Callable[[str], str],
    *,
    place: str | None = None,
    config_class: type[IngestConfig] | None = None,
) -> dict[str, Any]:
    """Settings by their declared names, each value typed by its declared type (text from a variable,
    a flag or a properties file parsed; a list may be comma separated, a table JSON or ``k=v;k=v``).

    ``origin`` says where the values come from (a file and its section, ``keyword arguments``), or is a
    function giving it for one name (its flag, its variable). An unknown name is refused with the closest
    names; an old name is taken with a warning naming the new one; with ``place`` (one of
    :data:`hudi_cdc.settings.PLACES`), a setting not declared for that place is refused naming where it goes.
    """
    cls = config_class or IngestConfig
    out: dict[str, Any] = {}
    for key, value in values.items():
        where = origin(key) if callable(origin) else origin
        d = lookup(cls, key, where, warn=_deprecated)
        if place is not None and place not in d.where:
            raise ConfigError(f"{where}: {d.name} cannot be set in {PLACES[place]}; set it in {_places(d)}")
        value = coerce(d, value, where)
        if value is not None:
            out[d.name] = value
    return out


def _deprecated(message: str) -> None:
    # FutureWarning, not DeprecationWarning: it is meant for users, whom Python shows only the former.
    warnings.warn(message, FutureWarning, stacklevel=4)


def _places(d: Declared) -> str:
    return ", ".join(PLACES[p] for p in PLACES if p in d.where) or "no file (set by the program)"


def settings_from_env(
    env: Mapping[str, str] | None = None, *, place: str | None = "env", config_class: type[IngestConfig] | None = None
) -> dict[str, Any]:
    """The settings of the ``HUDI_CDC__<NAME>`` variables in ``env`` (default: the process's); an error
    names the variable (``HUDI_CDC__TABLE_TYP: unknown setting 'table_typ'; did you mean table_type?``)."""
    env = os.environ if env is None else env
    variables = {k[len(ENV_PREFIX) :].lower(): k for k in env if k.startswith(ENV_PREFIX)}
    values = {name: env[variable] for name, variable in variables.items()}
    return normalise_settings(values, variables.__getitem__, place=place, config_class=config_class)


def merge_settings(
    merged: dict[str, Any],
    layer: Mapping[str, Any],
    *,
    origins: dict[str, str] | None = None,
    origin: str | Callable[[str], str] = "",
) -> None:
    """A later layer's settings over ``merged``'s. A setting declared ``merged_by_key`` (the type
    mappings, schema_changes, catalog_options, hoodie_conf) merges key by key (``--on-column-added``
    changes one kind of a file's ``schema_changes``); any other replaces the earlier value whole.
    With ``origins``, each setting's origin (``origin``, or ``origin(name)``) is recorded there, the
    later one winning: what ``config show`` prints beside each value."""
    by_key = {d.name for d in declared(IngestConfig) if d.meta.merged_by_key}  # masks too: never lifted by a layer
    for key, value in layer.items():
        if key in by_key and key in merged:
            value = {**merged[key], **value}
        merged[key] = value
        if origins is not None:
            origins[key] = origin(key) if callable(origin) else origin


def load_config(
    *,
    config_file: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    props_file: str | os.PathLike[str] | None = None,
    hoodie_conf: Mapping[str, str] | None = None,
    **overrides: Any,
) -> IngestConfig:
    """Merge the built-in defaults, the file, the environment and explicit settings into an
    :class:`IngestConfig`, later ones winning.

    ``config_file`` is TOML with the setting names as keys, the same keys as a pipeline table's section
    (tables such as ``[hoodie_conf]`` or ``masks = { ... }`` included); environment variables are
    ``HUDI_CDC__<SETTING>``; ``overrides`` are the settings by name (old names warn). Then ``props_file``
    and ``hoodie_conf`` (``--props``, ``--hoodie-conf``) over the settings' ``hoodie_conf``.
    """
    return load_config_with_origins(
        config_file=config_file, env=env, props_file=props_file, hoodie_conf=hoodie_conf, **overrides
    )[0]


def load_config_with_origins(
    *,
    config_file: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    props_file: str | os.PathLike[str] | None = None,
    hoodie_conf: Mapping[str, str] | None = None,
    argument_origin: str | Callable[[str], str] = "keyword argument",
    argument_place: str = "python",
    config_class: type[IngestConfig] | None = None,
    **overrides: Any,
) -> tuple[IngestConfig, dict[str, str]]:
    """:func:`load_config`, and where each setting that is not a built-in default came from (the file,
    the variable, the flag or keyword: ``argument_origin``). An error names where its values came from."""
    cls = config_class or IngestConfig
    merged: dict[str, Any] = {}
    origins: dict[str, str] = {}
    if config_file is not None:
        path = Path(config_file)
        try:
            data = tomllib.loads(path.read_text())
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"cannot read config file {path}: {exc}") from exc
        merge_settings(
            merged,
            normalise_settings(data, str(path), place="file", config_class=cls),
            origins=origins,
            origin=str(path),
        )
    env = os.environ if env is None else env
    variables = {k[len(ENV_PREFIX) :].lower(): k for k in env if k.startswith(ENV_PREFIX)}
    merge_settings(merged, settings_from_env(env, config_class=cls), origins=origins, origin=variables.__getitem__)
    arg_origin = argument_origin if callable(argument_origin) else (lambda key: f"{argument_origin} {key}")
    arguments = normalise_settings(overrides, arg_origin, place=argument_place, config_class=cls)
    merge_settings(merged, arguments, origins=origins, origin=arg_origin)

    conf: dict[str, str] = dict(merged.pop("hoodie_conf", {}) or {})
    if props_file is not None:
        path = Path(props_file)
        try:
            conf.update(parse_props(path.read_text(), origin=str(path)))
        except OSError as exc:
            raise ConfigError(f"cannot read --props file {path}: {exc}") from exc
        origins["hoodie_conf"] = f"--props {path}"
    if hoodie_conf:
        conf.update(hoodie_conf)
        origins["hoodie_conf"] = "--hoodie-conf"
    merged["hoodie_conf"] = conf
    required = ["target_base_path", "target_table"]
    if merged.get("source", "files") == "files":
        required += ["source_path", "record_key_fields"]
    elif merged.get("source") == "jdbc":
        required += ["jdbc_url", "record_key_fields"]
    missing = [n for n in required if n not in merged]
    if missing:
        raise ConfigError(f"missing required settings: {', '.join(flag_name(n) for n in missing)}")
    try:
        return cls(**merged), origins
    except ConfigError as exc:
        raise ConfigError(with_origins(str(exc), origins)) from None


def with_origins(message: str, origins: Mapping[str, str]) -> str:
    """``message`` and where the settings it names came from: ``... (source_limit from HUDI_CDC__SOURCE_LIMIT)``."""
    named = [
        name
        for name in origins
        if re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])" + ("" if "_" in name else "(?==)"), message)
    ]
    if not named:
        return message
    return f"{message} ({'; '.join(f'{n} from {origins[n]}' for n in named)})"
