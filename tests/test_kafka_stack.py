"""Postgres -> Debezium -> Kafka (+ Apicurio) -> hudi-cdc -> Hudi, against the local stack (`make stack-up`).

Skipped when the stack is not running. Asserts that each Hudi table equals the
Postgres table row for row after a workload, and again after more changes.
"""

from __future__ import annotations

import os
import random
import socket
import subprocess
import time
import uuid
from decimal import Decimal
from pathlib import Path

import pytest

from tests.support import run_cli

pytestmark = [pytest.mark.kafka, pytest.mark.postgres, pytest.mark.hudi]

PG = {"host": "127.0.0.1", "port": "55432", "user": "debezium", "db": "inventory"}
TOPIC = "dbserver1.inventory.customers"


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex(("127.0.0.1", port)) == 0


if not all(_listening(p) for p in (55432, 59092, 58080, 58083)):
    pytest.skip("the local CDC stack is not running (make stack-up)", allow_module_level=True)


def _psql(sql: str) -> str:
    env = {**os.environ, "PGPASSWORD": "dbz"}
    cmd = [
        "psql",
        "-h",
        PG["host"],
        "-p",
        PG["port"],
        "-U",
        PG["user"],
        "-d",
        PG["db"],
        "-v",
        "ON_ERROR_STOP=1",
        "-At",
        "-c",
        sql,
    ]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    assert done.returncode == 0, f"psql failed: {done.stderr.strip()}"
    return done.stdout


def _source_rows() -> list[tuple]:
    out = _psql("select id, first_name, last_name, email, balance from inventory.customers order by id")
    rows = []
    for line in out.splitlines():
        i, first, last, email, balance = line.split("|")
        rows.append((int(i), first, last, email, Decimal(balance) if balance else None))
    return rows


def _workload(rng: random.Random, tag: str, n: int) -> None:
    statements = []
    for i in range(n):
        choice = rng.random()
        if choice < 0.5:
            statements.append(
                f"insert into inventory.customers (first_name, last_name, email, balance) "
                f"values ('f{tag}{i}', 'l{i}', 'e{tag}{i}@x', {rng.randint(0, 99999) / 100})"
            )
        elif choice < 0.85:
            statements.append(
                f"update inventory.customers set balance = {rng.randint(0, 99999) / 100}, last_name = 'u{tag}{i}' "
                "where id = (select id from inventory.customers order by random() limit 1)"
            )
        else:
            statements.append(
                "delete from inventory.customers where id = (select id from inventory.customers order by random() limit 1)"
            )
    _psql("begin; " + "; ".join(statements) + "; commit;")


def _table_rows(spark, base: str) -> list[tuple]:  # noqa: ANN001
    frame = spark.read.format("hudi").load(base).select("id", "first_name", "last_name", "email", "balance")
    return sorted(tuple(r) for r in frame.collect())


def _ingest_until_equal(spark, base: str, args: list[str], timeout_s: float = 90) -> list[tuple]:  # noqa: ANN001
    deadline = time.monotonic() + timeout_s
    while True:
        result = run_cli(*args)
        assert result.exit_code == 0, result.output
        expected, actual = _source_rows(), _table_rows(spark, base)
        if actual == expected or time.monotonic() > deadline:
            return actual
        time.sleep(2)  # Debezium may still be publishing the last transaction


@pytest.mark.parametrize("table_type", ["cow", "mor"])
def test_postgres_to_hudi_equals_source(spark, tmp_path: Path, table_type: str) -> None:
    rng = random.Random(table_type)
    run = uuid.uuid4().hex[:8]  # the stack's database outlives test runs: keep emails unique
    base = str(tmp_path / "customers")
    args = [
        "--source",
        "kafka",
        "--topic",
        TOPIC,
        "--bootstrap-servers",
        "127.0.0.1:59092",
        "--schema-registry-url",
        "http://127.0.0.1:58080/apis/ccompat/v7",
        "--target-base-path",
        base,
        "--target-table",
        "customers",
        "--table-type",
        table_type,
    ]
    _workload(rng, f"{run}{table_type}a", 30)
    assert _ingest_until_equal(spark, base, args) == _source_rows()
    _workload(rng, f"{run}{table_type}b", 30)
    assert _ingest_until_equal(spark, base, args) == _source_rows()
