"""The transform settings by their names in a pipeline file's sections and the environment (no Spark)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hudi_cdc.errors import ConfigError
from hudi_cdc.service.spec import TableRef, load_pipeline

PIPELINE = """
[source]
source = "kafka"
bootstrap_servers = "127.0.0.1:1"
schema_registry_url = "http://127.0.0.1:2"
tables = ["dbserver1.inventory.*"]

[defaults]
target_base_path = "/lake/{table}"
target_table = "{table}"
masks = { email = "hash" }
mask_salt_env = "CUSTOMERS_SALT"
columns_drop = ["internal_notes"]

[tables."inventory.customers"]
column_renames = { email_address = "email" }
computed_columns = { order_month = "substr(created_at, 1, 7)" }
row_filter = "status <> 'test'"
masks = { email = "hash", ssn = "keep_last:4" }
"""


def test_pipeline_sections_and_the_environment_set_the_transforms(tmp_path: Path) -> None:
    path = tmp_path / "pipe.toml"
    path.write_text(PIPELINE)
    spec = load_pipeline(path)
    customers = spec.table_config(TableRef("dbserver1.inventory.customers"), env={})
    assert customers.masks == {"email": "hash", "ssn": "keep_last:4"} and customers.columns_drop == ("internal_notes",)
    assert customers.column_renames == {"email_address": "email"} and customers.row_filter == "status <> 'test'"
    assert customers.computed_columns == {"order_month": "substr(created_at, 1, 7)"}
    assert "CUSTOMERS_SALT" in repr(customers)  # the variable's name; its value is read only when a round starts
    env = {"HUDI_CDC__COLUMNS_KEEP": "id,email", "HUDI_CDC__COLUMNS_DROP": ""}
    orders = spec.table_config(TableRef("dbserver1.inventory.orders"), env=env)
    assert orders.columns_keep == ("id", "email") and orders.masks == {"email": "hash"}

    path.write_text(PIPELINE.replace('mask_salt_env = "CUSTOMERS_SALT"\n', ""))
    with pytest.raises(ConfigError, match="hash mask needs the secret salt: set mask_salt_env or mask_salt_file"):
        load_pipeline(path).table_config(TableRef("dbserver1.inventory.orders"), env={})
