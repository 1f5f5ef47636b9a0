"""``hudi-cdc init``: a commented pipeline file from what is found, for ``validate`` and ``run`` to take.

Three places to look: a running Kafka Connect connector (the topics it writes,
its ``topic.prefix``, flavor and converters), a database (its tables and their
primary keys, read over JDBC as a ``[source] source = "jdbc"`` pipeline reads
them), or a folder of change files (one folder per table, named like the
topic). Each table found is listed in ``[source] tables`` and gets a
commented-out section of its own, so a setting for one table is an uncomment
away; nothing is guessed silently: what could not be found is written as a
comment that says what to fill in.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from hudi_cdc.errors import ConfigError
from hudi_cdc.service.spec import SourceSettings, TableRef

__all__ = ["Found", "FoundTable", "from_connect", "from_database", "from_folder", "pipeline_text"]


@dataclass(frozen=True)
class FoundTable:
    topic: str
    """The topic, folder or database table (``schema.table``) the table is read from."""
    primary_key: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return TableRef(self.topic).name


@dataclass(frozen=True)
class Found:
    """What was found: the source's settings (canonical ``[source]`` names), its tables, and notes for the reader."""

    kind: str  # kafka | files | jdbc
    where: str
    tables: tuple[FoundTable, ...]
    source: Mapping[str, Any] = field(default_factory=dict)
    todo: tuple[str, ...] = ()
    """Settings that could not be found: ``key: what to fill in`` lines written as comments."""
    patterns: tuple[str, ...] = ()
    """No table found by name (a connector that has written nothing yet): the patterns its settings give."""


_FLAVORS = (("postgres", "postgres"), ("mysql", "mysql"), ("mariadb", "mysql"), ("sqlserver", "sqlserver"),
            ("oracle", "oracle"))  # fmt: skip


def from_connect(connect_url: str, connector: str, *, bootstrap_servers: str | None = None) -> Found:
    """A connector's tables: the topics it has written (Connect's topic tracking), else the tables its
    ``table.include.list`` names exactly; with its topic prefix, flavor, registry and value format."""
    from hudi_cdc.upstream.connect import connector_states, connector_topics
    from hudi_cdc.upstream.database import redact_url

    (state,) = connector_states(connect_url, [connector])
    config = state.config
    prefix = config.get("topic.prefix") or config.get("database.server.name") or ""
    kind = config.get("connector.class", "")
    flavor = next((f for word, f in _FLAVORS if word in kind.lower()), None)
    topics = [t for t in connector_topics(connect_url, connector) if _is_table_topic(t, prefix)]
    todo: list[str] = []
    patterns: list[str] = []
    if not topics:  # nothing written yet, or no topic tracking: the tables its settings name
        listed = [t.strip() for t in config.get("table.include.list", "").split(",") if t.strip()]
        topics = [f"{prefix}.{t}" for t in listed if not re.search(r"[\\^$*+?()\[\]{}|]", t)]
        if len(topics) < len(listed) or not listed:
            schemas = [s.strip() for s in config.get("schema.include.list", "").split(",") if s.strip()]
            plain = [s for s in schemas if not re.search(r"[\\^$*+?()\[\]{}|]", s)] or ["*"]
            patterns = [f"{prefix}.{s}.*" for s in plain]
            todo.append("tables: the connector has written no topic yet and names (some of) its tables by pattern; "
                        "the patterns below take every table under its prefix: narrow them")  # fmt: skip
    source: dict[str, Any] = {"source": "kafka", "bootstrap_servers": bootstrap_servers, "flavor": flavor}
    if bootstrap_servers is None:
        todo.append('bootstrap_servers: the Kafka brokers the connector writes to, e.g. "broker:9092"')
    if flavor is None:
        todo.append(f"flavor: postgres, mysql, sqlserver or oracle (connector.class is {kind or 'not set'})")
    value = config.get("value.converter", "")
    if "JsonConverter" in value:
        source["kafka_value_format"] = "json"
    else:
        registry = config.get("value.converter.schema.registry.url") or config.get(
            "value.converter.apicurio.registry.url"
        )
        if registry:
            # Apicurio's own API is not the Confluent-compatible one hudi-cdc reads.
            source["schema_registry_url"] = re.sub(r"/apis/registry/v\d+/?$", "/apis/ccompat/v7", registry)
        else:
            todo.append("schema_registry_url: the registry of the connector's Avro schemas")
    if flavor not in (None, "postgres") and config.get("include.schema.changes", "true") == "true":
        source["schema_change_topic"] = prefix or None  # Postgres connectors write none
    where = f"Kafka Connect connector {connector!r} at {redact_url(connect_url)} ({kind or 'class unknown'})"
    tables = tuple(FoundTable(t) for t in sorted(set(topics)))
    return Found("kafka", where, tables, source, tuple(todo), tuple(patterns))


def _is_table_topic(topic: str, prefix: str) -> bool:
    """A change topic (``prefix.schema.table``), not the schema-change or transaction topic."""
    return topic.startswith(f"{prefix}.") and topic.count(".") >= 2 and not topic.endswith(".transaction")


def from_database(
    jdbc_url: str, *, user: str | None = None, password_file: str | None = None, password_env: str | None = None
) -> Found:
    """The base tables the user can read, with their primary keys, as a JDBC pipeline discovers them."""
    from hudi_cdc.config import jdbc_url_problem, redact_jdbc_url
    from hudi_cdc.sources.jdbc import database_tables, source_database

    problem = jdbc_url_problem(jdbc_url, "--jdbc-url", "--password-file or --password-env")
    if problem:
        raise ConfigError(problem)
    tables = database_tables(source_database(jdbc_url, user, password_file, password_env))
    flavor = "postgres" if jdbc_url.startswith("jdbc:postgresql:") else "mysql"
    source = {"source": "jdbc", "jdbc_url": jdbc_url, "jdbc_user": user, "flavor": flavor,
              "jdbc_password_file": password_file, "jdbc_password_env": password_env}  # fmt: skip
    todo = () if password_file or password_env else ("jdbc_password_env: the variable holding the password",)
    found = tuple(FoundTable(name, key) for name, key in tables)
    return Found("jdbc", f"the database {redact_jdbc_url(jdbc_url)}", found, source, todo)


def from_folder(path: str, *, flavor: str = "postgres") -> Found:
    """A folder of change files: each folder in it (not hidden, not ``_...``) is a table, named like its topic."""
    if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]+://", path) and not path.startswith("file://"):
        raise ConfigError(f"--source-path {path}: init lists a local folder; write the pipeline for a copy of it")
    local = path.removeprefix("file://")
    if not os.path.isdir(local):
        raise ConfigError(f"--source-path {path} is not a folder")
    names = sorted(e.name for e in os.scandir(local) if e.is_dir() and not e.name.startswith((".", "_")))
    source = {"source": "files", "source_path": os.path.abspath(local) if "://" not in path else path, "flavor": flavor}
    return Found("files", f"the folder {path}", tuple(FoundTable(n) for n in names), source)


# --- the file ---------------------------------------------------------------------------------------------

# [source] keys by their canonical name, and by the name this release's pipeline file reads them.
_OLD_SOURCE_KEYS = {"source": "kind", "source_path": "path", "jdbc_url": "url", "jdbc_user": "user",
                    "jdbc_password_file": "password_file", "jdbc_password_env": "password_env",
                    "kafka_value_format": "value_format"}  # fmt: skip


def _source_key(name: str) -> str:
    """The key the pipeline file reads: the setting's own name, or (before the [source] renames) its short one."""
    known = {f.name for f in dataclasses.fields(SourceSettings)}
    return name if name in known else _OLD_SOURCE_KEYS.get(name, name)


def _toml(value: Any) -> str:  # noqa: ANN401 - a TOML value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(str(value)) if not isinstance(value, (int, float)) else str(value)


_SOURCE_COMMENTS = {
    "source": "kafka (Debezium topics), files (a folder per table) or jdbc (a database's tables, polled)",
    "bootstrap_servers": "the Kafka brokers",
    "schema_registry_url": "the registry of the Avro schemas (Confluent-compatible API)",
    "kafka_value_format": "the connector's value converter: json (JsonConverter) or avro",
    "schema_change_topic": "Debezium's schema-change topic (topic.prefix): a dropped table is reported, then stopped",
    "source_path": "one folder of change files per table, named like the topic",
    "flavor": "the database the events come from: postgres, mysql, sqlserver or oracle",
    "jdbc_url": "the database (no password here)",
    "jdbc_user": "the user hudi-cdc reads as",
    "jdbc_password_env": "the environment variable holding the password (read when used, never printed)",
    "jdbc_password_file": "a file holding the password",
}


def pipeline_text(
    found: Found,
    *,
    name: str,
    target_base_path: str,
    target_table: str = "{schema}_{table}",
    record_key_fields: Sequence[str] = (),
) -> str:
    """The pipeline file, commented section by section; every table found is listed, each with a commented-out
    section of its own."""
    if not found.tables and not found.patterns:
        raise ConfigError(f"no table found in {found.where}: nothing to write a pipeline for")
    out = [
        f"# The hudi-cdc pipeline {name!r}, written by `hudi-cdc init` from {found.where}",
        f"# on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, with {len(found.tables)} table(s).",
        "#",
        "# Check it:  hudi-cdc validate --pipeline THIS_FILE",
        "# Run it:    hudi-cdc run --pipeline THIS_FILE            (one round of every table; --continuous: keep up)",
        "# One table: hudi-cdc status|verify|tombstones|quarantine list --pipeline THIS_FILE --table schema.table",
        "#",
        '# A table\'s settings are [defaults], then the HUDI_CDC__* environment, then its own [tables."..."] section.',
        "",
        f"name = {_toml(name)}",
        "",
        "# [source]: where the change events come from. One source per pipeline.",
        "[source]",
    ]
    for key, value in found.source.items():
        if value is None:
            continue
        out.append(_commented(f"{_source_key(key)} = {_toml(value)}", _SOURCE_COMMENTS.get(key)))
    for line in found.todo:
        key, _, what = line.partition(": ")
        out.append(f"# {_source_key(key)} = ...   # TO FILL IN: {what}")
    out += [
        "# The tables to replicate: topic (folder, database table) names, or patterns with * ? [..]",
        '# (a pattern such as "server.schema.*" also picks up tables created later). exclude = [...] leaves some out.',
        "tables = [",
        *[f"    {_toml(t.topic)}," for t in found.tables],
        *[f"    {_toml(p)},   # a pattern: no table found by name" for p in found.patterns],
        "]",
        "",
        "# [defaults]: settings every table gets, unless its own section says otherwise. Any `hudi-cdc ingest`",
        "# setting may go here (docs/settings.md). Templates: {topic} {server} {schema} {table}.",
        "[defaults]",
        _commented(f"target_base_path = {_toml(target_base_path)}", "where each Hudi table lives (a URI: s3a://...)"),
        _commented(f"target_table = {_toml(target_table)}", "the Hudi table's name"),
    ]
    out += _key_lines(found.kind, record_key_fields)
    if found.kind == "jdbc":
        out += [
            'jdbc_mode = "full"   # each round reads the whole table and writes what changed, deletes included;',
            '# for big tables follow a cursor instead: jdbc_mode = "timestamp+incrementing" with',
            '# jdbc_timestamp_column = "updated_at" and jdbc_incrementing_column = "id" (docs/jdbc.md)',
        ]
    out += [
        '# table_type = "mor"   # MERGE_ON_READ: cheaper frequent writes, compacted in the background (default: cow)',
        "",
        '# [tables."schema.table"]: one table\'s own settings, over [defaults]. One section per table found,',
        "# commented out: uncomment a section to give that table settings of its own. A section that matches",
        "# no table is refused by validate and run.",
    ]
    for table in found.tables:
        out += _table_lines(found.kind, table)
    out += [
        "",
        "# [run]: how `hudi-cdc run` runs the tables (max_concurrent_tables, state_dir, metrics_port...).",
        "# [run]",
        "# max_concurrent_tables = 2",
        "",
    ]
    return "\n".join(out)


def _key_lines(kind: str, record_key_fields: Sequence[str]) -> list[str]:
    """``[defaults]``' key: the one given, else what each kind of source keys a table by."""
    if record_key_fields:
        return [_commented(f"record_key_fields = {_toml(list(record_key_fields))}", "the key column(s)")]
    if kind == "files":
        return ['record_key_fields = ["id"]   # TO CHECK: change files carry no key; the key column(s) of every '
                "table (a table's own section may differ)"]  # fmt: skip
    if kind == "jdbc":
        return ["# record_key_fields = [...]   # default: each table's primary key (listed below)"]
    return ["# record_key_fields = [...]   # default: the message key's fields"]


def _table_lines(kind: str, table: FoundTable) -> list[str]:
    """A table's own section, commented out: its key when the source gave one, and the settings most given."""
    lines = ["", f"# [tables.{_toml(table.name)}]   # {_read_from(kind)} {table.topic}"]
    if table.primary_key:
        lines.append(f"# record_key_fields = {_toml(list(table.primary_key))}   # its primary key")
    return [
        *lines,
        '# masks = { email = "redact" }   # a column hashed, redacted or partly kept before it is written',
        "# columns_drop = []              # columns left out of the Hudi table",
        "# enabled = false                # leave this table out of the pipeline",
    ]


def _commented(line: str, comment: str | None) -> str:
    return f"{line}   # {comment}" if comment else line


def _read_from(kind: str) -> str:
    return {"kafka": "topic", "files": "folder", "jdbc": "database table"}.get(kind, "source")
