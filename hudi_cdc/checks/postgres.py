"""``validate``'s checks of the source PostgreSQL: logical decoding, the connector's slot and publication, the table's identity.

They read only the catalogue, through the connection the shared context opens
once; the slot and publication wanted are the connector's when Connect was
given, else any.
"""

from __future__ import annotations

from typing import Any

from hudi_cdc.checks.kit import _Context, _fail, _ok, _Outcome, _Skip, _warn
from hudi_cdc.errors import HudiCdcError

__all__ = [
    "check_primary_key",
    "check_publication",
    "check_replica_identity",
    "check_slot",
    "check_wal_level",
]


_REPLICA_IDENTITY = {"d": "DEFAULT", "f": "FULL", "n": "NOTHING", "i": "USING INDEX"}


def check_wal_level(ctx: _Context) -> _Outcome:
    level = ctx.query("SELECT current_setting('wal_level') AS level")[0]["level"]
    if level != "logical":
        return _fail(
            f"wal_level={level} on {ctx.db_name()}: logical decoding is off",
            "ALTER SYSTEM SET wal_level = logical; then restart PostgreSQL",
        )
    return _ok(f"wal_level=logical on {ctx.db_name()}")


def check_slot(ctx: _Context) -> _Outcome:
    try:
        wanted: str | None = ctx.connector_setting("slot.name")[0]
    except _Skip:
        wanted = None
    except HudiCdcError:
        wanted = None  # the connector check says why
    slots = ctx.query(
        "SELECT slot_name, plugin, active, wal_status, "
        "pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn)::bigint AS behind "
        "FROM pg_replication_slots WHERE slot_type = 'logical' AND database = current_database() ORDER BY slot_name"
    )
    mine = [s for s in slots if wanted is None or s["slot_name"] == wanted]
    if not mine:
        named = f"slot {wanted!r} (the connector's slot.name)" if wanted else "logical replication slot"
        others = f"; slots here: {', '.join(s['slot_name'] for s in slots)}" if slots else ""
        return _fail(
            f"no {named} on {ctx.db_name()}{others}",
            "start the Debezium connector (it creates its slot on first start), or check slot.name",
        )
    slot = mine[0]
    where = f"slot {slot['slot_name']} ({slot['plugin']})"
    if slot.get("wal_status") == "lost":
        return _fail(
            f"{where} lost WAL it still needed (wal_status=lost): changes were lost",
            "drop the slot and re-snapshot the table (a new Debezium snapshot)",
        )
    behind = slot.get("behind")
    lag = f", {behind // (1 << 20)} MiB of WAL not yet confirmed" if behind is not None else ""
    if not slot["active"]:
        return _fail(
            f"{where} exists but is not active{lag}: no one reads it, and the server keeps WAL for it",
            "start (or restart) the Debezium connector",
        )
    return _ok(f"{where} active{lag}")


def check_publication(ctx: _Context) -> _Outcome:
    schema, table = ctx.source_table()
    try:
        wanted: str | None = ctx.connector_setting("publication.name")[0]
    except (_Skip, HudiCdcError):
        wanted = None
    rows = ctx.query(
        "SELECT p.pubname, p.pubinsert, p.pubupdate, p.pubdelete FROM pg_publication p "
        "JOIN pg_publication_tables t ON t.pubname = p.pubname WHERE t.schemaname = %s AND t.tablename = %s",
        (schema, table),
    )
    mine = [r for r in rows if wanted is None or r["pubname"] == wanted]
    if not mine:
        named = f"publication {wanted!r} (the connector's publication.name)" if wanted else "no publication"
        elsewhere = f"; it is in {', '.join(r['pubname'] for r in rows)}" if rows else ""
        subject = f"{named} does not cover" if wanted else f"{named} covers"
        return _fail(
            f"{subject} {schema}.{table} on {ctx.db_name()}{elsewhere}: its changes are never decoded",
            f"ALTER PUBLICATION {wanted or 'dbz_publication'} ADD TABLE {schema}.{table} (as the publication's owner)",
        )
    pub = mine[0]
    skipped = [op for op in ("insert", "update", "delete") if not pub[f"pub{op}"]]
    if skipped:
        return _fail(
            f"publication {pub['pubname']} does not publish {', '.join(skipped)}s of {schema}.{table}",
            f"ALTER PUBLICATION {pub['pubname']} SET (publish = 'insert, update, delete')",
        )
    return _ok(f"publication {pub['pubname']} covers {schema}.{table}")


def check_replica_identity(ctx: _Context) -> _Outcome:
    schema, table = ctx.source_table()
    rel = ctx.relation()
    identity = _REPLICA_IDENTITY.get(rel["relreplident"], rel["relreplident"])
    name = f"{schema}.{table}"
    if identity == "DEFAULT":
        return _ok(
            f"{name}: DEFAULT (deletes carry the key only; an unchanged TOASTed value arrives as a placeholder, "
            "which hudi-cdc fills from the table). FULL would send whole before images, at more WAL"
        )
    if identity == "FULL":
        return _ok(f"{name}: FULL (whole before images; placeholders only for unchanged TOASTed values of updates)")
    if identity == "NOTHING":
        return _fail(
            f"{name}: NOTHING: deletes carry no before image, so they cannot be applied",
            f"ALTER TABLE {name} REPLICA IDENTITY DEFAULT (with a primary key) or FULL",
        )
    index = [r["attname"] for r in _index_columns(ctx, rel["oid"], "indisreplident")]
    keys = ctx.config.record_key_fields
    if keys and set(keys) != set(index):
        return _warn(
            f"{name}: USING INDEX ({', '.join(index)}), but the record key is {', '.join(keys)}: deletes "
            "carry only the index columns",
            f"use --record-key-fields {','.join(index)}",
        )
    return _ok(f"{name}: USING INDEX ({', '.join(index)})")


def _index_columns(ctx: _Context, oid: int, flag: str) -> list[dict[str, Any]]:
    assert flag in ("indisprimary", "indisreplident")  # a column name, never user input
    return ctx.query(
        "SELECT a.attname FROM pg_index i CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY k(attnum, n) "
        f"JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum WHERE i.indrelid = %s AND i.{flag} "
        "ORDER BY k.n",
        (oid,),
    )


def check_primary_key(ctx: _Context) -> _Outcome:
    schema, table = ctx.source_table()
    rel = ctx.relation()
    name = f"{schema}.{table}"
    columns = [r["attname"] for r in _index_columns(ctx, rel["oid"], "indisprimary")]
    if not columns:
        return _fail(
            f"{name} has no primary key: Debezium sends its changes without a key, so no record key identifies a row",
            f"ALTER TABLE {name} ADD PRIMARY KEY (...), or a unique index with REPLICA IDENTITY USING INDEX "
            "and Debezium's message.key.columns",
        )
    keys = ctx.config.record_key_fields
    if keys and list(keys) != columns:
        return _warn(
            f"{name}: primary key ({', '.join(columns)}), record key {', '.join(keys)}",
            f"use --record-key-fields {','.join(columns)}, or leave it out to take the Debezium key",
        )
    return _ok(f"{name}: primary key ({', '.join(columns)})")
