"""The pipeline file: one source, many tables, read into typed settings.

```toml
name = "inventory"                           # default: the file's name without .toml

[source]
kind = "kafka"                               # or "files": one folder per table under `path`;
                                             # or "jdbc": `url`, `user`, `password_file` or `password_env`,
                                             # tables named schema.table (MySQL: database.table)
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

[tables."inventory.orders"]                  # per table: schema.table, or the topic name
partition_path_field = "region"

[tables."inventory.audit"]
enabled = false

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

[catalog]                                    # register every table by name (docs/catalog.md)
kind = "hms"                                 # a Hive Metastore; per table: catalog_table = "..." etc.
uri = "thrift://127.0.0.1:59083"
database = "{schema}"                        # {server} {database} {schema} {table} {target}

[lineage]                                    # OpenLineage events of every table's rounds (docs/lineage.md)
transport = "http"                           # none (default) | http | file | console
url = "http://marquez:5000"                  # also: endpoint, api_key_env, file, namespace, timeout_seconds
```

A table's settings are ``[defaults]``, then the ``HUDI_CDC__*`` environment
(as for ``ingest``), then the table's own section. Pure: no Spark, no network.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import os
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

from hudi_cdc.config import ENV_PREFIX, Flavor, IngestConfig, merge_settings, normalise_settings
from hudi_cdc.errors import ConfigError
from hudi_cdc.service.routes import Route, parse_routes, shard_column_names

__all__ = ["PipelineSpec", "RunSettings", "SourceSettings", "TableRef", "load_pipeline", "select"]

# Settings a table may not set: they come from [source] or from the command line.
_SOURCE_LEVEL = {
    "source",
    "topic",
    "bootstrap_servers",
    "schema_registry_url",
    "kafka_value_format",
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
    kind: str  # kafka | files | jdbc
    tables: tuple[str, ...]  # patterns
    exclude: tuple[str, ...] = ()
    bootstrap_servers: str | None = None
    schema_registry_url: str | None = None
    path: str | None = None
    url: str | None = None  # jdbc
    user: str | None = None
    password_file: str | None = None
    password_env: str | None = None
    flavor: str = "postgres"
    value_format: str = "avro"
    """Kafka: avro (Confluent wire format, a registry) or json (JsonConverter); see docs/formats.md."""
    schema_change_topic: str | None = None
    """Kafka: Debezium's schema-change topic (``topic.prefix``); a table dropped there is reported, then stopped."""
    transaction_topic: str | None = None
    """Kafka: the connector's transaction topic, for consistent cuts; default ``<topic.prefix>.transaction``."""

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


@dataclass(frozen=True)
class PipelineSpec:
    name: str
    origin: str  # the file, for error messages
    source: SourceSettings
    defaults: Mapping[str, Any]
    overrides: Mapping[str, Mapping[str, Any]]  # by table name or topic
    run: RunSettings
    disabled: frozenset[str] = field(default_factory=frozenset)
    routes: tuple[Route, ...] = ()

    def override_for(self, ref: TableRef) -> Mapping[str, Any]:
        return self.overrides.get(ref.topic) or self.overrides.get(ref.name) or {}

    def enabled(self, ref: TableRef) -> bool:
        return ref.topic not in self.disabled and ref.name not in self.disabled

    def table_config(self, ref: TableRef, env: Mapping[str, str] | None = None) -> IngestConfig:
        """The ``ingest`` settings of one table: defaults, then ``HUDI_CDC__*``, then its own section."""
        where = f"{self.origin} [tables.{ref.name!r}]"
        merged: dict[str, Any] = dict(self.defaults)
        env = os.environ if env is None else env
        from_env = {k[len(ENV_PREFIX) :].lower(): v for k, v in env.items() if k.startswith(ENV_PREFIX)}
        merge_settings(merged, _settings(from_env, "the environment (HUDI_CDC__*)"))
        own = dict(self.override_for(ref))
        conf = {**dict(merged.pop("hoodie_conf", {})), **dict(own.pop("hoodie_conf", {}))}
        merge_settings(merged, own)  # a table's schema_changes / type mappings over the defaults', key by key
        for name in _TEMPLATED:
            if isinstance(merged.get(name), str):
                try:
                    merged[name] = merged[name].format(**ref.parts)
                except (KeyError, IndexError) as exc:
                    raise ConfigError(f"{where}: {name} {merged[name]!r} names an unknown field {exc}") from None
        for name in ("target_base_path", "target_table"):
            if not merged.get(name):
                raise ConfigError(f"{self.origin}: {name} is not set for {ref.name}: set it in [defaults]")
        merged["flavor"] = self.source.flavor
        if self.source.kind == "kafka":
            merged.update(
                source="kafka",
                topic=ref.source_topic,
                bootstrap_servers=self.source.bootstrap_servers,
                schema_registry_url=self.source.schema_registry_url,
                kafka_value_format=self.source.value_format,
            )
        elif self.source.kind == "jdbc":
            merged.update(
                source="jdbc",
                jdbc_url=self.source.url,
                jdbc_table=ref.source_topic,
                jdbc_user=self.source.user,
                jdbc_password_file=self.source.password_file,
                jdbc_password_env=self.source.password_env,
            )
            if not merged.get("record_key_fields") and ref.primary_key:
                merged["record_key_fields"] = ref.primary_key
        else:
            merged.update(source="files", source_path=str(Path(str(self.source.path)) / ref.source_topic))
        if ref.merged:
            merged.update(self._shard_settings(ref, merged.get("record_key_fields") or ()))
        try:
            return IngestConfig(**merged, hoodie_conf=conf)
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None

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


def load_pipeline(path: str | os.PathLike[str]) -> PipelineSpec:
    """Read and check a pipeline file; every problem names the file and the setting."""
    origin = str(path)
    try:
        data = tomllib.loads(Path(path).read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read pipeline file {origin}: {exc}") from exc
    unknown = set(data) - {"name", "source", "defaults", "tables", "run", "routes", "catalog", "lineage"}
    if unknown:
        raise ConfigError(
            f"{origin}: unknown section(s) {', '.join(sorted(unknown))}; known: source, defaults, tables, run, routes, "
            "catalog, lineage"
        )
    name = str(data.get("name") or Path(path).stem)
    source = _source(data.get("source"), origin)
    defaults = _settings(data.get("defaults", {}), f"{origin} [defaults]")
    defaults = {**_catalog(data.get("catalog"), defaults, origin), **defaults}
    defaults.update(_lineage(data.get("lineage", {}), f"{origin} [lineage]"))
    overrides: dict[str, Mapping[str, Any]] = {}
    disabled = set()
    tables = data.get("tables", {})
    if not isinstance(tables, dict):
        raise ConfigError(f'{origin}: [tables] must be tables like [tables."inventory.orders"]')
    for table, values in tables.items():
        if not isinstance(values, dict):
            raise ConfigError(f"{origin}: tables.{table} must be a table of settings")
        values = dict(values)
        if values.pop("enabled", True) is False:
            disabled.add(table)
        overrides[table] = _settings(values, f"{origin} [tables.{table!r}]")
    run = _run(data.get("run", {}), origin, Path(path).parent / f"{name}.state")
    if run.consistent_cut_interval_seconds and (source.kind != "kafka" or source.value_format != "avro"):
        raise ConfigError(
            f'{origin} [run]: consistent_cut_interval_seconds needs [source] kind = "kafka" with Avro values '
            "(the transaction metadata is read from the connector's topics)"
        )
    routes = parse_routes(data.get("routes"), origin)
    if source.kind == "jdbc" and any(r.merging for r in routes):
        raise ConfigError(f'{origin} [[routes]]: merging shards needs [source] kind = "kafka" or "files"')
    return PipelineSpec(name, origin, source, defaults, overrides, run, frozenset(disabled), routes)


def _source(raw: Any, origin: str) -> SourceSettings:  # noqa: ANN401 - TOML value
    if not isinstance(raw, dict):
        raise ConfigError(f"{origin}: a [source] section is required (kind, tables, and where to read)")
    _only_known(raw, SourceSettings, f"{origin} [source]")
    kind = raw.get("kind")
    if kind not in _KINDS:
        raise ConfigError(f'{origin} [source]: kind must be "kafka", "files" or "jdbc", got {kind!r}')
    patterns = _strings(raw.get("tables"), f"{origin} [source] tables")
    if not patterns:
        raise ConfigError(
            f'{origin} [source]: tables is required: topic names or patterns such as "dbserver1.inventory.*"'
        )
    value_format = str(raw.get("value_format", "avro")).lower()
    if value_format not in ("avro", "json") or (kind != "kafka" and "value_format" in raw):
        raise ConfigError(f'{origin} [source]: value_format is "avro" or "json", with kind = "kafka"')
    registry = ("schema_registry_url",) if value_format == "avro" else ()
    needed = {"kafka": ("bootstrap_servers", *registry), "files": ("path",), "jdbc": ("url",)}[kind]
    for name in needed:
        if not raw.get(name):
            raise ConfigError(f"{origin} [source]: {name} is required with kind = {kind!r}")
    if kind == "jdbc":
        _check_jdbc_source(raw, origin)
    flavor = str(raw.get("flavor", "postgres")).lower()
    if flavor not in get_args(Flavor):
        raise ConfigError(f"{origin} [source]: flavor must be one of {', '.join(get_args(Flavor))}, got {flavor!r}")
    return SourceSettings(
        kind=kind,
        tables=patterns,
        exclude=_strings(raw.get("exclude"), f"{origin} [source] exclude"),
        bootstrap_servers=raw.get("bootstrap_servers"),
        schema_registry_url=raw.get("schema_registry_url"),
        path=raw.get("path"),
        url=raw.get("url"),
        user=raw.get("user"),
        password_file=raw.get("password_file"),
        password_env=raw.get("password_env"),
        flavor=flavor,
        value_format=value_format,
        schema_change_topic=_schema_change_topic(raw, kind, origin),
        transaction_topic=_kafka_topic(raw, "transaction_topic", kind, origin),
    )


def _check_jdbc_source(raw: dict[str, Any], origin: str) -> None:
    from hudi_cdc.config import jdbc_url_problem

    problem = jdbc_url_problem(str(raw["url"]), "url", "password_file or password_env")
    if problem:
        raise ConfigError(f"{origin} [source]: {problem}")
    if raw.get("password_file") and raw.get("password_env"):
        raise ConfigError(f"{origin} [source]: give one of password_file and password_env")


def _schema_change_topic(raw: dict[str, Any], kind: str, origin: str) -> str | None:
    topic = raw.get("schema_change_topic")
    if topic is not None and (kind != "kafka" or not isinstance(topic, str) or not topic):
        raise ConfigError(f'{origin} [source]: schema_change_topic is a Kafka topic name, with kind = "kafka"')
    return topic


def _kafka_topic(raw: dict[str, Any], name: str, kind: str, origin: str) -> str | None:
    topic = raw.get(name)
    if topic is not None and (kind != "kafka" or not isinstance(topic, str) or not topic):
        raise ConfigError(f'{origin} [source]: {name} is a Kafka topic name, with kind = "kafka"')
    return topic


def _only_known(raw: dict[str, Any], settings: type, where: str) -> None:
    known = {f.name for f in dataclasses.fields(settings)}
    unknown = set(raw) - known
    if unknown:
        raise ConfigError(
            f"{where}: unknown setting(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(known))}"
        )


def _strings(raw: Any, where: str) -> tuple[str, ...]:  # noqa: ANN401 - TOML value
    if raw is None:
        return ()
    if isinstance(raw, str):
        return (raw,)
    if isinstance(raw, list) and all(isinstance(v, str) for v in raw):
        return tuple(raw)
    raise ConfigError(f"{where}: expected a string or a list of strings, got {raw!r}")


def _settings(raw: Any, where: str) -> dict[str, Any]:  # noqa: ANN401 - TOML value
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: expected a table of settings")
    misplaced = (set(raw) & (_SOURCE_LEVEL | _RUN_LEVEL)) - {"hoodie_conf"}
    if misplaced:
        raise ConfigError(
            f"{where}: {', '.join(sorted(misplaced))} cannot be set per table "
            "(the source's settings go in [source]; continuous and max rounds on the command line)"
        )
    lineage = sorted(k for k in raw if k.startswith("lineage_"))
    if lineage:
        raise ConfigError(f"{where}: {', '.join(lineage)}: lineage is pipeline-wide: set it in [lineage]")
    if raw.get("compaction") == "async":  # the runner has no compaction thread: the plans would pile up
        raise ConfigError(
            f'{where}: compaction = "async" is for `hudi-cdc ingest --continuous`; hudi-cdc run compacts inline'
        )
    return normalise_settings(raw, where)


# The pipeline file's [catalog] keys, as the table settings they stand for (issue 45; docs/catalog.md).
_CATALOG_KEYS = {
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
        raise ConfigError(f"{where}: expected a table (kind, uri, database, table, partitions, options)")
    unknown = set(raw) - set(_CATALOG_KEYS)
    if unknown:
        raise ConfigError(
            f"{where}: unknown setting(s) {', '.join(sorted(unknown))}; known: {', '.join(_CATALOG_KEYS)}"
        )
    if "partitions" in raw and not isinstance(raw["partitions"], bool):
        raise ConfigError(f"{where}: partitions must be true or false, got {raw['partitions']!r}")
    settings = {_CATALOG_KEYS[k]: v for k, v in raw.items()}
    both = sorted(k for k in settings if k in defaults)
    if both:
        raise ConfigError(f"{where}: {', '.join(both)} also set in [defaults]: set it in one place")
    return normalise_settings(settings, where)


def _lineage(raw: Any, where: str) -> dict[str, Any]:  # noqa: ANN401 - TOML value
    """``[lineage]``: the ``lineage_*`` settings by their short names (``transport``, ``url``...), for every table."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: expected a table of settings")
    fields = dataclasses.fields(IngestConfig)
    known = sorted(f.name.removeprefix("lineage_") for f in fields if f.name.startswith("lineage_"))
    unknown = sorted(set(raw) - set(known))
    if unknown:
        raise ConfigError(f"{where}: unknown setting(s) {', '.join(unknown)}; known: {', '.join(known)}")
    return normalise_settings({f"lineage_{k}": v for k, v in raw.items()}, where)


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
        raise ConfigError(
            f"--tables names {', '.join(unknown)}, not among the pipeline's tables: "
            + (", ".join(r.name for r in refs) or "(none found)")
        )
    return [r for r in refs if r.name in wanted or r.topic in wanted]
