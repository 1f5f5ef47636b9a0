"""``validate``'s checks of the catalog a table is synced to (issue 45): the metastore, the database, the table.

Only a Hive metastore (``catalog = "hms"``) is asked; the other kinds are skipped. The metastore is
asked once, through the Hive client that Spark ships and Hudi's sync uses (``HiveMetaStoreClient``,
with the session's Hadoop settings and the ``hive.*`` ones in ``catalog_options``), with one try and
a bounded timeout, so a metastore that is down or a black hole costs seconds, not the client's ten
minutes. What it holds is read into plain data and the client closed at once.

Hudi's sync writes no record key or table type into the catalog table: it points the table at the
base path (its location, and the serde parameter ``path``) and, for a MERGE_ON_READ snapshot view,
names Hudi's realtime input format. So a catalog table is this table's when its location is the
base path; one that points elsewhere is named with both places, and with both record keys when a
Hudi table is there. A table made by Spark SQL through Hudi's catalog does carry ``primaryKey`` and
``type`` properties: those are compared too.
"""

from __future__ import annotations

import posixpath
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from hudi_cdc.checks.kit import _Context, _fail, _ok, _Outcome, _Skip, _warn
from hudi_cdc.config import redact_url
from hudi_cdc.errors import TransientError

__all__ = [
    "TIMEOUT_S",
    "CatalogTable",
    "TableFacts",
    "check_catalog_database",
    "check_catalog_table",
    "check_metastore",
    "same_location",
    "table_problems",
]

TIMEOUT_S = 5
"""How long the metastore may take to answer one call, in seconds (one try)."""
AUTO_CREATE_DATABASE = "hoodie.datasource.hive_sync.auto_create_database"
REALTIME_INPUT_FORMAT = "HoodieParquetRealtimeInputFormat"
# What Spark SQL's Hudi catalog writes into a table it creates (HiveSyncTool writes neither).
_KEY_PROPERTIES = ("primaryKey", "hoodie.table.recordkey.fields")
_TYPE_PROPERTIES = {"cow": "COPY_ON_WRITE", "mor": "MERGE_ON_READ"}


@dataclass(frozen=True)
class CatalogTable:
    """One catalog table as the metastore holds it."""

    name: str
    location: str
    path: str | None  # the serde parameter Hudi's sync writes: the base path Spark reads
    input_format: str
    params: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class _Catalog:
    uri: str  # redacted
    database: str
    database_location: str | None  # None: no such database
    tables: dict[str, CatalogTable | None]  # every view the sync writes: None when absent
    seconds: float


def _catalog(ctx: _Context) -> _Catalog:
    if ctx.config.catalog != "hms":
        raise _Skip(f"only a Hive metastore is checked here, not {ctx.config.catalog!r} (docs/catalog.md)")
    spark = ctx.need_spark()
    return ctx.memo("catalog", lambda: _read_catalog(ctx, spark))  # type: ignore[no-any-return]


def _read_catalog(ctx: _Context, spark: Any) -> _Catalog:  # noqa: ANN401 - a SparkSession
    from hudi_cdc.sink.catalog import CatalogTarget

    target = CatalogTarget.of(ctx.config)
    uri = redact_url(target.uri or "")
    started = time.monotonic()
    client = _client(spark, target.uri or "", ctx.config.catalog_options, uri)
    try:
        db = _ask(client.getDatabase, uri, f"database {target.database}", target.database)
        tables = {}
        for view in target.views:
            got = _ask(client.getTable, uri, f"table {target.database}.{view}", target.database, view) if db else None
            tables[view] = _table(view, got) if got is not None else None
        location = str(db.getLocationUri()) if db is not None else None
        return _Catalog(uri, target.database, location, tables, round(time.monotonic() - started, 3))
    finally:
        client.close()


def _client(spark: Any, uri: str, options: Mapping[str, str], shown: str) -> Any:  # noqa: ANN401 - py4j
    """A ``HiveMetaStoreClient`` set up as the sync's (``sink.catalog.metastore_client``), connected, with one
    bounded try; TransientError naming ``shown``."""
    from hudi_cdc.sink.catalog import metastore_client

    bounded = {
        "hive.metastore.connect.retries": "1",
        "hive.metastore.client.connect.retry.delay": "0s",
        "hive.metastore.client.socket.timeout": f"{TIMEOUT_S}s",
        # Its set_ugi call would be a second wait on a metastore that accepts and never answers (10 s, not 5).
        "hive.metastore.execute.setugi": "false",
    }
    try:
        return metastore_client(spark, uri, options, fixed=bounded)
    except Exception as exc:  # noqa: BLE001 - py4j wraps Hive's MetaException
        raise TransientError(
            f"the Hive metastore at {shown} did not answer (one try, {TIMEOUT_S}s timeout): {_first_line(exc)}"
        ) from None


def _ask(call: Any, uri: str, what: str, *args: str) -> Any:  # noqa: ANN401 - py4j
    """``call(*args)``; None when the metastore has no such object; TransientError naming ``uri`` otherwise."""
    try:
        return call(*args)
    except Exception as exc:  # noqa: BLE001 - py4j wraps Hive's exceptions
        java = getattr(exc, "java_exception", None)
        if java is not None and str(java.getClass().getSimpleName()) == "NoSuchObjectException":
            return None
        raise TransientError(f"the Hive metastore at {uri} failed to return {what}: {_first_line(exc)}") from None


def _first_line(exc: BaseException) -> str:
    """The Java error's message without the stack trace Hive folds into it ("Most recent failure: ...\\tat ...")."""
    from hudi_cdc._jvm import java_message

    return java_message(exc).split("\n", 1)[0].strip()


def _table(name: str, table: Any) -> CatalogTable:  # noqa: ANN401 - py4j Table
    sd = table.getSd()
    serde = sd.getSerdeInfo()
    serde_params = dict(serde.getParameters() or {}) if serde is not None else {}
    return CatalogTable(
        name=name,
        location=str(sd.getLocation() or ""),
        path=serde_params.get("path"),
        input_format=str(sd.getInputFormat() or ""),
        params={str(k): str(v) for k, v in dict(table.getParameters() or {}).items()},
    )


def check_metastore(ctx: _Context) -> _Outcome:
    catalog = _catalog(ctx)
    return _ok(f"the Hive metastore at {catalog.uri} answered ({catalog.seconds:.2f}s for the database and tables)")


def check_catalog_database(ctx: _Context) -> _Outcome:
    catalog = _catalog(ctx)
    if catalog.database_location is not None:
        return _ok(f"database {catalog.database} exists (location {catalog.database_location})")
    auto = ctx.config.catalog_options.get(AUTO_CREATE_DATABASE, "true").strip().lower() != "false"
    if auto:
        return _ok(
            f"no database {catalog.database} in the metastore at {catalog.uri}: the first sync creates it "
            "(whether the metastore lets this user create databases shows then: a refusal is a failed sync, the "
            "commit stands)"
        )
    return _fail(
        f"no database {catalog.database} in the metastore at {catalog.uri}, and {AUTO_CREATE_DATABASE}=false",
        f"create database {catalog.database} in the metastore, or set catalog_database to one that exists",
    )


def check_catalog_table(ctx: _Context) -> _Outcome:
    catalog = _catalog(ctx)
    present = {name: t for name, t in catalog.tables.items() if t is not None}
    names = ", ".join(f"{catalog.database}.{n}" for n in catalog.tables)
    if not present:
        return _ok(f"{names} not registered yet: the first sync after a commit registers them")
    ours = _hudi(ctx, ctx.config.target_base_path)
    problems = [p for t in present.values() for p in table_problems(t, ctx.config.target_base_path, ours, ctx)]
    if problems:
        return _fail(
            "; ".join(problems),
            "point catalog_database/catalog_table at names of their own, or drop the catalog table(s) so the next "
            "sync registers them for this table",
        )
    absent = [n for n, t in catalog.tables.items() if t is None]
    detail = f"{', '.join(f'{catalog.database}.{n}' for n in present)} at {ctx.config.target_base_path}"
    if absent:
        return _warn(
            f"{detail}; {', '.join(absent)} not registered yet",
            "nothing to do: the next sync registers them",
        )
    return _ok(f"{detail}: this table's, key {', '.join(ours.key) or '(not created yet)'}")


@dataclass(frozen=True)
class TableFacts:
    """What a Hudi table's properties say (``exists`` False: no table there; this table's settings, if it is this)."""

    exists: bool
    key: tuple[str, ...]
    table_type: str | None


def _hudi(ctx: _Context, base_path: str) -> TableFacts:
    """The record key and type of the Hudi table at ``base_path`` (this table's: the settings' when not created)."""
    from hudi_cdc.sink.hudi import HudiTable

    mine = same_location(base_path, ctx.config.target_base_path)
    table = ctx.table() if mine else HudiTable(ctx.need_spark(), base_path)
    try:
        if table.exists():
            kind = str(table._meta_client().getTableConfig().getTableType().name())
            return TableFacts(True, table.record_key_fields(), kind)
    except Exception:  # noqa: BLE001 - another table's folder that cannot be read: only its location is named
        if mine:
            raise
        return TableFacts(False, (), None)
    if mine:
        return TableFacts(False, tuple(ctx.config.record_key_fields), ctx.config.table_type)
    return TableFacts(False, (), None)


def table_problems(table: CatalogTable, base_path: str, ours: TableFacts, ctx: _Context | None = None) -> list[str]:
    """Why a catalog table is not this Hudi table's (empty: it is). ``ctx`` reads the table at a wrong location."""
    where = f"catalog table {table.name}"
    problems = []
    elsewhere = [
        p for p in dict.fromkeys((table.location, table.path or table.location)) if not same_location(p, base_path)
    ]
    if elsewhere:
        theirs = _hudi(ctx, elsewhere[0]) if ctx is not None else TableFacts(False, (), None)
        problem = f"{where} has location {elsewhere[0]}, this Hudi table is at {base_path}"
        if theirs.exists and ours.key and theirs.key != ours.key:
            problem += f"; the table there has record key {','.join(theirs.key)}, this one {','.join(ours.key)}"
        problems.append(problem)
    declared = next((table.params[k] for k in _KEY_PROPERTIES if table.params.get(k)), None)
    if declared is not None and ours.key and _fields(declared) != ours.key:
        problems.append(f"{where} declares record key {declared}, this Hudi table's is {','.join(ours.key)}")
    kind = _TYPE_PROPERTIES.get(table.params.get("type", "").lower())
    if kind is None and table.input_format.endswith(REALTIME_INPUT_FORMAT):
        kind = "MERGE_ON_READ"
    if kind is not None and ours.table_type is not None and kind != ours.table_type:
        problems.append(f"{where} is a {kind} table's, this Hudi table is {ours.table_type}")
    return problems


def _fields(text: str) -> tuple[str, ...]:
    return tuple(f.strip() for f in text.split(",") if f.strip())


def same_location(a: str, b: str) -> bool:
    """Whether two table locations name one folder: ``/x``, ``file:/x`` and ``file:///x/`` do (pure)."""
    return _normal(a) == _normal(b)


def _normal(location: str) -> tuple[str, str, str]:
    parts = urlsplit(location)
    if parts.scheme in ("", "file"):
        return "file", "", posixpath.normpath(parts.path or "/")
    return parts.scheme.lower(), parts.netloc.lower(), posixpath.normpath(parts.path or "/")
