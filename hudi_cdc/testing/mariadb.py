"""The local stack's MariaDB (``stack/conf/init-mariadb.sql``): a connection and a change workload.

Debezium's MariaDB connector on the stack publishes every table of its
``inventory`` database to ``mariadb1.inventory.<table>``. The sample tables
mirror the Postgres ones (:mod:`hudi_cdc.testing.postgres`): ``customers``
(auto-increment key), ``orders`` (composite key, primary-key updates) and
``documents`` (large text and blob values, JSON); the workload is
:mod:`hudi_cdc.testing.workload`'s, in MariaDB's dialect here. Needs ``pymysql``.
"""

from __future__ import annotations

import functools
import json
import random
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

from hudi_cdc.testing import workload
from hudi_cdc.testing.workload import SAMPLE_KEYS, Dialect, random_text

__all__ = ["SAMPLE_KEYS", "STACK_URL", "TOPIC_PREFIX", "connect", "run_workload", "wait_for_stream"]

STACK_URL = "mysql://debezium@127.0.0.1:53306/inventory"  # password: dbz
TOPIC_PREFIX = "mariadb1.inventory."


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


@contextmanager
def _transaction(conn: Any) -> Iterator[Any]:
    conn.begin()
    try:
        with conn.cursor() as cur:
            yield cur
    except BaseException:
        conn.rollback()
        raise
    conn.commit()


def _new_document(rng: random.Random, tag: str, n: int) -> tuple[Any, ...]:
    return (
        str(uuid.uuid5(uuid.NAMESPACE_OID, f"{tag}.{n}.{rng.random()}")),
        f"doc {tag} {n}",
        random_text(rng, rng.randint(2_000, 9_000)) if rng.random() < 0.8 else None,
        rng.randbytes(rng.randint(500, 3_000)) if rng.random() < 0.5 else None,
        json.dumps([f"t{rng.randint(0, 9)}" for _ in range(rng.randint(0, 3))]),
        json.dumps({"n": n, "tag": tag}),
        datetime(2026, 1, 1) + timedelta(microseconds=rng.getrandbits(40)),
    )


MARIADB = Dialect(
    topic_prefix=TOPIC_PREFIX,
    schema="",
    now="now(6)",  # now() is whole seconds in MariaDB; the columns keep microseconds
    blob="`blob`",
    transaction=_transaction,
    new_document=_new_document,
    tags=json.dumps,
    serial_key="bigint auto_increment primary key",
    new_body=None,  # the binlog carries the whole row: the body travels with every update anyway
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
    return workload.run_workload(MARIADB, conn, rng, transactions=transactions, tag=tag, tables=tables)


# The sample database's own: ``wait_for_stream(conn, bootstrap, topics, since=..., timeout_s=...)``.
wait_for_stream = functools.partial(workload.wait_for_stream, MARIADB)
