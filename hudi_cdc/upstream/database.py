"""The source database an operator command talks to: a URL, and a password kept off the command line.

``postgresql://user@host:port/dbname`` (libpq's URI; ``?sslmode=...`` and the
other libpq parameters pass through), or ``mysql://user@host:port/dbname``
(also ``mariadb://``; PyMySQL). The password comes, first match wins, from
``password_file``, from the environment variable ``password_env``, from the
URL, or (Postgres) from libpq's own ``PGPASSWORD`` / ``~/.pgpass``. A password
written into the URL works but is never printed: :attr:`SourceDatabase.display`
redacts it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from hudi_cdc.config import redact_url, resolve_password
from hudi_cdc.errors import ConfigError, TransientError

__all__ = ["SourceDatabase", "redact_url"]

# Refusals a retry will not fix (libpq's wording; MySQL's error numbers: access denied, unknown database).
_TERMINAL = ("authentication failed", "does not exist", "no password supplied", "no pg_hba.conf entry")
_MYSQL_TERMINAL = {1044, 1045, 1049, 1698}
_SCHEMES = {"postgresql": "postgres", "postgres": "postgres", "mysql": "mysql", "mariadb": "mysql"}


@dataclass(frozen=True)
class SourceDatabase:
    url: str
    password_file: str | None = None
    password_env: str | None = None

    def __post_init__(self) -> None:
        scheme = urlsplit(self.url).scheme
        if scheme not in _SCHEMES:
            raise ConfigError(
                f"source database URL {self.display!r}: expected postgresql://user@host:port/dbname"
                " or mysql://user@host:port/dbname"
            )

    @property
    def kind(self) -> str:
        return _SCHEMES[urlsplit(self.url).scheme]

    @property
    def display(self) -> str:
        return redact_url(self.url)

    def __repr__(self) -> str:
        return f"SourceDatabase({self.display!r})"

    def _password(self) -> str | None:
        # None: the URL's; for libpq also PGPASSWORD or ~/.pgpass
        return resolve_password(self.password_file, self.password_env)

    def connect(self, *, application: str = "hudi-cdc") -> Any:
        """An autocommit, read-only DB-API connection (psycopg, or PyMySQL with the session in UTC)."""
        if self.kind == "mysql":
            return self._connect_mysql()
        import psycopg

        extra: dict[str, Any] = {"application_name": application, "connect_timeout": 10}
        password = self._password()
        if password is not None:
            extra["password"] = password
        try:
            conn = psycopg.connect(self.url, autocommit=True, **extra)
        except psycopg.OperationalError as exc:
            # libpq's message names host, port and the reason; it never contains the password.
            reason = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
            message = f"cannot connect to {self.display}: {reason}"
            if any(word in reason for word in _TERMINAL):
                raise ConfigError(message) from None
            raise TransientError(message) from None
        conn.read_only = True
        return conn

    def jdbc(self) -> tuple[str, dict[str, str]]:
        """The JDBC URL and the connection properties (user, password) of a Postgres source, for Spark's reader."""
        if self.kind != "postgres":
            raise ConfigError(f"{self.display}: only a Postgres source can be read this way")
        parts = urlsplit(self.url)
        host = parts.hostname or "localhost"
        url = f"jdbc:postgresql://{host}:{parts.port or 5432}{parts.path or '/'}"
        if parts.query:
            url += "?" + parts.query
        properties = {"user": unquote(parts.username or os.environ.get("PGUSER", ""))}
        password = self._password()
        if password is None and parts.password is not None:
            password = unquote(parts.password)
        password = password if password is not None else os.environ.get("PGPASSWORD")
        if password is not None:
            properties["password"] = password
        return url, properties

    def replication_connection(self) -> Any:  # noqa: ANN401
        """A Postgres connection in the replication protocol (``replication=database``), for slot commands."""
        import psycopg

        extra: dict[str, Any] = {"replication": "database", "application_name": "hudi-cdc bootstrap"}
        password = self._password()
        if password is not None:
            extra["password"] = password
        try:
            return psycopg.connect(self.url, autocommit=True, connect_timeout=10, **extra)
        except psycopg.OperationalError as exc:
            reason = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
            message = f"cannot open a replication connection to {self.display}: {reason}"
            if any(word in reason for word in _TERMINAL) or "replication" in reason:
                raise ConfigError(message) from None
            raise TransientError(message) from None

    def _connect_mysql(self) -> Any:
        import pymysql

        parts = urlsplit(self.url)
        password = self._password()
        if password is None and parts.password is not None:
            password = unquote(parts.password)
        try:
            conn = pymysql.connect(
                host=parts.hostname or "localhost",
                port=parts.port or 3306,
                user=unquote(parts.username or ""),
                password=password or "",
                database=unquote(parts.path.lstrip("/")) or None,
                charset="utf8mb4",
                autocommit=True,
                connect_timeout=10,
                # UTC, so TIMESTAMP columns read as the instants Debezium sends.
                init_command="SET time_zone = '+00:00'",
            )
        except pymysql.err.OperationalError as exc:
            code = exc.args[0] if exc.args else None
            reason = exc.args[1] if len(exc.args) > 1 else str(exc)  # the server's words, never the password
            message = f"cannot connect to {self.display}: {reason}"
            if code in _MYSQL_TERMINAL:
                raise ConfigError(message) from None
            raise TransientError(message) from None
        with conn.cursor() as cur:
            cur.execute("SET SESSION TRANSACTION READ ONLY")
        return conn
