"""What a consistent cut reads of a decoded message (no Kafka): the transaction, the data collection as the END
events name it, the event's place in its collection, and messages that do not decode."""

from __future__ import annotations

import pytest

from hudi_cdc.sources.transactions import (
    TableEvent,
    TransactionEnd,
    data_collection,
    table_event,
    topic_collection,
    topic_server,
    transaction_end,
)


def _change(source: dict[str, object], tx_id: str = "46925:1861286464", order: int = 2) -> dict[str, object]:
    return {
        "op": "u",
        "source": {"name": "srv", "connector": "x", **source},
        "transaction": {"id": tx_id, "total_order": 5, "data_collection_order": order},
    }


@pytest.mark.parametrize(
    ("flavor", "source", "collection"),
    [
        ("postgres", {"db": "shop", "schema": "crm", "table": "customers"}, "crm.customers"),
        ("mysql", {"db": "inventory", "table": "orders", "schema": None}, "inventory.orders"),
        ("sqlserver", {"db": "testDB", "schema": "dbo", "table": "orders"}, "testDB.dbo.orders"),
        ("oracle", {"db": "ORCLPDB1", "schema": "DEBEZIUM", "table": "CUSTOMERS"}, "ORCLPDB1.DEBEZIUM.CUSTOMERS"),
    ],
)
def test_a_change_event_names_its_collection_as_debezium_counts_it(
    flavor: str, source: dict[str, object], collection: str
) -> None:
    assert data_collection(_change(source)["source"], flavor) == collection
    event = table_event(_change(source), 3, 17, flavor)
    key = "46925" if flavor == "postgres" else "46925:1861286464"  # Postgres: the txid, not the LSN
    assert event == TableEvent(3, 17, key, collection=collection, order=2)


def test_tombstones_snapshot_reads_and_messages_that_do_not_decode() -> None:
    assert table_event(None, 0, 1, "postgres", tombstone=True) == TableEvent(0, 1, None, tombstone=True)
    assert table_event(None, 0, 2, "postgres") == TableEvent(0, 2, None, undecodable=True)
    snapshot = {"op": "r", "source": {"schema": "crm", "table": "customers"}, "transaction": None}
    assert table_event(snapshot, 0, 3, "postgres") == TableEvent(0, 3, None, collection="crm.customers")
    assert data_collection(None, "postgres") is None and data_collection({"table": "t"}, "postgres") is None


def test_an_end_event_with_its_counts_a_begin_and_a_message_that_does_not_decode() -> None:
    record = {
        "status": "END",
        "id": "571:53195832",
        "event_count": 3,
        "data_collections": [
            {"data_collection": "crm.customers", "event_count": 2},
            {"data_collection": "crm.orders", "event_count": 1},
        ],
        "ts_ms": 1700000000000,
    }
    end = transaction_end(record, 9, "postgres")
    assert end == TransactionEnd(9, "571:53195832", {"crm.customers": 2, "crm.orders": 1}, 1700000000000, "571")
    assert transaction_end({**record, "status": "BEGIN", "data_collections": None}, 8, "postgres") is None
    assert transaction_end(None, 10, "postgres") == TransactionEnd(10, "", undecodable=True)


def test_a_topic_names_its_server_and_collection_per_connector() -> None:
    assert (
        topic_server("dbserver1.crm.customers", "postgres"),
        topic_collection("dbserver1.crm.customers", "postgres"),
    ) == (
        "dbserver1",
        "crm.customers",
    )
    assert topic_server("dc.eu.crm.customers", "mysql") == "dc.eu"  # a prefix may hold dots
    assert (
        topic_server("srv.testDB.dbo.orders", "sqlserver"),
        topic_collection("srv.testDB.dbo.orders", "sqlserver"),
    ) == (
        "srv",
        "testDB.dbo.orders",
    )
