"""Write Debezium change envelopes as Avro Object Container Files.

The same records Kafka Connect's storage sinks write for Debezium's Postgres,
MySQL, SQL Server and Oracle connectors under the default AvroConverter (each
``source`` block as that connector's struct maker builds it, Debezium 3.x):
used by the demo, the tests and the benchmarks to produce input without a
running database.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["envelope_schema", "pg_event", "mysql_event", "sqlserver_event", "oracle_event", "write_events"]


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

_SQLSERVER_SOURCE = _source_schema(
    "sqlserver",
    [
        {"name": "schema", "type": "string"},
        {"name": "table", "type": "string"},
        _nullable("change_lsn", "string"),
        _nullable("commit_lsn", "string"),
        _nullable("event_serial_no", "long"),
    ],
)

_ORACLE_SOURCE = _source_schema(
    "oracle",
    [
        {"name": "schema", "type": "string"},
        {"name": "table", "type": "string"},
        _nullable("txId", "string"),
        _nullable("scn", "string"),
        _nullable("commit_scn", "string"),
        _nullable("lcr_position", "string"),
        _nullable("rs_id", "string"),
        _nullable("ssn", "long"),
        _nullable("redo_thread", "int"),
        _nullable("user_name", "string"),
        _nullable("redo_sql", "string"),
        _nullable("row_id", "string"),
        _nullable("commit_ts_ms", "long"),
        _nullable("start_scn", "string"),
        _nullable("start_ts_ms", "long"),
        _nullable("txSeq", "long"),
    ],
)

_SOURCES = {"postgres": _PG_SOURCE, "mysql": _MYSQL_SOURCE, "sqlserver": _SQLSERVER_SOURCE, "oracle": _ORACLE_SOURCE}
_CONNECTORS = {"postgres": "postgresql", "mysql": "mysql", "sqlserver": "sqlserver", "oracle": "oracle"}

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
    namespace = f"{server}.{table}" if flavor == "mysql" else f"{server}.{schema}.{table}"
    value = {
        "type": "record",
        "name": "Value",
        "fields": [
            {"name": n, "type": t, **({"default": None} if isinstance(t, list) and t[0] == "null" else {})}
            for n, t in columns
        ],
        "connect.name": f"{namespace}.Value",
    }
    source = copy.deepcopy(_SOURCES[flavor])
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
        "connector": _CONNECTORS[flavor],
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


def sqlserver_event(
    op: str,
    *,
    commit_lsn: str | None,
    change_lsn: str | None,
    event_serial_no: int | None = 1,
    before: Mapping[str, Any] | None = None,
    after: Mapping[str, Any] | None = None,
    ts_ms: int = 1_700_000_000_000,
    table: str = "customers",
) -> dict[str, Any]:
    """One SQL Server change envelope (a snapshot read has the snapshot's commit LSN and no change LSN)."""
    source = _source_common("sqlserver", ts_ms, "true" if op == "r" else "false", table)
    source.update(
        {"schema": "dbo", "change_lsn": change_lsn, "commit_lsn": commit_lsn, "event_serial_no": event_serial_no}
    )
    return _envelope(op, source, before, after, ts_ms)


def oracle_event(
    op: str,
    *,
    scn: str | None,
    commit_scn: str | None,
    tx_seq: int | None = None,
    ssn: int | None = 0,
    before: Mapping[str, Any] | None = None,
    after: Mapping[str, Any] | None = None,
    txid: str | None = "0a001b00c1d20000",
    ts_ms: int = 1_700_000_000_000,
    table: str = "CUSTOMERS",
) -> dict[str, Any]:
    """One Oracle (LogMiner) change envelope; a snapshot read has the snapshot's SCN and no commit SCN."""
    snapshot = op == "r"
    source = _source_common("oracle", ts_ms, "true" if snapshot else "false", table)
    source.update(
        {
            "schema": "INVENTORY",
            "txId": None if snapshot else txid,
            "scn": scn,
            "commit_scn": commit_scn,
            "lcr_position": None,
            "rs_id": None if snapshot else " 0x000001.00000002.0010 ",
            "ssn": ssn,
            "redo_thread": None if snapshot else 1,
            "user_name": None if snapshot else "DEBEZIUM",
            "redo_sql": None,
            "row_id": None if snapshot else "AAAR4mAAEAAAAFTAAA",
            "commit_ts_ms": None if snapshot else ts_ms,
            "start_scn": None if snapshot else scn,
            "start_ts_ms": None if snapshot else ts_ms - 10,
            "txSeq": tx_seq,
        }
    )
    return _envelope(op, source, before, after, ts_ms)


def write_events(path: str | os.PathLike[str], schema: Mapping[str, Any], events: Iterable[Mapping[str, Any]]) -> str:
    """Write ``events`` to one Avro Object Container File (deflate, as Connect does).

    Written under a hidden name and renamed into place, as a sink makes a file appear whole: a process that
    lists the folder meanwhile (a continuous run) never reads it half written.
    """
    import fastavro

    folder, name = os.path.split(os.fspath(path))
    os.makedirs(folder or ".", exist_ok=True)
    parsed = fastavro.parse_schema(dict(schema))
    partial = os.path.join(folder, f".{name}.partial")
    with open(partial, "wb") as out:
        fastavro.writer(out, parsed, list(events), codec="deflate")
    os.replace(partial, path)
    return os.fspath(path)
