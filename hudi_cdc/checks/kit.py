"""The check kit: what a check returns, the report, the context the checks share, and what a Debezium envelope needs.

Each check is a small function of a :class:`_Context` that returns an :class:`_Outcome`
(ok, warn, fail; :class:`_Skip` to skip) with what it found, where, and how to fix a
problem. The context asks each service once (the Kafka watermarks, the connector's
state, the database connection, the table's checkpoint); when one cannot be had, the
first check that needed it fails with the reason and the later ones are skipped
pointing at it. The envelope's needs are here because two areas ask them: a
file's writer schema and the registry's value schema. The modules of the
checks import this kit and nothing above it, never each other.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from hudi_cdc.config import IngestConfig
from hudi_cdc.errors import ConfigError, HudiCdcError, TransientError
from hudi_cdc.sink import options as opt

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from hudi_cdc.upstream.connect import ConnectorState
    from hudi_cdc.upstream.database import SourceDatabase

__all__ = ["Check", "Status", "ValidationReport"]

Status = Literal["ok", "warn", "fail", "skip"]

# Debezium's defaults, for settings a connector's config leaves out.
_DEBEZIUM_DEFAULTS = {
    "decimal.handling.mode": "precise",
    "time.precision.mode": "adaptive",
    "tombstones.on.delete": "true",
    "slot.name": "debezium",
    "publication.name": "dbz_publication",
}


@dataclass(frozen=True)
class Check:
    name: str
    status: Status
    detail: str
    fix: str | None = None
    transient: bool = False
    """A failure a retry may clear (a service did not answer), not a wrong setting."""
    error: BaseException | None = field(default=None, repr=False, compare=False)
    """The error behind a failure that came from a service, re-raised as it was by :func:`preflight`."""

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status, "detail": self.detail, "fix": self.fix}


@dataclass(frozen=True)
class ValidationReport:
    checks: tuple[Check, ...]

    @property
    def ok(self) -> bool:
        """No check failed (warnings and skips are fine)."""
        return not self.failed

    @property
    def failed(self) -> tuple[Check, ...]:
        return tuple(c for c in self.checks if c.status == "fail")

    @property
    def warnings(self) -> tuple[Check, ...]:
        return tuple(c for c in self.checks if c.status == "warn")

    def check(self, name: str) -> Check:
        return next(c for c in self.checks if c.name == name)

    def to_dict(self) -> dict[str, Any]:
        counts = {s: sum(c.status == s for c in self.checks) for s in ("ok", "warn", "fail", "skip")}
        return {"ok": self.ok, "counts": counts, "checks": [c.to_dict() for c in self.checks]}

    def lines(self) -> list[str]:
        """One line per check (``ok|WARN|FAIL|skip  name: detail``), an indented fix under each problem."""
        out = []
        for c in self.checks:
            label = c.status.upper() if c.status in ("warn", "fail") else c.status
            out.append(f"{label:<4}  {c.name}: {c.detail}")
            if c.fix and c.status != "ok":
                out.append(f"      fix: {c.fix}")
        return out


# --- outcomes and the runner ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Outcome:
    status: Status
    detail: str
    fix: str | None = None


def _ok(detail: str) -> _Outcome:
    return _Outcome("ok", detail)


def _warn(detail: str, fix: str | None = None) -> _Outcome:
    return _Outcome("warn", detail, fix)


def _fail(detail: str, fix: str | None = None) -> _Outcome:
    return _Outcome("fail", detail, fix)


class _Skip(Exception):
    """The check's input is missing: raised by the context, turned into a ``skip``."""

    def __init__(self, detail: str, fix: str | None = None) -> None:
        super().__init__(detail)
        self.detail, self.fix = detail, fix


_NO_SPARK = "needs a Spark session (the CLI starts one; from Python pass spark=)"


class _Context:
    """The inputs of one validation, each fetched once; a failed fetch is remembered and blamed once."""

    def __init__(
        self,
        config: IngestConfig,
        spark: SparkSession | None,
        database: SourceDatabase | None,
        connect_url: str | None,
        connector: str | None,
        source_table: str | None,
    ) -> None:
        self.config = config
        self.spark = spark
        self.database = database
        self.connect_url = connect_url
        self.connector_name = connector
        self.source_table_arg = source_table
        self.blamed: dict[int, str] = {}  # id(error) -> the check that reported it
        self._memo: dict[str, tuple[Any, BaseException | None]] = {}
        self._conn: Any = None

    def memo(self, key: str, compute: Callable[[], Any]) -> Any:
        if key not in self._memo:
            try:
                self._memo[key] = (compute(), None)
            except (HudiCdcError, _Skip) as exc:
                self._memo[key] = (None, exc)
        value, error = self._memo[key]
        if error is not None:
            raise error
        return value

    def need_spark(self) -> SparkSession:
        if self.spark is None:
            raise _Skip(_NO_SPARK)
        return self.spark

    def close(self) -> None:
        for conn in (self._conn, self._memo.get("jdbc.connection", (None, None))[0]):
            if conn is not None:
                conn.close()

    # -- the table --------------------------------------------------------------------------------------
    def table(self) -> Any:
        from hudi_cdc.sink.hudi import HudiTable

        return HudiTable(self.need_spark(), self.config.target_base_path)

    def table_exists(self) -> bool:
        return bool(self.memo("table_exists", lambda: self.table().exists()))

    def stored_checkpoint(self) -> tuple[str, dict[str, Any]] | None:
        """Where the checkpoint the next round starts from comes from, and the checkpoint (None: no checkpoint)."""
        return self.memo("checkpoint", self._stored_checkpoint)  # type: ignore[no-any-return]

    def _stored_checkpoint(self) -> tuple[str, dict[str, Any]] | None:
        if self.config.checkpoint is not None:
            return "--checkpoint", self._parse_checkpoint(self.config.checkpoint)
        if not self.table_exists():
            return None
        commit = self.table().checkpoint_commit()
        if commit is None:
            return None
        return f"commit {commit.instant}", self._parse_checkpoint(commit.extra[opt.CHECKPOINT_KEY])

    def _parse_checkpoint(self, text: str) -> dict[str, Any]:
        if self.config.source == "jdbc":
            from hudi_cdc.sources.jdbc import JdbcSource

            return JdbcSource(self.need_spark(), self.config).parse_checkpoint(text)
        if self.config.source == "kafka":
            from hudi_cdc.sources.kafka import parse_kafka_checkpoint

            assert self.config.topic
            return parse_kafka_checkpoint(text, self.config.topic)
        from hudi_cdc.sources.files import FileSource

        return FileSource(self.need_spark(), self.config).parse_checkpoint(text)

    # -- Kafka ------------------------------------------------------------------------------------------
    def kafka_conf(self) -> dict[str, str]:
        from hudi_cdc.sources.kafka import broker_conf
        from hudi_cdc.sources.kafka_security import KafkaSecurity

        return broker_conf(self.config.hoodie_conf, KafkaSecurity.of(self.config))

    def watermarks(self) -> dict[int, tuple[int, int]]:
        return self.memo("watermarks", self._watermarks)  # type: ignore[no-any-return]

    def _watermarks(self) -> dict[int, tuple[int, int]]:
        from hudi_cdc.sources.kafka import KafkaSource

        # The source's own planner call: the same client settings, the same errors as the ingest's.
        return KafkaSource(self.spark, self.config)._watermarks()  # type: ignore[arg-type]

    def topic_config(self) -> dict[str, str]:
        return self.memo("topic_config", self._topic_config)  # type: ignore[no-any-return]

    def _topic_config(self) -> dict[str, str]:
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient, ConfigResource

        from hudi_cdc.console import kafka_logger

        assert self.config.topic and self.config.bootstrap_servers, "validated by IngestConfig"
        conf: dict[str, Any] = {"bootstrap.servers": self.config.bootstrap_servers, **self.kafka_conf()}
        conf["logger"] = kafka_logger()  # typed Any: the stubs want scalar settings only
        admin = AdminClient(conf)
        resource = ConfigResource("topic", self.config.topic)
        try:
            entries = admin.describe_configs([resource])[resource].result(15)
        except KafkaException as exc:
            raise TransientError(f"cannot describe topic {self.config.topic!r}: {exc}") from None
        return {name: str(entry.value) for name, entry in entries.items()}

    def registry(self) -> Any:
        from hudi_cdc.sources.kafka import CLIENT_PREFIX
        from hudi_cdc.sources.registry import RegistryLogin, SchemaRegistry

        assert self.config.schema_registry_url
        auth = self.config.hoodie_conf.get(CLIENT_PREFIX + "basic.auth.user.info")
        login = RegistryLogin.of(self.config)
        return self.memo(
            "registry", lambda: SchemaRegistry(self.config.schema_registry_url or "", basic_auth=auth, login=login)
        )

    def subjects(self) -> dict[str, list[int] | None]:
        """Schema ids of ``<topic>-key`` and ``<topic>-value`` (None: no such subject)."""

        def fetch() -> dict[str, list[int] | None]:
            return {s: self.registry().subject_schema_ids(f"{self.config.topic}-{s}") for s in ("key", "value")}

        return self.memo("subjects", fetch)  # type: ignore[no-any-return]

    # -- Kafka Connect ----------------------------------------------------------------------------------
    def connector(self) -> ConnectorState:
        if not self.connect_url:
            raise _Skip("no Kafka Connect URL given", "pass --connect-url http://connect:8083 (and --connector NAME)")
        return self.memo("connector", self._connector)  # type: ignore[no-any-return]

    def _connector(self) -> ConnectorState:
        from hudi_cdc.upstream.connect import connector_states

        assert self.connect_url
        if self.connector_name:
            found = [
                s for s in connector_states(self.connect_url, [self.connector_name]) if s.name == self.connector_name
            ]
            if not found:
                raise ConfigError(f"no connector named {self.connector_name!r} on {self.connect_url}")
            return found[0]
        prefix = _topic_prefix(self.stream_name())
        states = connector_states(self.connect_url)
        if prefix is None:
            if len(states) == 1:
                return states[0]
            raise _Skip(
                f"{len(states)} connectors on {self.connect_url} and no topic to tell which one feeds this table",
                "pass --connector NAME",
            )
        mine = [s for s in states if _prefix_of(s.config) == prefix]
        if len(mine) == 1:
            return mine[0]
        if not mine:
            raise ConfigError(
                f"no connector on {self.connect_url} writes topics with prefix {prefix!r} "
                f"(connectors: {', '.join(s.name for s in states) or 'none'}); pass --connector NAME"
            )
        raise _Skip(f"connectors {', '.join(s.name for s in mine)} all use prefix {prefix!r}", "pass --connector NAME")

    def connector_setting(self, key: str) -> tuple[str, bool]:
        """The connector's value of ``key`` (Debezium's default when unset), and whether it was set."""
        config = self.connector().config
        return (config[key], True) if key in config else (_DEBEZIUM_DEFAULTS.get(key, ""), False)

    # -- the source database ----------------------------------------------------------------------------
    def db(self) -> Any:
        if self.database is None:
            raise _Skip(
                "no source database given",
                "pass --source-url postgresql://user@host:port/db with --password-file or --password-env",
            )
        if self._conn is None:
            self._conn = self.memo("db", self.database.connect)
        return self._conn

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        from psycopg.rows import dict_row

        with self.db().cursor(row_factory=dict_row) as cur:
            cur.execute(sql, params)
            return list(cur.fetchall())

    def source_table(self) -> tuple[str, str]:
        """``(schema, table)`` of the replicated table: given, or from the Debezium topic (or folder) name."""
        if self.source_table_arg:
            schema, _, table = self.source_table_arg.rpartition(".")
            return schema or "public", table
        name = self.stream_name()
        parts = name.split(".")
        if len(parts) >= 3:
            return parts[-2], parts[-1]
        raise _Skip(
            f"cannot tell the source table from {name!r} (not <prefix>.<schema>.<table>)",
            "pass --source-table schema.table",
        )

    def stream_name(self) -> str:
        """The Debezium topic, or the folder of its files (a storage sink names it after the topic)."""
        if self.config.source == "kafka":
            return self.config.topic or ""
        return _basename(self.config.source_path or "")

    def relation(self) -> dict[str, Any]:
        """The table's pg_class row (oid, replica identity); fails when the table does not exist."""
        schema, table = self.source_table()

        def fetch() -> dict[str, Any]:
            rows = self.query(
                "SELECT c.oid, c.relreplident FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = %s AND c.relname = %s AND c.relkind IN ('r', 'p')",
                (schema, table),
            )
            if not rows:
                raise ConfigError(f"no table {schema}.{table} in the source database {self.db_name()}")
            return rows[0]

        return self.memo("relation", fetch)  # type: ignore[no-any-return]

    def db_name(self) -> str:
        assert self.database is not None
        return self.database.display


def _topic_prefix(topic: str | None) -> str | None:
    parts = (topic or "").split(".")
    return ".".join(parts[:-2]) if len(parts) >= 3 else None


def _prefix_of(connector_config: Mapping[str, str]) -> str | None:
    # Debezium 2+ names it topic.prefix; 1.x database.server.name.
    return connector_config.get("topic.prefix") or connector_config.get("database.server.name")


def _basename(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


def _is_local(path: str) -> bool:
    scheme = urlsplit(path).scheme
    return scheme in ("", "file") or (len(scheme) == 1 and os.name == "nt")


def _local(path: str) -> Path:
    return Path(urlsplit(path).path if path.startswith("file:") else path)


# --- what a Debezium envelope needs (a file's writer schema, the registry's value schema) ----------------


def _envelope_outcome(ctx: _Context, schema: dict[str, Any], where: str) -> _Outcome:
    problems = envelope_problems(schema, flavor=ctx.config.flavor, key_fields=ctx.config.record_key_fields)
    if problems:
        return _fail(
            f"{where}: " + "; ".join(problems),
            "hudi-cdc reads Debezium's envelope (no ExtractNewRecordState/unwrap SMT); check --flavor and "
            "--record-key-fields",
        )
    keys = ", ".join(ctx.config.record_key_fields) or "from the key schema"
    return _ok(f"{where}: a {ctx.config.flavor} Debezium envelope (op, before, after, source); key {keys}")


def envelope_problems(schema: Mapping[str, Any], *, flavor: str, key_fields: tuple[str, ...]) -> list[str]:
    """What an Avro schema lacks to be a Debezium envelope hudi-cdc can order and key (pure)."""
    from payloads import policy_for

    named: dict[str, Mapping[str, Any]] = {}

    def index(node: Any, namespace: str = "") -> None:
        if isinstance(node, list):
            for branch in node:
                index(branch, namespace)
        elif isinstance(node, Mapping):
            if node.get("type") in ("record", "error"):
                ns = node.get("namespace", namespace)
                name = node["name"]
                full = name if "." in name else f"{ns}.{name}" if ns else name
                named[full] = node
                named.setdefault(name.rsplit(".", 1)[-1], node)
                for f in node.get("fields", []):
                    index(f.get("type"), ns)
            elif isinstance(node.get("type"), (list, Mapping)):
                index(node["type"], namespace)

    index(schema)

    def record(node: Any) -> Mapping[str, Any] | None:
        if isinstance(node, list):
            return next((r for r in (record(b) for b in node) if r is not None), None)
        if isinstance(node, str):
            return named.get(node) or named.get(node.rsplit(".", 1)[-1])
        if isinstance(node, Mapping):
            return node if node.get("type") in ("record", "error") else record(node.get("type"))
        return None

    fields = {f["name"]: f["type"] for f in schema.get("fields", [])}
    missing = [n for n in ("op", "before", "after", "source") if n not in fields]
    if missing:
        return [f"missing envelope field(s) {', '.join(missing)}: not a Debezium change event"]
    problems = []
    source = record(fields["source"]) or {}
    source_fields = {f["name"] for f in source.get("fields", [])}
    policy = policy_for(flavor)
    ordering = [name for _, name, _, required in policy.source_meta_columns if required]
    lacking = [n for n in ordering if n not in source_fields]
    if lacking:
        problems.append(
            f"source has no {', '.join(lacking)}, which orders {flavor} events (is --flavor right? "
            f"source fields: {', '.join(sorted(source_fields))})"
        )
    after = record(fields["after"]) or {}
    columns = {f["name"] for f in after.get("fields", [])}
    absent = [k for k in key_fields if k not in columns]
    if absent:
        problems.append(
            f"the row has no column {', '.join(absent)} (--record-key-fields); columns: {', '.join(sorted(columns))}"
        )
    return problems
