"""Is a Hudi table equal to its source table, row for row and value for value? The key-range compare engine.

``hudi-cdc verify`` (:mod:`hudi_cdc.ops.verify`) and the JDBC source's delete
reconciliation both use it; it sits below the sources for that reason.

How, without moving either table (data-diff's approach, with exact values):

1. Each side hashes every row where it lives (the database in its SQL, Postgres
   or MySQL/MariaDB; Hudi in Spark)
   into ``(bucket, count, sum of row hashes)``; only those sums travel. The
   bucket is a hash of the key, so buckets split any key (uuid, composite)
   evenly, and a missing, extra, changed or doubled row changes its bucket.
2. Buckets that differ are split 64 ways and hashed again, until the rows in
   them are few enough to fetch (``fetch_limit`` per side). Only those rows
   reach the driver, as canonical text (:mod:`hudi_cdc.upstream.canonical`).
3. The fetched rows name each differing key: missing, extra, duplicate, or
   changed with the columns that differ (a surviving TOAST placeholder is named).
4. The source keeps changing while the table follows it. A first pass that
   finds differences waits until the ingest has passed the source position
   the first pass saw (the WAL position, then the Kafka offsets that hold it,
   then a Hudi commit whose checkpoint covers them; MySQL has no slot that
   confirms a binlog position, so there the topic must fall quiet first) and
   runs again; only differences found both times are reported.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from hudi_cdc.errors import ConfigError, SourceError
from hudi_cdc.upstream import canonical
from hudi_cdc.upstream.database import SourceDatabase
from payloads.postgres import DEFAULT_TOAST_PLACEHOLDER

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


__all__ = ["Difference", "Plan", "SparkSide", "VerifyResult", "compare", "verify"]

FIRST_BUCKETS = 256
SPLIT = 64
_MAX_MODULUS = 1 << 40


@dataclass(frozen=True)
class Difference:
    key: dict[str, str | None]  # key columns as canonical text
    kind: str  # missing (in Hudi) | extra (in Hudi) | duplicate (in Hudi) | changed
    columns: tuple[str, ...] = ()  # changed: the columns that differ
    note: str | None = None


@dataclass
class VerifyResult:
    table: str
    source: str
    target: str
    key_fields: tuple[str, ...]
    source_rows: int = 0
    target_rows: int = 0
    compared_columns: tuple[str, ...] = ()
    skipped_columns: dict[str, str] = field(default_factory=dict)  # column -> why it was not compared
    missing_columns: tuple[str, ...] = ()  # in the source, not in the Hudi table
    differences: list[Difference] = field(default_factory=list)
    differing_buckets: int = 0
    truncated: bool = False  # more differences exist than were examined
    passes: int = 1
    recheck: str | None = None  # what the second pass waited for
    notes: list[str] = field(default_factory=list)  # what the reader should know about the comparison
    duration_s: float = 0.0

    @property
    def equal(self) -> bool:
        return not self.differences and not self.missing_columns and not self.differing_buckets

    @property
    def exit_code(self) -> int:
        return 0 if self.equal else 1

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["equal"] = self.equal
        out["differences"] = [asdict(d) for d in self.differences]
        return out

    def describe(self) -> str:
        lines = [
            f"{self.table}: source {self.source_rows} rows, hudi {self.target_rows} rows: "
            + ("EQUAL" if self.equal else "DIFFERENT")
        ]
        if self.missing_columns:
            lines.append(f"  columns missing in Hudi: {', '.join(self.missing_columns)}")
        for name, why in self.skipped_columns.items():
            lines.append(f"  not compared: {name} ({why})")
        for d in self.differences:
            key = ", ".join(f"{k}={v}" for k, v in d.key.items())
            what = d.kind + (f": {', '.join(d.columns)}" if d.columns else "") + (f" ({d.note})" if d.note else "")
            lines.append(f"  {key}: {what}")
        if self.truncated:
            lines.append("  ... more differences not shown (raise --max-diffs)")
        if self.recheck:
            lines.append(f"  rechecked: {self.recheck}")
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


# --- the two sides ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    key_fields: tuple[str, ...]
    mappings: tuple[canonical.Mapping, ...]  # key columns first

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(m.name for m in self.mappings)


class _SqlSide:
    """The source table, hashed by the database itself (Postgres, or MySQL/MariaDB)."""

    def __init__(self, conn: Any, engine: canonical.Engine, relation: str, where: str | None) -> None:
        self._conn = conn
        self._engine = engine
        self._relation = relation
        self._where = where

    def _rows_sql(self, plan: Plan) -> str:
        keys = [m.source_sql for m in plan.mappings[: len(plan.key_fields)]]
        everything = [m.source_sql for m in plan.mappings]
        where = f" where {self._where}" if self._where else ""
        h = canonical.key_hash(canonical.row_text(keys, self._engine), self._engine)
        v = canonical.key_hash(canonical.row_text(everything, self._engine), self._engine)
        return f"select {h} as h, {v} as v, {', '.join(f'{e} as c{i}' for i, e in enumerate(everything))} from {self._relation}{where}"  # noqa: E501, S608

    def _in(self, modulus: int, buckets: set[int]) -> str:
        values = ",".join(str(int(b)) for b in sorted(buckets))
        if self._engine == "postgres":
            return f"h % {modulus} = any('{{{values}}}'::bigint[])"
        return f"h % {modulus} in ({values})"

    def _query(self, sql: str) -> list[tuple[Any, ...]]:
        with self._conn.cursor() as cur:
            cur.execute(sql)  # no parameters: the drivers leave the % of the SQL alone
            return list(cur.fetchall())

    def buckets(self, plan: Plan, modulus: int, parent: tuple[int, set[int]] | None) -> dict[int, tuple[int, int]]:
        sql = f"select h % {modulus}, count(*), coalesce(sum(v), 0) from ({self._rows_sql(plan)}) r"  # noqa: S608
        if parent:
            sql += f" where {self._in(*parent)}"
        return {int(b): (int(n), int(s)) for b, n, s in self._query(sql + " group by 1")}

    def rows(self, plan: Plan, modulus: int, buckets: set[int]) -> list[tuple[Any, ...]]:
        sql = f"select * from ({self._rows_sql(plan)}) r where {self._in(modulus, buckets)}"  # noqa: S608
        return [tuple(row[2:]) for row in self._query(sql)]


class _Side(Protocol):
    def buckets(self, plan: Plan, modulus: int, parent: tuple[int, set[int]] | None) -> dict[int, tuple[int, int]]: ...

    def rows(self, plan: Plan, modulus: int, buckets: set[int]) -> list[tuple[Any, ...]]: ...


class SparkSide:
    """The Hudi table; or, with ``source=True``, the replay of change files it is compared with."""

    def __init__(self, frame: DataFrame, where: str | None, *, source: bool = False) -> None:
        self._frame = frame if not where else frame.where(where)
        self._source = source

    def _rows(self, plan: Plan) -> DataFrame:
        from pyspark.sql import functions as F

        exprs = [m.source_sql if self._source else m.spark_sql for m in plan.mappings]
        keys = exprs[: len(plan.key_fields)]
        everything = exprs
        return self._frame.select(
            F.expr(canonical.key_hash(canonical.row_text(keys, "spark"), "spark")).alias("h"),
            F.expr(canonical.key_hash(canonical.row_text(everything, "spark"), "spark")).alias("v"),
            *[F.expr(e).alias(f"c{i}") for i, e in enumerate(everything)],
        )

    def buckets(self, plan: Plan, modulus: int, parent: tuple[int, set[int]] | None) -> dict[int, tuple[int, int]]:
        from pyspark.sql import functions as F

        rows = self._rows(plan)
        if parent:
            rows = rows.where((F.col("h") % parent[0]).isin(sorted(parent[1])))
        grouped = rows.groupBy((F.col("h") % modulus).alias("b")).agg(
            F.count(F.lit(1)).alias("n"), F.sum(F.col("v").cast("decimal(38,0)")).alias("s")
        )
        return {int(r["b"]): (int(r["n"]), int(r["s"] or 0)) for r in grouped.collect()}

    def rows(self, plan: Plan, modulus: int, buckets: set[int]) -> list[tuple[Any, ...]]:
        from pyspark.sql import functions as F

        rows = self._rows(plan).where((F.col("h") % modulus).isin(sorted(buckets)))
        return [tuple(r)[2:] for r in rows.collect()]


# --- the comparison -----------------------------------------------------------------------------------


def _catalog(
    conn: Any, engine: canonical.Engine, schema: str, table: str
) -> tuple[list[tuple[str, str, str, int | None, int | None]], tuple[str, ...]]:
    """The table's columns (name, type, detailed type, precision, scale) and its primary key."""
    with conn.cursor() as cur:
        detail = "udt_name" if engine == "postgres" else "column_type"
        cur.execute(
            f"select column_name, data_type, {detail}, numeric_precision, numeric_scale from information_schema.columns"
            " where table_schema = %s and table_name = %s order by ordinal_position",
            (schema, table),
        )
        columns = [tuple(c) for c in cur.fetchall()]
        if not columns:
            return [], ()
        if engine == "postgres":
            cur.execute(
                "select a.attname from pg_index i join pg_attribute a on a.attrelid = i.indrelid"
                " and a.attnum = any(i.indkey) where i.indisprimary"
                " and i.indrelid = (quote_ident(%s) || '.' || quote_ident(%s))::regclass"
                " order by array_position(i.indkey, a.attnum)",
                (schema, table),
            )
        else:
            cur.execute(
                "select column_name from information_schema.key_column_usage where table_schema = %s"
                " and table_name = %s and constraint_name = 'PRIMARY' order by ordinal_position",
                (schema, table),
            )
        primary_key = tuple(r[0] for r in cur.fetchall())
    return columns, primary_key  # type: ignore[return-value]


def _plan(
    conn: Any,
    engine: canonical.Engine,
    frame: DataFrame,
    schema: str,
    table: str,
    key_fields: Sequence[str],
    columns: Sequence[str] | None,
    result: VerifyResult,
) -> Plan:
    catalog, primary_key = _catalog(conn, engine, schema, table)
    if not catalog:
        raise SourceError(f"table {schema}.{table} does not exist in {result.source} (or the user cannot see it)")
    keys = tuple(key_fields) or primary_key
    if not keys:
        raise ConfigError(f"{schema}.{table} has no primary key: name the key with --record-key-field")
    hudi_types = {f.name: f.dataType.simpleString() for f in frame.schema.fields}
    by_name = {c[0]: c for c in catalog}
    for name in (*keys, *(columns or ())):
        if name not in by_name:
            raise ConfigError(f"column {name!r} is not in {schema}.{table} (columns: {', '.join(by_name)})")
    wanted = list(keys) + [c[0] for c in catalog if c[0] not in keys and (not columns or c[0] in columns)]
    result.missing_columns = tuple(n for n in wanted if n not in hudi_types)
    mappings = []
    for name in wanted:
        if name not in hudi_types:
            continue
        mapping = canonical.map_column if engine == "postgres" else canonical.map_mysql_column
        mapped = mapping(*by_name[name], hudi_types[name])
        if isinstance(mapped, str):
            if name in keys:
                raise ConfigError(f"key column {name}: {mapped}; verify cannot pair rows without it")
            result.skipped_columns[name] = mapped
        else:
            mappings.append(mapped)
    if any(k in result.missing_columns for k in keys):
        raise SourceError(f"the Hudi table {result.target} has no key column {', '.join(keys)}")
    result.key_fields = keys
    result.compared_columns = tuple(m.name for m in mappings)
    return Plan(keys, tuple(mappings))


def _differing(a: dict[int, tuple[int, int]], b: dict[int, tuple[int, int]]) -> dict[int, int]:
    """Buckets whose count or sum differ, with the larger row count of the two sides."""
    return {
        k: max(a.get(k, (0, 0))[0], b.get(k, (0, 0))[0])
        for k in set(a) | set(b)
        if a.get(k, (0, 0)) != b.get(k, (0, 0))
    }


def _narrow(
    source: _Side, target: _Side, plan: Plan, fetch_limit: int, result: VerifyResult
) -> tuple[int, dict[int, int]]:
    """The buckets that differ, split until they hold few rows: (modulus, bucket -> rows); empty when equal.

    Splitting stops when the differing buckets hold at most ``fetch_limit`` rows,
    or when a split no longer shrinks them (every row in them differs: an empty
    or far-behind table); the caller then fetches them a chunk at a time.
    """
    modulus = FIRST_BUCKETS
    a, b = source.buckets(plan, modulus, None), target.buckets(plan, modulus, None)
    result.source_rows = sum(n for n, _ in a.values())
    result.target_rows = sum(n for n, _ in b.values())
    differing = _differing(a, b)
    result.differing_buckets = len(differing)
    while differing and sum(differing.values()) > fetch_limit and modulus < _MAX_MODULUS:
        parent = (modulus, set(differing))
        finer = _differing(source.buckets(plan, modulus * SPLIT, parent), target.buckets(plan, modulus * SPLIT, parent))
        if sum(finer.values()) >= sum(differing.values()):
            break
        modulus, differing = modulus * SPLIT, finer
    return modulus, differing


def _chunks(buckets: dict[int, int], limit: int) -> Iterator[set[int]]:
    chunk: set[int] = set()
    rows = 0
    for bucket, n in sorted(buckets.items()):
        if chunk and rows + n > limit:
            yield chunk
            chunk, rows = set(), 0
        chunk.add(bucket)
        rows += n
    if chunk:
        yield chunk


def _compare_rows(
    plan: Plan, source_rows: list[tuple[Any, ...]], target_rows: list[tuple[Any, ...]], placeholder: str
) -> list[Difference]:
    n = len(plan.key_fields)
    names = plan.columns
    src: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    for row in source_rows:
        src[row[:n]] = row
    tgt: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}
    for row in target_rows:
        tgt.setdefault(row[:n], []).append(row)
    marks = {placeholder, placeholder.encode().hex(), f'["{placeholder}"]'}
    out = []
    for key in sorted(set(src) | set(tgt), key=lambda k: tuple("" if v is None else str(v) for v in k)):
        shown = dict(zip(plan.key_fields, key, strict=True))
        if key not in tgt:
            out.append(Difference(shown, "missing"))
        elif key not in src:
            out.append(Difference(shown, "extra", note=f"{len(tgt[key])} rows in Hudi" if len(tgt[key]) > 1 else None))
        elif len(tgt[key]) > 1:
            out.append(Difference(shown, "duplicate", note=f"{len(tgt[key])} rows in Hudi"))
        else:
            wanted, got = src[key], tgt[key][0]
            changed = tuple(names[i] for i in range(n, len(names)) if wanted[i] != got[i])
            if changed:
                toast = [names[i] for i in range(n, len(names)) if got[i] in marks and wanted[i] not in marks]
                note = f"TOAST placeholder in {', '.join(toast)}" if toast else None
                out.append(Difference(shown, "changed", changed, note))
    return out


def _one_pass(
    conn: Any,
    engine: canonical.Engine,
    spark: SparkSession,
    base_path: str,
    schema: str,
    table: str,
    opts: dict[str, Any],
    result: VerifyResult,
) -> list[Difference]:
    from payloads.history import current_rows

    rows = opts["table_rows"]
    frame = rows() if rows is not None else current_rows(spark.read.format("hudi").load(base_path))  # current rows
    plan = _plan(conn, engine, frame, schema, table, opts["key_fields"], opts["columns"], result)
    ident = canonical.sql_ident if engine == "postgres" else canonical.mysql_ident
    source = _SqlSide(conn, engine, f"{ident(schema)}.{ident(table)}", opts["where"])
    return compare(source, SparkSide(frame, opts["where"]), plan, opts, result)


def _position(conn: Any, engine: canonical.Engine) -> str:
    """Where the source's change log is now: the WAL position, or the binlog file and position."""
    with conn.cursor() as cur:
        if engine == "postgres":
            cur.execute("select pg_current_wal_lsn()::text")
            return str(cur.fetchone()[0])
        try:
            cur.execute("show master status")  # needs BINLOG MONITOR (REPLICATION CLIENT)
            row = cur.fetchone()
        except Exception:  # noqa: BLE001 - a missing privilege only costs the recheck its label
            row = None
        return f"{row[0]}:{row[1]}" if row else "the binlog position (not readable by this user)"


def compare(source: _Side, target: _Side, plan: Plan, opts: dict[str, Any], result: VerifyResult) -> list[Difference]:
    modulus, buckets = _narrow(source, target, plan, opts["fetch_limit"], result)
    diffs: list[Difference] = []
    for chunk in _chunks(buckets, opts["fetch_limit"]):
        fetched = (source.rows(plan, modulus, chunk), target.rows(plan, modulus, chunk))
        diffs += _compare_rows(plan, *fetched, opts["toast"])
        if len(diffs) > opts["max_diffs"]:
            result.truncated = True
            break
    return diffs


def verify(
    spark: SparkSession,
    base_path: str,
    database: SourceDatabase,
    table: str,
    *,
    key_fields: Sequence[str] = (),
    columns: Sequence[str] | None = None,
    where: str | None = None,
    max_diffs: int = 20,
    fetch_limit: int = 50_000,
    toast_placeholder: str = DEFAULT_TOAST_PLACEHOLDER,
    recheck: Callable[[Any, str], str] | None = None,
    table_rows: Callable[[], DataFrame] | None = None,
) -> VerifyResult:
    """Compare the Hudi table at ``base_path`` with ``table`` (``schema.table``) of ``database``.

    ``table_rows()``, when given, reads the Hudi side at each pass instead of the whole table's current
    rows (a merged table's rows of one shard).

    ``recheck(conn, position)`` is called when the first pass finds differences:
    it returns once the table has caught up with ``position`` (the source's WAL
    or binlog position when the first pass began) and says what it waited for;
    only differences found again afterwards are reported. Without it, one pass.
    For MySQL/MariaDB the table is ``database.table``.
    """
    started = time.monotonic()
    schema, _, name = table.rpartition(".")
    if not schema:
        raise ConfigError(f"name the source table with its schema (MySQL: its database), e.g. public.{table}")
    opts = {
        "key_fields": tuple(key_fields),
        "columns": columns,
        "where": where,
        "fetch_limit": fetch_limit,
        "max_diffs": max_diffs,
        "toast": toast_placeholder,
        "table_rows": table_rows,
    }
    result = VerifyResult(table=table, source=database.display, target=base_path, key_fields=tuple(key_fields))
    engine: canonical.Engine = "postgres" if database.kind == "postgres" else "mysql"
    with database.connect(application="hudi-cdc verify") as conn:
        position = _position(conn, engine)
        diffs = _one_pass(conn, engine, spark, base_path, schema, name, opts, result)
        if (diffs or result.differing_buckets) and recheck is not None:
            result.recheck = recheck(conn, position)
            first = {(tuple(d.key.items()), d.kind, d.columns) for d in diffs}
            again = _one_pass(conn, engine, spark, base_path, schema, name, opts, result)
            result.passes = 2
            diffs = [d for d in again if (tuple(d.key.items()), d.kind, d.columns) in first]
            if not diffs and not result.truncated:
                result.differing_buckets = 0  # what differed the first time was only lag
    result.differences = diffs[:max_diffs]
    result.duration_s = time.monotonic() - started
    return result
