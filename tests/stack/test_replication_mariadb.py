"""MariaDB -> Debezium's MariaDB connector -> Kafka (Apicurio, Avro) -> hudi-cdc -> Hudi, on the stack's sample database.

A random workload (inserts, updates, primary-key updates, deletes, multi-row
transactions over three tables) runs in MariaDB across a binlog rotation
(``FLUSH BINARY LOGS``); each table is ingested into fresh COW and MOR tables
with ``--flavor mysql``, which ``hudi-cdc verify`` must then find equal to
MariaDB, value for value. Both table types take every round of one workload:
its waits for the stream are paid once. A key changed late in one binlog file and early in
the next must end with the later value, whether both changes reach hudi-cdc
in one round or in two: the position alone (smaller in the new file) would
pick the wrong one.
"""

from __future__ import annotations

import itertools
import random
import uuid
from pathlib import Path
from typing import Any

import pytest

from hudi_cdc.ops.verify import verify
from hudi_cdc.testing.kafka import end_offsets
from hudi_cdc.testing.mariadb import SAMPLE_KEYS, STACK_URL, TOPIC_PREFIX, connect, run_workload, wait_for_stream
from hudi_cdc.upstream.database import SourceDatabase
from tests.stack.conftest import BOOTSTRAP, REGISTRY
from tests.support import run_cli

pytestmark = [pytest.mark.kafka, pytest.mark.hudi]

TOPICS = {table: TOPIC_PREFIX + table for table in SAMPLE_KEYS}
TABLE_TYPES = ("cow", "mor")
DATABASE = SourceDatabase(STACK_URL.replace("debezium@", "debezium:dbz@"))


def _changes(
    conn: Any, rng: random.Random, transactions: int, tag: str, tables: tuple[str, ...] = tuple(TOPICS)
) -> None:  # noqa: ANN401, E501
    before = end_offsets(BOOTSTRAP, list(TOPICS.values()))
    assert run_workload(conn, rng, transactions=transactions, tag=tag, tables=tables) > transactions
    wait_for_stream(conn, BOOTSTRAP, list(TOPICS.values()), since=before)


def _ingest(tmp_path: Path) -> None:
    for (table, topic), table_type in itertools.product(TOPICS.items(), TABLE_TYPES):
        result = run_cli(
            "--source", "kafka", "--topic", topic, "--bootstrap-servers", BOOTSTRAP,
            "--schema-registry-url", REGISTRY, "--flavor", "mysql",
            "--target-base-path", str(tmp_path / f"{table}_{table_type}"),
            "--target-table", f"{table}_{table_type}", "--table-type", table_type,
        )  # fmt: skip
        assert result.exit_code == 0, result.output


def _binlog(cur: Any) -> tuple[str, int]:  # noqa: ANN401
    cur.execute("show master status")
    file, pos = cur.fetchone()[:2]
    return file, int(pos)


def _across_a_rotation(conn: Any, rng: random.Random, tag: str, *, ingest_between: Any) -> tuple[int, str]:  # noqa: ANN401
    """A customer changed late in one binlog file, then early in the next; returns its id and final name."""
    with conn.cursor() as cur:
        cur.execute(
            "insert into customers (first_name, last_name, email) values ('rot', 'before', %s)", (f"{tag}@rot.example",)
        )
        customer = cur.lastrowid
    _changes(conn, rng, 60, f"{tag}x", ("orders", "documents"))  # push the position in this file far up
    with conn.cursor() as cur:
        cur.execute("update customers set last_name = 'late in the old file' where id = %s", (customer,))
        old_file, old_pos = _binlog(cur)
        cur.execute("flush binary logs")
    ingest_between()
    with conn.cursor() as cur:
        cur.execute("update customers set last_name = 'early in the new file' where id = %s", (customer,))
        new_file, new_pos = _binlog(cur)
    assert new_file > old_file and new_pos < old_pos, (old_file, old_pos, new_file, new_pos)
    return customer, "early in the new file"


def test_sample_database_replicates_across_binlog_rotations(spark, tmp_path: Path) -> None:
    rng = random.Random("mariadb")
    run = uuid.uuid4().hex[:8]  # the stack's database outlives test runs: keep emails unique
    with connect() as conn:
        _changes(conn, rng, 30, f"{run}a")
        _ingest(tmp_path)
        # Both changes of the key in one round, then (second rotation) in two rounds.
        # From here on the workload leaves customers alone, so that nothing else changes the rotated keys.
        one_round = _across_a_rotation(conn, rng, f"{run}b", ingest_between=lambda: None)
        _changes(conn, rng, 20, f"{run}c", ("orders", "documents"))
        _ingest(tmp_path)
        two_rounds = _across_a_rotation(conn, rng, f"{run}d", ingest_between=lambda: _ingest(tmp_path))
        _changes(conn, rng, 20, f"{run}e", ("orders", "documents"))
        _ingest(tmp_path)

    for table_type in TABLE_TYPES:
        customers = spark.read.format("hudi").load(str(tmp_path / f"customers_{table_type}"))
        for customer, name in (one_round, two_rounds):
            row = customers.where(f"id = {customer}").collect()
            assert [r["last_name"] for r in row] == [name], table_type
        streamed = customers.where("_source_op <> 'r'")
        assert streamed.select("_source_file").distinct().count() >= 3  # the rows came from three binlog files
        assert streamed.where("_source_txid is null").count() == 0  # MariaDB's GTID on every streamed row
        for table in TOPICS:
            result = verify(spark, str(tmp_path / f"{table}_{table_type}"), DATABASE, f"inventory.{table}")
            assert result.equal, f"{table_type}: {result.describe()}"
            assert result.source_rows > 0 and not result.skipped_columns
