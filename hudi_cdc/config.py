"""Typed configuration: a TOML file, then ``HUDI_CDC__*`` environment variables,
then explicit arguments, later ones winning (PyIceberg's order).

Hudi's own settings pass through untouched, as with HoodieStreamer: ``--props FILE``
(Java properties) first, then each ``--hoodie-conf k=v``.
"""

from __future__ import annotations

import dataclasses
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args
from urllib.parse import urlsplit, urlunsplit

from hudi_cdc.errors import ConfigError
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
    "load_config",
    "normalise_settings",
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
LineageTransport = Literal["none", "http", "file", "console"]  # OpenLineage events (issue 45; sink.lineage)
CatalogKind = Literal["none", "hms", "glue", "datahub", "bigquery"]  # catalog sync (issue 45)

ENV_PREFIX = "HUDI_CDC__"

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


@dataclass(frozen=True)
class IngestConfig:
    """Everything one ``ingest`` run needs. Build it with :func:`load_config`."""

    target_base_path: str
    target_table: str
    record_key_fields: tuple[str, ...] = ()
    """Empty: the Kafka source takes the Debezium key schema's fields, or the table's own."""
    source_path: str | None = None
    flavor: Flavor = "postgres"
    source: SourceKind = "files"
    table_type: TableType = "COPY_ON_WRITE"
    partition_path_field: str | None = None
    source_limit: int | None = None
    """Files: the most bytes of new files one round takes (at least one file); Kafka: the most messages."""
    source_file_suffix: str = ".avro"
    topic: str | None = None
    bootstrap_servers: str | None = None
    schema_registry_url: str | None = None
    kafka_starting_offsets: Literal["earliest", "latest"] = "earliest"
    """Where a table with no checkpoint starts reading the topic."""
    kafka_value_format: ValueFormat = "avro"
    """How the connector wrote the topic: ``avro`` (Confluent wire format, a registry) or ``json``
    (Kafka Connect's JsonConverter)."""
    kafka_value_schema_file: str | None = None
    """JSON without embedded schemas (``schemas.enable=false``): the envelope's Connect schema, or one
    message written with schemas on."""
    allow_data_loss: bool = False
    """Continue when the checkpoint is outside the offsets Kafka still retains."""
    kafka_driver_read_max_messages: int = 20_000
    """Kafka: a round of at most this many messages is read by the process's own consumer instead of a
    Spark Kafka read (about 0.4 s less per round); a larger one by the executors. 0: always Spark's."""
    java_writer_max_rows: int = 20_000
    """A MERGE_ON_READ round of at most this many rows into an unpartitioned table with the bucket index
    is written by Hudi's Java write client in the driver (``sink.small_write``: no Spark job) instead of
    Spark's Hudi datasource. 0: always the datasource."""
    jdbc_url: str | None = None
    """JDBC source: ``jdbc:postgresql://host:port/db`` or ``jdbc:mariadb://`` / ``jdbc:mysql://``."""
    jdbc_table: str | None = None
    jdbc_query: str | None = None
    """JDBC source: a SELECT read instead of a table (its columns must include the key and cursor columns)."""
    jdbc_user: str | None = None
    jdbc_password_file: str | None = None
    jdbc_password_env: str | None = None
    """The password comes from a file or an environment variable, never the command line."""
    jdbc_mode: JdbcMode = "timestamp+incrementing"
    jdbc_timestamp_column: str | None = None
    jdbc_incrementing_column: str | None = None
    jdbc_lookback_seconds: float = 0.0
    """Timestamp modes: each round also re-reads rows whose timestamp is this close below the cursor
    (transactions that committed late with an older timestamp); applying them again changes nothing."""
    jdbc_fetch_size: int = 10_000
    jdbc_reconcile_deletes: bool = False
    """JDBC source (a table): each round also finds keys the table holds that the source no longer has
    (hashes per key range, narrowed where they differ) and deletes them; incrementing mode also warns
    of rows changed after they were read."""
    checkpoint: str | None = None
    """Start from this checkpoint instead of the one stored in the table (recovery)."""
    continuous: bool = False
    min_sync_interval_seconds: float = 0.0
    max_freshness_seconds: float | None = None
    """The table's freshness target (``hudi-cdc run``): a change should be in the table this many seconds
    after the runner saw it arrive. The runner gives the next round to the table whose oldest unapplied
    change is nearest to (or furthest past) its target, and ``status`` and the metrics say when a table
    misses it and why. None: no target; the oldest unapplied change goes first."""
    max_rounds: int | None = None
    """Continuous mode stops after this many rounds (None: until stopped)."""
    retry_timeout_seconds: float = 900.0
    """Continuous mode: how long transient failures (a broker or registry restarting) are retried, with
    backoff, before the run gives up; counted from the first failure of a series."""
    lease_expiry_seconds: float = 60.0
    """The table's writer lease (docs/many-processes.md): a holder whose heartbeat is this many seconds old is
    taken for dead, and another process may take the table over."""
    lease_wait_seconds: float = 0.0
    """How long a writer waits for the table's lease another live process holds before it is refused."""
    toast_placeholder: str = DEFAULT_TOAST_PLACEHOLDER
    tombstone_retention_hours: float = 168.0
    tombstone_path: str | None = None
    """Where delete tombstones live; default ``<target_base_path>_hudi_cdc_tombstones``.

    Never inside the table's base path: a Hudi table nested there broke MOR
    compaction of the outer table (Hudi 1.2, seen here: compacted files went missing).
    """
    schema_change_behavior: SchemaChangeBehavior = "fail"
    """The schema-change policy in one word (docs/types.md#schema-changes): ``schema_changes`` sets each kind,
    over what this implies (fail: the defaults; evolve: type_changed = evolve; ignore: column_added = ignore)."""
    truncate_behavior: TruncateBehavior = "fail"
    """What a TRUNCATE event does: fail the round, apply it (rows older than it go), or ignore it."""
    history: History = "none"
    """What a table keeps of the past (docs/history.md): ``none``, the source's current rows; ``soft_delete``,
    deleted rows stay, marked ``_source_deleted``; ``scd2``, one row per version of a key with its validity.
    Fixed at the table's first commit."""
    on_bad_event: OnBadEvent = "fail"
    """What an event that cannot be applied does: fail the round, or go to the quarantine table and let the rest commit."""
    quarantine_path: str | None = None
    """Where quarantined events live (a Hudi table); default ``<target_base_path>_hudi_cdc_quarantine``."""
    compaction: Compaction = "inline"
    """MERGE_ON_READ: where compactions run. ``inline``: inside the round whose commit schedules one;
    ``async``: on a thread of their own while later rounds go on (for a continuous process with cores to
    spare: on 2 cores shared with the stack it took the rounds' CPU and its p99 was no better than inline)."""
    # --- Type mappings and the schema-change policy per kind (issue 44 items 3-4; docs/types.md) ---
    type_mappings: Mapping[str, str] = field(default_factory=dict)
    """By source type, how every column of that type lands: ``{"tinyint(1)" = "boolean", numeric = "decimal(38,10)"}``
    (docs/types.md#type-mappings)."""
    column_types: Mapping[str, str] = field(default_factory=dict)
    """Per column, how it lands; wins over ``type_mappings``: ``{price = "decimal(12,2)"}``."""
    schema_changes: Mapping[str, str] = field(default_factory=dict)
    """What each kind of schema change does: column_added, column_dropped, type_widened, type_changed,
    column_renamed (docs/types.md#schema-changes); kinds not given follow ``schema_change_behavior``."""
    # --- Column transforms and masking (issue 44 item 2; docs/transforms.md) ---
    columns_keep: tuple[str, ...] = ()
    """Only these data columns are written (the key, ``_source_*`` and computed columns always are)."""
    columns_drop: tuple[str, ...] = ()
    """These data columns are not written (never a key column or a ``_source_*`` column)."""
    column_renames: Mapping[str, str] = field(default_factory=dict)
    """Source column -> table column: ``{email_address = "email"}``."""
    computed_columns: Mapping[str, str] = field(default_factory=dict)
    """Table column -> Spark SQL over the row's (renamed) columns and ``_source_*``; in order."""
    row_filter: str | None = None
    """A Spark SQL predicate: rows it does not hold for (NULL included) are deleted from the table."""
    masks: Mapping[str, str] = field(default_factory=dict)
    """Column -> ``hash`` (HMAC-SHA256 with the salt), ``redact`` or ``keep_last:N``; text columns only."""
    mask_salt_env: str | None = None
    mask_salt_file: str | None = None
    """Where the secret salt of ``hash`` masks is: an environment variable or a file (read when used)."""
    hoodie_conf: Mapping[str, str] = field(default_factory=dict)
    # --- Routing and merged shards (issue 44 item 1; docs/routing.md): set by the pipeline file's [[routes]] ---
    shard_sources: tuple[str, ...] = ()
    """A merged table's shards: the Kafka topics (or folders) it reads, each from a checkpoint of its own held in
    one composite checkpoint (``hudi_cdc.sources.merged``). Empty: a table of one source."""
    shard_columns: tuple[str, ...] = ()
    """A merged table's shard identity columns, written into every row: ``_source_server``, ``_source_database``,
    ``_source_schema``, ``_source_table``; in its record key unless ``unique_keys``."""
    unique_keys: bool = False
    """A merged table whose keys are unique across its shards: the key stays the source's, a key lives in one shard
    at a time, and a key live in two shards at once is a bad event (a cross-shard key clash)."""
    # --- Catalog sync (issue 45; docs/catalog.md): the pipeline file's [catalog], or ingest's --catalog* ---
    catalog: CatalogKind = "none"
    """Where the table is registered by name after each commit that needs it: ``hms`` (a Hive Metastore by thrift
    URI, tested), or ``glue``, ``datahub``, ``bigquery`` (Hudi's own sync tools, passed through; untested here)."""
    catalog_uri: str | None = None
    """The catalog's address: ``thrift://host:9083`` for ``hms``; redacted in logs if it carries credentials."""
    catalog_database: str = "{schema}"
    catalog_table: str = "{table}"
    """Name templates over the source table's ``{server} {database} {schema} {table}`` (and ``{target}``, the
    Hudi table's name): a MERGE_ON_READ table is also registered as ``<name>_ro`` and ``<name>_rt``."""
    catalog_sync_partitions: bool = True
    """Register the table's partitions (and sync when a commit adds one); false: registered unpartitioned."""
    catalog_options: Mapping[str, str] = field(default_factory=dict)
    """Raw sync settings (``hoodie.datasource.hive_sync.*``, ``hoodie.meta.sync.*``, Glue's, ``hive.*`` client
    settings), passed through and winning over hudi-cdc's."""
    # --- Lineage (issue 45 item 5; docs/lineage.md): OpenLineage run events, the pipeline file's [lineage] ---
    lineage_transport: LineageTransport = "none"
    """Where each committed round's OpenLineage events go: ``none`` (off), ``http`` (an OpenLineage endpoint such
    as Marquez), ``file`` (one JSON line per event appended to ``lineage_file``) or ``console`` (the log)."""
    lineage_url: str | None = None
    """http: the endpoint's base URL (``http://marquez:5000``); redacted in logs if it carries credentials."""
    lineage_endpoint: str = "api/v1/lineage"
    """http: the path under ``lineage_url`` the events are POSTed to."""
    lineage_api_key_env: str | None = None
    """http: the NAME of an environment variable holding the API key (sent as a bearer token), read when used."""
    lineage_file: str | None = None
    """file: the file the events are appended to, one JSON line each."""
    lineage_namespace: str = "hudi-cdc"
    """The job namespace; the job is ``hudi-cdc.ingest.<target_table>``."""
    lineage_timeout_seconds: float = 2.0
    """The most a round waits for its events to be sent; later, the round goes on (the events may be lost)."""
    lineage_source_namespace: str | None = None
    """The source database as OpenLineage names it (``postgres://host:5432``, ``mysql://host:3306``): a Debezium
    source's events then also name the database table as an input, beside the topic or folder read (the change
    events do not carry the database's address)."""
    lineage_source_name: str | None = None
    """That table's name: a template over ``{server} {database} {schema} {table}`` (default
    ``{database}.{schema}.{table}`` for postgres://, ``{database}.{table}`` for mysql://)."""

    def __post_init__(self) -> None:
        _check_literal("table_type", self.table_type, TableType)
        _check_literal("flavor", self.flavor, Flavor)
        _check_literal("source", self.source, SourceKind)
        _check_literal("schema_change_behavior", self.schema_change_behavior, SchemaChangeBehavior)
        _check_literal("truncate_behavior", self.truncate_behavior, TruncateBehavior)
        _check_literal("on_bad_event", self.on_bad_event, OnBadEvent)
        _check_literal("history", self.history, History)
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
        _check_literal("compaction", self.compaction, Compaction)
        _check_literal("jdbc_mode", self.jdbc_mode, JdbcMode)
        keyless = self.source in ("files", "jdbc") and not self.record_key_fields
        if any(not k for k in self.record_key_fields) or keyless:
            raise ConfigError("record_key_fields is empty: set --record-key-field id[,k2]")
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
        _check_literal("kafka_value_format", self.kafka_value_format, ValueFormat)
        if self.kafka_value_schema_file and self.kafka_value_format != "json":
            raise ConfigError(
                "kafka_value_schema_file is for JSON without embedded schemas: set --kafka-value-format json"
            )
        _check_literal("kafka_starting_offsets", self.kafka_starting_offsets, Literal["earliest", "latest"])
        if self.kafka_driver_read_max_messages < 0:
            raise ConfigError(f"kafka_driver_read_max_messages must be >= 0, got {self.kafka_driver_read_max_messages}")
        if self.java_writer_max_rows < 0:
            raise ConfigError(f"java_writer_max_rows must be >= 0, got {self.java_writer_max_rows}")
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
        for setting, mapping in (("type_mappings", self.type_mappings), ("column_types", self.column_types)):
            for source, target in mapping.items():
                problem = type_spec_problem(target)
                if problem:
                    raise ConfigError(f"{setting}: {source!r} = {target!r}: {problem}")

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
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        fields["hoodie_conf"] = redact(self.hoodie_conf)
        for name in ("schema_registry_url", "bootstrap_servers"):
            fields[name] = redact_url(fields[name]) if fields[name] else fields[name]
        fields["jdbc_url"] = redact_jdbc_url(self.jdbc_url) if self.jdbc_url else self.jdbc_url
        fields["lineage_url"] = redact_url(self.lineage_url) if self.lineage_url else self.lineage_url
        fields["catalog_uri"] = redact_url(self.catalog_uri) if self.catalog_uri else self.catalog_uri
        fields["catalog_options"] = redact(self.catalog_options)
        body = ", ".join(f"{k}={v!r}" for k, v in fields.items())
        return f"IngestConfig({body})"

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
        raise ConfigError("give columns_keep or columns_drop, not both (--keep-column / --drop-column)")
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

    _check_literal("lineage_transport", config.lineage_transport, LineageTransport)
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


def _check_literal(name: str, value: Any, literal: Any) -> None:
    allowed = get_args(literal)
    if value not in allowed:
        raise ConfigError(f"{name}={value!r} is not one of {', '.join(allowed)}")


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

    _check_literal("catalog", config.catalog, CatalogKind)
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


def normalise_settings(values: Mapping[str, Any], origin: str) -> dict[str, Any]:
    """Settings by their :class:`IngestConfig` names, with text values (env, properties) typed."""
    known = {f.name: f for f in dataclasses.fields(IngestConfig)}
    out: dict[str, Any] = {}
    for key, value in values.items():
        if key not in known:
            raise ConfigError(f"{origin}: unknown setting {key!r}; known: {', '.join(sorted(known))}")
        if value is None:
            continue
        if key == "record_key_fields" and isinstance(value, str):
            value = tuple(k.strip() for k in value.split(",") if k.strip())
        elif key == "record_key_fields":
            value = tuple(value)
        elif key == "table_type" and isinstance(value, str):
            value = _TABLE_TYPE_ALIASES.get(value.lower(), value.upper())
        elif key in (
            "flavor",
            "schema_change_behavior",
            "truncate_behavior",
            "on_bad_event",
            "kafka_value_format",
            "history",
            "lineage_transport",
            "catalog",
        ) and isinstance(value, str):
            value = value.lower()
        elif key in (
            "source_limit",
            "max_rounds",
            "jdbc_fetch_size",
            "kafka_driver_read_max_messages",
            "java_writer_max_rows",
        ) and isinstance(value, str):
            value = _parse_number(key, value, int, origin)
        elif key in (
            "min_sync_interval_seconds",
            "max_freshness_seconds",
            "tombstone_retention_hours",
            "retry_timeout_seconds",
            "jdbc_lookback_seconds",
            "lineage_timeout_seconds",
            "lease_expiry_seconds",
            "lease_wait_seconds",
        ) and isinstance(value, str):
            value = _parse_number(key, value, float, origin)
        elif key in (
            "continuous",
            "allow_data_loss",
            "jdbc_reconcile_deletes",
            "catalog_sync_partitions",
        ) and isinstance(value, str):
            value = value.strip().lower() in ("1", "true", "yes", "on")
        elif key == "hoodie_conf":
            value = dict(value)
        elif key in ("type_mappings", "column_types", "schema_changes"):
            value = _parse_mapping(key, value, origin)
        elif key in ("column_renames", "computed_columns", "masks", "catalog_options"):
            value = _parse_mapping(key, value, origin)
        elif key in ("columns_keep", "columns_drop"):
            value = tuple(c.strip() for c in value.split(",") if c.strip()) if isinstance(value, str) else tuple(value)
        out[key] = value
    return out


def merge_settings(merged: dict[str, Any], layer: Mapping[str, Any]) -> None:
    """A later layer's settings over ``merged``'s; the type mappings and schema_changes merge key by key
    (``--on-column-added`` changes one kind of a file's ``schema_changes``)."""
    for key, value in layer.items():
        if key in ("type_mappings", "column_types", "schema_changes", "catalog_options") and key in merged:
            value = {**merged[key], **value}
        merged[key] = value


def _parse_mapping(key: str, value: Any, origin: str) -> dict[str, str]:  # noqa: ANN401 - TOML/env value
    """A table of strings: TOML's own, or text (env) as a JSON object or ``k=v;k=v``."""
    if isinstance(value, str):
        import json

        text = value.strip()
        try:
            value = json.loads(text) if text.startswith("{") else dict(p.split("=", 1) for p in text.split(";") if p)
        except ValueError:
            raise ConfigError(f'{origin}: {key}={value!r}: expected a JSON object or "k=v;k=v"') from None
    if not isinstance(value, Mapping) or not all(isinstance(v, str) for v in value.values()):
        raise ConfigError(f"{origin}: {key} must be a table of strings, got {value!r}")
    return {str(k).strip(): v.strip() for k, v in value.items()}


def _parse_number(key: str, value: str, kind: type, origin: str) -> Any:
    try:
        return kind(value)
    except ValueError:
        raise ConfigError(f"{origin}: {key}={value!r} is not a number") from None


def load_config(
    *,
    config_file: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    props_file: str | os.PathLike[str] | None = None,
    hoodie_conf: Mapping[str, str] | None = None,
    **overrides: Any,
) -> IngestConfig:
    """Merge file, environment and explicit settings into an :class:`IngestConfig`.

    ``config_file`` is TOML with the setting names as keys (an optional
    ``[hoodie_conf]`` table); environment variables are ``HUDI_CDC__<SETTING>``.
    """
    merged: dict[str, Any] = {}
    if config_file is not None:
        path = Path(config_file)
        try:
            data = tomllib.loads(path.read_text())
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"cannot read config file {path}: {exc}") from exc
        merge_settings(merged, normalise_settings(data, str(path)))
    env = os.environ if env is None else env
    from_env = {k[len(ENV_PREFIX) :].lower(): v for k, v in env.items() if k.startswith(ENV_PREFIX)}
    merge_settings(merged, normalise_settings(from_env, "environment"))
    merge_settings(merged, normalise_settings(overrides, "arguments"))

    conf: dict[str, str] = dict(merged.pop("hoodie_conf", {}) or {})
    if props_file is not None:
        path = Path(props_file)
        try:
            conf.update(parse_props(path.read_text(), origin=str(path)))
        except OSError as exc:
            raise ConfigError(f"cannot read --props file {path}: {exc}") from exc
    conf.update(hoodie_conf or {})
    merged["hoodie_conf"] = conf
    required = ["target_base_path", "target_table"]
    if merged.get("source", "files") == "files":
        required += ["source_path", "record_key_fields"]
    elif merged.get("source") == "jdbc":
        required += ["jdbc_url", "record_key_fields"]
    missing = [n for n in required if n not in merged]
    if missing:
        flags = ", ".join("--" + n.replace("_fields", "_field").replace("_", "-") for n in missing)
        raise ConfigError(f"missing required settings: {flags}")
    return IngestConfig(**merged)
