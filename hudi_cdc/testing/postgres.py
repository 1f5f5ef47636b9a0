"""The local stack's sample database: a random change workload, and a table-for-table comparison with Hudi.

Used by ``make demo``, the end-to-end tests and the benchmarks. The sample
schema (``stack/conf/init.sql``) has three tables that between them exercise
what real replication meets:

- ``customers``: serial key, REPLICA IDENTITY FULL;
- ``orders``: composite key ``(order_id, line_no)``, REPLICA IDENTITY DEFAULT,
  and primary-key updates (Debezium sends a delete and a create);
- ``documents``: uuid key, REPLICA IDENTITY DEFAULT, text and bytea values
  large enough to be stored out of line (TOAST), so updates that leave them
  alone carry Debezium's unavailable-value placeholder.

The workload is :mod:`hudi_cdc.testing.workload`'s, in Postgres' dialect here.
Needs ``psycopg`` (the ``test`` extra).
"""

from __future__ import annotations

import functools
import json
import random
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from hudi_cdc.testing import workload
from hudi_cdc.testing.workload import SAMPLE_KEYS, Dialect, random_text

__all__ = [
    "SAMPLE_KEYS",
    "STACK_DSN",
    "TOPIC_PREFIX",
    "TableComparison",
    "compare_table",
    "connect",
    "run_workload",
    "source_rows",
    "wait_for_stream",
]

STACK_DSN = "host=127.0.0.1 port=55432 user=debezium password=dbz dbname=inventory"
SCHEMA = "inventory"
TOPIC_PREFIX = "dbserver1.inventory."  # the stack's connector (stack/conf/inventory-connector.properties)


def connect(dsn: str = STACK_DSN) -> Any:
    import psycopg

    # autocommit: each `conn.transaction()` block is then a real transaction, committed at its end.
    return psycopg.connect(dsn, autocommit=True)


# --- workload ---------------------------------------------------------------------------------------


@contextmanager
def _transaction(conn: Any) -> Iterator[Any]:
    with conn.transaction(), conn.cursor() as cur:
        yield cur


def _new_document(rng: random.Random, tag: str, n: int) -> tuple[Any, ...]:
    return (
        uuid.uuid5(uuid.NAMESPACE_OID, f"{tag}.{n}.{rng.random()}"),
        f"doc {tag} {n}",
        random_text(rng, rng.randint(6_000, 20_000)) if rng.random() < 0.8 else rng.choice([None, "short body"]),
        rng.randbytes(rng.randint(3_000, 8_000)) if rng.random() < 0.5 else None,
        [f"t{rng.randint(0, 9)}" for _ in range(rng.randint(0, 3))],
        json.dumps({"n": n, "tag": tag, "score": rng.randint(0, 100)}),
        datetime(2026, 1, 1) + timedelta(microseconds=rng.getrandbits(40)),
    )


def _new_body(rng: random.Random) -> str | None:
    # Over ~2 kB, so the value is stored out of line (TOAST) and the blob beside it arrives as a placeholder.
    return random_text(rng, rng.randint(6_000, 20_000)) if rng.random() < 0.7 else None


POSTGRES = Dialect(
    topic_prefix=TOPIC_PREFIX,
    schema=SCHEMA,
    now="now()",
    blob="blob",
    transaction=_transaction,
    new_document=_new_document,
    tags=list,
    new_body=_new_body,
)


def run_workload(
    conn: Any,  # noqa: ANN401
    rng: random.Random,
    *,
    transactions: int,
    tag: str,
    tables: Sequence[str] = tuple(SAMPLE_KEYS),
) -> int:
    """Commit ``transactions`` random transactions of 1-6 changes over the sample tables; returns the changes."""
    return workload.run_workload(POSTGRES, conn, rng, transactions=transactions, tag=tag, tables=tables)


# The sample database's own: ``wait_for_stream(conn, bootstrap, topics, since=..., timeout_s=...)``.
wait_for_stream = functools.partial(workload.wait_for_stream, POSTGRES)


# --- comparison -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Column:
    name: str
    data_type: str  # information_schema.columns.data_type
    udt_name: str
    precision: int | None
    scale: int | None

    @property
    def spark_type(self) -> str:
        """The type the Hudi column must have (docs/types.md), as Spark's simpleString."""
        return _spark_type(self.data_type if self.data_type != "ARRAY" else self.udt_name, self.precision, self.scale)


_SIMPLE_TYPES = {
    "smallint": "int",
    "integer": "int",
    "bigint": "bigint",
    "real": "float",
    "double precision": "double",
    "boolean": "boolean",
    "text": "string",
    "character varying": "string",
    "character": "string",
    "uuid": "string",
    "json": "string",
    "jsonb": "string",
    "date": "date",
    "timestamp with time zone": "timestamp",
    "timestamp without time zone": "timestamp",
    "bytea": "binary",
}
_ARRAY_ELEMENTS = {"_int2": "smallint", "_int4": "integer", "_int8": "bigint", "_text": "text", "_varchar": "text"}


def _spark_type(pg_type: str, precision: int | None, scale: int | None) -> str:
    if pg_type in _ARRAY_ELEMENTS:
        return f"array<{_spark_type(_ARRAY_ELEMENTS[pg_type], None, None)}>"
    if pg_type == "numeric":
        return f"decimal({precision},{scale})" if precision and precision <= 38 else "string"
    try:
        return _SIMPLE_TYPES[pg_type]
    except KeyError:
        raise ValueError(f"no expected Hudi type for Postgres type {pg_type!r}") from None


def columns(conn: Any, table: str) -> list[Column]:
    with conn.cursor() as cur:
        cur.execute(
            "select column_name, data_type, udt_name, numeric_precision, numeric_scale"
            " from information_schema.columns where table_schema = %s and table_name = %s order by ordinal_position",
            (SCHEMA, table),
        )
        return [Column(*row) for row in cur.fetchall()]


def _normal(value: Any, column: Column) -> Any:
    """One representation for a Postgres value and its Hudi counterpart."""
    if value is None:
        return None
    if column.udt_name in ("json", "jsonb"):
        return json.dumps(json.loads(value) if isinstance(value, str) else value, sort_keys=True)
    if isinstance(value, list):
        return [None if v is None else _normal(v, column) for v in value]
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value.astimezone(UTC).replace(tzinfo=None)
    if isinstance(value, (memoryview, bytearray)):
        return bytes(value)
    if isinstance(value, uuid.UUID):
        return str(value)
    return value


def source_rows(conn: Any, table: str, cols: Sequence[Column]) -> list[tuple]:
    names = ", ".join(c.name for c in cols)
    with conn.cursor() as cur:
        cur.execute(f"select {names} from {SCHEMA}.{table}")  # noqa: S608 - names come from the catalog
        return [tuple(_normal(v, c) for v, c in zip(row, cols, strict=True)) for row in cur.fetchall()]


@dataclass
class TableComparison:
    table: str
    source_count: int
    hudi_count: int
    missing: list[tuple] = field(default_factory=list)  # keys in Postgres, not in Hudi
    extra: list[tuple] = field(default_factory=list)  # keys in Hudi, not in Postgres
    different: list[tuple[tuple, str, Any, Any]] = field(default_factory=list)  # key, column, source, hudi
    type_errors: list[str] = field(default_factory=list)

    @property
    def equal(self) -> bool:
        return not (self.missing or self.extra or self.different or self.type_errors)

    def describe(self, limit: int = 5) -> str:
        if self.equal:
            return f"{self.table}: {self.source_count} rows, equal"
        parts = [f"{self.table}: source {self.source_count} rows, hudi {self.hudi_count} rows"]
        parts += [f"  type: {t}" for t in self.type_errors]
        parts += [f"  missing key {k}" for k in self.missing[:limit]]
        parts += [f"  extra key {k}" for k in self.extra[:limit]]
        parts += [f"  key {k} column {c}: source {s!r:.80} hudi {h!r:.80}" for k, c, s, h in self.different[:limit]]
        return "\n".join(parts)


def compare_table(spark: Any, base_path: str, conn: Any, table: str) -> TableComparison:
    """Compare a Hudi table (snapshot query) with the Postgres table, row for row, value for value, type for type."""
    cols = columns(conn, table)
    if not cols:
        raise ValueError(f"table {SCHEMA}.{table} does not exist in Postgres")
    keys = SAMPLE_KEYS.get(table) or (cols[0].name,)
    key_at = [next(i for i, c in enumerate(cols) if c.name == k) for k in keys]
    from payloads.history import current_rows

    frame = current_rows(spark.read.format("hudi").load(base_path))  # a history table: its current rows
    stored_types = {f.name: f.dataType.simpleString() for f in frame.schema.fields}
    type_errors = [
        f"{c.name} is {stored_types.get(c.name, 'missing')}, expected {c.spark_type} for Postgres {c.data_type}"
        for c in cols
        if stored_types.get(c.name) != c.spark_type
    ]
    present = [c for c in cols if c.name in stored_types]
    hudi = {
        tuple(row[c.name] for c in (cols[i] for i in key_at)): tuple(_normal(row[c.name], c) for c in present)
        for row in frame.select(*[c.name for c in present]).collect()
    }
    source = {tuple(row[i] for i in key_at): row for row in source_rows(conn, table, cols)}
    result = TableComparison(table, len(source), len(hudi), type_errors=type_errors)
    result.missing = sorted(set(source) - set(hudi))
    result.extra = sorted(set(hudi) - set(source))
    for key in sorted(set(source) & set(hudi)):
        wanted = dict(zip((c.name for c in cols), source[key], strict=True))
        got = dict(zip((c.name for c in present), hudi[key], strict=True))
        result.different += [(key, n, wanted[n], got[n]) for n in got if wanted[n] != got[n]]
    return result
