"""A real Postgres TRUNCATE, published by Debezium (``skipped.operations=none`` on the stack's connector),
under each ``--truncate-behavior``: the table is read back and compared with Postgres."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from hudi_cdc.sink.hudi import HudiTable
from hudi_cdc.testing.kafka import end_offsets
from hudi_cdc.testing.postgres import compare_table, connect, wait_for_stream
from tests.stack.conftest import BOOTSTRAP, REGISTRY
from tests.support import read_rows, run_cli

pytestmark = [pytest.mark.kafka, pytest.mark.postgres, pytest.mark.hudi]


def _ingest(topic: str, base: str, policy: str) -> object:
    return run_cli(
        "--source", "kafka", "--topic", topic, "--bootstrap-servers", BOOTSTRAP, "--schema-registry-url", REGISTRY,
        "--target-base-path", base, "--target-table", Path(base).name, "--table-type", "mor",
        "--truncate-behavior", policy,
    )  # fmt: skip


@pytest.mark.parametrize("policy", ["apply", "ignore", "fail"])
def test_a_postgres_truncate_under_each_policy(spark, tmp_path: Path, policy: str) -> None:  # noqa: ANN001
    name = f"tr_{policy}_{uuid.uuid4().hex[:6]}"
    topic, base = f"dbserver1.inventory.{name}", str(tmp_path / name)
    with connect() as conn:
        conn.execute(f"create table inventory.{name} (id int primary key, label text)")
        conn.execute(f"insert into inventory.{name} select i, 'a' || i from generate_series(1, 30) i")  # noqa: S608
        wait_for_stream(conn, BOOTSTRAP, [topic], since={})
        assert _ingest(topic, base, policy).exit_code == 0
        before = read_rows(spark, base, ["id", "label"])
        assert len(before) == 30

        since = end_offsets(BOOTSTRAP, [topic])
        conn.execute(f"update inventory.{name} set label = 'b' || id where id <= 10")  # noqa: S608
        conn.execute(f"truncate inventory.{name}")
        conn.execute(f"insert into inventory.{name} select i, 'c' || i from generate_series(25, 40) i")  # noqa: S608
        wait_for_stream(conn, BOOTSTRAP, [topic], since=since)
        commits = HudiTable(spark, base).commits()
        done = _ingest(topic, base, policy)
        if policy == "apply":
            assert done.exit_code == 0, done.output
            comparison = compare_table(spark, base, conn, name)
            assert comparison.equal and comparison.source_count == 16, comparison.describe()
        elif policy == "ignore":
            assert done.exit_code == 0, done.output
            kept = {i: f"b{i}" if i <= 10 else f"a{i}" for i in range(1, 25)}
            assert read_rows(spark, base, ["id", "label"]) == sorted(
                {**kept, **{i: f"c{i}" for i in range(25, 41)}}.items()
            )
        else:
            assert done.exit_code == 1 and "truncate_behavior" in done.output, done.output
            assert HudiTable(spark, base).commits() == commits and read_rows(spark, base, ["id", "label"]) == before
        conn.execute(f"drop table inventory.{name}")
