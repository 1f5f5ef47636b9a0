"""The sample databases' change workload, written once: random inserts, updates and deletes in small transactions.

The stack's Postgres and MariaDB hold the same three tables
(``stack/conf/init.sql``, ``stack/conf/init-mariadb.sql``):

- ``customers``: a generated key;
- ``orders``: a composite key ``(order_id, line_no)``, and primary-key updates
  (Debezium sends a delete and a create);
- ``documents``: a uuid key, large text and binary values, tags and JSON.

What differs between the databases is a :class:`Dialect`: where the tables
are, the clock, how a transaction runs on the driver, a new document's values,
and whether an update may rewrite a document's body alone.
:mod:`hudi_cdc.testing.postgres` and :mod:`hudi_cdc.testing.mariadb` each
define theirs and call :func:`run_workload` with it.
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

from hudi_cdc.testing import kafka

__all__ = ["MARKS_TABLE", "SAMPLE_KEYS", "Dialect", "mark_stream", "random_text", "run_workload", "wait_for_stream"]

SAMPLE_KEYS: dict[str, tuple[str, ...]] = {
    "customers": ("id",),
    "orders": ("order_id", "line_no"),
    "documents": ("doc_id",),
}
_ALPHABET = string.ascii_letters + string.digits
# One row per :func:`mark_stream`: its topic tells a test when Debezium has published everything before.
MARKS_TABLE = "stream_marks"


@dataclass(frozen=True)
class Dialect:
    """What one sample database does its own way; the workload's choices and their odds are shared."""

    schema: str
    """The schema the tables are named in, or ``""`` for the connection's database."""
    now: str
    """The SQL of the current time at the columns' precision."""
    blob: str
    """The ``blob`` column as the SQL must spell it (a reserved word in MariaDB)."""
    transaction: Callable[[Any], AbstractContextManager[Any]]
    """A cursor whose statements commit together when the block ends."""
    new_document: Callable[[random.Random, str, int], tuple[Any, ...]]
    """``(doc_id, title, body, blob, tags, meta, edited_at)`` of a new document."""
    tags: Callable[[list[str]], Any]
    """The driver's value for a list of tags (an array, or JSON text)."""
    topic_prefix: str = ""
    """Where the stack's connector publishes the database's tables (``<prefix><table>``)."""
    serial_key: str = "bigserial primary key"
    """A generated key column's type, as the SQL spells it."""
    new_body: Callable[[random.Random], str | None] | None = None
    """A body for an update that changes it alone, or None where every update carries the whole row anyway."""

    def table(self, name: str) -> str:
        return f"{self.schema}.{name}" if self.schema else name


def random_text(rng: random.Random, n: int) -> str:
    # Random letters do not compress, so a long value stays long in storage (Postgres moves it out of line).
    return "".join(rng.choices(_ALPHABET, k=n))


def _pick(cur: Any, sql: str, rng: random.Random) -> tuple | None:
    cur.execute(sql)
    rows = cur.fetchall()
    return rng.choice(rows) if rows else None


def _customers(db: Dialect, cur: Any, rng: random.Random, tag: str, n: int) -> None:
    table = db.table("customers")
    roll = rng.random()
    if roll < 0.45:
        cur.execute(
            f"insert into {table} (first_name, last_name, email, balance) values (%s, %s, %s, %s)",
            (f"first{n}", f"last{n}", f"{tag}.{n}@example.com", Decimal(rng.randint(0, 10**7)) / 100),
        )
    elif (row := _pick(cur, f"select id from {table}", rng)) is not None:
        if roll < 0.85:
            cur.execute(
                f"update {table} set balance = %s, last_name = %s, updated_at = {db.now} where id = %s",
                (Decimal(rng.randint(0, 10**7)) / 100, f"moved{n}", row[0]),
            )
        else:
            cur.execute(f"delete from {table} where id = %s", row)


def _orders(db: Dialect, cur: Any, rng: random.Random, tag: str, n: int) -> None:
    table = db.table("orders")
    roll = rng.random()
    if roll < 0.35:
        cur.execute(f"select coalesce(max(order_id), 0) + 1 from {table}")
        order_id = cur.fetchone()[0]
        for line in range(1, rng.randint(1, 4) + 1):
            cur.execute(
                f"insert into {table} (order_id, line_no, customer_id, sku, quantity, unit_price, weight_kg, ship_date)"
                " values (%s, %s, %s, %s, %s, %s, %s, %s)",
                (order_id, line, rng.randint(1, 500), f"SKU-{rng.randint(1, 999):03d}", rng.randint(1, 20),
                 Decimal(rng.randint(1, 10**6)) / 100, rng.random() * 40 if rng.random() < 0.8 else None,
                 date(2026, 1, 1) + timedelta(days=rng.randint(0, 400)) if rng.random() < 0.5 else None),
            )  # fmt: skip
        return
    row = _pick(cur, f"select order_id, line_no from {table}", rng)
    if row is None:
        return
    if roll < 0.70:
        cur.execute(
            f"update {table} set quantity = %s, unit_price = %s, shipped = %s where order_id = %s and line_no = %s",
            (rng.randint(1, 20), Decimal(rng.randint(1, 10**6)) / 100, rng.random() < 0.5, *row),
        )
    elif roll < 0.82:  # a primary-key update: Debezium emits a delete of the old key and a create of the new one
        cur.execute(f"select max(line_no) + 1 from {table} where order_id = %s", (row[0],))
        new_line = cur.fetchone()[0] + rng.randint(0, 3)
        cur.execute(f"update {table} set line_no = %s where order_id = %s and line_no = %s", (new_line, *row))
    elif roll < 0.92:
        cur.execute(f"delete from {table} where order_id = %s and line_no = %s", row)
    else:
        cur.execute(f"delete from {table} where order_id = %s", (row[0],))


def _documents(db: Dialect, cur: Any, rng: random.Random, tag: str, n: int) -> None:
    table = db.table("documents")
    roll = rng.random()
    if roll < 0.35:
        cur.execute(
            f"insert into {table} (doc_id, title, body, {db.blob}, tags, meta, edited_at)"
            " values (%s, %s, %s, %s, %s, %s, %s)",
            db.new_document(rng, tag, n),
        )
        return
    row = _pick(cur, f"select doc_id from {table}", rng)
    if row is None:
        return
    if roll < 0.75 or (roll < 0.85 and db.new_body is None):
        # body and blob are left alone: in Postgres their out-of-line values reach Debezium as placeholders.
        cur.execute(
            f"update {table} set title = %s, version = version + 1, tags = %s where doc_id = %s",
            (f"edited {tag} {n}", db.tags([f"e{rng.randint(0, 9)}"]), row[0]),
        )
    elif roll < 0.85 and db.new_body is not None:
        cur.execute(
            f"update {table} set body = %s, version = version + 1 where doc_id = %s", (db.new_body(rng), row[0])
        )
    else:
        cur.execute(f"delete from {table} where doc_id = %s", row)


_OPERATIONS = {"customers": _customers, "orders": _orders, "documents": _documents}


def run_workload(
    db: Dialect,
    conn: Any,  # noqa: ANN401
    rng: random.Random,
    *,
    transactions: int,
    tag: str,
    tables: Sequence[str] = tuple(SAMPLE_KEYS),
) -> int:
    """Commit ``transactions`` random transactions of 1-6 changes over the sample tables; returns the changes."""
    operations = [_OPERATIONS[t] for t in tables]
    changes = 0
    for _ in range(transactions):
        with db.transaction(conn) as cur:
            for _ in range(rng.randint(1, 6)):
                rng.choice(operations)(db, cur, rng, tag, changes)
                changes += 1
    return changes


_MARKED: set[Dialect] = set()  # the databases whose marks table this process has made sure of


def mark_stream(db: Dialect, conn: Any) -> int:  # noqa: ANN401
    """Commit one row into the marks table (made on first use): a change the stack's connector publishes
    after every change committed before it. Its key, which tells it apart from other processes' marks."""
    table = db.table(MARKS_TABLE)
    if db not in _MARKED:
        with conn.cursor() as cur:
            cur.execute(f"create table if not exists {table} (id {db.serial_key}, at timestamp(6))")
        _MARKED.add(db)
    with db.transaction(conn) as cur:
        cur.execute(f"insert into {table} (at) values ({db.now}) returning id")  # noqa: S608 - our own table name
        return int(cur.fetchone()[0])


def wait_for_stream(
    db: Dialect,
    conn: Any,  # noqa: ANN401
    bootstrap: str,
    topics: Sequence[str],
    *,
    since: Mapping[tuple[str, int], int] | None = None,
    live: bool = False,
    timeout_s: float = 120.0,
) -> dict[tuple[str, int], int]:
    """Wait until the stack's connector has published every change committed before the call; the end offsets.

    See :func:`hudi_cdc.testing.kafka.wait_until_published`; ``since``: the topics must have moved past it;
    ``live``: a workload is still writing to them.
    """
    return kafka.wait_until_published(
        bootstrap,
        topics,
        lambda: mark_stream(db, conn),
        db.topic_prefix + MARKS_TABLE,
        since=since,
        live=live,
        timeout_s=timeout_s,
    )
