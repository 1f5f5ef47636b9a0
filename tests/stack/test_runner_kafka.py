"""``hudi-cdc run`` over the real stack: a topic pattern, a table created while the pipeline runs, then compared.

Postgres tables of this test's own (``inventory.rt_<run>_*``, so no other
test's tables match the pattern) are published by Debezium; one process
replicates them all, picks up a table created mid-run at the next discovery,
and every Hudi table must equal its Postgres table.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from hudi_cdc.cli import main
from hudi_cdc.service import load_pipeline, run_pipeline
from hudi_cdc.sources.kafka import end_offsets
from hudi_cdc.testing.kafka import wait_until_quiet
from hudi_cdc.testing.postgres import compare_table, connect
from tests.stack.conftest import BOOTSTRAP, REGISTRY

pytestmark = [pytest.mark.kafka, pytest.mark.postgres, pytest.mark.hudi]

RUN = f"rt_{uuid.uuid4().hex[:6]}"


def _create(conn, name: str, rows: int) -> None:  # noqa: ANN001
    conn.execute(f"create table inventory.{name} (id int primary key, label text, amount numeric(10,2))")
    conn.execute(
        f"insert into inventory.{name} select i, 'l' || i, i * 1.5 from generate_series(1, {rows}) i"  # noqa: S608
    )


def _change(conn, name: str, step: int) -> None:  # noqa: ANN001
    conn.execute(f"update inventory.{name} set label = label || '.{step}' where id % 3 = {step % 3}")  # noqa: S608
    conn.execute(f"delete from inventory.{name} where id % 7 = {step % 7}")  # noqa: S608
    conn.execute(f"insert into inventory.{name} values ({1000 + step}, 'new', {step})")  # noqa: S608


def _wait_for_topics(topics: list[str], timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if len({t for t, _ in end_offsets(BOOTSTRAP, topics)}) == len(topics):
            return
        time.sleep(1)
    raise TimeoutError(f"Debezium did not publish {topics} within {timeout_s:.0f}s")


def test_a_pattern_of_topics_and_a_table_created_mid_run(spark, tmp_path: Path) -> None:  # noqa: ANN001
    names = [f"{RUN}_a", f"{RUN}_b"]
    with connect() as conn:
        for n, name in enumerate(names):
            _create(conn, name, 200 + 50 * n)
    _wait_for_topics([f"dbserver1.inventory.{n}" for n in names])
    path = tmp_path / "inventory.toml"
    path.write_text(
        f"""
[source]
kind = "kafka"
bootstrap_servers = "{BOOTSTRAP}"
schema_registry_url = "{REGISTRY}"
tables = "dbserver1.inventory.{RUN}_*"

[defaults]
target_base_path = "{tmp_path}/lake/{{table}}"
target_table = "{{table}}"
table_type = "mor"
min_sync_interval_seconds = 4

[tables."inventory.{RUN}_b"]
table_type = "cow"

[run]
max_concurrent_tables = 2
discovery_interval_seconds = 2
"""
    )
    created = []

    def on_round(table, result) -> None:  # noqa: ANN001
        assert result is not None, table.last_error
        with connect() as conn:
            _change(conn, table.name.split(".")[1], table.rounds)
            if not created:
                created.append(f"{RUN}_c")
                _create(conn, created[0], 120)

    report = run_pipeline(path, spark=spark, continuous=True, max_rounds=6, on_round=on_round)
    assert report.failed == [] and set(report.tables) == {f"inventory.{n}" for n in [*names, *created]}
    # Let the last changes reach the topics, then one more round of every table catches them up.
    topics = [f"dbserver1.inventory.{n}" for n in [*names, *created]]
    wait_until_quiet(BOOTSTRAP, topics, since=None, quiet_s=3)
    done = CliRunner().invoke(main, ["run", "--pipeline", str(path), "--json"], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    with connect() as conn:
        for name in [*names, *created]:
            comparison = compare_table(spark, str(tmp_path / "lake" / name), conn, name)
            assert comparison.equal and comparison.source_count > 0, comparison.describe()
    status = CliRunner().invoke(main, ["status", "--pipeline", str(path), "--json"], catch_exceptions=False)
    assert status.exit_code == 0, status.output
    tables = {t["name"]: t for t in json.loads(status.output.strip().splitlines()[-1])["tables"]}
    assert {n: (t["behind"], t["lag_s"]) for n, t in tables.items()} == {
        f"inventory.{n}": (0, 0.0) for n in [*names, *created]
    }
    assert all(t["recent"]["events"] > 0 for t in tables.values())
    with connect() as conn:
        for name in [*names, *created]:
            conn.execute(f"drop table inventory.{name}")
    assert load_pipeline(path).run.state_dir == str(tmp_path / "inventory.state")
