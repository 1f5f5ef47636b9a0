"""Catalog sync: register a Hudi table by name in a catalog, after its commit (issue 45; docs/catalog.md).

A step of its own after the round's commit is complete, never inside the write: a catalog that is
down must not fail a commit that already happened, and a catalog must never claim columns the
table does not have. Hudi's own sync tools do the work (``org.apache.hudi.hive.HiveSyncTool`` for a
Hive Metastore, in the Hudi Spark bundle), called through py4j with the table's base path.

A sync runs only when it is needed: the process has not seen the catalog in step yet (at its start it
reads the table property ``last_commit_time_sync`` that HiveSyncTool keeps: a sync killed or failed
in an earlier process shows there), a previous sync failed, or a commit since the last check changed
the table's schema or wrote a partition the catalog does not have. What the process knows lives in
memory, per table: a restarted process asks the catalog again.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import reduce
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from hudi_cdc._jvm import hadoop_conf, java_message, jvm
from hudi_cdc.config import redact, redact_url
from hudi_cdc.errors import ConfigError, HudiCdcError, TerminalSinkError
from hudi_cdc.sink.hudi import HudiTable
from hudi_cdc.sink.trino_compat import ensure_history_folder

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from hudi_cdc.config import IngestConfig

__all__ = [
    "CatalogTarget",
    "PAUSE_ENV",
    "catalog_status",
    "forget",
    "metastore_client",
    "sync_after_round",
    "sync_options",
]

log = logging.getLogger("hudi_cdc")

# Hudi's sync tool classes by catalog kind: only "hms" is tested here (the others need their own bundles).
SYNC_TOOLS = {
    "hms": "org.apache.hudi.hive.HiveSyncTool",
    "glue": "org.apache.hudi.aws.sync.AwsGlueCatalogSyncTool",
    "datahub": "org.apache.hudi.sync.datahub.DataHubSyncTool",
    "bigquery": "org.apache.hudi.gcp.bigquery.BigQuerySyncTool",
}
_TOOL_BUNDLES = {"glue": "hudi-aws-bundle", "datahub": "hudi-datahub-sync-bundle", "bigquery": "hudi-gcp-bundle"}
# Hudi's meta-sync settings (hudi-cdc sets these; catalog_options win over them).
SYNC_BASE_PATH = "hoodie.datasource.meta.sync.base.path"
SYNC_DATABASE = "hoodie.datasource.hive_sync.database"
SYNC_TABLE = "hoodie.datasource.hive_sync.table"
SYNC_MODE = "hoodie.datasource.hive_sync.mode"
SYNC_URIS = "hoodie.datasource.hive_sync.metastore.uris"
SYNC_PARTITION_FIELDS = "hoodie.datasource.hive_sync.partition_fields"
SYNC_PARTITION_EXTRACTOR = "hoodie.datasource.hive_sync.partition_extractor_class"
SYNC_SUPPORT_TIMESTAMP = "hoodie.datasource.hive_sync.support_timestamp"
SYNC_SKIP_RO_SUFFIX = "hoodie.datasource.hive_sync.skip_ro_suffix"
MULTI_PART_EXTRACTOR = "org.apache.hudi.hive.MultiPartKeysValueExtractor"
NON_PARTITIONED_EXTRACTOR = "org.apache.hudi.hive.NonPartitionedExtractor"
# What HiveSyncTool writes into each table it syncs: the instant the catalog is in step with.
LAST_SYNCED_PROPERTY = "last_commit_time_sync"
# The Hive client's own retries: 3 tries 1 s apart by default; one try keeps a round short when it is down.
_HIVE_CLIENT_DEFAULTS = {"hive.metastore.connect.retries": "1", "hive.metastore.client.socket.timeout": "60s"}
PAUSE_ENV = "HUDI_CDC_TEST_PAUSE_BEFORE_CATALOG_SYNC"
"""Tests only: a file path. Before a sync, the process creates it and waits there to be killed."""

_NAME = re.compile(r"[a-z0-9_]+")
_REFUSED = re.compile(r"types incompatible with the existing columns in their respective positions\s*:?\s*(.*)", re.S)
_HUDI_REFUSED = re.compile(r"Could not convert field Type from (\S+) to (\S+) for field (\S+)")
_UNREACHABLE = (
    "TTransportException",
    "Failed to connect",
    "Connection refused",
    "SocketTimeout",
    "Unable to instantiate",
    "ConnectException",
    "timed out",
)


@dataclass(frozen=True)
class CatalogTarget:
    """Where one Hudi table goes in its catalog: the names rendered from the settings' templates."""

    kind: str
    uri: str | None
    database: str
    table: str
    views: tuple[str, ...]  # every catalog table the sync writes: the name, and a MERGE_ON_READ table's _ro, _rt
    base_path: str

    @classmethod
    def of(cls, config: IngestConfig) -> CatalogTarget:
        database, table = catalog_names(config)
        mor = config.table_type == "MERGE_ON_READ"
        views = (table, f"{table}_ro", f"{table}_rt") if mor else (table,)
        return cls(config.catalog, config.catalog_uri, database, table, views, config.target_base_path)

    @property
    def key(self) -> tuple[str, str, str, str, str]:
        return (self.kind, self.uri or "", self.base_path, self.database, self.table)

    @property
    def where(self) -> str:
        address = f" at {redact_url(self.uri)}" if self.uri else ""
        return f"{self.kind} catalog{address}, {self.database}.{self.table}"


def source_parts(config: IngestConfig) -> dict[str, str]:
    """The source table's ``server``, ``database``, ``schema`` and ``table`` (and ``target``), as far as known.

    From the topic or folder name (``server.schema.table``; MySQL's middle part is its database), a JDBC
    source's table and URL, or a merged table's target name.
    """
    database = ""
    if config.shard_sources:
        name = config.target_table
    elif config.source == "kafka":
        name = config.topic or ""
    elif config.source == "files":
        name = (config.source_path or "").rstrip("/").rsplit("/", 1)[-1]
    else:
        name = config.jdbc_table or config.target_table
        database = urlsplit((config.jdbc_url or "").removeprefix("jdbc:")).path.strip("/").split("?")[0]
    pieces = name.split(".")
    parts = {
        "server": ".".join(pieces[:-2]),
        "schema": pieces[-2] if len(pieces) > 1 else "",
        "table": pieces[-1],
        "target": config.target_table,
    }
    if config.flavor == "mysql":
        database = database or parts["schema"]
    parts["database"] = database
    return parts


def render_source_name(setting: str, template: str, parts: Mapping[str, str]) -> tuple[str, list[str]]:
    """The name ``template`` (the value of ``setting``) renders from the source's ``parts``, and the fields it
    uses that this source does not know (they render empty)."""
    try:
        name = template.format(**parts)
    except (KeyError, IndexError, ValueError) as exc:
        raise ConfigError(f"{setting} {template!r}: {exc!r} is not one of {sorted(parts)}") from None
    return name, [f for f, v in parts.items() if not v and "{" + f + "}" in template]


def catalog_names(config: IngestConfig) -> tuple[str, str]:
    """The catalog database and table names the settings' templates render for this table (lower case)."""
    parts = source_parts(config)
    names = []
    for setting in ("catalog_database", "catalog_table"):
        template = getattr(config, setting)
        name, empty = render_source_name(setting, template, parts)
        name = name.lower()
        if not _NAME.fullmatch(name):
            hint = f" ({', '.join('{' + f + '}' for f in empty)} not known for this source)" if empty else ""
            raise ConfigError(
                f"{config.target_table}: {setting} {template!r} renders {name!r}{hint}, not a catalog name "
                f"(letters, digits, _): set {setting} (--{setting.replace('_', '-')})"
            )
        names.append(name)
    return names[0], names[1]


def sync_options(config: IngestConfig, target: CatalogTarget) -> dict[str, str]:
    """Hudi's meta-sync properties for the table; ``catalog_options`` win."""
    fields = [f.strip() for f in (config.partition_path_field or "").split(",") if f.strip()]
    partitioned = bool(fields) and config.catalog_sync_partitions
    props = {
        SYNC_BASE_PATH: target.base_path,
        SYNC_DATABASE: target.database,
        SYNC_TABLE: target.table,
        SYNC_PARTITION_FIELDS: ",".join(fields) if partitioned else "",
        SYNC_PARTITION_EXTRACTOR: MULTI_PART_EXTRACTOR if partitioned else NON_PARTITIONED_EXTRACTOR,
        # Hudi's default syncs timestamps as bigint (epoch microseconds): readers by name would see numbers.
        SYNC_SUPPORT_TIMESTAMP: "true",
    }
    if target.kind == "hms":
        props.update({SYNC_MODE: "hms", SYNC_URIS: target.uri or ""})
        props.update(_HIVE_CLIENT_DEFAULTS)
    props.update(config.catalog_options)
    return props


@dataclass
class _Known:
    """What this process knows of a table's catalog: in step up to ``checked`` (None: a sync is owed)."""

    checked: str | None
    schema: str | None = None
    partitions: set[str] = field(default_factory=set)
    synced_to: str | None = None
    error: str | None = None


_KNOWN: dict[tuple[str, str, str, str, str], _Known] = {}
_LOCK = threading.Lock()


def forget() -> None:
    """Drop what this process knows of every catalog (as a new process would start)."""
    with _LOCK:
        _KNOWN.clear()


def sync_after_round(spark: SparkSession, config: IngestConfig) -> dict[str, Any] | None:
    """Sync the table's catalog if the round's commit (or an earlier one) needs it; what happened, or None.

    Call only once the round's commit is complete. A catalog that cannot be reached is logged and left
    owed (the next round, or the next process, tries again); a change the catalog refuses raises
    :class:`TerminalSinkError` naming the column, both types and the fix. Either way the commit stands.
    """
    if config.catalog == "none":
        return None
    target = CatalogTarget.of(config)
    try:
        return _sync_if_needed(spark, config, target)
    except HudiCdcError:
        raise
    except Exception as exc:  # noqa: BLE001 - anything else after the commit: the commit stands, the sync is owed
        message = java_message(exc).splitlines()[0]
        _remember(target, _Known(None, error=message))
        log.warning(
            "%s: the commit stands, but the catalog step failed (%s): retried at the next round",
            config.target_table,
            message,
        )
        return {"catalog": target.kind, "synced": False, "error": message}


def _sync_if_needed(spark: SparkSession, config: IngestConfig, target: CatalogTarget) -> dict[str, Any] | None:
    started = time.monotonic()
    with _LOCK:
        known = _KNOWN.get(target.key)
    timeline = _Timeline(spark, target.base_path)
    if timeline.head is None:
        return None
    reason, known = _why_sync(spark, config, target, timeline, known)
    outcome: dict[str, Any] = {"catalog": target.kind, "names": [f"{target.database}.{v}" for v in target.views]}
    if reason is None:
        with _LOCK:
            _KNOWN[target.key] = known
        return {**outcome, "synced": False, "in_step_to": known.checked, "check_s": _since(started)}
    _pause_for_tests()
    try:
        _run_sync(spark, config, target)
    except TerminalSinkError as exc:
        _remember(target, _Known(None, error=str(exc)))
        raise
    except Exception as exc:  # noqa: BLE001 - py4j errors of every kind, judged below
        message = java_message(exc).splitlines()[0]  # a MetaException's message carries a stack trace
        refused = _refusal(spark, config, target, timeline, str(exc))
        if refused is not None:
            _remember(target, _Known(None, error=refused))
            raise TerminalSinkError(refused) from None
        if not any(marker in str(exc) for marker in _UNREACHABLE) and _tool_missing(str(exc), target):
            raise ConfigError(_missing_tool(target)) from None
        message += _metastore_hint(str(exc), target)
        _remember(target, _Known(None, error=message))
        log.warning(
            "%s: commit %s stands, but syncing the %s failed (%s): retried at the next round",
            config.target_table,
            timeline.head,
            target.where,
            message,
        )
        return {**outcome, "synced": False, "reason": reason, "error": message, "sync_s": _since(started)}
    partitions = _catalog_partitions(spark, target, config)
    _remember(target, _Known(timeline.head, timeline.schema(), partitions, synced_to=timeline.head))
    log.info("%s: %s synced to commit %s (%s)", config.target_table, target.where, timeline.head, reason)
    return {**outcome, "synced": True, "reason": reason, "synced_to": timeline.head, "sync_s": _since(started)}


def _why_sync(
    spark: SparkSession, config: IngestConfig, target: CatalogTarget, timeline: _Timeline, known: _Known | None
) -> tuple[str | None, _Known]:
    """Why the catalog needs a sync now (None: it does not), and what is known once it has none."""
    if known is None:  # new to this process: ask the catalog once
        synced_to, problem = _synced_to(spark, target, config)
        if synced_to is None:
            return ("never synced" if problem is None else f"catalog state unknown ({problem})"), _Known(None)
        partitions = _catalog_partitions(spark, target, config)
        if synced_to == timeline.head:
            return None, _Known(timeline.head, timeline.schema(), partitions, synced_to=synced_to)
        # Behind by commits that may need nothing (a sync is only owed for a schema change or a new
        # partition): judge them as below, from the schema the catalog was synced with.
        synced_schema = timeline.schema_at(synced_to)
        if synced_schema is None:  # that commit is archived, or recorded no schema: sync to be sure
            return f"behind: synced to {synced_to}, the table is at {timeline.head}", _Known(None)
        known = _Known(synced_to, synced_schema, partitions, synced_to=synced_to)
    if known.checked is None:
        return f"a previous sync failed ({known.error})", known
    if known.checked == timeline.head:
        return None, known
    reason = _change_since(config, timeline, known)
    if reason is not None:
        return reason, known
    return None, _Known(timeline.head, known.schema, known.partitions, known.synced_to)


def _change_since(config: IngestConfig, timeline: _Timeline, known: _Known) -> str | None:
    """What the commits after ``known.checked`` changed that the catalog must take (None: nothing)."""
    written: set[str] = set()
    schema = None
    assert known.checked is not None
    for _instant, commit_schema, partitions in timeline.since(known.checked):
        schema = schema or commit_schema
        written |= partitions
    if schema is not None and _columns(schema) != _columns(known.schema):
        return "the schema changed"
    fields = (config.partition_path_field or "").strip()
    new = (
        sorted(p for p in written if p and p not in known.partitions)
        if fields and config.catalog_sync_partitions
        else []
    )
    return f"new partition(s) {', '.join(new[:5])}" if new else None


def _remember(target: CatalogTarget, known: _Known) -> None:
    with _LOCK:
        _KNOWN[target.key] = known


def _since(started: float) -> float:
    return round(time.monotonic() - started, 3)


def _pause_for_tests() -> None:
    marker = os.environ.get(PAUSE_ENV)
    if marker:  # a crash test kills the process here: the commit is complete, the catalog not synced
        with open(marker, "w") as f:
            f.write(str(os.getpid()))
        time.sleep(600)


def _run_sync(spark: SparkSession, config: IngestConfig, target: CatalogTarget) -> None:
    if target.kind == "hms":
        _check_location(spark, config, target)
    gateway = jvm(spark)
    props = gateway.org.apache.hudi.common.config.TypedProperties()
    options = sync_options(config, target)
    for key, value in options.items():
        props.setProperty(key, value)
    conf = gateway.org.apache.hadoop.conf.Configuration(hadoop_conf(spark))
    for key, value in options.items():
        if key.startswith("hive."):  # the metastore client's own settings
            conf.set(key, value)
    if target.kind == "hms":
        conf.set("hive.metastore.uris", target.uri or "")
    tool_class = reduce(getattr, SYNC_TOOLS[target.kind].split("."), gateway)
    log.debug("syncing %s with %s", target.where, redact(options))
    tool = tool_class(props, conf)
    try:
        tool.syncHoodieTable()
    finally:
        tool.close()
    # A registered table is read by other engines: Trino 476 cannot read one whose archived timeline is empty.
    ensure_history_folder(spark, target.base_path)


def _check_location(spark: SparkSession, config: IngestConfig, target: CatalogTarget) -> None:
    """Refuse to take over a catalog table registered for another Hudi table: Hudi's sync would re-point it
    (it replaces a table whose location changed), and that table's readers would read this one."""
    client = _metastore_client(spark, target, config)
    try:
        if not client.tableExists(target.database, target.table):
            return
        location = str(client.getTable(target.database, target.table).getSd().getLocation())
    finally:
        client.close()
    if _same_path(location, target.base_path):
        return
    raise TerminalSinkError(
        f"{config.target_table}: {target.database}.{target.table} in the {target.kind} catalog is the table at "
        f"{location}, not this one ({target.base_path}); the data commit stands. Give this table another name "
        "(catalog_table / catalog_database), or drop that catalog table if the old table is gone"
    )


def _same_path(a: str, b: str) -> bool:
    def norm(path: str) -> tuple[str, str, str]:
        parts = urlsplit(path)
        scheme = parts.scheme or "file"
        return scheme, parts.netloc if scheme != "file" else "", "/" + parts.path.strip("/")

    return norm(a) == norm(b)


def _tool_missing(error: str, target: CatalogTarget) -> bool:
    """Whether ``error`` says this session lacks the sync tool: py4j's name for a missing class, or the tool's own
    class not found. A class missing elsewhere is another failure (a metastore without the s3a connector answers
    "Class org.apache.hadoop.fs.s3a.S3AFileSystem not found" for an s3a:// location)."""
    if "JavaPackage" in error:
        return True
    return ("ClassNotFound" in error or "NoClassDefFound" in error) and any(
        name in error for name in (SYNC_TOOLS[target.kind], SYNC_TOOLS[target.kind].replace(".", "/"))
    )


def _metastore_hint(error: str, target: CatalogTarget) -> str:
    """What to do when the metastore itself cannot reach the table's location (its scheme's file system)."""
    scheme = urlsplit(target.base_path).scheme or "file"
    if "MetaException" in error and "FileSystem" in error and ("not found" in error or "No FileSystem" in error):
        return (
            f": the {target.kind} metastore opens the table's {scheme}:// location itself, and has no file system "
            "for it: put that connector (for s3a, hadoop-aws of the metastore's own Hadoop version and its AWS SDK "
            "bundle) on the metastore's classpath and the bucket's endpoint and credentials in its configuration "
            "(docs/object-storage.md)"
        )
    return ""


def _missing_tool(target: CatalogTarget) -> str:
    bundle = _TOOL_BUNDLES.get(target.kind, "the Hudi sync bundle")
    return (
        f"catalog {target.kind!r}: Hudi's sync tool {SYNC_TOOLS[target.kind]} is not on the classpath: add "
        f"{bundle} (same Hudi version) to the session's jars (untested here; docs/catalog.md)"
    )


def metastore_client(
    spark: SparkSession,
    uri: str,
    options: Mapping[str, str],
    *,
    defaults: Mapping[str, str] = _HIVE_CLIENT_DEFAULTS,
    fixed: Mapping[str, str] | None = None,
):  # noqa: ANN202 - py4j HiveMetaStoreClient
    """A Hive metastore client as the sync's own is set up: the session's Hadoop settings, ``defaults``, then
    the ``hive.*`` settings of ``catalog_options`` (SASL and the like), then ``fixed`` (a caller's bounds)."""
    gateway = jvm(spark)
    hadoop = hadoop_conf(spark)
    conf = gateway.org.apache.hadoop.hive.conf.HiveConf(hadoop, hadoop.getClass())
    settings = {**defaults, **{k: v for k, v in options.items() if k.startswith("hive.")}, **(fixed or {})}
    for key, value in {**settings, "hive.metastore.uris": uri}.items():
        conf.set(key, value)
    return gateway.org.apache.hadoop.hive.metastore.HiveMetaStoreClient(conf)


def _metastore_client(spark: SparkSession, target: CatalogTarget, config: IngestConfig):  # noqa: ANN202 - py4j
    return metastore_client(spark, target.uri or "", config.catalog_options)


def _synced_to(spark: SparkSession, target: CatalogTarget, config: IngestConfig) -> tuple[str | None, str | None]:
    """The oldest instant the target's catalog tables are synced to (None: a table is missing, or the catalog
    cannot say), and why it cannot say. Only a Hive Metastore is asked; other kinds are synced once per process."""
    if target.kind != "hms":
        return None, None
    try:
        client = _metastore_client(spark, target, config)
    except Exception as exc:  # noqa: BLE001 - an unreachable metastore: the sync will say it again
        return None, java_message(exc).splitlines()[0]
    try:
        instants = []
        for view in target.views:
            if not client.tableExists(target.database, view):
                return None, None
            value = client.getTable(target.database, view).getParameters().get(LAST_SYNCED_PROPERTY)
            if value is None:
                return None, None
            instants.append(str(value))
        return min(instants), None
    except Exception as exc:  # noqa: BLE001
        return None, java_message(exc).splitlines()[0]
    finally:
        client.close()


def _catalog_partitions(spark: SparkSession, target: CatalogTarget, config: IngestConfig) -> set[str]:
    """The partitions the catalog holds, as Hudi partition paths (``v1/v2``, or ``f1=v1/f2=v2``)."""
    if target.kind != "hms" or not config.partition_path_field or not config.catalog_sync_partitions:
        return set()
    try:
        client = _metastore_client(spark, target, config)
        try:
            names = [str(n) for n in client.listPartitionNames(target.database, target.table, -1)]
        finally:
            client.close()
    except Exception:  # noqa: BLE001 - unknown: the next partition written brings a sync, which lists them again
        return set()
    from urllib.parse import unquote

    hive_style = _hive_style(config)
    return {unquote(n) if hive_style else "/".join(unquote(p.split("=", 1)[-1]) for p in n.split("/")) for n in names}


def _hive_style(config: IngestConfig) -> bool:
    return config.hoodie_conf.get("hoodie.datasource.write.hive_style_partitioning", "false").lower() == "true"


def _columns(schema: str | None) -> list[tuple[str, str]] | None:
    """An Avro schema's columns and their types, without record names (writers name them differently)."""
    if not schema:
        return None

    def strip(node: Any) -> Any:  # noqa: ANN401 - JSON
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if k not in ("name", "namespace", "doc", "default")}
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    fields = json.loads(schema).get("fields", [])
    return [(f["name"], json.dumps(strip(f["type"]), sort_keys=True)) for f in fields]


class _Timeline:
    """The table's completed commits, newest first, as listed once; each one's metadata read only when asked."""

    def __init__(self, spark: SparkSession, base_path: str) -> None:
        self._commits = [(instant, read) for instant, _, read in HudiTable(spark, base_path).completed_commits()]
        self.head: str | None = self._commits[0][0] if self._commits else None

    def since(self, instant: str | None) -> Iterator[tuple[str, str | None, set[str]]]:
        """Commits newer than ``instant``, newest first: (instant, its schema or None, the partitions it wrote)."""
        for requested, read in self._commits:
            if instant is not None and requested <= instant:
                return
            metadata = read()
            schema = metadata.getMetadata("schema")
            partitions = {str(p) for p in metadata.getPartitionToWriteStats().keySet()}
            yield requested, (str(schema) if schema else None), partitions

    def schema(self) -> str | None:
        """The newest commit's schema."""
        return next((s for _, s, _ in self.since(None) if s), None)

    def schema_at(self, instant: str) -> str | None:
        """The schema the table had at ``instant``: the newest one recorded by a commit at or before it (None:
        none on the active timeline)."""
        for requested, read in self._commits:
            if requested <= instant:
                schema = read().getMetadata("schema")
                if schema:
                    return str(schema)
        return None


def _refusal(
    spark: SparkSession, config: IngestConfig, target: CatalogTarget, timeline: _Timeline, text: str
) -> str | None:
    """The message of a schema change the catalog refused (None: the failure is not one)."""
    hudi = _HUDI_REFUSED.search(text)
    hive = _REFUSED.search(text)
    if hudi is None and hive is None:
        return None
    if hudi is not None:
        changes = [(hudi[3], hudi[1], hudi[2])]
    else:
        assert hive is not None
        listed = re.match(r"[\w\s,]*", hive[1])
        columns = re.findall(r"\w+", listed[0] if listed else "")[:5]
        changes = [(c, *_types_of(spark, target, config, timeline, c)) for c in columns]
    what = "; ".join(f"column {c} from {old} to {new}" for c, old, new in changes)
    return (
        f"{config.target_table}: the {target.where} refused the schema change ({what}). Commit {timeline.head} "
        "stands and the table reads right by path; the catalog keeps its old definition. Fix: keep the type "
        '(schema_changes: type_changed = "fail", or a column_types mapping to the catalog\'s type), or drop the '
        "catalog table(s) so the next round registers them anew, or allow the change in the metastore "
        "(hive.metastore.disallow.incompatible.col.type.changes = false)"
    )


def _types_of(
    spark: SparkSession, target: CatalogTarget, config: IngestConfig, timeline: _Timeline, column: str
) -> tuple[str, str]:
    """A column's type in the catalog and in the table's newest schema (``?`` when unknown)."""
    old = new = "?"
    try:
        client = _metastore_client(spark, target, config)
        try:
            for col in client.getTable(target.database, target.table).getSd().getCols():
                if str(col.getName()) == column.lower():
                    old = str(col.getType())
        finally:
            client.close()
    except Exception:  # noqa: BLE001 - the message still names the column
        pass
    for name, kind in _columns(timeline.schema()) or []:
        if name.lower() == column.lower():
            new = _avro_type_name(json.loads(kind))
    return old, new


def _avro_type_name(node: Any) -> str:  # noqa: ANN401 - JSON
    """``["null", "int"]`` -> ``int``; ``{"type": "long", "logicalType": "timestamp-micros"}`` -> ``timestamp-micros``."""
    if isinstance(node, list):
        return " or ".join(_avro_type_name(n) for n in node if n != "null")
    if isinstance(node, dict):
        return str(node.get("logicalType") or node.get("type"))
    return str(node)


def catalog_status(spark: SparkSession, config: IngestConfig) -> dict[str, Any] | None:
    """Where the table's catalog stands, for ``status``: the instant it is synced to, the table's newest
    commit, and whether it lags (a commit since changed the schema or wrote a new partition)."""
    if config.catalog == "none":
        return None
    try:
        return _catalog_status(spark, config)
    except Exception as exc:  # noqa: BLE001 - status reports what it cannot read
        return {"catalog": config.catalog, "problem": java_message(exc).splitlines()[0], "lagging": None}


def _catalog_status(spark: SparkSession, config: IngestConfig) -> dict[str, Any]:
    try:
        target = CatalogTarget.of(config)
    except ConfigError as exc:
        return {"catalog": config.catalog, "problem": str(exc), "lagging": None}
    status: dict[str, Any] = {
        "catalog": target.kind,
        "names": [f"{target.database}.{v}" for v in target.views],
        "synced_to": None,
        "table_at": None,
        "lagging": None,
        "problem": None,
    }
    timeline = _Timeline(spark, target.base_path)
    status["table_at"] = timeline.head
    if target.kind != "hms":
        status["problem"] = f"the {target.kind} catalog's state is not read here"
        return status
    synced_to, problem = _synced_to(spark, target, config)
    status["synced_to"], status["problem"] = synced_to, problem
    if problem is not None or timeline.head is None:
        return status
    status["lagging"] = synced_to is None or _lags(spark, config, target, timeline, synced_to)
    return status


def _lags(spark: SparkSession, config: IngestConfig, target: CatalogTarget, timeline: _Timeline, synced: str) -> bool:
    if synced == timeline.head:
        return False
    at_sync = timeline.schema_at(synced)
    if at_sync is None:  # archived: the catalog's schema cannot be told, so it may lag
        return True
    known = _Known(synced, at_sync, _catalog_partitions(spark, target, config), synced_to=synced)
    return _change_since(config, timeline, known) is not None


def describe(status: Mapping[str, Any]) -> str:
    """One line of ``status`` text for a table's catalog."""
    names = ", ".join(status.get("names") or []) or "?"
    if status.get("problem"):
        return f"catalog {status['catalog']} ({names}): cannot tell: {status['problem']}"
    state = "LAGGING" if status.get("lagging") else "in step"
    return f"catalog {status['catalog']} ({names}): {state}; synced to {status['synced_to']}, table at {status['table_at']}"
