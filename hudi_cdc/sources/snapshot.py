"""A whole Postgres table read once, in parallel key ranges, inside one exported snapshot: the first load.

Each row becomes a Debezium snapshot read (``op=r``) whose values are what
Debezium's Postgres connector would send for it, after our flattening (the
same Spark types, the same text for exact decimals, times and padded chars),
so the change stream that follows writes into the same columns. The rows carry
no LSN: every change the stream brings comes from a transaction that committed
after the snapshot, so it must outrank the copy, whatever its own LSN (a long
transaction's changes can sit below the snapshot's position in the WAL).

The ranges split the first key column at quantiles of the data (a sample of
it for big tables), so skewed keys still give tasks of about the same size.
Every task imports the same snapshot (``SET TRANSACTION SNAPSHOT``): the copy
is one consistent image however many connections read it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hudi_cdc.envelope.events import change_events
from hudi_cdc.errors import ConfigError, SourceError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from hudi_cdc.envelope.events import Batch
    from hudi_cdc.upstream.database import SourceDatabase

__all__ = ["PgColumn", "SnapshotSource", "column_reading", "range_predicates", "quote_ident"]

_SNAPSHOT_NAME = re.compile(r"[0-9A-Fa-f]+(-[0-9A-Fa-f]+)+")
_ROWS_PER_RANGE = 1_000_000
_MAX_RANGES = 256
_SAMPLE_ROWS = 200_000  # rows the quantiles of a big table are taken from

_AS_IS = {
    "int2": "int",
    "int4": "int",
    "int8": "bigint",
    "float4": "float",
    "float8": "double",
    "bool": "boolean",
    "bytea": "binary",
    "date": "date",
    "timestamptz": "timestamp",
}
_TEXT = {"text", "varchar", "name", "uuid", "json", "jsonb", "xml", "citext"}
_ARRAYS = {"int2": "int", "int4": "int", "int8": "bigint", "float4": "float", "float8": "double", "bool": "boolean"}


def quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


@dataclass(frozen=True)
class PgColumn:
    name: str
    type_name: str
    """As Postgres prints it (``format_type``): ``numeric(10,2)``, ``character(5)``, ``integer[]``."""
    base: str
    """The type's (or the array element's) ``typname``: ``numeric``, ``bpchar``, ``int4``."""
    kind: str
    """``pg_type.typtype`` of the base: b(ase), e(num), d(omain), c(omposite)."""
    is_array: bool
    precision: int | None = None
    scale: int | None = None


def column_reading(column: PgColumn) -> tuple[str, str]:
    """(SQL that reads the column as Debezium sends it, the Spark type of the table column).

    The table of docs/types.md, from Postgres's side: Debezium's defaults
    (``decimal.handling.mode=precise``, ``time.precision.mode=adaptive``,
    ``interval.handling.mode=numeric``).
    """
    c = quote_ident(column.name)
    if column.is_array:
        if column.base in _ARRAYS:
            return c, f"array<{_ARRAYS[column.base]}>"
        if column.base in _TEXT or column.kind == "e":
            return f"{c}::text[]", "array<string>"
    elif column.base in _AS_IS:
        return c, _AS_IS[column.base]
    elif column.base in _TEXT or column.kind == "e":
        return f"{c}::text", "string"
    elif column.base == "bpchar":  # the cast to text drops the padding Debezium keeps
        return f"case when {c} is not null then format('%s', {c}) end", "string"
    elif column.base == "timestamp":  # wall-clock time, kept as the same time in UTC
        return f"{c} at time zone 'UTC'", "timestamp"
    elif column.base == "time":  # adaptive: time(0..3) is Connect's Time (ms), the rest MicroTime (µs)
        digits = re.search(r"\((\d)\)", column.type_name)
        fraction = "MS" if digits and int(digits.group(1)) <= 3 else "US"
        return f"to_char({c}::interval, 'HH24:MI:SS.{fraction}')", "string"
    elif column.base == "interval":  # Debezium's MicroDuration: a month is 30.4375 days (Postgres's epoch says 30)
        months = f"(extract(year from {c}) * 12 + extract(month from {c}))"
        return (
            f"cast(({months} * 30.4375 + extract(day from {c})) * 86400000000"
            f" + (extract(hour from {c}) * 3600 + extract(minute from {c}) * 60) * 1000000"
            f" + extract(microseconds from {c}) as bigint)",
            "bigint",
        )
    elif column.base == "numeric":
        if column.precision is not None and column.precision <= 38:
            return c, f"decimal({column.precision},{column.scale or 0})"
        if column.precision is not None:  # wider than Spark's decimal: the exact text at the column's scale
            return f"{c}::text", "string"
        return f"trim_scale({c})::text", "string"  # VariableScaleDecimal: no trailing zeros
    raise ConfigError(
        f"column {column.name} ({column.type_name}): the first load has no reading equal to what Debezium "
        "sends for this type"
    )


def range_predicates(column: str, bounds: list[str]) -> list[str]:
    """``len(bounds) + 1`` predicates that split a column at ``bounds`` (SQL literals, ascending).

    Together they cover every row once, NULLs (in the first range) included.
    """
    if not bounds:
        return ["true"]
    first = f"{column} < {bounds[0]} or {column} is null"
    middle = [f"{column} >= {lo} and {column} < {hi}" for lo, hi in zip(bounds, bounds[1:], strict=False)]
    return [first, *middle, f"{column} >= {bounds[-1]}"]


def _spark_name(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


class SnapshotSource:
    """One batch: every row of ``table`` as of ``snapshot`` (an exported snapshot's name, or None: now)."""

    def __init__(
        self,
        spark: SparkSession,
        database: SourceDatabase,
        table: str,
        *,
        key_fields: tuple[str, ...],
        next_checkpoint: dict[str, Any],
        snapshot: str | None = None,
        ranges: int | None = None,
        fetch_size: int = 10_000,
        snapshot_ts_ms: int | None = None,
    ) -> None:
        self._spark = spark
        self._database = database
        self._table = table
        self._keys = key_fields
        self._next_checkpoint = next_checkpoint
        if snapshot is not None and not _SNAPSHOT_NAME.fullmatch(snapshot):
            raise ConfigError(f"{snapshot!r} is not the name of an exported Postgres snapshot")
        self._snapshot = snapshot
        self._ranges = ranges
        self._fetch_size = fetch_size
        self._ts_ms = snapshot_ts_ms
        self.columns: list[PgColumn] = []
        self.predicates: list[str] = []

    def parse_checkpoint(self, text: str) -> dict[str, Any]:
        return {}  # a first load starts from nothing

    # -- the catalog, in the snapshot's own session ----------------------------
    def _catalog(self, conn: Any) -> list[PgColumn]:  # noqa: ANN401
        rows = conn.execute(
            """
            select a.attname, format_type(a.atttypid, a.atttypmod),
                   coalesce(e.typname, t.typname), coalesce(e.typtype, t.typtype), e.oid is not null,
                   information_schema._pg_numeric_precision(coalesce(e.oid, t.oid), a.atttypmod),
                   information_schema._pg_numeric_scale(coalesce(e.oid, t.oid), a.atttypmod)
            from pg_attribute a
            join pg_type t on t.oid = a.atttypid
            left join pg_type e on e.oid = t.typelem and t.typcategory = 'A'
            where a.attrelid = %s::regclass and a.attnum > 0 and not a.attisdropped
            order by a.attnum
            """,
            (self._table,),
        ).fetchall()
        if not rows:
            raise SourceError(f"{self._database.display}: table {self._table} has no columns")
        columns = [PgColumn(r[0], r[1], r[2], r[3], bool(r[4]), r[5], r[6]) for r in rows]
        primary = conn.execute(
            "select a.attname from pg_index i join pg_attribute a on a.attrelid = i.indrelid"
            " and a.attnum = any(i.indkey) where i.indisprimary and i.indrelid = %s::regclass"
            " order by array_position(i.indkey, a.attnum)",
            (self._table,),
        ).fetchall()
        primary_key = tuple(r[0] for r in primary)
        # The rows are written as read, with no merge: each key must be one row.
        if not primary_key:
            raise ConfigError(f"{self._table} has no primary key: a first load needs one (each key one row)")
        if self._keys and set(self._keys) != set(primary_key):
            raise ConfigError(
                f"the record key ({', '.join(self._keys)}) is not {self._table}'s primary key "
                f"({', '.join(primary_key)}): a first load writes rows unmerged, so it keys them by that"
            )
        self._keys = self._keys or primary_key
        return columns

    def _bounds(self, conn: Any, column: PgColumn) -> list[str]:  # noqa: ANN401
        """Quantiles of the split column: a sample of a big table, the whole of a small one."""
        estimate = conn.execute("select reltuples::bigint from pg_class where oid = %s::regclass", (self._table,))
        rows = int(estimate.fetchone()[0] or 0)
        if rows < 0:  # never analysed
            rows = int(conn.execute(f"select count(*) from {self._table}").fetchone()[0])
        parallelism = self._spark.sparkContext.defaultParallelism
        ranges = self._ranges or min(_MAX_RANGES, max(parallelism, math.ceil(rows / _ROWS_PER_RANGE)))
        if ranges <= 1 or rows == 0:
            return []
        name = quote_ident(column.name)
        fractions = ", ".join(str(i / ranges) for i in range(1, ranges))
        sample = ""
        if rows > 2 * _SAMPLE_ROWS:
            sample = f" tablesample system ({min(100.0, 100.0 * _SAMPLE_ROWS / rows):.6f}) repeatable (0)"
        found = conn.execute(
            f"select (percentile_disc(array[{fractions}]) within group (order by {name}))::text[] "
            f"from {self._table}{sample}"
        ).fetchone()[0]
        literals = []
        for value in found or []:
            literal = "'" + value.replace("'", "''") + "'::" + column.type_name
            if value is not None and literal not in literals:  # skew: a value that fills several quantiles
                literals.append(literal)
        return literals

    # -- the batch ---------------------------------------------------------------
    def next_batch(self, checkpoint: dict[str, Any] | None) -> Batch | None:
        from pyspark.sql import functions as F

        from hudi_cdc.envelope.events import Batch, BatchPart

        with self._database.connect(application="hudi-cdc bootstrap") as conn:
            if self._snapshot:
                conn.autocommit = False
                conn.execute("set transaction isolation level repeatable read, read only")
                conn.execute(f"set transaction snapshot '{self._snapshot}'")
            self.columns = self._catalog(conn)
            split = next(c for c in self.columns if c.name == self._keys[0])
            self.predicates = range_predicates(quote_ident(split.name), self._bounds(conn, split))
        readings = [column_reading(c) for c in self.columns]
        select = ", ".join(
            f"{sql} as {quote_ident(c.name)}" for c, (sql, _) in zip(self.columns, readings, strict=True)
        )
        rows = self._read(f"(select {select} from {self._table}) hudi_cdc_copy")
        typed = [
            F.col(_spark_name(c.name)).cast(ddl).alias(c.name)
            for c, (_, ddl) in zip(self.columns, readings, strict=True)
        ]
        rows = rows.select(*typed)
        return Batch(
            parts=[BatchPart(envelopes=self._envelopes(rows), where=self._table)],
            next_checkpoint=self._next_checkpoint,
            description=f"the first load of {self._table} in {len(self.predicates)} range(s)",
            details={"ranges": len(self.predicates)},
            key_fields=self._keys,
        )

    def _read(self, relation: str) -> DataFrame:
        from hudi_cdc._jvm import java_message

        url, properties = self._database.jdbc()
        properties = {**properties, "driver": "org.postgresql.Driver", "fetchsize": str(self._fetch_size)}
        if self._snapshot:
            # Postgres's dialect turns autocommit off when fetchsize > 0, so these open the task's transaction.
            properties["sessionInitStatement"] = (
                "set transaction isolation level repeatable read, read only; "
                f"set transaction snapshot '{self._snapshot}'"
            )
        try:
            return self._spark.read.jdbc(url, relation, predicates=self.predicates, properties=properties)
        except Exception as exc:
            raise SourceError(f"{self._database.display} ({self._table}): {java_message(exc)}") from None

    def _envelopes(self, rows: DataFrame) -> DataFrame:
        from pyspark.sql import functions as F

        after = F.struct(*[F.col(_spark_name(c.name)) for c in self.columns])
        source = F.struct(
            F.lit(None).cast("bigint").alias("lsn"),
            F.lit(None).cast("string").alias("txId"),
            F.lit(self._ts_ms).cast("bigint").alias("ts_ms"),
            F.lit("true").alias("snapshot"),
        )
        return change_events(rows, op="r", image=after, source=source, where=self._table)
