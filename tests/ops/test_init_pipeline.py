"""The pipeline file ``init`` writes for a Kafka source: what it could not find is said, and the file reads."""

from __future__ import annotations

from pathlib import Path

from hudi_cdc.ops.init_pipeline import Found, FoundTable, pipeline_text
from hudi_cdc.service.spec import TableRef, load_pipeline


def test_a_connector_without_topics_yet_gets_patterns_and_to_fill_in_lines(tmp_path: Path) -> None:
    found = Found(
        "kafka",
        "Kafka Connect connector 'inventory' at http://connect:8083 (io.debezium.connector.mysql.MySqlConnector)",
        (FoundTable("dbserver1.inventory.orders"),),
        {
            "source": "kafka",
            "bootstrap_servers": None,
            "flavor": "mysql",
            "schema_registry_url": "http://r/apis/ccompat/v7",
            "schema_change_topic": "dbserver1",
        },  # fmt: skip
        ('bootstrap_servers: the Kafka brokers the connector writes to, e.g. "broker:9092"',),
        ("dbserver1.crm.*",),
    )
    text = pipeline_text(found, name="inventory", target_base_path="/lake/{schema}/{table}")
    assert "# bootstrap_servers = ...   # TO FILL IN: the Kafka brokers" in text
    assert '    "dbserver1.crm.*",   # a pattern: no table found by name' in text
    assert "# record_key_fields = [...]   # default: the message key's fields" in text
    path = tmp_path / "inventory.toml"
    path.write_text(text.replace("# bootstrap_servers = ...", 'bootstrap_servers = "broker:9092"'))
    spec = load_pipeline(path)
    assert spec.source.tables == ("dbserver1.inventory.orders", "dbserver1.crm.*")
    assert spec.source.schema_change_topic == "dbserver1" and spec.source.flavor == "mysql"
    config = spec.table_config(TableRef("dbserver1.inventory.orders"))
    assert (config.topic, config.bootstrap_servers, config.target_base_path) == (
        "dbserver1.inventory.orders", "broker:9092", "/lake/inventory/orders")  # fmt: skip
