"""Write Debezium change envelopes as Avro Object Container Files.

The same records Kafka Connect's storage sinks write for Debezium's Postgres
and MySQL connectors under the default AvroConverter: used by the demo, the
tests and the benchmarks to produce input without a running database.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["envelope_schema", "pg_event", "mysql_event", "write_events"]


def _nullable(name: str, avro_type: str) -> dict[str, Any]:
    return {"name": name, "type": ["null", avro_type], "default": None}


# The fields every Debezium connector's source block starts with.
_COMMON_SOURCE_FIELDS: list[dict[str, Any]] = [
    {"name": "version", "type": "string"},
    {"name": "connector", "type": "string"},
    {"name": "name", "type": "string"},
    {"name": "ts_ms", "type": "long"},
    {
        "name": "snapshot",
        "type": [{"type": "string", "connect.name": "io.debezium.data.Enum"}, "null"],
        "default": "false",
    },
    {"name": "db", "type": "string"},
    _nullable("sequence", "string"),
]


def _source_schema(connector: str, fields: list[dict[str, Any]]) -> dict[str, Any]:
    namespace = f"io.debezium.connector.{connector}"
    return {
        "type": "record",
        "name": "Source",
        "namespace": namespace,
        "fields": _COMMON_SOURCE_FIELDS + fields,
        "connect.name": f"{namespace}.Source",
    }


_PG_SOURCE = _source_schema(
    "postgresql",
    [
        {"name": "schema", "type": "string"},
        {"name": "table", "type": "string"},
        _nullable("txId", "long"),
        _nullable("lsn", "long"),
        _nullable("xmin", "long"),
    ],
)

_MYSQL_SOURCE = _source_schema(
    "mysql",
    [
        _nullable("table", "string"),
        {"name": "server_id", "type": "long"},
        _nullable("gtid", "string"),
        {"name": "file", "type": "string"},
        {"name": "pos", "type": "long"},
        {"name": "row", "type": "int"},
        _nullable("thread", "long"),
        _nullable("query", "string"),
    ],
)

_TRANSACTION = {
    "type": "record",
    "name": "block",
    "namespace": "event",
    "fields": [
        {"name": "id", "type": "string"},
        {"name": "total_order", "type": "long"},
        {"name": "data_collection_order", "type": "long"},
    ],
    "connect.name": "event.block",
    "connect.version": 1,
}


def envelope_schema(
    table: str,
    columns: Sequence[tuple[str, Any]],
    *,
    flavor: str = "postgres",
    server: str = "dbserver1",
    schema: str = "public",
    drop_fields: Sequence[str] = (),
) -> dict[str, Any]:
    """The Avro schema of ``<server>.<schema>.<table>.Envelope``.

    ``columns`` are ``(name, avro_type)``; give nullable columns as
    ``["null", type]``. ``drop_fields`` removes envelope fields (to build bad input).
    """
    namespace = f"{server}.{schema}.{table}" if flavor == "postgres" else f"{server}.{table}"
    value = {
        "type": "record",
        "name": "Value",
        "fields": [
            {"name": n, "type": t, **({"default": None} if isinstance(t, list) and t[0] == "null" else {})}
            for n, t in columns
        ],
        "connect.name": f"{namespace}.Value",
    }
    source = copy.deepcopy(_PG_SOURCE if flavor == "postgres" else _MYSQL_SOURCE)
    fields: list[dict[str, Any]] = [
        {"name": "before", "type": ["null", value], "default": None},
        {"name": "after", "type": ["null", "Value"], "default": None},
        {"name": "source", "type": source},
        {"name": "op", "type": "string"},
        {"name": "ts_ms", "type": ["null", "long"], "default": None},
        {"name": "transaction", "type": ["null", _TRANSACTION], "default": None},
    ]
    return {
        "type": "record",
        "name": "Envelope",
        "namespace": namespace,
        "fields": [f for f in fields if f["name"] not in drop_fields],
        "connect.name": f"{namespace}.Envelope",
        "connect.version": 1,
    }


def _source_common(flavor: str, ts_ms: int, snapshot: str, table: str) -> dict[str, Any]:
    return {
        "version": "2.7.3.Final",
        "connector": "postgresql" if flavor == "postgres" else "mysql",
        "name": "dbserver1",
        "ts_ms": ts_ms,
        "snapshot": snapshot,
        "db": "inventory",
        "sequence": None,
        "table": table,
    }


def _envelope(
    op: str, source: dict[str, Any], before: Mapping[str, Any] | None, after: Mapping[str, Any] | None, ts_ms: int
) -> dict[str, Any]:
    return {
        "before": dict(before) if before is not None else None,
        "after": dict(after) if after is not None else None,
        "source": source,
        "op": op,
        "ts_ms": ts_ms + 5,  # Debezium's processing time, just after the source's
        "transaction": None,
    }


def pg_event(
    op: str,
    *,
    lsn: int | None,
    before: Mapping[str, Any] | None = None,
    after: Mapping[str, Any] | None = None,
    txid: int | None = None,
    ts_ms: int = 1_700_000_000_000,
    table: str = "customers",
) -> dict[str, Any]:
    """One Postgres change envelope (``op`` in c, u, d, r)."""
    source = _source_common("postgres", ts_ms, "true" if op == "r" else "false", table)
    source.update({"schema": "public", "txId": txid, "lsn": lsn, "xmin": None})
    return _envelope(op, source, before, after, ts_ms)


def mysql_event(
    op: str,
    *,
    file: str,
    pos: int,
    row: int = 0,
    before: Mapping[str, Any] | None = None,
    after: Mapping[str, Any] | None = None,
    gtid: str | None = None,
    ts_ms: int = 1_700_000_000_000,
    table: str = "customers",
) -> dict[str, Any]:
    """One MySQL change envelope at binlog ``file``/``pos``/``row``."""
    source = _source_common("mysql", ts_ms, "true" if op == "r" else "false", table)
    source.update(
        {"server_id": 223344, "gtid": gtid, "file": file, "pos": pos, "row": row, "thread": None, "query": None}
    )
    return _envelope(op, source, before, after, ts_ms)


def write_events(path: str | os.PathLike[str], schema: Mapping[str, Any], events: Iterable[Mapping[str, Any]]) -> str:
    """Write ``events`` to one Avro Object Container File (deflate, as Connect does)."""
    import fastavro

    os.makedirs(os.path.dirname(os.fspath(path)) or ".", exist_ok=True)
    parsed = fastavro.parse_schema(dict(schema))
    with open(path, "wb") as out:
        fastavro.writer(out, parsed, list(events), codec="deflate")
    return os.fspath(path)
