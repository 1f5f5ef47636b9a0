"""Postgres -> Debezium -> Kafka (Apicurio, Avro) -> hudi-cdc -> Hudi, on the stack's sample database.

A random workload (inserts, updates, primary-key updates, large TOASTed values
left unchanged, deletes, multi-row transactions over three tables) runs in
Postgres; each table is ingested into a fresh COW or MOR Hudi table, which must
then equal the Postgres table row for row, value for value and type for type.
The workload continues and the comparison is made again on the same tables.
"""

from __future__ import annotations

import random
import uuid
from pathlib import Path

import pytest

from hudi_cdc.testing.kafka import end_offsets
from hudi_cdc.testing.postgres import SAMPLE_KEYS, compare_table, connect, run_workload, wait_for_stream
from tests.stack.conftest import BOOTSTRAP, REGISTRY
from tests.support import run_cli

pytestmark = [pytest.mark.kafka, pytest.mark.postgres, pytest.mark.hudi]

TOPICS = {table: f"dbserver1.inventory.{table}" for table in SAMPLE_KEYS}


def _round(spark, conn, tmp_path: Path, table_type: str, rng: random.Random, tag: str) -> None:  # noqa: ANN001
    before = end_offsets(BOOTSTRAP, list(TOPICS.values()))
    changes = run_workload(conn, rng, transactions=40, tag=tag)
    assert changes > 40
    wait_for_stream(conn, BOOTSTRAP, list(TOPICS.values()), since=before)
    for table, topic in TOPICS.items():
        base = str(tmp_path / f"{table}_{table_type}")
        result = run_cli(
            "--source", "kafka", "--topic", topic, "--bootstrap-servers", BOOTSTRAP,
            "--schema-registry-url", REGISTRY, "--target-base-path", base,
            "--target-table", f"{table}_{table_type}", "--table-type", table_type,
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        comparison = compare_table(spark, base, conn, table)
        assert comparison.equal, comparison.describe()
        assert comparison.source_count > 0


@pytest.mark.parametrize("table_type", ["cow", "mor"])
def test_sample_database_replicates_exactly(spark, tmp_path: Path, table_type: str) -> None:
    rng = random.Random(f"replication-{table_type}")
    run = uuid.uuid4().hex[:8]  # the stack's database outlives test runs: keep emails unique
    with connect() as conn:
        _round(spark, conn, tmp_path, table_type, rng, f"{run}a")
        _round(spark, conn, tmp_path, table_type, rng, f"{run}b")
