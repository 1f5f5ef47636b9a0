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
from hudi_cdc.testing.postgres import compare_table, connect, wait_for_stream
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
source = "kafka"
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
    with connect() as conn:
        wait_for_stream(conn, BOOTSTRAP, topics)
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


# A schema-change event as the MySQL/SQL Server connectors write it (Postgres's connector writes none, so the
# stack's events are made here), in the Confluent Avro wire format like the rest of the stack's topics.
SCHEMA_CHANGE_VALUE = {
    "type": "record",
    "name": "SchemaChangeValue",
    "namespace": "io.debezium.connector.mysql",
    "fields": [
        {"name": "ts_ms", "type": "long"},
        {"name": "databaseName", "type": ["null", "string"], "default": None},
        {"name": "schemaName", "type": ["null", "string"], "default": None},
        {"name": "ddl", "type": ["null", "string"], "default": None},
        {
            "name": "tableChanges",
            "type": {
                "type": "array",
                "items": {
                    "type": "record",
                    "name": "Change",
                    "fields": [{"name": "type", "type": "string"}, {"name": "id", "type": "string"}],
                },
            },
        },
    ],
}


def test_a_table_dropped_on_the_schema_change_topic_is_applied_then_stopped(spark, tmp_path: Path) -> None:  # noqa: ANN001
    from hudi_cdc.testing.kafka import Framer, create_topic, produce, register_schema

    names = [f"{RUN}_keep", f"{RUN}_gone"]
    with connect() as conn:
        for name in names:
            _create(conn, name, 80)
    _wait_for_topics([f"dbserver1.inventory.{n}" for n in names])
    changes = f"schema_changes_{RUN}"
    create_topic(BOOTSTRAP, changes)
    framer = Framer(register_schema(REGISTRY, f"{changes}-value", SCHEMA_CHANGE_VALUE), SCHEMA_CHANGE_VALUE)

    def ddl(kind: str, name: str, statement: str) -> tuple[None, bytes, int]:
        event = {"ts_ms": int(time.time() * 1000), "databaseName": "inventory", "schemaName": None, "ddl": statement,
                 "tableChanges": [{"type": kind, "id": f'"inventory"."{name}"'}]}  # fmt: skip
        return (None, framer(event), 0)

    produce(
        BOOTSTRAP, changes, [ddl("ALTER", names[0], "ALTER TABLE ..."), ddl("DROP", names[1], f"DROP TABLE {names[1]}")]
    )
    path = tmp_path / "inventory.toml"
    path.write_text(
        f"""
[source]
source = "kafka"
bootstrap_servers = "{BOOTSTRAP}"
schema_registry_url = "{REGISTRY}"
tables = "dbserver1.inventory.{RUN}_*"
exclude = ["dbserver1.inventory.{RUN}_a", "dbserver1.inventory.{RUN}_b", "dbserver1.inventory.{RUN}_c"]
schema_change_topic = "{changes}"

[defaults]
target_base_path = "{tmp_path}/lake/{{table}}"
target_table = "{{table}}"
"""
    )
    done = CliRunner().invoke(main, ["run", "--pipeline", str(path), "--json"], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    report = json.loads(done.output.strip().splitlines()[-1])
    assert report["dropped"] == [f"inventory.{names[1]}"] and report["failed"] == []
    gone = report["tables"][f"inventory.{names[1]}"]
    assert gone["state"] == "dropped" and f"DROP TABLE {names[1]}" in gone["dropped_at_source"]
    assert report["tables"][f"inventory.{names[0]}"]["state"] == "done"
    with connect() as conn:  # both applied in full: what the dropped table published before its drop too
        for name in names:
            comparison = compare_table(spark, str(tmp_path / "lake" / name), conn, name)
            assert comparison.equal and comparison.source_count == 80, comparison.describe()
    status = CliRunner().invoke(main, ["status", "--pipeline", str(path)], catch_exceptions=False)
    assert status.exit_code == 0 and f"dropped at the source: DROP at {changes}-0@1" in status.output, status.output

    # Made again (a CREATE after the DROP): the next run replicates it again.
    produce(BOOTSTRAP, changes, [ddl("CREATE", names[1], f"CREATE TABLE {names[1]} ...")])
    with connect() as conn:
        conn.execute(f"insert into inventory.{names[1]} values (500, 'again', 1)")
        wait_for_stream(conn, BOOTSTRAP, [f"dbserver1.inventory.{names[1]}"])
    done = CliRunner().invoke(main, ["run", "--pipeline", str(path), "--json"], catch_exceptions=False)
    assert json.loads(done.output.strip().splitlines()[-1])["dropped"] == []
    with connect() as conn:
        assert compare_table(spark, str(tmp_path / "lake" / names[1]), conn, names[1]).equal
        for name in names:
            conn.execute(f"drop table inventory.{name}")
