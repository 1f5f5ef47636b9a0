"""A workload of multi-table transactions whose invariants a consistent cut must keep.

Four Postgres tables ``<tag>_acct_a``, ``<tag>_acct_b``, ``<tag>_orders``,
``<tag>_lines``; each transaction either moves money between an account of
``acct_a`` and one of ``acct_b`` (the total never changes), creates an order
with its lines, or deletes an order with its lines. Read as of one cut, the
tables must show the same total and every order with exactly its lines: a cut
that half-applies a transaction breaks one of them.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

__all__ = ["ACCOUNTS", "OPENING", "TransferWorkload", "broken_invariants"]

ACCOUNTS = 20
OPENING = 1_000
"""Each account's opening balance: the total is ``2 * ACCOUNTS * OPENING`` at every transaction boundary."""


class TransferWorkload:
    """The tables (``create``), and a thread committing transactions until ``stop``."""

    def __init__(self, tag: str, *, seed: int = 43, pause_s: float = 0.05) -> None:
        self.tag = tag
        self.tables = [f"{tag}_acct_a", f"{tag}_acct_b", f"{tag}_orders", f"{tag}_lines"]
        self._rng = random.Random(seed)
        self._pause_s = pause_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.committed = 0
        self.error: BaseException | None = None

    def create(self, conn: Any) -> None:  # noqa: ANN401 - a psycopg or pymysql connection, autocommit
        a, b, orders, lines = self.tables
        with conn.cursor() as cur:
            for account in (a, b):
                cur.execute(f"create table inventory.{account} (id int primary key, balance bigint not null)")
            cur.execute(f"create table inventory.{orders} (id int primary key, line_count int not null)")
            cur.execute(
                f"create table inventory.{lines} (order_id int, line_no int, amount int, primary key (order_id, line_no))"
            )
        for account in (a, b):
            with _transaction(conn) as cur:
                rows = [(i, OPENING) for i in range(1, ACCOUNTS + 1)]
                cur.executemany(f"insert into inventory.{account} values (%s, %s)", rows)  # noqa: S608

    def drop(self, conn: Any) -> None:  # noqa: ANN401
        with conn.cursor() as cur:
            for table in self.tables:
                cur.execute(f"drop table if exists inventory.{table}")

    def start(self, conn: Any) -> None:  # noqa: ANN401
        self._thread = threading.Thread(target=self._run, args=(conn,), name="transfers", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.error is not None:
            raise self.error

    def _run(self, conn: Any) -> None:  # noqa: ANN401
        next_order = 1
        try:
            while not self._stop.wait(self._pause_s):
                with _transaction(conn) as cur:
                    kind = self._rng.random()
                    if kind < 0.6:
                        self._transfer(cur)
                    elif kind < 0.9 or next_order < 5:
                        self._order(cur, next_order)
                        next_order += 1
                    else:
                        self._cancel(cur, self._rng.randrange(1, next_order))
                self.committed += 1
        except BaseException as exc:  # noqa: BLE001 - handed to the test by stop()
            self.error = exc

    def _transfer(self, cur: Any) -> None:  # noqa: ANN401
        a, b = self.tables[:2]
        source, target = (a, b) if self._rng.random() < 0.5 else (b, a)
        amount = self._rng.randint(1, 50)
        cur.execute(
            f"update inventory.{source} set balance = balance - %s where id = %s",  # noqa: S608
            (amount, self._rng.randint(1, ACCOUNTS)),
        )
        cur.execute(
            f"update inventory.{target} set balance = balance + %s where id = %s",  # noqa: S608
            (amount, self._rng.randint(1, ACCOUNTS)),
        )

    def _order(self, cur: Any, order: int) -> None:  # noqa: ANN401
        orders, lines = self.tables[2:]
        count = self._rng.randint(1, 4)
        cur.execute(f"insert into inventory.{orders} values (%s, %s)", (order, count))  # noqa: S608
        for line in range(1, count + 1):
            cur.execute(f"insert into inventory.{lines} values (%s, %s, %s)", (order, line, line * 10))  # noqa: S608

    def _cancel(self, cur: Any, order: int) -> None:  # noqa: ANN401
        orders, lines = self.tables[2:]
        cur.execute(f"delete from inventory.{lines} where order_id = %s", (order,))  # noqa: S608
        cur.execute(f"delete from inventory.{orders} where id = %s", (order,))  # noqa: S608


@contextmanager
def _transaction(conn: Any) -> Iterator[Any]:  # noqa: ANN401
    """One transaction on an autocommit connection: psycopg's block, or pymysql's begin and commit."""
    if hasattr(conn, "transaction"):
        with conn.transaction(), conn.cursor() as cur:
            yield cur
        return
    conn.begin()
    try:
        with conn.cursor() as cur:
            yield cur
    except BaseException:
        conn.rollback()
        raise
    conn.commit()


def broken_invariants(tables: Mapping[str, Any], tag: str) -> list[str]:
    """What a cut's tables (``schema.table`` -> DataFrame) break of the workload's invariants; [] when none.

    A pair of tables of which the cut holds only one (the other left out, new) is not judged."""
    a, b, orders, lines = (tables.get(f"inventory.{tag}_{t}") for t in ("acct_a", "acct_b", "orders", "lines"))
    broken = []
    if a is not None and b is not None:
        total = sum(int(r["balance"]) for frame in (a, b) for r in frame.select("balance").collect())
        if total != 2 * ACCOUNTS * OPENING:
            broken.append(f"the accounts' total is {total}, not {2 * ACCOUNTS * OPENING}")
    if orders is None or lines is None:
        return broken
    counts = {int(r["id"]): int(r["line_count"]) for r in orders.select("id", "line_count").collect()}
    held: dict[int, int] = {}
    for row in lines.select("order_id").collect():
        held[int(row["order_id"])] = held.get(int(row["order_id"]), 0) + 1
    for order in sorted(set(counts) | set(held)):
        if counts.get(order) != held.get(order):
            broken.append(f"order {order}: line_count {counts.get(order)}, lines present {held.get(order, 0)}")
    return broken
