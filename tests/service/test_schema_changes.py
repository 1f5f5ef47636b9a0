"""Reading Debezium schema-change events: table ids, JSON values with and without the converter's envelope."""

from __future__ import annotations

import json

import pytest

from hudi_cdc.errors import DecodeError
from hudi_cdc.service.schema_changes import SchemaChangeWatcher, table_name


@pytest.mark.parametrize(
    ("table_id", "name"),
    [
        ('"inventory"."customers"', "inventory.customers"),  # MySQL: database.table
        ('"testDB"."dbo"."customers"', "dbo.customers"),  # SQL Server: database.schema.table
        ('"db"."odd.name"', "db.odd.name"),  # a dot inside quotes is part of the name
        ("inventory.orders", "inventory.orders"),
    ],
)
def test_table_ids_become_pipeline_table_names(table_id: str, name: str) -> None:
    assert table_name(table_id) == name


def test_json_values_with_and_without_the_envelope() -> None:
    watcher = SchemaChangeWatcher("dbserver1", bootstrap_servers="127.0.0.1:1", schema_registry_url=None)
    payload = {
        "ts_ms": 5,
        "ddl": "DROP TABLE `orders`",
        "tableChanges": [{"type": "drop", "id": '"inventory"."orders"'}, {"type": "ALTER", "id": '"inventory"."x"'}],
    }
    for value in (payload, {"schema": {"type": "struct"}, "payload": payload}):
        decoded = watcher._decode(json.dumps(value).encode(), "dbserver1-0@7")  # noqa: SLF001
        changes = watcher._changes(decoded, "dbserver1-0@7")  # noqa: SLF001
        assert [(c.table, c.type, c.ts_ms) for c in changes] == [
            ("inventory.orders", "DROP", 5),
            ("inventory.x", "ALTER", 5),
        ]
        assert changes[0].describe() == "DROP at dbserver1-0@7: DROP TABLE `orders`"
    with pytest.raises(DecodeError, match="dbserver1-0@8: a schema-change event neither Avro nor JSON"):
        watcher._decode(b"\x01garbage", "dbserver1-0@8")  # noqa: SLF001
    with pytest.raises(DecodeError, match="no schema registry"):
        watcher._decode(b"\x00\x00\x00\x00\x01rest", "dbserver1-0@9")  # noqa: SLF001
