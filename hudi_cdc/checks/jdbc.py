"""``validate``'s checks of a JDBC source: the relation, the columns a round needs, the cursor's index, the key.

They reach the database through the Python drivers (as ``verify`` does), with
the ingest's own URL, user and password, and read only the catalogue.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hudi_cdc.checks.kit import _Context, _fail, _ok, _Outcome, _warn
from hudi_cdc.errors import ConfigError, TransientError

if TYPE_CHECKING:
    from hudi_cdc.upstream.database import SourceDatabase

__all__ = ["check_jdbc_cursor_index", "check_jdbc_primary_key", "check_jdbc_relation"]


def _database(ctx: _Context) -> SourceDatabase:
    from hudi_cdc.sources.jdbc import source_database

    c = ctx.config
    assert c.jdbc_url
    return source_database(c.jdbc_url, c.jdbc_user, c.jdbc_password_file, c.jdbc_password_env)


def _connection(ctx: _Context) -> Any:  # noqa: ANN401
    """One connection for every check (``_Context.close`` closes it)."""
    return ctx.memo("jdbc.connection", lambda: _database(ctx).connect(application="hudi-cdc validate"))


def _rows(ctx: _Context, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    cur = _connection(ctx).cursor()
    try:
        cur.execute(sql, params)
        return list(cur.fetchall()) if cur.description else []
    except Exception as exc:  # the drivers' errors: the statement is the catalogue's, so the database's fault
        raise TransientError(f"{_database(ctx).display}: {str(exc).strip().splitlines()[0]}") from None
    finally:
        cur.close()


def _mysql(ctx: _Context) -> bool:
    return not (ctx.config.jdbc_url or "").startswith("jdbc:postgresql:")


def _table(ctx: _Context) -> tuple[str, str]:
    """``(schema, table)`` of ``--jdbc-table`` (MySQL: the URL's database when it names none)."""
    from urllib.parse import urlsplit

    schema, _, table = (ctx.config.jdbc_table or "").rpartition(".")
    if not schema:
        schema = urlsplit((ctx.config.jdbc_url or "")[5:]).path.strip("/") if _mysql(ctx) else "public"
    return schema, table


def _columns(ctx: _Context) -> dict[str, bool]:
    """The relation's columns and whether each may hold NULL (a query's: all may)."""

    def fetch() -> dict[str, bool]:
        c = ctx.config
        if c.jdbc_query:
            cur = _connection(ctx).cursor()
            try:
                cur.execute(f"select * from ({c.jdbc_query}) hudi_cdc_q where 1 = 0")
                return {d[0]: True for d in cur.description}
            except Exception as exc:
                raise ConfigError(f"--jdbc-query does not run: {str(exc).strip().splitlines()[0]}") from None
            finally:
                cur.close()
        schema, table = _table(ctx)
        rows = _rows(
            ctx,
            "select column_name, is_nullable from information_schema.columns"
            " where table_schema = %s and table_name = %s order by ordinal_position",
            (schema, table),
        )
        if not rows:
            raise ConfigError(f"no table {schema}.{table} the user {c.jdbc_user or '(default)'} can read")
        return {name: nullable == "YES" for name, nullable in rows}

    return ctx.memo("jdbc.columns", fetch)  # type: ignore[no-any-return]


def _cursor_columns(ctx: _Context) -> list[str]:
    c = ctx.config
    return [
        n
        for kind, n in (("timestamp", c.jdbc_timestamp_column), ("incrementing", c.jdbc_incrementing_column))
        if n and kind in c.jdbc_mode
    ]


def check_jdbc_relation(ctx: _Context) -> _Outcome:
    c = ctx.config
    columns = _columns(ctx)
    where = c.jdbc_table or "the --jdbc-query"
    needed = {"record key": list(c.record_key_fields)}
    if c.jdbc_mode != "full":
        needed["cursor"] = _cursor_columns(ctx)
    missing = [f"{n} ({role})" for role, names in needed.items() for n in names if n not in columns]
    if missing:
        return _fail(
            f"{where} has no column {', '.join(missing)}; it has {', '.join(list(columns)[:20])}",
            "name the columns as the database spells them (case too)",
        )
    nullable = [n for n in needed.get("cursor", []) if columns[n]] if c.jdbc_table else []
    if nullable:
        return _warn(
            f"{where}: {len(columns)} columns; cursor column {', '.join(nullable)} may be NULL: a round fails "
            "while any row holds NULL there (a cursor never reads it)",
            f"ALTER TABLE {c.jdbc_table} ALTER COLUMN ... SET NOT NULL (with a default)",
        )
    return _ok(f"{where}: {len(columns)} columns, the record key and the cursor among them")


def check_jdbc_cursor_index(ctx: _Context) -> _Outcome:
    c = ctx.config
    if c.jdbc_mode == "full":
        return _ok("full refresh: no cursor, every round reads the whole relation")
    if not c.jdbc_table:
        return _ok("a --jdbc-query: the indexes of its tables are the query's business")
    _columns(ctx)  # the table exists
    schema, table = _table(ctx)
    leading = c.jdbc_timestamp_column if "timestamp" in c.jdbc_mode else c.jdbc_incrementing_column
    if _mysql(ctx):
        sql = (
            "select column_name from information_schema.statistics"
            " where table_schema = %s and table_name = %s and seq_in_index = 1"
        )
        params: tuple[Any, ...] = (schema, table)
    else:
        sql = (
            "select a.attname from pg_index i join pg_class t on t.oid = i.indrelid"
            " join pg_namespace n on n.oid = t.relnamespace"
            " join pg_attribute a on a.attrelid = t.oid and a.attnum = i.indkey[0]"
            " where n.nspname = %s and t.relname = %s"
        )
        params = (schema, table)
    indexed = {r[0] for r in _rows(ctx, sql, params)}
    if leading not in indexed:
        return _warn(
            f"{schema}.{table}: no index leads with {leading}: every round scans the whole table to find the rows "
            "past the cursor",
            f"CREATE INDEX ON {schema}.{table} ({', '.join(_cursor_columns(ctx))})",
        )
    return _ok(f"{schema}.{table}: an index leads with {leading}, so a round reads only rows past the cursor")


def check_jdbc_primary_key(ctx: _Context) -> _Outcome:
    c = ctx.config
    if not c.jdbc_table:
        return _ok("a --jdbc-query: its key is --record-key-fields, checked unique by full refresh only")
    _columns(ctx)
    schema, table = _table(ctx)
    rows = _rows(
        ctx,
        "select k.column_name from information_schema.table_constraints t"
        " join information_schema.key_column_usage k on k.constraint_name = t.constraint_name"
        " and k.table_schema = t.table_schema and k.table_name = t.table_name"
        " where t.constraint_type = 'PRIMARY KEY' and t.table_schema = %s and t.table_name = %s"
        " order by k.ordinal_position",
        (schema, table),
    )
    primary = [r[0] for r in rows]
    keys = list(c.record_key_fields)
    if not primary:
        return _warn(
            f"{schema}.{table} has no primary key: nothing keeps the record key {', '.join(keys)} unique",
            "add a primary key, or a unique index on the record key",
        )
    if primary != keys:
        return _warn(
            f"{schema}.{table}: primary key ({', '.join(primary)}), record key {', '.join(keys)}",
            f"use --record-key-fields {','.join(primary)}",
        )
    return _ok(f"{schema}.{table}: primary key ({', '.join(primary)}) is the record key")
