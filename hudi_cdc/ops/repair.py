"""``hudi-cdc verify --repair``: write the keys verify found different from the source, ranked at a known position.

1. :func:`hudi_cdc.upstream.compare.verify` names the differing keys (both
   passes, with a recheck); more than ``max_repair`` of them is refused.
2. A REPEATABLE READ transaction reads, in its first statement, its snapshot
   ``S`` and the WAL insert position ``P``: every change ``S`` holds was
   written below ``P``. Changes below ``P`` that ``S`` does not hold can only
   belong to transactions in progress then (``S``'s in-progress list, and the
   transactions that began between ``S`` and ``P``): repair waits until each
   of them has ended, then compares each key's row in a second snapshot with
   its row in ``S``. A key that differs changed at the source during the
   repair: it is left to the stream, which carries that change. Every other
   key's state in ``S`` is its state after all its changes below ``P``.
3. Rows present in ``S`` are written as snapshot reads at ``P`` (``_source_order``
   ``P`` + ``0``: below a streaming change at ``P``, above every change before
   it); absent keys as deletes at ``P - 1`` (WAL records start on 8-byte
   boundaries, so no change sits there), with their tombstones. They go through
   the ingest's own merge (:func:`hudi_cdc.pipeline.ingest_once`, with a source
   of their own and the table's checkpoint unchanged): a stored row or tombstone
   from after ``P`` wins, a later event from the stream wins, an earlier one loses.
4. A key Hudi holds twice, or whose stored position is beyond where the WAL
   was when repair looked (no real change can be there: a corrupt row that
   would outrank every repair), is first deleted by a Hudi ``delete`` commit
   that removes every copy (on MERGE_ON_READ compacted in the same step, so no
   base file still holds the key); the ranked write then brings it back.

MariaDB (``mysql://`` sources, flavor ``mysql``): ``START TRANSACTION WITH
CONSISTENT SNAPSHOT`` and, in the same transaction, the status variables
``binlog_snapshot_file`` / ``binlog_snapshot_position``: the binlog position of
exactly that snapshot (MariaDB reads both under its commit lock). Every
transaction the snapshot holds ends below that position, every one it lacks
starts at or after it (Debezium gives a row event its own position: above
it), so nothing is waited for and no key can move unseen. Present rows are
snapshot reads at (file, position, row 0), which ``payloads.mysql`` sorts
below a streaming event at the same place and above every event before it;
absent keys are deletes at position - 1 (the last event before the position
is a transaction's commit, longer than one byte, so no event starts there).
MySQL proper (no such status variables) is refused.

Repair writes the table: nothing else may write it meanwhile (Hudi takes one
writer at a time; hudi-cdc has no lock across processes). The Debezium stream
and Kafka keep running; pause the table's ingest for the repair and resume it.
A kill at any point leaves keys either as they were, deleted (between the two
commits) or repaired: a rerun finds and repairs what is left.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

from hudi_cdc.envelope.events import REPAIR_AT_DETAIL
from hudi_cdc.envelope.shape import recorded as recorded_shape
from hudi_cdc.errors import ConfigError, SourceError, TransientError
from hudi_cdc.upstream import canonical
from hudi_cdc.upstream.compare import Difference, VerifyResult, verify
from payloads.postgres import DEFAULT_TOAST_PLACEHOLDER

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from pyspark.sql import DataFrame, SparkSession

    from hudi_cdc.config import IngestConfig
    from hudi_cdc.envelope.events import Batch
    from hudi_cdc.upstream.database import SourceDatabase

__all__ = [
    "RepairResult",
    "RepairedKey",
    "pipeline_table_config",
    "repair",
    "repair_through_runner",
    "requested_repair",
    "table_config",
]

log = logging.getLogger("hudi_cdc")

_WAIT_POLL_S = 0.5
# payloads.mysql's widths of the binlog file number, position and row in ``_source_order``.
_FILE_DIGITS, _POS_DIGITS, _ROW_DIGITS = 10, 20, 10


@dataclass(frozen=True)
class RepairedKey:
    key: dict[str, str | None]
    """The key columns as canonical text (as verify names them)."""
    found: str
    """What verify found: ``changed: amount``, ``missing``, ``extra``, ``duplicate (2 rows in Hudi)``."""
    action: str
    """``upsert`` (the source's row), ``delete`` (absent at the source), or ``skip`` (see ``note``)."""
    note: str | None = None
    outcome: str | None = None
    """After the write: ``repaired``, or ``outranked`` (the table holds a change after the position)."""


@dataclass
class RepairResult:
    table: str
    source: str
    target: str
    verify: VerifyResult
    applied: bool = False
    """False: a dry run, nothing written (``keys`` say what would be)."""
    position: str | None = None
    """The position the rows are ranked at: WAL ``X/Y``, binlog ``file:pos``; None when nothing differed."""
    keys: list[RepairedKey] = field(default_factory=list)
    commits: list[str] = field(default_factory=list)
    duration_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["verify"] = self.verify.to_dict()
        return out

    def describe(self) -> str:
        head = "repair" if self.applied else "repair (dry run: nothing written; --repair applies)"
        lines = [self.verify.describe(), f"{head}: {len(self.keys)} key(s) at position {self.position or '-'}"]
        for k in self.keys:
            key = ", ".join(f"{n}={v}" for n, v in k.key.items())
            verb = k.action if self.applied or k.action == "skip" else f"would {k.action}"
            tail = (f" ({k.note})" if k.note else "") + (f": {k.outcome}" if k.outcome else "")
            lines.append(f"  {key}: {k.found} -> {verb}{tail}")
        if self.commits:
            lines.append(f"  commits: {', '.join(self.commits)}")
        return "\n".join(lines)


def table_config(spark: SparkSession, base_path: str, **settings: Any) -> IngestConfig:
    """The settings a repair writes a table with, from its ``hoodie.properties`` (``settings`` override them)."""
    from hudi_cdc.config import IngestConfig

    path = base_path.rstrip("/") + "/.hoodie/hoodie.properties"
    try:
        lines = [r[0] for r in spark.read.text(path).collect()]
    except Exception as exc:  # noqa: BLE001 - Spark's AnalysisException: no such file
        raise ConfigError(f"{base_path} is not a Hudi table (no {path})") from exc
    props = dict(line.split("=", 1) for line in lines if "=" in line and not line.startswith("#"))
    partition = props.get("hoodie.table.partition.fields") or None
    values: dict[str, Any] = {
        "target_base_path": base_path,
        "target_table": props.get("hoodie.table.name", base_path.rstrip("/").rsplit("/", 1)[-1]),
        "table_type": props.get("hoodie.table.type", "COPY_ON_WRITE"),
        "record_key_fields": tuple(props.get("hoodie.table.recordkey.fields", "").split(",")),
        "partition_path_field": partition,
        "source": "files",
        "source_path": base_path,  # never read: repair brings its own source
        "flavor": _flavor(spark, base_path),
    }
    return IngestConfig(**{**values, **settings})


def _flavor(spark: SparkSession, base_path: str) -> str:
    """The merge policy a table was written with, from its ``_source_*`` columns (MySQL's carry the binlog file)."""
    columns = spark.read.format("hudi").load(base_path).columns
    return "mysql" if "_source_file" in columns else "postgres"


def pipeline_table_config(pipeline: str, topic: str) -> IngestConfig:
    """A pipeline table's own settings (defaults, environment, its section), as ``hudi-cdc run`` writes it."""
    from hudi_cdc.service.spec import TableRef, load_pipeline

    spec = load_pipeline(pipeline)
    ref = TableRef(topic)
    if not spec.source.matches(topic) or not spec.enabled(ref):
        raise ConfigError(f"{pipeline}: {topic} is not one of its tables (not matched by [source] tables, or disabled)")
    return spec.table_config(ref)


def repair(
    spark: SparkSession,
    config: IngestConfig,
    database: SourceDatabase,
    source_table: str,
    *,
    apply: bool = True,
    max_repair: int = 1000,
    key_fields: Sequence[str] = (),
    recheck: Callable[[Any, str], str] | None = None,
    wait_timeout_s: float = 300.0,
) -> RepairResult:
    """Verify the Hudi table of ``config`` against ``source_table`` and write each differing key as the source has it.

    ``apply=False`` is a dry run: it verifies, reads the source at a position
    and says per key what it would write. Refused: a source that cannot give
    a position (Postgres and MariaDB can; MySQL proper, SQL Server and Oracle
    not yet), a table written with another flavor's merge policy, more than
    ``max_repair`` keys.
    """
    started = time.monotonic()
    if config.flavor not in ("postgres", "mysql"):
        raise ConfigError(
            f"{config.target_base_path}: flavor {config.flavor!r}: repair reads the source at a known position, "
            "which only Postgres and MariaDB give so far; nothing was written"
        )
    if database.kind != config.flavor:
        raise ConfigError(
            f"{database.display} is a {database.kind} source, but {config.target_base_path} is written with the "
            f"{config.flavor} merge policy: repair ranks rows in the table's own order; nothing was written"
        )
    if max_repair < 1:
        raise ConfigError(f"max_repair={max_repair}: repair at least 1 key")
    if apply:
        refuse_beside_a_writer(spark, config)
    _refuse_unrepairable(spark, config)
    found = verify(
        spark, config.target_base_path, database, source_table, key_fields=key_fields or config.record_key_fields,
        max_diffs=max_repair, recheck=recheck, toast_placeholder=config.toast_placeholder or DEFAULT_TOAST_PLACEHOLDER,
    )  # fmt: skip
    result = RepairResult(config.target_table, database.display, config.target_base_path, found, applied=apply)
    if found.missing_columns:
        raise SourceError(f"{config.target_base_path} lacks the source's columns {', '.join(found.missing_columns)}: "
                          "repair writes whole rows; ingest the schema change first")  # fmt: skip
    if found.truncated or len(found.differences) > max_repair:
        raise ConfigError(
            f"{source_table}: more than max_repair={max_repair} keys differ; nothing was written "
            "(raise --max-repair, or load the table again with bootstrap)"
        )
    if found.differences:
        _repair_keys(spark, config, database, source_table, found, result, wait_timeout_s)
    result.duration_s = time.monotonic() - started
    return result


def refuse_beside_a_writer(spark: SparkSession | None, config: IngestConfig) -> None:
    """A repair never runs beside another live writer of the table (one holding its writer lease): waited for
    up to ``lease_wait_seconds``, then refused, naming it (a runner's table: hand the repair to the runner).
    The repair's own writes take the lease (``_write``); the verification before them does not hold it."""
    from hudi_cdc.errors import LeaseHeldError
    from hudi_cdc.sink.lease import lease_holder, process_owner_id, refusal

    deadline = time.monotonic() + config.lease_wait_seconds
    while True:
        holder = lease_holder(config.target_base_path, spark=spark)
        if holder is None or not holder.live() or holder.owner.id == process_owner_id():
            return
        if time.monotonic() >= deadline:
            break
        time.sleep(min(1.0, max(0.1, deadline - time.monotonic())))
    message = refusal(config.target_base_path, holder, "repair", waited_s=config.lease_wait_seconds)
    if holder.owner.pipeline:
        message += (
            f"; it is pipeline {holder.owner.pipeline}'s runner: `hudi-cdc verify --repair --pipeline <its file> "
            f"--table {holder.owner.table}` hands the repair to it"
        )
    raise LeaseHeldError(message)


def _refuse_unrepairable(spark: SparkSession, config: IngestConfig) -> None:
    """A history table's rows are versions or marked deletes: repair writes current rows only, so far.

    Nor is a shaped table repaired (transforms, masks): repair compares and writes the source's rows as
    they are, which would report every masked row different and could write unmasked values."""
    from hudi_cdc.sink.hudi import HudiTable

    table = HudiTable(spark, config.target_base_path)
    mode = table.history()
    if mode != "none":
        raise ConfigError(
            f"{config.target_base_path} keeps history={mode!r}: repair writes a table's current rows only, so far "
            "(verify compares its current rows); nothing was written"
        )
    shaped = table.shape() or recorded_shape(config)
    if shaped is not None:
        what = ", ".join(sorted(shaped))
        raise ConfigError(
            f"{config.target_base_path} is written with transforms ({what}): repair of a shaped table is not "
            "built (it would compare and write the source's unshaped rows); nothing was written. verify with "
            "--pipeline compares it shaped; bootstrap loads it again"
        )


def _found(d: Difference) -> str:
    return d.kind + (f": {', '.join(d.columns)}" if d.columns else "") + (f" ({d.note})" if d.note else "")


def _key_plan(conn: Any, spark: SparkSession, config: IngestConfig, table: str, keys: Sequence[str]) -> list[Any]:
    """The canonical key mappings (the source's SQL and Spark SQL), as verify builds them."""
    schema, _, name = table.rpartition(".")
    hudi = spark.read.format("hudi").load(config.target_base_path)
    types = {f.name: f.dataType.simpleString() for f in hudi.schema.fields}
    mysql = config.flavor == "mysql"
    with conn.cursor() as cur:
        cur.execute(
            f"select column_name, data_type, {'column_type' if mysql else 'udt_name'}, numeric_precision,"
            " numeric_scale from information_schema.columns where table_schema = %s and table_name = %s",
            (schema, name),
        )
        catalog: dict[str, tuple[Any, ...]] = {r[0]: tuple(r) for r in cur.fetchall()}
    mapping = canonical.map_mysql_column if mysql else canonical.map_column
    mappings = [mapping(k, *_types(catalog[k]), types[k]) for k in keys]
    bad = [m for m in mappings if isinstance(m, str)]
    if bad:
        raise ConfigError(f"{table}: a key column cannot be compared exactly ({bad[0]})")
    return mappings


def _types(column: tuple[Any, ...]) -> tuple[str, str, int | None, int | None]:
    return column[1], column[2], column[3], column[4]


def _text(values: Sequence[str | None]) -> str:
    """The framed key text verify's canonical SQL computes, from the key's canonical values."""
    return "".join("~" if v is None else f"{len(v)}:{v}" for v in values)


@dataclass(frozen=True)
class _Rank:
    """A source position, and the ``_source_*`` values and order the table's merge policy gives a change there.

    Postgres: ``pos`` is the WAL position (``file`` empty). MySQL/MariaDB: the binlog ``file`` and ``pos``.
    """

    flavor: str
    pos: int
    file: str = ""

    @property
    def text(self) -> str:
        return _lsn_text(self.pos) if self.flavor == "postgres" else f"{self.file}:{self.pos}"

    def moved(self, by: int) -> _Rank:
        return replace(self, pos=self.pos + by)

    def order(self, *, streaming: bool) -> str:
        """``_source_order`` of a change here: a snapshot read, or a streaming change (deletes are streaming)."""
        if self.flavor == "postgres":
            return _order(self.pos, streaming)
        return _binlog_order(self.file, self.pos, 0, streaming)

    def source(self) -> Any:  # noqa: ANN401 - a Spark Column
        """The envelope's ``source`` block of a change here, as the flavor's connector sends it."""
        from pyspark.sql import functions as F

        now = F.lit(int(time.time() * 1000)).cast("bigint").alias("ts_ms")
        if self.flavor == "postgres":
            position = [F.lit(self.pos).cast("bigint").alias("lsn"), F.lit(None).cast("string").alias("txId")]
        else:
            position = [
                F.lit(self.file).alias("file"),
                F.lit(self.pos).cast("bigint").alias("pos"),
                F.lit(0).cast("int").alias("row"),
                F.lit(None).cast("string").alias("gtid"),
            ]
        return F.struct(*position, now, F.lit("true").alias("snapshot"))


def _binlog_order(file: str, pos: int, row: int, streaming: bool) -> str:
    """``_source_order`` of a MySQL change (``payloads.mysql``: file number, position, row, then streaming)."""
    number = re.search(r"\.([0-9]+)$", file)
    digits = number.group(1) if number else "0"
    return f"{digits:0>{_FILE_DIGITS}}{pos:0{_POS_DIGITS}d}{row:0{_ROW_DIGITS}d}{1 if streaming else 0}"


@dataclass
class _Snapshot:
    """The source's side of a repair: the position, the rows present in ``S``, and which keys moved since."""

    rank: _Rank
    rows: DataFrame | None
    present: set[str]
    moved: set[str]
    passed: dict[str, Any] = field(default_factory=dict)
    """What a transaction needs to be known as after ``S`` (a consistent cut's planner reads it, with the
    position, from every later commit of the table): Postgres, a WAL position its END id's LSN is beyond;
    MariaDB, the GTIDs the server had logged once ``S`` was taken, its END's GTID beyond them."""

    def repaired_at(self) -> dict[str, Any]:
        return {"position": self.rank.text, **self.passed}


def _lsn(text: str) -> int:
    high, low = text.split("/")
    return (int(high, 16) << 32) + int(low, 16)


def _lsn_text(value: int) -> str:
    return f"{value >> 32:X}/{value & 0xFFFFFFFF:X}"


def _images(conn: Any, table: str, key_sql: str, texts: list[str]) -> dict[str, str]:
    rows = conn.execute(f"select {key_sql}, md5(t::text) from {table} t where {key_sql} = any(%s)", (texts,))  # noqa: S608
    return {r[0]: r[1] for r in rows.fetchall()}


def _read_at_position(
    spark: SparkSession, database: SourceDatabase, table: str, key_sql: str, texts: list[str], timeout_s: float
) -> _Snapshot:
    """Read the keys' rows in a snapshot whose WAL position is known; wait out the transactions it did not see."""
    conn = database.connect(application="hudi-cdc repair")
    try:
        conn.autocommit = False
        conn.execute("set transaction isolation level repeatable read, read only")
        lsn, snap, exported = conn.execute(
            "select pg_current_wal_insert_lsn()::text, pg_current_snapshot()::text, pg_export_snapshot()"
        ).fetchone()
        images = _images(conn, table, key_sql, texts)
        rows = _source_rows(spark, database, conn, table, key_sql, sorted(images), exported) if images else None
        conn.rollback()
        conn.autocommit = True
        _wait_for(conn, _unseen(conn, snap), timeout_s, table)
        again = _images(conn, table, key_sql, texts)
        moved = {t for t in texts if again.get(t) != images.get(t)}
    finally:
        conn.close()
    # Every transaction S holds wrote its commit below P; one that wrote WAL beyond P committed after S.
    return _Snapshot(_Rank("postgres", _lsn(lsn)), rows, set(images), moved, {"lsn": _lsn(lsn)})


def _read_at_binlog(
    spark: SparkSession, config: IngestConfig, database: SourceDatabase, table: str, key_sql: str, texts: list[str]
) -> _Snapshot:
    """Read the keys' rows in a MariaDB consistent snapshot whose binlog position the server states with it.

    Every transaction the snapshot holds ends below the position, every one it lacks starts at or after it: no
    key moves unseen, nothing is waited for.
    """
    schema, _, name = table.rpartition(".")
    relation = f"{canonical.mysql_ident(schema)}.{canonical.mysql_ident(name)}"
    conn = database.connect(application="hudi-cdc repair")
    try:
        with conn.cursor() as cur:
            cur.execute(
                "select column_name, data_type, column_type, numeric_precision, numeric_scale"
                " from information_schema.columns where table_schema = %s and table_name = %s",
                (schema, name),
            )
            catalog = {r[0]: tuple(r) for r in cur.fetchall()}
            cur.execute("set session transaction isolation level repeatable read")
            cur.execute("start transaction with consistent snapshot, read only")
            cur.execute("show status like 'binlog\\_snapshot\\_%'")
            status = {str(k).lower(): v for k, v in cur.fetchall()}
            # Read after the snapshot began: a transaction with a later GTID committed after it.
            cur.execute("select @@gtid_binlog_pos")
            logged = str((cur.fetchone() or ("",))[0] or "")
            if not status.get("binlog_snapshot_file"):
                conn.rollback()
                raise ConfigError(
                    f"{database.display}: no binlog position for a consistent snapshot (binlog_snapshot_file/"
                    "_position are MariaDB's; MySQL proper is not supported by repair yet, and MariaDB needs log_bin "
                    "on); nothing was written"
                )
            key = key_sql.replace("%", "%%")  # PyMySQL formats the query with its arguments
            cur.execute(f"select {key}, t.* from {relation} t where {key} in %s", (tuple(texts),))  # noqa: S608
            names = [d[0] for d in cur.description][1:]
            fetched = cur.fetchall()
        conn.rollback()
    finally:
        conn.close()
    rank = _Rank("mysql", int(status["binlog_snapshot_position"]), str(status["binlog_snapshot_file"]))
    present = {r[0] for r in fetched}
    rows = _mysql_frame(spark, config, catalog, names, [r[1:] for r in fetched]) if fetched else None
    return _Snapshot(rank, rows, present, set(), {"gtid": logged})


def _mysql_frame(
    spark: SparkSession,
    config: IngestConfig,
    catalog: dict[str, tuple[Any, ...]],
    names: list[str],
    rows: list[tuple[Any, ...]],
) -> DataFrame:
    """The rows PyMySQL read, in the table's column types, as Debezium's MySQL connector sends them.

    Only columns verify compares exactly are written (its comparison proves the conversion): another one
    (BIT(n), spatial types) refuses the repair.
    """
    from pyspark.sql.types import StructType

    table = spark.read.format("hudi").load(config.target_base_path).schema
    fields = {f.name: f for f in table.fields}
    kept = [i for i, n in enumerate(names) if n in fields]  # a column the table lacks was refused by verify
    for i in kept:
        name, data_type, column_type, precision, scale = catalog[names[i]]
        mapped = canonical.map_mysql_column(
            name, data_type, column_type, precision, scale, fields[name].dataType.simpleString()
        )
        if isinstance(mapped, str):
            raise ConfigError(f"{config.target_base_path}: column {names[i]}: {mapped}, so repair cannot prove "
                              "what it would write; nothing was written")  # fmt: skip
    schema = StructType([fields[names[i]] for i in kept])
    values = [tuple(_mysql_value(row[i], fields[names[i]].dataType.simpleString()) for i in kept) for row in rows]
    return spark.createDataFrame(values, schema=schema).localCheckpoint(eager=True)


def _mysql_value(value: Any, spark_type: str) -> Any:  # noqa: ANN401, PLR0911
    """One PyMySQL value as the table holds it (docs/types.md; the session is in UTC)."""
    import datetime as dt
    from decimal import Decimal

    if value is None:
        return None
    if spark_type == "timestamp" and isinstance(value, dt.datetime):  # DATETIME: wall clock kept as UTC
        return value.replace(tzinfo=dt.UTC)
    if spark_type == "string" and isinstance(value, dt.timedelta):  # TIME: Debezium's MicroTime text
        micros = value // dt.timedelta(microseconds=1)
        seconds, fraction = divmod(micros, 1_000_000)
        return f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}.{fraction:06d}"
    if spark_type == "string" and isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8")
    if spark_type == "string":
        return str(value)
    if spark_type == "binary":
        return bytes(value)
    if spark_type == "boolean":
        return bool(value)
    if spark_type in ("int", "bigint", "smallint", "tinyint"):
        return int(value)
    if spark_type in ("float", "double"):
        return float(value)
    if spark_type.startswith("decimal("):
        return Decimal(value)
    return value


def _unseen(conn: Any, snapshot: str) -> list[int]:
    """Transactions that may have written below the position without ``snapshot`` holding their changes."""
    xmin, xmax, xip = snapshot.split(":")
    now_xmax = int(conn.execute("select pg_current_snapshot()::text").fetchone()[0].split(":")[1])
    return sorted({int(x) for x in xip.split(",") if x} | set(range(int(xmax), now_xmax)))


def _wait_for(conn: Any, xids: list[int], timeout_s: float, table: str) -> None:
    deadline = time.monotonic() + timeout_s
    while xids:
        xids = [
            int(r[0])
            for r in conn.execute(
                "select x::text from unnest(%s::text[]) x where pg_xact_status(x::xid8) = 'in progress'",
                ([str(x) for x in xids],),
            ).fetchall()
        ]
        if xids and time.monotonic() > deadline:
            raise SourceError(
                f"{table}: transactions {', '.join(map(str, xids[:5]))} still open after {timeout_s:.0f}s; "
                "repair waits for every transaction its snapshot did not see; nothing was written"
            )
        if xids:
            time.sleep(_WAIT_POLL_S)


def _source_rows(
    spark: SparkSession, database: SourceDatabase, conn: Any, table: str, key_sql: str, texts: list[str], snapshot: str
) -> DataFrame:
    """The keys' rows as Debezium sends them, read by Spark inside the exported snapshot, held before it ends."""
    from pyspark.sql import functions as F

    from hudi_cdc._jvm import java_message
    from hudi_cdc.sources.snapshot import SnapshotSource, column_reading, quote_ident

    columns = SnapshotSource(spark, database, table, key_fields=(), next_checkpoint={})._catalog(conn)  # noqa: SLF001
    readings = [column_reading(c) for c in columns]
    select = ", ".join(f"{sql} as {quote_ident(c.name)}" for c, (sql, _) in zip(columns, readings, strict=True))
    literals = ", ".join("'" + t.replace("'", "''") + "'" for t in texts)
    relation = f"(select {select} from {table} t where {key_sql} in ({literals})) hudi_cdc_repair"  # noqa: S608
    url, properties = database.jdbc()
    properties = {**properties, "driver": "org.postgresql.Driver", "fetchsize": "1000",
                  "sessionInitStatement": "set transaction isolation level repeatable read, read only; "
                                          f"set transaction snapshot '{snapshot}'"}  # fmt: skip
    try:
        rows = spark.read.jdbc(url, relation, properties=properties)
        typed = rows.select(
            *[F.col(f"`{c.name}`").cast(ddl).alias(c.name) for c, (_, ddl) in zip(columns, readings, strict=True)]
        )
        return typed.localCheckpoint(eager=True)  # read now, while the snapshot lives
    except Exception as exc:
        raise SourceError(f"{database.display} ({table}): {java_message(exc)}") from None


def _repair_keys(
    spark: SparkSession,
    config: IngestConfig,
    database: SourceDatabase,
    table: str,
    found: VerifyResult,
    result: RepairResult,
    timeout_s: float,
) -> None:
    """Read the differing keys at a position, decide each, and (unless a dry run) write them."""
    from hudi_cdc.spark import release

    diffs = {_text(list(d.key.values())): d for d in found.differences}
    with database.connect(application="hudi-cdc repair") as conn:
        mappings = _key_plan(conn, spark, config, table, found.key_fields)
    if config.flavor == "mysql":
        key_sql = canonical.row_text([m.source_sql for m in mappings], "mysql")
        snap = _read_at_binlog(spark, config, database, table, key_sql, sorted(diffs))
    else:
        key_sql = canonical.row_text([m.source_sql for m in mappings], "postgres")
        snap = _read_at_position(spark, database, table, key_sql, sorted(diffs), timeout_s)
    stored = None
    try:
        spark_key = canonical.row_text([m.spark_sql for m in mappings], "spark")
        stored = _stored(spark, config, spark_key, sorted(diffs))
        reached = _reached(database)
        result.position = snap.rank.text
        plan = _decide(diffs, snap, stored, reached)
        result.keys = [k for _, k, _ in plan]
        if result.applied and any(k.action != "skip" for k in result.keys):
            result.commits = _write(spark, config, snap, stored, plan)
            _outcomes(spark, config, spark_key, plan, result, snap.rank.order(streaming=False))
    finally:
        release(snap.rows, stored)


def _reached(database: SourceDatabase) -> _Rank:
    """Where the source's change log ends now: no change read before this can sit at or beyond it."""
    with database.connect(application="hudi-cdc repair") as conn:
        if database.kind == "postgres":
            return _Rank("postgres", _lsn(conn.execute("select pg_current_wal_insert_lsn()::text").fetchone()[0]))
        with conn.cursor() as cur:
            cur.execute("show master status")  # the end of the last event written: the next one starts there
            file, pos = cur.fetchone()[:2]
        return _Rank("mysql", int(pos), file)


def _order(position: int, streaming: bool) -> str:
    """``_source_order`` of a Postgres change at ``position`` (see ``payloads.postgres``)."""
    from payloads.postgres import LSN_DIGITS

    return f"{position:0{LSN_DIGITS}d}{1 if streaming else 0}"


def _stored(spark: SparkSession, config: IngestConfig, key_sql: str, texts: list[str]) -> DataFrame:
    """The table's rows of the keys, each with its canonical key text ``__hudi_cdc_key``."""
    from pyspark.sql import functions as F

    frame = spark.read.format("hudi").load(config.target_base_path)
    keyed = frame.withColumn("__hudi_cdc_key", F.expr(key_sql)).where(F.col("__hudi_cdc_key").isin(texts))
    return keyed.localCheckpoint(eager=True)


def _decide(
    diffs: dict[str, Difference], snap: _Snapshot, stored: DataFrame, reached: _Rank
) -> list[tuple[str, RepairedKey, bool]]:
    """Per key: (key text, what repair does, whether every stored copy is deleted first)."""
    from payloads.base import ORDER_COLUMN

    orders: dict[str, list[str]] = {}
    for row in stored.select("__hudi_cdc_key", ORDER_COLUMN).collect():
        orders.setdefault(row[0], []).append(row[1] or "")
    at, impossible = snap.rank.order(streaming=False), reached.order(streaming=True)
    plan = []
    for text, d in sorted(diffs.items()):
        action = "upsert" if text in snap.present else "delete"
        held = orders.get(text, [])
        newer = [o for o in held if at < o <= impossible]
        key = RepairedKey(d.key, _found(d), action)
        if text in snap.moved:
            key = RepairedKey(d.key, _found(d), "skip", "changed at the source during the repair: the stream brings it")
        elif len(held) > 1 and newer:
            key = RepairedKey(d.key, _found(d), "skip", "a copy holds a change after the position: repair again later")
        elif action == "delete" and not held:
            key = RepairedKey(d.key, _found(d), "skip", "absent at the source and in the table")
        force = key.action != "skip" and (len(held) > 1 or any(o > impossible for o in held))
        if force:
            key = RepairedKey(d.key, _found(d), action, "every stored copy deleted first")
        plan.append((text, key, force))
    return plan


def _write(
    spark: SparkSession,
    config: IngestConfig,
    snap: _Snapshot,
    stored: DataFrame,
    plan: list[tuple[str, RepairedKey, bool]],
) -> list[str]:
    """The forced deletes (one Hudi ``delete`` commit), then the ranked rows through the ingest's merge, both
    under the table's writer lease."""
    from hudi_cdc.pipeline import writer_lease

    with writer_lease(config, spark):
        return _write_held(spark, config, snap, stored, plan)


def _write_held(
    spark: SparkSession,
    config: IngestConfig,
    snap: _Snapshot,
    stored: DataFrame,
    plan: list[tuple[str, RepairedKey, bool]],
) -> list[str]:
    from pyspark.sql import functions as F

    from hudi_cdc.pipeline import ingest_once
    from hudi_cdc.sink.hudi import HudiTable

    commits = []
    forced = [text for text, _, force in plan if force]
    if forced:
        commits.append(_delete_copies(spark, config, stored.where(F.col("__hudi_cdc_key").isin(forced))))
    upserts = [t for t, k, _ in plan if k.action == "upsert"]
    deletes = [t for t, k, _ in plan if k.action == "delete"]
    table = HudiTable(spark, config.target_base_path)
    source = _RepairSource(snap, upserts, stored.where(F.col("__hudi_cdc_key").isin(deletes)), table)
    done = ingest_once(replace(config, checkpoint=None), spark=spark, source=source)  # the table's, unchanged
    if done.commit_time:
        commits.append(done.commit_time)
    return commits


def _delete_copies(spark: SparkSession, config: IngestConfig, rows: DataFrame) -> str:
    """Delete every stored copy of the keys in ``rows`` (each at its own position, so each delete wins)."""
    from hudi_cdc.sink import options as opt
    from hudi_cdc.sink.hudi import HudiTable, index_conf
    from payloads.base import ORDER_COLUMN

    table = HudiTable(spark, config.target_base_path)
    options = opt.write_options(
        table_name=config.target_table,
        table_type=config.table_type,
        record_key_fields=config.record_key_fields or table.record_key_fields(),
        partition_path_field=config.partition_path_field,
        ordering_field=ORDER_COLUMN,
        user_conf=index_conf(table, config.hoodie_conf, partitioned=bool(config.partition_path_field)),
    )
    data = rows.select(*[c for c in rows.columns if not c.startswith("_hoodie_") and c != "__hudi_cdc_key"])
    stats = {"repair": "delete every stored copy", "keys": rows.select("__hudi_cdc_key").distinct().count()}
    options[opt.OPERATION] = "delete"
    if config.table_type == "MERGE_ON_READ":
        # Compacted at once: a key whose base file still holds it would be tagged there again by the ranked
        # write (both copies of a duplicate come back), and a log's bogus position could still outrank it.
        options.update({opt.COMPACT_INLINE: "true", opt.COMPACT_INLINE_MAX_DELTA_COMMITS: "1"})
    return table.write(data, options, {opt.STATS_KEY: json.dumps(stats)}, marker=opt.STATS_KEY)


def _outcomes(
    spark: SparkSession,
    config: IngestConfig,
    key_sql: str,
    plan: list[tuple[str, RepairedKey, bool]],
    result: RepairResult,
    at: str,
) -> None:
    """Read the keys back: each written key holds the repair's row (or is gone), or was outranked by a newer change."""
    from pyspark.sql import functions as F

    from payloads.base import ORDER_COLUMN

    frame = spark.read.format("hudi").load(config.target_base_path)
    keyed = frame.select(F.expr(key_sql).alias("k"), F.col(ORDER_COLUMN))
    held: dict[str, list[str]] = {}
    for k, order in keyed.where(F.col("k").isin([t for t, _, _ in plan])).collect():
        held.setdefault(k, []).append(order)
    keys = []
    for text, key, _ in plan:
        now = held.get(text, [])
        if key.action == "skip":
            keys.append(key)
            continue
        good = (key.action == "delete" and not now) or (key.action == "upsert" and now == [at])
        keys.append(RepairedKey(key.key, key.found, key.action, key.note, "repaired" if good else "outranked"))
    result.keys = keys


class _RepairSource:
    """One batch: the present keys as snapshot reads at the position, the absent ones as deletes just below it.

    Its checkpoint is the table's own, unchanged: the stream goes on from where it was.
    """

    def __init__(self, snap: _Snapshot, upserts: list[str], absent: DataFrame, table: Any) -> None:  # noqa: ANN401
        self._snap, self._upserts, self._absent = snap, upserts, absent
        self._stored = table.latest_checkpoint()

    def parse_checkpoint(self, text: str) -> dict[str, Any]:
        return json.loads(text)

    def next_batch(self, checkpoint: dict[str, Any] | None) -> Batch | None:
        from pyspark.sql import functions as F

        from hudi_cdc.envelope.events import Batch, BatchPart, change_events

        where = f"repair at {self._snap.rank.text}"
        parts = []
        if self._upserts and self._snap.rows is not None:
            rows = self._snap.rows
            image = F.struct(*[F.col(f"`{c}`") for c in rows.columns])
            envelopes = change_events(rows, op="r", image=image, source=self._snap.rank.source(), where=where)
            parts.append(BatchPart(envelopes=envelopes, where=where))
        if self._absent.take(1):
            from payloads.base import INGESTED_AT_COLUMN

            columns = [c for c in self._absent.columns if not c.startswith(("_hoodie_", "_source_", "__hudi_cdc"))]
            image = F.struct(*[F.col(f"`{c}`") for c in columns if c != INGESTED_AT_COLUMN])
            source = self._snap.rank.moved(-1).source()
            parts.append(BatchPart(envelopes=change_events(self._absent, op="d", image=image, source=source,
                                                           where=where), where=where))  # fmt: skip
        details = {"repair": True, REPAIR_AT_DETAIL: self._snap.repaired_at()}  # pipeline: REPAIRED_AT_KEY
        return Batch(parts=parts, next_checkpoint=dict(checkpoint or {}), description=where, details=details)


# --- a repair run by a pipeline's runner: the table's one writer, while its stream goes on ---------------------


def requested_repair(
    spark: SparkSession, config: IngestConfig, request: dict[str, Any], catch_up: Callable[[], None]
) -> dict[str, Any]:
    """A repair a pipeline's runner was asked for (``control.request_repair``), run by the runner as the table's
    round: the recheck catches the table up with ``catch_up`` (one of its rounds) instead of waiting for it."""
    from hudi_cdc.ops.verify import wait_for_ingest
    from hudi_cdc.sources.kafka import broker_conf
    from hudi_cdc.sources.kafka_security import KafkaSecurity
    from hudi_cdc.upstream.database import SourceDatabase

    database = SourceDatabase(
        request["source_url"], password_file=request.get("password_file"), password_env=request.get("password_env")
    )
    recheck = None
    if request.get("recheck", True):
        recheck = wait_for_ingest(
            spark, config.target_base_path, bootstrap_servers=config.bootstrap_servers, slot=request.get("slot"),
            timeout_s=float(request.get("recheck_timeout_s", 600.0)), database_kind=database.kind, advance=catch_up,
            kafka_conf=broker_conf(config.hoodie_conf, KafkaSecurity.of(config)),
        )  # fmt: skip
    result = repair(
        spark, config, database, request["source_table"], apply=bool(request.get("apply", True)),
        max_repair=int(request.get("max_repair") or 1000), key_fields=tuple(request.get("key_fields") or ()),
        recheck=recheck,
    )  # fmt: skip
    return {**result.to_dict(), "described": result.describe(), "repaired_by": "runner"}


def repair_through_runner(
    pipeline: str, topic: str, request: dict[str, Any], *, timeout_s: float = 1800.0, poll_s: float = 1.0
) -> dict[str, Any] | None:
    """Hand a repair to the runner that writes the table and wait for its outcome; None when no runner is
    writing it (no live holder of its writer lease, or the holder is not a continuous runner, or the table is
    paused, removed or failed there): the caller repairs it itself (and is refused beside any other writer).

    The runner is found through the table's lease: its owner names the runner's state folder (of two runners
    sharing a pipeline, the one holding the table), and it is alive while its heartbeat is. The request holds no
    secret: a password only as ``password_env``/``password_file``, which the runner resolves in its own
    environment.
    """
    from urllib.parse import urlsplit

    from hudi_cdc.errors import LeaseHeldError
    from hudi_cdc.service import control
    from hudi_cdc.service.spec import TableRef, load_pipeline
    from hudi_cdc.sink.lease import lease_holder, refusal

    if urlsplit(request["source_url"]).password:
        raise ConfigError("the source URL holds a password: give it with --password-env or --password-file")
    spec = load_pipeline(pipeline)
    ref = TableRef(topic)
    target = spec.table_config(ref).target_base_path
    holder = lease_holder(target)
    if holder is None or not holder.live() or not holder.owner.state_dir:
        return None
    state_dir, name = holder.owner.state_dir, holder.owner.table or ref.name
    if not os.path.isdir(state_dir):
        raise LeaseHeldError(
            refusal(target, holder, "repair")
            + f"; its state folder {state_dir} is not reachable from this host: run the repair on {holder.owner.host}"
        )
    status = control.read_status(state_dir)
    state = ((status or {}).get("tables", {}).get(name) or {}).get("state")
    if not (status or {}).get("continuous") or state not in _RUNNABLE:
        return None
    request_id = _request_or_join(state_dir, name, request)
    log.info("%s: repair %s handed to the runner writing it (%s)", name, request_id, holder.owner.describe())
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        outcome = control.repair_outcome(state_dir, name, request_id)
        if outcome is not None:
            return outcome
        now_holder = lease_holder(target)
        if now_holder is None or not now_holder.live() or now_holder.owner.id != holder.owner.id:
            raise TransientError(
                f"{name}: the runner writing the table stopped (or gave the table up) before repair {request_id} "
                f"finished; the request stays in {state_dir}/control/ and runs when that runner holds the table "
                "again (the same command run again waits for it there)"
            )
        time.sleep(poll_s)
    raise TransientError(f"{name}: repair {request_id} not finished by the runner within {timeout_s:.0f}s; it goes on")


def _request_or_join(state_dir: str, name: str, request: dict[str, Any]) -> str:
    """Leave the request in the runner's control folder, or join the same repair already asked for there: a try
    before this one whose runner was killed while it ran it (exit 75) left it, and that runner, restarted and
    holding the table again, runs it. Refused (a request is there) only when that one asks for another repair."""
    from hudi_cdc.service import control

    pending = control.pending_repair(state_dir, name)
    if pending is not None and {k: v for k, v in pending.items() if k != "id"} == json.loads(
        json.dumps(request, default=str)
    ):
        log.info("%s: repair %s, asked for before, is still pending there: waiting for it", name, pending["id"])
        return str(pending["id"])
    return control.request_repair(state_dir, name, request)


_RUNNABLE = ("waiting", "running", "retrying")
