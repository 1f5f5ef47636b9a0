"""The local stack's MariaDB (``stack/conf/init-mariadb.sql``): a connection for tests and demos.

Debezium's MariaDB connector on the stack publishes every table of its
``inventory`` database to ``mariadb1.inventory.<table>``. Needs ``pymysql``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["STACK_URL", "TOPIC_PREFIX", "connect"]

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
