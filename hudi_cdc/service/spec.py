"""The pipeline file: one source, many tables, read into typed settings.

```toml
name = "inventory"                           # default: the file's name without .toml

[source]                                     # the ingest settings' own names
source = "kafka"                             # or "files": one folder per table under `source_path`;
                                             # or "jdbc": `jdbc_url`, `jdbc_user`, `jdbc_password_file` or
                                             # `jdbc_password_env`, tables named schema.table (MySQL: database.table)
bootstrap_servers = "broker:9092"
schema_registry_url = "http://registry:8080/apis/ccompat/v7"
tables = ["dbserver1.inventory.*"]           # topic (or folder) names; * and ? match, exact names too
exclude = ["dbserver1.inventory.audit_*"]
flavor = "postgres"

[defaults]                                   # any `ingest` setting, for every table
target_base_path = "/lake/{schema}/{table}"  # {topic} {server} {schema} {table}
target_table = "{schema}_{table}"
table_type = "mor"
max_freshness_seconds = 30                   # hudi-cdc run: rank and report tables by this target

[defaults.hoodie_conf]
"hoodie.parquet.max.file.size" = "134217728"

[tables."inventory.*"]                       # a pattern (* ? [..]) over schema.table names and topics
min_sync_interval_seconds = 10

[tables."inventory.orders"]                  # per table: schema.table, or the topic name
partition_path_field = "region"

[tables."inventory.audit"]
enabled = false

[tables."inventory.invoices"]                # a table the source does not have yet:
expected = true                              # without this, a section that matches no table is refused
masks = { iban = "redact" }

[[routes]]                                   # source tables to target tables (docs/routing.md)
tables = ["shop_*.orders"]
target = "orders"                            # the target's name; [tables."orders"] configures it
shard_columns = ["schema"]                   # merge the shards into one table, keyed by shard

[run]
max_concurrent_tables = 2
discovery_interval_seconds = 60
state_dir = "/var/lib/hudi-cdc/inventory"    # default: <name>.state beside the file
metrics_port = 9464                          # continuous: Prometheus metrics (hudi_cdc.service.metrics)
backlog_interval_seconds = 15                # how often the served backlog gauges are measured
offset_poll_seconds = 0.5                    # continuous Kafka runs: how often the topics' end offsets are read
pushgateway_url = "pushgateway:9091"         # one-shot: push them at the end
consistent_cut_interval_seconds = 60         # continuous Kafka runs: transaction-consistent cuts (0: off)
cut_retention = 10                           # the cuts kept readable (their commits pinned in each table)

[catalog]                                    # register every table by name (docs/catalog.md)
catalog = "hms"                              # a Hive Metastore; per table: catalog_table = "..." etc.
catalog_uri = "thrift://127.0.0.1:59083"
catalog_database = "{schema}"                # {server} {database} {schema} {table} {target}

[lineage]                                    # OpenLineage events of every table's rounds (docs/lineage.md)
lineage_transport = "http"                   # none (default) | http | file | console
lineage_url = "http://marquez:5000"          # also lineage_endpoint, lineage_api_key_env, lineage_namespace...
```

One precedence, later winning: a table's setting is the built-in default, then the file (``[catalog]``,
``[lineage]`` and ``[defaults]``, then the ``[tables."…"]`` sections that match the table: patterns in
the order of the file, then its exact name), then the ``HUDI_CDC__*`` environment variables, then
command-line arguments; sections merge setting by setting. A section that matches no table of the source
is refused (:meth:`PipelineSpec.check_sections`) unless it says ``expected = true``. The ``[source]``,
``[catalog]`` and ``[lineage]`` keys of earlier releases (``kind``, ``path``, ``url``, ``uri``,
``transport``...) still work until the next release, with a warning naming the new one.
Pure: no Spark, no network.
"""

from __future__ import annotations

import dataclasses
import difflib
import fnmatch
import logging
import os
import tomllib
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any, get_args

from hudi_cdc.config import (
    ENV_PREFIX,
    KAFKA_SECURITY_SETTINGS,
    REGISTRY_AUTH_SETTINGS,
    Flavor,
    IngestConfig,
    kafka_security_problem,
    merge_settings,
    normalise_settings,
    registry_auth_problem,
    with_origins,
)
from hudi_cdc.errors import ConfigError
from hudi_cdc.service.routes import Route, parse_routes, shard_column_names
from hudi_cdc.settings import declared, setting

__all__ = [
    "PipelineSpec",
    "RunSettings",
    "SourceSettings",
    "TableRef",
    "TableSection",
    "load_pipeline",
    "select",
]

log = logging.getLogger("hudi_cdc.spec")

# Settings a table may not set: they come from [source] or from the command line.
_SOURCE_LEVEL = {
    "source",
    "topic",
    "bootstrap_servers",
    "schema_registry_url",
    "kafka_value_format",
    *KAFKA_SECURITY_SETTINGS,
    *REGISTRY_AUTH_SETTINGS,
    "source_path",
    "flavor",
    "jdbc_url",
    "jdbc_user",
    "jdbc_password_file",
    "jdbc_password_env",
    "jdbc_table",
    "jdbc_query",
    "shard_sources",  # routing: [[routes]] sets them
    "shard_columns",
    "unique_keys",
}
_ROUTE_LEVEL = {"shard_sources", "shard_columns", "unique_keys"}
_SRC = frozenset({"source"})
_KINDS = ("kafka", "files", "jdbc")
_RUN_LEVEL = {"continuous", "max_rounds", "checkpoint"}
_TEMPLATED = ("target_base_path", "target_table", "tombstone_path", "quarantine_path")


@dataclass(frozen=True)
class TableRef:
    """One table of the source: a topic, a folder named like one (``server.schema.table``), or a database table."""

    topic: str
    primary_key: tuple[str, ...] = field(default=(), compare=False)
    """A database table's primary key (JDBC source): its record key unless the pipeline sets one."""
    shards: tuple[str, ...] = field(default=(), compare=False)
    """A routed table (``topic`` is then its target name): the source tables (topics or folders) it reads."""
    route: Route | None = field(default=None, compare=False)

    @property
    def merged(self) -> bool:
        """A merge route's table: a composite source, shard columns, one checkpoint for every shard."""
        return self.route is not None and self.route.merging

    @property
    def source_topic(self) -> str:
        """The topic (folder, database table) a table that is not merged reads."""
        return self.shards[0] if self.shards else self.topic

    @property
    def parts(self) -> dict[str, str]:
        pieces = self.topic.split(".")
        table = pieces[-1]
        schema = pieces[-2] if len(pieces) > 1 else ""
        server = ".".join(pieces[:-2])
        return {"topic": self.topic, "server": server, "schema": schema, "table": table}

    @property
    def name(self) -> str:
        """How the table is named in the pipeline file, ``--tables``, status and control: ``schema.table``."""
        if self.route is not None:
            return self.topic  # the target, as the route renders it
        parts = self.parts
        return f"{parts['schema']}.{parts['table']}" if parts["schema"] else parts["table"]


@dataclass(frozen=True)
class SourceSettings:
    """``[source]``: the pipeline's one source. Its keys are the ``ingest`` settings' names; the short names
    of earlier releases (``aliases``) are still read, with a warning, until the next release."""

    source: str = setting(
        '"kafka", "files" (a folder per table) or "jdbc" (a database\'s tables).', where=_SRC, aliases=("kind",)
    )
    tables: tuple[str, ...] = setting(
        "Topic (folder, database table) names or patterns (* ? [..]) of the tables to replicate.", where=_SRC
    )
    exclude: tuple[str, ...] = setting("Patterns of tables left out.", default=(), where=_SRC)
    bootstrap_servers: str | None = setting("Kafka: the brokers (host:port,...).", default=None, where=_SRC)
    schema_registry_url: str | None = setting(
        "Kafka with Avro values: the schema registry's URL.", default=None, where=_SRC
    )
    source_path: str | None = setting(
        "Files: the folder holding one folder of change files per table.", default=None, where=_SRC, aliases=("path",)
    )
    jdbc_url: str | None = setting(
        "JDBC: the database's JDBC URL (no password in it).", default=None, where=_SRC, aliases=("url",)
    )
    jdbc_user: str | None = setting("JDBC: the user.", default=None, where=_SRC, aliases=("user",))
    jdbc_password_file: str | None = setting(
        "JDBC: a file holding the password.", default=None, where=_SRC, aliases=("password_file",)
    )
    jdbc_password_env: str | None = setting(
        "JDBC: an environment variable holding the password.", default=None, where=_SRC, aliases=("password_env",)
    )
    flavor: str = setting("The source database: postgres, mysql, sqlserver or oracle.", default="postgres", where=_SRC)
    kafka_value_format: str = setting(
        "Kafka: avro (Confluent wire format, a registry) or json (JsonConverter); see docs/formats.md.",
        default="avro",
        where=_SRC,
        aliases=("value_format",),
    )
    kafka_security_protocol: str = setting(
        "Kafka: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL (docs/secured-kafka.md).", default="PLAINTEXT", where=_SRC
    )
    kafka_sasl_mechanism: str | None = setting(
        "Kafka, SASL: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512.", default=None, where=_SRC
    )
    kafka_sasl_username: str | None = setting("Kafka, SASL: the user.", default=None, where=_SRC)
    kafka_sasl_password_env: str | None = setting(
        "Kafka, SASL: an environment variable holding the password.", default=None, where=_SRC, secret="reference"
    )
    kafka_sasl_password_file: str | None = setting(
        "Kafka, SASL: a file holding the password.", default=None, where=_SRC, secret="reference"
    )
    kafka_ssl_ca_file: str | None = setting(
        "Kafka, SSL and SASL_SSL: the PEM file of the CA(s) of the brokers' certificates.", default=None, where=_SRC
    )
    schema_registry_username: str | None = setting(
        "Kafka with Avro values: the schema registry's user (HTTP basic).", default=None, where=_SRC
    )
    schema_registry_password_env: str | None = setting(
        "Kafka with Avro values: an environment variable holding the registry's password.",
        default=None,
        where=_SRC,
        secret="reference",
    )
    schema_registry_password_file: str | None = setting(
        "Kafka with Avro values: a file holding the registry's password.", default=None, where=_SRC, secret="reference"
    )
    schema_change_topic: str | None = setting(
        "Kafka: Debezium's schema-change topic (topic.prefix); a table dropped there is reported, then stopped.",
        default=None,
        where=_SRC,
    )
    transaction_topic: str | None = setting(
        "Kafka: the connector's transaction topic, for consistent cuts; default <topic.prefix>.transaction.",
        default=None,
        where=_SRC,
    )

    # The names the code has used for these (the file's keys before they became the settings' names).
    @property
    def kind(self) -> str:
        return self.source

    @property
    def path(self) -> str | None:
        return self.source_path

    @property
    def url(self) -> str | None:
        return self.jdbc_url

    @property
    def user(self) -> str | None:
        return self.jdbc_user

    @property
    def password_file(self) -> str | None:
        return self.jdbc_password_file

    @property
    def password_env(self) -> str | None:
        return self.jdbc_password_env

    @property
    def value_format(self) -> str:
        return self.kafka_value_format

    def matches(self, topic: str) -> bool:
        return any(fnmatch.fnmatchcase(topic, p) for p in self.tables) and not any(
            fnmatch.fnmatchcase(topic, p) for p in self.exclude
        )


@dataclass(frozen=True)
class RunSettings:
    max_concurrent_tables: int = 2
    discovery_interval_seconds: float = 60.0
    state_dir: str = ""
    metrics_port: int = 0  # continuous mode: serve Prometheus metrics here (0: not served)
    metrics_address: str = "127.0.0.1"
    backlog_interval_seconds: float = 15.0  # how often the served hudi_cdc_behind and hudi_cdc_lag_seconds are measured
    pushgateway_url: str | None = None  # one-shot runs: push the metrics here at the end
    offset_poll_seconds: float = 0.5
    """Continuous Kafka runs: how often every table's end offsets are asked for (one request for all).
    A table whose topic has nothing new gets no round; a change waits at most this long to be seen."""
    consistent_cut_interval_seconds: float = 0.0
    """Continuous Kafka runs: take a transaction-consistent cut of the tables this often (0: never); the
    connector needs provide.transaction.metadata=true (docs/consistent-cuts.md)."""
    cut_retention: int = 10
    """Consistent cuts kept in cuts.json, and readable: each table's cleaner keeps every commit since its
    oldest kept cut (hoodie.clean.commits.retained raised as needed), so more cuts keep more file versions."""


def is_pattern(name: str) -> bool:
    """Whether a table name in the file is a pattern (``*``, ``?``, ``[..]``, as fnmatch reads them)."""
    return any(c in name for c in "*?[")


@dataclass(frozen=True)
class TableSection:
    """One ``[tables."…"]`` section: an exact table name (schema.table, a topic, a route's target) or a pattern."""

    key: str
    settings: Mapping[str, Any]
    enabled: bool | None = None
    """``enabled = true/false`` when the section says it; the last matching section that says it decides."""
    expected: bool = False
    """``expected = true``: the table may not exist yet; the section is not refused for matching nothing."""

    @property
    def pattern(self) -> bool:
        return is_pattern(self.key)

    @property
    def where(self) -> str:
        return f'[tables."{self.key}"]'

    def matches(self, ref: TableRef) -> bool:
        """A pattern matches the table's schema.table name or its topic (fnmatch, as ``[source] tables``); an
        exact name is one of them."""
        if self.pattern:
            return fnmatch.fnmatchcase(ref.name, self.key) or fnmatch.fnmatchcase(ref.topic, self.key)
        return self.key in (ref.name, ref.topic)


@dataclass(frozen=True)
class PipelineSpec:
    name: str
    origin: str  # the file, for error messages
    source: SourceSettings
    defaults: Mapping[str, Any]
    """The file-wide settings every table starts from: ``[catalog]``, ``[lineage]`` and ``[defaults]``."""
    sections: tuple[TableSection, ...]
    run: RunSettings
    routes: tuple[Route, ...] = ()
    layers: tuple[tuple[str, Mapping[str, Any]], ...] = ()
    """``defaults`` by the section each setting comes from (``[catalog]``, ``[lineage]``, ``[defaults]``)."""
    environment: Mapping[str, tuple[str, Any]] = field(default_factory=dict)
    """The ``HUDI_CDC__*`` settings read when the file was loaded: setting -> (variable, value)."""

    def sections_for(self, ref: TableRef) -> list[TableSection]:
        """The sections that apply to ``ref``, weakest first: patterns in the file's order, then its exact name."""
        patterns = [s for s in self.sections if s.pattern and s.matches(ref)]
        return patterns + [s for s in self.sections if not s.pattern and s.matches(ref)]

    def enabled(self, ref: TableRef) -> bool:
        enabled = True
        for section in self.sections_for(ref):
            if section.enabled is not None:
                enabled = section.enabled
        return enabled

    def check_sections(self, found: Sequence[TableRef]) -> None:
        """Refuse a ``[tables."…"]`` section that matches none of ``found`` (the source's tables, as discovered:
        ``[source] tables`` and ``exclude`` applied, disabled ones included), taking ``[[routes]]`` into account:
        its settings would silently apply to nothing (a mask, a key, a type). ``hudi-cdc run`` and ``validate``
        call it before anything is checked or written; a section saying ``expected = true`` is let through."""
        if not self.sections or not found:
            return  # no table at all is an error of its own
        routed, refused = self.routed(list(found))
        tables = [*routed, *(TableRef(n) for n in refused if not any(r.name == n for r in routed))]
        problems = []
        for section in self.sections:
            if any(section.matches(r) for r in tables):
                continue
            sources = [r for r in found if section.matches(r)]
            if sources and not section.settings:
                continue  # enabled = false/true on a routed source table: it decides before routing
            if sources:
                problems.append(self._routed_away(section, sources[0]))
            elif section.expected:
                log.info("%s %s matches no table yet (expected = true)", self.origin, section.where)
            else:
                problems.append(self._unmatched(section, tables))
        if problems:
            raise ConfigError(f"{self.origin}: " + "; ".join(problems))

    def _routed_away(self, section: TableSection, source: TableRef) -> str:
        route = next(r for r in self.routes if r.matches(source.name, source.topic))
        try:
            target = route.render(source.parts)
        except ConfigError:
            target = route.target
        return (
            f"{section.where} names {source.name}, which {route.where} maps to target {target!r}: the section's "
            f'settings would apply to nothing; set them in [tables."{target}"]'
        )

    def _unmatched(self, section: TableSection, tables: Sequence[TableRef]) -> str:
        # A name is compared with names, a topic (server.schema.table) with topics.
        if section.key.count(".") >= 2 and any(r.topic.count(".") >= 2 for r in tables):
            candidates = sorted({r.topic for r in tables})
        else:
            candidates = sorted({r.name for r in tables})
        if section.pattern:  # a pattern's neighbours: a schema's or a table name's pattern
            parts = [r.parts for r in tables]
            candidates += sorted(
                {f"{p['schema']}.*" for p in parts if p["schema"]} | {f"*.{p['table']}" for p in parts}
            )
        close = closest(section.key, candidates)
        if close:
            hint = f"did you mean {' or '.join(close)}?"
        else:
            shown = sorted({r.name for r in tables})
            more = f" and {len(shown) - 10} more" if len(shown) > 10 else ""
            hint = "the source's tables: " + ", ".join(shown[:10]) + more + "."
        excluded = any(fnmatch.fnmatchcase(section.key, p) for p in self.source.exclude)
        why = " (it is excluded by [source] exclude)" if excluded else ""
        return (
            f"{section.where} matches no table of the source{why}; {hint} A section that matches no table would "
            "leave its settings unapplied: correct its name, or, for a table the source will only have later, "
            "add expected = true to the section"
        )

    def table_config(self, ref: TableRef, env: Mapping[str, str] | None = None) -> IngestConfig:
        """The ``ingest`` settings of one table (see :meth:`table_config_with_origins`)."""
        return self.table_config_with_origins(ref, env)[0]

    def table_config_with_origins(
        self,
        ref: TableRef,
        env: Mapping[str, str] | None = None,
        *,
        arguments: Mapping[str, Any] | None = None,
    ) -> tuple[IngestConfig, dict[str, str]]:
        """The ``ingest`` settings of one table, and where each comes from: ``default``, the file and its
        section, an environment variable, an argument. ``hoodie_conf``'s keys have origins of their own
        (``hoodie_conf.<key>``).

        Later wins: the built-in defaults, ``[catalog]``/``[lineage]``/``[defaults]``, the table's sections
        (patterns in file order, then its exact name), ``HUDI_CDC__*`` (``env``; default: as read when the file
        was loaded), then ``arguments``.
        """
        merged: dict[str, Any] = {}
        origins: dict[str, str] = {}
        conf: dict[str, str] = {}

        def layer(values: Mapping[str, Any], origin: Any) -> None:  # noqa: ANN401 - a str or str -> str
            values = dict(values)
            for key, value in dict(values.pop("hoodie_conf", None) or {}).items():
                conf[key] = value
                origins[f"hoodie_conf.{key}"] = origin("hoodie_conf") if callable(origin) else origin
            merge_settings(merged, values)
            origins.update({k: origin(k) if callable(origin) else origin for k in values})

        for section_name, values in self.layers:
            layer(values, f"{self.origin} {section_name}")
        for section in self.sections_for(ref):
            layer(section.settings, f"{self.origin} {section.where}")
        environment = self.environment if env is None else read_environment(env, self.origin)
        layer({k: v for k, (_, v) in environment.items()}, lambda k: f"environment variable {environment[k][0]}")
        if arguments:
            layer(normalise_settings(arguments, "arguments"), lambda k: f"argument {k}")
        for name in _TEMPLATED:
            if isinstance(merged.get(name), str):
                try:
                    merged[name] = merged[name].format(**ref.parts)
                except (KeyError, IndexError) as exc:
                    raise ConfigError(
                        f"{origins[name]}: {name} {merged[name]!r} names an unknown field {exc} (for {ref.name})"
                    ) from None
        for name in ("target_base_path", "target_table"):
            if not merged.get(name):
                raise ConfigError(
                    f'{self.origin}: {name} is not set for {ref.name}: set it in [defaults] or [tables."{ref.name}"]'
                )
        source = f"{self.origin} [source]"
        derived = self._source_settings(ref, merged)
        merged.update(derived)
        origins.update(dict.fromkeys(derived, source))
        if "topic" in derived or "jdbc_table" in derived or "source_path" in derived:
            name = "topic" if "topic" in derived else "jdbc_table" if "jdbc_table" in derived else "source_path"
            origins[name] = f"{source} tables: the table {ref.source_topic}"
        if "record_key_fields" in derived:
            origins["record_key_fields"] = "the source table's primary key"
        if ref.merged:
            assert ref.route is not None
            shards = self._shard_settings(ref, merged.get("record_key_fields") or ())
            merged.update(shards)
            origins.update(dict.fromkeys(shards, f"{self.origin} {ref.route.where}"))
        try:
            config = IngestConfig(**merged, hoodie_conf=conf)
        except ConfigError as exc:
            raise ConfigError(f"{self.origin}: table {ref.name}: {with_origins(str(exc), origins)}") from None
        for f in dataclasses.fields(IngestConfig):
            origins.setdefault(f.name, "default")
        return config, origins

    def _source_settings(self, ref: TableRef, merged: Mapping[str, Any]) -> dict[str, Any]:
        """What ``[source]`` (and the table's place in it) sets for the table."""
        out: dict[str, Any] = {"flavor": self.source.flavor}
        if self.source.kind == "kafka":
            out.update(
                source="kafka",
                topic=ref.source_topic,
                bootstrap_servers=self.source.bootstrap_servers,
                schema_registry_url=self.source.schema_registry_url,
                kafka_value_format=self.source.value_format,
                **{name: getattr(self.source, name) for name in (*KAFKA_SECURITY_SETTINGS, *REGISTRY_AUTH_SETTINGS)},
            )
        elif self.source.kind == "jdbc":
            out.update(
                source="jdbc",
                jdbc_url=self.source.url,
                jdbc_table=ref.source_topic,
                jdbc_user=self.source.user,
                jdbc_password_file=self.source.password_file,
                jdbc_password_env=self.source.password_env,
            )
            if not merged.get("record_key_fields") and ref.primary_key:
                out["record_key_fields"] = ref.primary_key
        else:
            out.update(source="files", source_path=str(Path(str(self.source.path)) / ref.source_topic))
        return out

    def _shard_settings(self, ref: TableRef, keys: Any) -> dict[str, Any]:  # noqa: ANN401 - the table's setting
        """A merged table's shards and shard columns; a configured record key gains the route's key columns."""
        assert ref.route is not None
        shards = ref.shards
        if self.source.kind == "files":
            shards = tuple(str(Path(str(self.source.path)) / s) for s in ref.shards)
        settings: dict[str, Any] = {
            "shard_sources": shards,
            "shard_columns": shard_column_names(ref.route.shard_columns),
            "unique_keys": ref.route.unique_keys,
        }
        if keys:
            keys = (keys,) if isinstance(keys, str) else tuple(keys)
            settings["record_key_fields"] = (*keys, *[c for c in ref.route.key_columns() if c not in keys])
        return settings

    def routed(self, refs: Sequence[TableRef]) -> tuple[list[TableRef], dict[str, str]]:
        """The pipeline's tables from the source's: each source table its route's target (the first route
        that matches), the rest as they are; and, by name, the tables refused with why."""
        targets: dict[str, tuple[Route, list[TableRef]]] = {}
        tables: list[TableRef] = []
        refused: dict[str, str] = {}
        for ref in refs:
            route = next((r for r in self.routes if r.matches(ref.name, ref.topic)), None)
            if route is None:
                tables.append(ref)
                continue
            try:
                target = route.render(ref.parts)
            except ConfigError as exc:
                refused[ref.name] = f"{self.origin} {exc}"
                continue
            held = targets.setdefault(target, (route, []))
            if held[0] is not route:
                refused[target] = (
                    f"{self.origin}: {held[0].where} and {route.where} both render target {target!r} "
                    f"(for {held[1][0].name} and {ref.name}): one route per target"
                )
            held[1].append(ref)
        for target, (route, sources) in targets.items():
            if target in refused:
                continue
            if not route.merging and len(sources) > 1:
                refused[target] = (
                    f"{self.origin} {route.where}: maps {', '.join(s.name for s in sources)} to one target "
                    'without shard columns: set shard_columns (e.g. ["schema"]) to merge them keyed by shard, '
                    "or unique_keys = true if their keys are unique across them"
                )
                continue
            if any(t.name == target for t in tables):
                refused[target] = f"{self.origin} {route.where}: target {target!r} is also a table of the source"
                continue
            sources.sort(key=lambda s: s.topic)
            key = sources[0].primary_key
            tables.append(TableRef(target, key, tuple(s.topic for s in sources), route))
        return tables, refused


_SECTIONS = ("name", "source", "defaults", "tables", "run", "routes", "catalog", "lineage")


def load_pipeline(path: str | os.PathLike[str], *, env: Mapping[str, str] | None = None) -> PipelineSpec:
    """Read and check a pipeline file, and the ``HUDI_CDC__*`` variables of ``env`` (default: the process's);
    every problem names the file and the section, or the variable."""
    origin = str(path)
    try:
        data = tomllib.loads(Path(path).read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read pipeline file {origin}: {exc}") from exc
    for key in data:
        if key not in _SECTIONS:
            raise ConfigError(f"{origin}: unknown section {key!r}{did_you_mean(key, _SECTIONS)}")
    name = str(data.get("name") or Path(path).stem)
    source = _source(data.get("source"), origin)
    defaults = _settings(data.get("defaults", {}), f"{origin} [defaults]", "defaults")
    catalog = _catalog(data.get("catalog"), defaults, origin)
    lineage = _lineage(data.get("lineage", {}), f"{origin} [lineage]")
    layers = tuple((n, v) for n, v in (("[catalog]", catalog), ("[lineage]", lineage), ("[defaults]", defaults)) if v)
    sections = _sections(data.get("tables", {}), origin)
    run = _run(data.get("run", {}), origin, Path(path).parent / f"{name}.state")
    if run.consistent_cut_interval_seconds and (source.kind != "kafka" or source.value_format != "avro"):
        raise ConfigError(
            f'{origin} [run]: consistent_cut_interval_seconds needs [source] source = "kafka" with Avro values '
            "(the transaction metadata is read from the connector's topics)"
        )
    routes = parse_routes(data.get("routes"), origin)
    if source.kind == "jdbc" and any(r.merging for r in routes):
        raise ConfigError(f'{origin} [[routes]]: merging shards needs [source] source = "kafka" or "files"')
    environment = read_environment(os.environ if env is None else env, origin)
    return PipelineSpec(
        name, origin, source, {**catalog, **lineage, **defaults}, sections, run, routes, layers, environment
    )


def read_environment(env: Mapping[str, str], origin: str) -> dict[str, tuple[str, Any]]:
    """The ``HUDI_CDC__*`` variables of ``env`` as a pipeline's tables take them: setting -> (variable, value).

    A variable the pipeline cannot take (a source setting, which ``[source]`` gives; ``--continuous``'s)
    is refused here, once, naming it, rather than failing every table."""
    out: dict[str, tuple[str, Any]] = {}
    for variable in sorted(k for k in env if k.startswith(ENV_PREFIX)):
        where = f"environment variable {variable}"
        values = normalise_settings({variable[len(ENV_PREFIX) :].lower(): env[variable]}, where, place="env")
        for name, value in values.items():
            problem = _env_problem(name, origin)
            if problem:
                raise ConfigError(f"{where}: {problem}; unset {variable} (it is for hudi-cdc ingest)")
            out[name] = (variable, value)
    return out


def _env_problem(name: str, origin: str) -> str | None:
    if name in _ROUTE_LEVEL:
        return f"{name} is set by the pipeline's [[routes]] in {origin}, not per process"
    if name in _SOURCE_LEVEL:
        return f"{name} is a setting of the pipeline's source: a pipeline takes it from [source] in {origin}"
    if name in ("continuous", "max_rounds"):
        return f"{name} of a pipeline is given on hudi-cdc run's command line (--continuous, --max-rounds)"
    if name == "checkpoint":
        return "every table of a pipeline starts from its own checkpoint"
    return None


def _sections(raw: Any, origin: str) -> tuple[TableSection, ...]:  # noqa: ANN401 - TOML value
    if not isinstance(raw, dict):
        raise ConfigError(f'{origin}: [tables] must be tables like [tables."inventory.orders"]')
    known = {f.name for f in dataclasses.fields(IngestConfig)}
    sections = []
    for key, values in raw.items():
        where = f'{origin} [tables."{key}"]'
        if not isinstance(values, dict):
            raise ConfigError(f"{where} must be a table of settings")
        values = dict(values)
        for sub, value in values.items():
            if sub not in known and sub not in ("enabled", "expected") and isinstance(value, dict):
                raise ConfigError(
                    f'{origin} [tables.{key}.{sub}]: a table name with a dot goes in quotes: [tables."{key}.{sub}"]'
                )
            if sub not in known and sub not in ("enabled", "expected"):
                close = difflib.get_close_matches(sub, ["enabled", "expected"], n=1, cutoff=0.75)
                if close:
                    raise ConfigError(f"{where}: unknown setting {sub!r}; did you mean {close[0]}?")
        enabled, expected = values.pop("enabled", None), values.pop("expected", False)
        for flag, value in (("enabled", enabled), ("expected", expected)):
            if value is not None and not isinstance(value, bool):
                raise ConfigError(f"{where}: {flag} must be true or false, got {value!r}")
        sections.append(TableSection(key, _settings(values, where, "table"), enabled, bool(expected)))
    exact = {s.key for s in sections if not s.pattern}
    for key in exact:
        pieces = key.split(".")
        if len(pieces) > 2 and ".".join(pieces[-2:]) in exact:
            raise ConfigError(
                f'{origin}: [tables."{key}"] and [tables."{".".join(pieces[-2:])}"] name the same table (a topic '
                "and its schema.table name): keep one"
            )
    return tuple(sections)


def old_names(cls: type) -> dict[str, str]:
    """A section's old key names (its dataclass's ``aliases``), each with the name that replaces it."""
    return {alias: d.name for d in declared(cls) for alias in d.meta.aliases}


def _source(raw: Any, origin: str) -> SourceSettings:  # noqa: ANN401 - TOML value
    if not isinstance(raw, dict):
        raise ConfigError(f"{origin}: a [source] section is required (source, tables, and where to read)")
    where = f"{origin} [source]"
    raw = canonical_keys(raw, old_names(SourceSettings), [f.name for f in dataclasses.fields(SourceSettings)], where)
    kind = raw.get("source")
    if kind not in _KINDS:
        raise ConfigError(f'{where}: source must be "kafka", "files" or "jdbc", got {kind!r}')
    patterns = _strings(raw.get("tables"), f"{where} tables")
    if not patterns:
        raise ConfigError(f'{where}: tables is required: topic names or patterns such as "dbserver1.inventory.*"')
    value_format = str(raw.get("kafka_value_format", "avro")).lower()
    if value_format not in ("avro", "json") or (kind != "kafka" and "kafka_value_format" in raw):
        raise ConfigError(f'{where}: kafka_value_format is "avro" or "json", with source = "kafka"')
    registry = ("schema_registry_url",) if value_format == "avro" else ()
    needed = {"kafka": ("bootstrap_servers", *registry), "files": ("source_path",), "jdbc": ("jdbc_url",)}[kind]
    for name in needed:
        if not raw.get(name):
            raise ConfigError(f"{where}: {name} is required with source = {kind!r}")
    if kind == "jdbc":
        _check_jdbc_source(raw, where)
    security = {name: raw[name] for name in KAFKA_SECURITY_SETTINGS if name in raw}
    if security and kind != "kafka":
        raise ConfigError(f'{where}: {next(iter(security))} is a Kafka setting, with source = "kafka"')
    security.setdefault("kafka_security_protocol", "PLAINTEXT")
    if any(not isinstance(v, str) for v in security.values()):
        raise ConfigError(f"{where}: the kafka_security_* and kafka_sasl_* settings are text")
    problem = kafka_security_problem(SimpleNamespace(**security))
    if problem:
        raise ConfigError(f"{where}: {problem}")
    registry_auth = {name: raw[name] for name in REGISTRY_AUTH_SETTINGS if name in raw}
    if registry_auth and kind != "kafka":
        raise ConfigError(f'{where}: {next(iter(registry_auth))} is a Kafka setting, with source = "kafka"')
    if any(not isinstance(v, str) for v in registry_auth.values()):
        raise ConfigError(f"{where}: the schema_registry_* settings are text")
    problem = registry_auth_problem(SimpleNamespace(**registry_auth))
    if problem:
        raise ConfigError(f"{where}: {problem}")
    flavor = str(raw.get("flavor", "postgres")).lower()
    if flavor not in get_args(Flavor):
        raise ConfigError(f"{where}: flavor must be one of {', '.join(get_args(Flavor))}, got {flavor!r}")
    return SourceSettings(
        source=kind,
        tables=patterns,
        exclude=_strings(raw.get("exclude"), f"{where} exclude"),
        bootstrap_servers=raw.get("bootstrap_servers"),
        schema_registry_url=raw.get("schema_registry_url"),
        source_path=raw.get("source_path"),
        jdbc_url=raw.get("jdbc_url"),
        jdbc_user=raw.get("jdbc_user"),
        jdbc_password_file=raw.get("jdbc_password_file"),
        jdbc_password_env=raw.get("jdbc_password_env"),
        flavor=flavor,
        kafka_value_format=value_format,
        **security,
        **registry_auth,
        schema_change_topic=_kafka_topic(raw, "schema_change_topic", kind, where),
        transaction_topic=_kafka_topic(raw, "transaction_topic", kind, where),
    )


def _check_jdbc_source(raw: dict[str, Any], where: str) -> None:
    from hudi_cdc.config import jdbc_url_problem

    problem = jdbc_url_problem(str(raw["jdbc_url"]), "jdbc_url", "jdbc_password_file or jdbc_password_env")
    if problem:
        raise ConfigError(f"{where}: {problem}")
    if raw.get("jdbc_password_file") and raw.get("jdbc_password_env"):
        raise ConfigError(f"{where}: give one of jdbc_password_file and jdbc_password_env")


def _kafka_topic(raw: dict[str, Any], name: str, kind: str, where: str) -> str | None:
    topic = raw.get(name)
    if topic is not None and (kind != "kafka" or not isinstance(topic, str) or not topic):
        raise ConfigError(f'{where}: {name} is a Kafka topic name, with source = "kafka"')
    return topic


def canonical_keys(
    raw: Mapping[str, Any], old_names: Mapping[str, str], known: Iterable[str], where: str
) -> dict[str, Any]:
    """``raw`` by the settings' canonical names. An old name is taken with a FutureWarning naming the new one
    (until the next release); an old and a new name of one setting, or an unknown name, are refused, the latter
    with the closest names."""
    known = tuple(known)
    out: dict[str, Any] = {}
    for key, value in raw.items():
        new = old_names.get(key)
        if new is not None:
            if new in raw:
                raise ConfigError(f"{where}: {key} and {new} are the same setting: keep {new}")
            warnings.warn(
                f"{where}: {key} is an old name of {new}, accepted until the next release: use {new}",
                FutureWarning,
                stacklevel=3,
            )
            key = new
        elif key not in known:
            raise ConfigError(f"{where}: unknown setting {key!r}{did_you_mean(key, known, old_names)}")
        out[key] = value
    return out


def did_you_mean(name: str, known: Iterable[str], old_names: Mapping[str, str] | None = None) -> str:
    """``; did you mean x?`` with the known names closest to ``name`` (an old name's match suggests its new
    name), or, for a short list, ``; known: ...``."""
    known = list(known)
    old_names = dict(old_names or {})
    close = list(dict.fromkeys(old_names.get(c, c) for c in closest(name, [*known, *old_names])))
    if close:
        return f"; did you mean {' or '.join(close)}?"
    return f"; known: {', '.join(sorted(known))}" if len(known) <= 20 else "; every setting is in docs/settings.md"


def closest(name: str, candidates: Iterable[str], *, cutoff: float = 0.6) -> list[str]:
    """The candidates nearest to ``name`` (difflib's ratio): the best, and any as near as it give or take 0.05."""
    scored = sorted(((difflib.SequenceMatcher(None, name, c).ratio(), c) for c in set(candidates)), reverse=True)
    if not scored or scored[0][0] < cutoff:
        return []
    return sorted(c for score, c in scored[:3] if score >= max(cutoff, scored[0][0] - 0.05))


def _only_known(raw: dict[str, Any], settings: type, where: str) -> None:
    known = [f.name for f in dataclasses.fields(settings)]
    for key in raw:
        if key not in known:
            raise ConfigError(f"{where}: unknown setting {key!r}{did_you_mean(key, known)}")


def _strings(raw: Any, where: str) -> tuple[str, ...]:  # noqa: ANN401 - TOML value
    if raw is None:
        return ()
    if isinstance(raw, str):
        return (raw,)
    if isinstance(raw, list) and all(isinstance(v, str) for v in raw):
        return tuple(raw)
    raise ConfigError(f"{where}: expected a string or a list of strings, got {raw!r}")


def _settings(raw: Any, where: str, place: str) -> dict[str, Any]:  # noqa: ANN401 - TOML value
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: expected a table of settings")
    misplaced = sorted((set(raw) & (_SOURCE_LEVEL | _RUN_LEVEL)) - {"hoodie_conf"})
    if misplaced:
        raise ConfigError(
            f"{where}: {', '.join(misplaced)} cannot be set per table "
            "(the source's settings go in [source]; continuous and max rounds on the command line)"
        )
    lineage = sorted(k for k in raw if k.startswith("lineage_"))
    if lineage:
        raise ConfigError(f"{where}: {', '.join(lineage)}: lineage is pipeline-wide: set it in [lineage]")
    return normalise_settings(raw, where, place=place)


# The pipeline file's [catalog] keys are the table settings' names; the short ones of earlier releases still work.
CATALOG_OLD_NAMES = {
    "kind": "catalog",
    "uri": "catalog_uri",
    "database": "catalog_database",
    "table": "catalog_table",
    "partitions": "catalog_sync_partitions",
    "options": "catalog_options",
}


def _catalog(raw: Any, defaults: Mapping[str, Any], origin: str) -> dict[str, Any]:  # noqa: ANN401 - TOML value
    """``[catalog]`` as settings for every table (a table's own catalog_* settings win over them)."""
    where = f"{origin} [catalog]"
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: expected a table (catalog, catalog_uri, catalog_database...)")
    settings = canonical_keys(raw, CATALOG_OLD_NAMES, CATALOG_OLD_NAMES.values(), where)
    partitions = settings.get("catalog_sync_partitions")
    if partitions is not None and not isinstance(partitions, bool):
        raise ConfigError(f"{where}: catalog_sync_partitions must be true or false, got {partitions!r}")
    both = sorted(k for k in settings if k in defaults)
    if both:
        raise ConfigError(f"{where}: {', '.join(both)} also set in [defaults]: set it in one place")
    return normalise_settings(settings, where, place="catalog")


def _lineage(raw: Any, where: str) -> dict[str, Any]:  # noqa: ANN401 - TOML value
    """``[lineage]``: the ``lineage_*`` settings, for every table (their short names, ``transport``, ``url``...,
    are the old ones)."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: expected a table of settings")
    known = [f.name for f in dataclasses.fields(IngestConfig) if f.name.startswith("lineage_")]
    old = {name.removeprefix("lineage_"): name for name in known}
    return normalise_settings(canonical_keys(raw, old, known, where), where, place="lineage")


def _run(raw: Any, origin: str, default_state: Path) -> RunSettings:  # noqa: ANN401 - TOML value
    if not isinstance(raw, dict):
        raise ConfigError(f"{origin}: [run] must be a table")
    _only_known(raw, RunSettings, f"{origin} [run]")
    settings = RunSettings(**{**raw, "state_dir": str(raw.get("state_dir") or default_state)})
    if not isinstance(settings.max_concurrent_tables, int) or settings.max_concurrent_tables < 1:
        raise ConfigError(f"{origin} [run]: max_concurrent_tables must be a positive integer")
    if not isinstance(settings.discovery_interval_seconds, (int, float)) or settings.discovery_interval_seconds < 0:
        raise ConfigError(f"{origin} [run]: discovery_interval_seconds must be a number >= 0")
    if not isinstance(settings.metrics_port, int) or not 0 <= settings.metrics_port < 65536:
        raise ConfigError(f"{origin} [run]: metrics_port must be a port number (0: no metrics endpoint)")
    cut = settings.consistent_cut_interval_seconds
    if isinstance(cut, bool) or not isinstance(cut, (int, float)) or cut < 0:
        raise ConfigError(f"{origin} [run]: consistent_cut_interval_seconds must be a number >= 0 (0: no cuts)")
    kept = settings.cut_retention
    if isinstance(kept, bool) or not isinstance(kept, int) or kept < 1:
        raise ConfigError(f"{origin} [run]: cut_retention must be a whole number >= 1 (the cuts kept readable)")
    for name in ("backlog_interval_seconds", "offset_poll_seconds"):
        interval = getattr(settings, name)
        if isinstance(interval, bool) or not isinstance(interval, (int, float)) or interval <= 0:
            raise ConfigError(f"{origin} [run]: {name} must be a number > 0")
    return settings


def select(refs: Sequence[TableRef], wanted: Sequence[str]) -> list[TableRef]:
    """The tables ``--tables`` names (by name or topic); a name that matches nothing is an error."""
    if not wanted:
        return list(refs)
    unknown = [w for w in wanted if not any(w in (r.name, r.topic) for r in refs)]
    if unknown:
        names = sorted({r.name for r in refs})
        close = [c for w in unknown for c in difflib.get_close_matches(w, names, n=2, cutoff=0.6)]
        raise ConfigError(
            f"--tables names {', '.join(unknown)}, not among the pipeline's tables"
            + (f"; did you mean {' or '.join(dict.fromkeys(close))}?" if close else "")
            + " (the pipeline's tables: "
            + (", ".join(names) or "none found")
            + ")"
        )
    return [r for r in refs if r.name in wanted or r.topic in wanted]
