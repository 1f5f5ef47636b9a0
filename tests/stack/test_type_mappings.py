"""Type mappings through the real stack: MariaDB and Postgres -> Debezium -> Kafka (Avro) -> hudi-cdc -> Hudi.

MariaDB runs a connector of this test's own with ``column.propagate.source.type`` (so ``tinyint(1)`` and
``bigint unsigned`` are named in the schema; the stack's connector does not set it), with the default
``bigint.unsigned.handling.mode=long``: a value >= 2^63 arrives as a negative long and the mapping must
restore it. Postgres uses the stack's connector: NUMERIC without precision, ``timestamp`` and ``jsonb``
are known from Debezium's logical types. Each table is read back, and ``verify`` compares it with the
database (saying which columns it cannot compare).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner

from hudi_cdc.cli import main
from hudi_cdc.testing.kafka import end_offsets
from hudi_cdc.testing.mariadb import STACK_URL
from hudi_cdc.testing.mariadb import connect as mariadb
from hudi_cdc.testing.postgres import connect as postgres
from hudi_cdc.testing.postgres import wait_for_stream
from hudi_cdc.upstream.compare import verify
from hudi_cdc.upstream.database import SourceDatabase
from tests.stack.conftest import BOOTSTRAP, REGISTRY
from tests.stack.connectors import _call
from tests.support import run_cli

pytestmark = [pytest.mark.kafka, pytest.mark.postgres, pytest.mark.hudi]

MARIADB_PROPERTIES = Path(__file__).resolve().parents[2] / "stack" / "conf" / "inventory-mariadb-connector.properties"
MARIADB = SourceDatabase(STACK_URL.replace("debezium@", "debezium:dbz@"))
PG = SourceDatabase("postgresql://debezium:dbz@127.0.0.1:55432/inventory")


@contextmanager
def mariadb_connector(table: str, prefix: str) -> Iterator[str]:
    """A MariaDB connector for one table, propagating source types, until the block ends; yields its topic."""
    settings = {}
    for line in MARIADB_PROPERTIES.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#") and "=" in line:
            key, _, value = line.partition("=")
            settings[key.strip()] = value.strip()
    settings.pop("database.include.list", None)
    settings.update(
        {
            "name": prefix,
            "database.server.id": str(185000 + int(uuid.uuid4().int % 800)),
            "topic.prefix": prefix,
            "table.include.list": f"inventory.{table}",
            "schema.history.internal.kafka.topic": f"schema-history.{prefix}",
            "column.propagate.source.type": ".*",
            "provide.transaction.metadata": "false",
        }
    )
    _call("PUT", f"/connectors/{prefix}/config", settings)
    try:
        yield f"{prefix}.inventory.{table}"
    finally:
        _call("DELETE", f"/connectors/{prefix}")


def _published(topic: str, messages: int, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if sum(end_offsets(BOOTSTRAP, [topic]).values()) >= messages:
                return
        except Exception:  # noqa: BLE001, S110 - the topic is not there yet
            pass
        time.sleep(0.5)
    raise AssertionError(f"{topic}: fewer than {messages} messages after {timeout_s}s")


def _ingest(topic: str, base: str, *extra: str, table_type: str = "cow", flavor: str = "postgres") -> object:
    return run_cli(
        "--source", "kafka", "--topic", topic, "--bootstrap-servers", BOOTSTRAP, "--schema-registry-url", REGISTRY,
        "--target-base-path", base, "--target-table", Path(base).name, "--table-type", table_type,
        "--flavor", flavor, "--json", *extra,
    )  # fmt: skip


def _rows(spark, base: str) -> dict:  # noqa: ANN001
    return {r["id"]: r for r in spark.read.format("hudi").load(base).collect()}


def test_mariadb_tinyint1_bigint_unsigned_datetime_and_json(spark, tmp_path: Path) -> None:  # noqa: ANN001
    name = f"tm_{uuid.uuid4().hex[:6]}"
    base = str(tmp_path / name)
    conn = mariadb()
    with conn.cursor() as cur:
        cur.execute(
            f"create table {name} (id int primary key, flag tinyint(1), lvl tinyint(4), big bigint unsigned, "
            "doc json, at datetime(6))"
        )
        cur.execute(
            f'insert into {name} values (1, 1, 7, 18446744073709551615, \'{{"a": 1, "b": "x"}}\', '  # noqa: S608
            "'2024-01-15 12:00:00.5'), (2, 0, -3, 9223372036854775808, '{\"a\": 2}', '1999-12-31 23:59:59'), "
            "(3, null, null, 5, null, null)"
        )
    try:
        with mariadb_connector(name, f"tm{uuid.uuid4().hex[:6]}") as topic:
            _published(topic, 3)
            done = _ingest(
                topic, base,
                "--type-mappings", "tinyint(1)=boolean", "--type-mappings", "bigint unsigned=decimal(20,0)",
                "--type-mappings", "datetime=text", "--column-types", "doc=json:struct<a:int,b:string>",
                flavor="mysql",
            )  # fmt: skip
            assert done.exit_code == 0, done.output
            types = {f.name: f.dataType.simpleString() for f in spark.read.format("hudi").load(base).schema.fields}
            assert (types["flag"], types["lvl"], types["big"], types["at"], types["doc"]) == (
                "boolean",
                "int",  # tinyint(4): not tinyint(1), not mapped
                "decimal(20,0)",
                "string",
                "struct<a:int,b:string>",
            )
            rows = _rows(spark, base)
            assert (rows[1]["flag"], rows[2]["flag"], rows[3]["flag"]) == (True, False, None)
            assert (rows[1]["big"], rows[2]["big"], rows[3]["big"]) == (Decimal(2**64 - 1), Decimal(2**63), Decimal(5))
            assert (rows[1]["at"], rows[2]["at"]) == ("2024-01-15 12:00:00.500000", "1999-12-31 23:59:59.000000")
            assert (rows[1]["doc"]["a"], rows[1]["doc"]["b"], rows[2]["doc"]["a"], rows[3]["doc"]) == (1, "x", 2, None)

            result = verify(spark, base, MARIADB, f"inventory.{name}")
            assert result.equal, result
            assert set(result.compared_columns) >= {"id", "flag", "lvl", "big", "at"}
            assert list(result.skipped_columns) == ["doc"]  # parsed JSON: said, not guessed
    finally:
        with conn.cursor() as cur:
            cur.execute(f"drop table if exists {name}")
        conn.close()


def test_postgres_numeric_refused_not_rounded_timestamp_zone_json_then_reapplied(spark, tmp_path: Path) -> None:  # noqa: ANN001
    name = f"tm_{uuid.uuid4().hex[:6]}"
    topic, base = f"dbserver1.inventory.{name}", str(tmp_path / name)
    mapping = [
        "--type-mappings", "numeric=decimal(12,2)", "--type-mappings", "timestamp=timestamp:Europe/Paris",
        "--type-mappings", "json=json:struct<a:int>", "--on-bad-event", "quarantine",
    ]  # fmt: skip
    with postgres() as conn:
        conn.execute(f"create table inventory.{name} (id int primary key, amount numeric, at timestamp, doc jsonb)")
        conn.execute(
            f"insert into inventory.{name} values "  # noqa: S608
            "(1, 1234567890.12, '2024-07-01 12:00:00', '{\"a\": 1}'), "
            "(2, 12345678901.5, '2024-01-15 12:00:00', '{\"a\": 2}'), "  # 11 integral digits: does not fit
            "(3, 1.234, null, null), "  # 3 decimals: would round
            '(4, 7, null, \'{"a": "zz"}\')'  # not the schema's type
        )
        try:
            wait_for_stream(conn, BOOTSTRAP, [topic], since={})
            done = _ingest(topic, base, *mapping, table_type="mor")
            assert done.exit_code == 0, done.output
            assert json.loads(done.output.strip().splitlines()[-1])["quarantined"] == 3
            rows = _rows(spark, base)
            assert sorted(rows) == [1]
            assert rows[1]["amount"] == Decimal("1234567890.12") and rows[1]["doc"]["a"] == 1
            assert rows[1]["at"] == datetime(2024, 7, 1, 10, 0)  # noon in Paris (summer), the UTC instant
            listed = _command("list", topic, base, mapping)
            reasons = listed["by_reason"]
            assert sum(n for r, n in reasons.items() if "column 'amount': a value does not fit decimal(12,2)" in r) == 2
            assert sum(n for r, n in reasons.items() if "column 'doc'" in r) == 1

            # The fix: amount takes two more integral digits (a widening); 1.234 still does not fit.
            fixed = [*mapping, "--column-types", "amount=decimal(14,2)"]
            result = _command("reapply", topic, base, fixed)
            assert (result["reapplied"], result["still_quarantined"]) == (1, 2), result
            rows = _rows(spark, base)
            assert sorted(rows) == [1, 2] and rows[2]["amount"] == Decimal("12345678901.50")
            assert rows[2]["at"] == datetime(2024, 1, 15, 11, 0)  # winter: UTC+1

            checked = verify(spark, base, PG, f"inventory.{name}", columns=["amount"], where="id <= 2")
            assert checked.equal, checked
        finally:
            conn.execute(f"drop table inventory.{name}")


def _command(command: str, topic: str, base: str, extra: list[str]) -> dict:
    """``hudi-cdc quarantine <command> --json`` with the table's settings; its JSON result."""
    args = [
        "--source", "kafka", "--topic", topic, "--bootstrap-servers", BOOTSTRAP, "--schema-registry-url", REGISTRY,
        "--target-base-path", base, "--target-table", Path(base).name, "--table-type", "mor", "--json", *extra,
    ]  # fmt: skip
    result = CliRunner().invoke(main, ["quarantine", command, *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output.strip().splitlines()[-1])
