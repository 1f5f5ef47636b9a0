"""``hudi-cdc init`` from the stack's running Debezium connector and from its PostgreSQL database.

No Spark: init reads Connect's REST API and the database's catalog only.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from hudi_cdc.cli import main
from hudi_cdc.service.spec import TableRef, load_pipeline
from hudi_cdc.testing.postgres import connect
from tests.stack.conftest import BOOTSTRAP, PORTS, REGISTRY

pytestmark = [pytest.mark.kafka, pytest.mark.postgres]

CONNECT_URL = f"http://127.0.0.1:{PORTS['connect']}"
JDBC_URL = f"jdbc:postgresql://127.0.0.1:{PORTS['postgres']}/inventory"


def _sections(text: str) -> list[str]:
    return re.findall(r'^# \[tables\."([^"]+)"\]   #', text, flags=re.MULTILINE)


def test_from_the_running_connector(tmp_path: Path) -> None:
    out = tmp_path / "inventory.toml"
    args = ["init", "--connect-url", CONNECT_URL, "--connector", "inventory-connector",
            "--bootstrap-servers", BOOTSTRAP, "--output", str(out)]  # fmt: skip
    done = CliRunner().invoke(main, args)
    assert done.exit_code == 0, done.output
    text = out.read_text()
    spec = load_pipeline(out)
    assert spec.source.bootstrap_servers == BOOTSTRAP and spec.source.flavor == "postgres"
    assert spec.source.schema_registry_url == REGISTRY  # Apicurio's own URL, turned into its ccompat one
    topics = spec.source.tables
    assert "dbserver1.inventory.customers" in topics and all(t.startswith("dbserver1.") for t in topics)
    assert not any(t.endswith(".transaction") for t in topics)  # the transaction topic is no table
    assert _sections(text) == [TableRef(t).name for t in topics]
    assert "dbz" not in text  # the connector's password never reaches the file


def test_from_the_database_with_each_table_s_primary_key(tmp_path: Path) -> None:
    out = tmp_path / "shop.toml"
    args = ["init", "--jdbc-url", JDBC_URL, "--jdbc-user", "debezium", "--password-env", "INIT_TEST_PASSWORD",
            "--output", str(out)]  # fmt: skip
    done = CliRunner().invoke(main, args, env={"INIT_TEST_PASSWORD": "dbz"})
    assert done.exit_code == 0, done.output
    text = out.read_text()
    with connect() as conn:
        tables = {f"{s}.{t}" for s, t in conn.execute(
            "select table_schema, table_name from information_schema.tables where table_type = 'BASE TABLE' "
            "and table_schema not in ('pg_catalog', 'information_schema') and table_schema not like 'pg\\_%'"
        ).fetchall()}  # fmt: skip
    assert set(_sections(text)) == tables
    assert re.search(r'^# \[tables\."inventory\.customers"\].*\n# record_key_fields = \["id"\]', text, re.MULTILINE)
    spec = load_pipeline(out)
    assert set(spec.source.tables) == tables
    config = spec.table_config(TableRef("inventory.customers", ("id",)))
    assert config.jdbc_password_env == "INIT_TEST_PASSWORD" and config.jdbc_mode == "full"
    assert "dbz" not in text
