"""The local stack's MariaDB (``stack/conf/init-mariadb.sql``): a connection and a change workload.

Debezium's MariaDB connector on the stack publishes every table of its
``inventory`` database to ``mariadb1.inventory.<table>``. The sample tables
mirror the Postgres ones (:mod:`hudi_cdc.testing.postgres`): ``customers``
(auto-increment key), ``orders`` (composite key, primary-key updates) and
``documents`` (large text and blob values, JSON). Needs ``pymysql``.
"""

from __future__ import annotations

import json
import random
import string
import uuid
from collections.abc import Sequence
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

__all__ = ["SAMPLE_KEYS", "STACK_URL", "TOPIC_PREFIX", "connect", "run_workload"]

STACK_URL = "mysql://debezium@127.0.0.1:53306/inventory"  # password: dbz
TOPIC_PREFIX = "mariadb1.inventory."
SAMPLE_KEYS: dict[str, tuple[str, ...]] = {
    "customers": ("id",),
    "orders": ("order_id", "line_no"),
    "documents": ("doc_id",),
}
_ALPHABET = string.ascii_letters + string.digits


def connect() -> Any:
    """An autocommit connection as the stack's ``debezium`` user, the session in UTC."""
    import pymysql

    return pymysql.connect(
        host="127.0.0.1",
        port=53306,
        user="debezium",
        password="dbz",
        database="inventory",
        charset="utf8mb4",
        autocommit=True,
        init_command="SET time_zone = '+00:00'",
    )


# --- workload ---------------------------------------------------------------------------------------


def _pick(cur: Any, sql: str, rng: random.Random) -> tuple | None:
    cur.execute(sql)
    rows = cur.fetchall()
    return rng.choice(rows) if rows else None


def _customers(cur: Any, rng: random.Random, tag: str, n: int) -> None:
    roll = rng.random()
    if roll < 0.45:
        cur.execute(
            "insert into customers (first_name, last_name, email, balance) values (%s, %s, %s, %s)",
            (f"first{n}", f"last{n}", f"{tag}.{n}@example.com", Decimal(rng.randint(0, 10**7)) / 100),
        )
    elif (row := _pick(cur, "select id from customers", rng)) is not None:
        if roll < 0.85:
            cur.execute(
                "update customers set balance = %s, last_name = %s, updated_at = now(6) where id = %s",
                (Decimal(rng.randint(0, 10**7)) / 100, f"moved{n}", row[0]),
            )
        else:
            cur.execute("delete from customers where id = %s", row)


def _orders(cur: Any, rng: random.Random, tag: str, n: int) -> None:
    roll = rng.random()
    if roll < 0.35:
        cur.execute("select coalesce(max(order_id), 0) + 1 from orders")
        order_id = cur.fetchone()[0]
        for line in range(1, rng.randint(1, 4) + 1):
            cur.execute(
                "insert into orders (order_id, line_no, customer_id, sku, quantity, unit_price, weight_kg, ship_date)"
                " values (%s, %s, %s, %s, %s, %s, %s, %s)",
                (order_id, line, rng.randint(1, 500), f"SKU-{rng.randint(1, 999):03d}", rng.randint(1, 20),
                 Decimal(rng.randint(1, 10**6)) / 100, rng.random() * 40 if rng.random() < 0.8 else None,
                 date(2026, 1, 1) + timedelta(days=rng.randint(0, 400)) if rng.random() < 0.5 else None),
            )  # fmt: skip
        return
    row = _pick(cur, "select order_id, line_no from orders", rng)
    if row is None:
        return
    if roll < 0.70:
        cur.execute(
            "update orders set quantity = %s, unit_price = %s, shipped = %s where order_id = %s and line_no = %s",
            (rng.randint(1, 20), Decimal(rng.randint(1, 10**6)) / 100, rng.random() < 0.5, *row),
        )
    elif roll < 0.82:  # a primary-key update: Debezium emits a delete of the old key and a create of the new one
        cur.execute("select max(line_no) + 1 from orders where order_id = %s", (row[0],))
        new_line = cur.fetchone()[0] + rng.randint(0, 3)
        cur.execute("update orders set line_no = %s where order_id = %s and line_no = %s", (new_line, *row))
    elif roll < 0.92:
        cur.execute("delete from orders where order_id = %s and line_no = %s", row)
    else:
        cur.execute("delete from orders where order_id = %s", (row[0],))


def _documents(cur: Any, rng: random.Random, tag: str, n: int) -> None:
    roll = rng.random()
    if roll < 0.35:
        cur.execute(
            "insert into documents (doc_id, title, body, `blob`, tags, meta, edited_at)"
            " values (%s, %s, %s, %s, %s, %s, %s)",
            (str(uuid.uuid5(uuid.NAMESPACE_OID, f"{tag}.{n}.{rng.random()}")), f"doc {tag} {n}",
             "".join(rng.choices(_ALPHABET, k=rng.randint(2_000, 9_000))) if rng.random() < 0.8 else None,
             rng.randbytes(rng.randint(500, 3_000)) if rng.random() < 0.5 else None,
             json.dumps([f"t{rng.randint(0, 9)}" for _ in range(rng.randint(0, 3))]),
             json.dumps({"n": n, "tag": tag}), datetime(2026, 1, 1) + timedelta(microseconds=rng.getrandbits(40))),
        )  # fmt: skip
        return
    row = _pick(cur, "select doc_id from documents", rng)
    if row is None:
        return
    if roll < 0.85:  # MySQL's binlog carries the whole row: the body travels with every update
        cur.execute(
            "update documents set title = %s, version = version + 1, tags = %s where doc_id = %s",
            (f"edited {tag} {n}", json.dumps([f"e{rng.randint(0, 9)}"]), row[0]),
        )
    else:
        cur.execute("delete from documents where doc_id = %s", row)


_OPERATIONS = {"customers": _customers, "orders": _orders, "documents": _documents}


def run_workload(
    conn: Any,  # noqa: ANN401
    rng: random.Random,
    *,
    transactions: int,
    tag: str,
    tables: Sequence[str] = tuple(_OPERATIONS),
) -> int:
    """Commit ``transactions`` random transactions of 1-6 changes over the sample tables; returns the changes."""
    operations = [_OPERATIONS[t] for t in tables]
    changes = 0
    for _ in range(transactions):
        conn.begin()
        with conn.cursor() as cur:
            for _ in range(rng.randint(1, 6)):
                rng.choice(operations)(cur, rng, tag, changes)
                changes += 1
        conn.commit()
    return changes
