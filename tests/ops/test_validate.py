"""``hudi-cdc validate`` against the real stack: a healthy table passes, and each broken input is named.

Throwaway database tables live in a schema of their own (``validate_tmp``),
outside the connector's ``inventory`` schema and its publication; throwaway
topics and a paused connector are made here and removed after.
"""

from __future__ import annotations

import json
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from hudi_cdc.cli import main
from hudi_cdc.config import IngestConfig, load_config
from hudi_cdc.ops.validate import validate
from hudi_cdc.testing.kafka import create_topic, produce
from hudi_cdc.testing.postgres import connect
from hudi_cdc.upstream.database import SourceDatabase
from tests.checks.support import status
from tests.stack.conftest import BOOTSTRAP, REGISTRY

pytestmark = [pytest.mark.stack, pytest.mark.kafka, pytest.mark.postgres]

CONNECT = "http://127.0.0.1:58083"
CONNECTOR = "inventory-connector"
TOPIC = "dbserver1.inventory.customers"
PASSWORD_ENV = "HUDI_CDC_TEST_PGPASSWORD"
SCRATCH_SCHEMA = "validate_tmp"

FULL_CHECKS = [
    "env.java",
    "env.jars",
    "target.writable",
    "target.table_config",
    "target.checkpoint",
    "kafka.topic",
    "kafka.retention",
    "registry.subjects",
    "registry.key_schema",
    "registry.value_schema",
    "connect.connector",
    "connect.converter",
    "shape.transforms",
    "types.mappings",
    "connect.decimal_handling",
    "connect.time_precision",
    "connect.tombstones",
    "postgres.wal_level",
    "postgres.slot",
    "postgres.publication",
    "postgres.replica_identity",
    "postgres.primary_key",
]


def kafka_config(base: Path | str, *, topic: str = TOPIC, **more: Any) -> IngestConfig:
    return load_config(
        source="kafka",
        topic=topic,
        bootstrap_servers=BOOTSTRAP,
        schema_registry_url=REGISTRY,
        target_base_path=str(base),
        target_table="customers",
        env={},
        **more,
    )


@pytest.fixture
def database(monkeypatch: pytest.MonkeyPatch) -> SourceDatabase:
    monkeypatch.setenv(PASSWORD_ENV, "dbz")
    return SourceDatabase("postgresql://debezium@127.0.0.1:55432/inventory", password_env=PASSWORD_ENV)


@pytest.fixture
def connector_running() -> None:
    """The stack's connector RUNNING (another test may have failed its task on purpose)."""
    from hudi_cdc.upstream.connect import connector_states, restart_failed

    deadline = time.monotonic() + 90
    restarted = False
    while time.monotonic() < deadline:
        (state,) = connector_states(CONNECT, [CONNECTOR])
        if state.running:
            return
        if not restarted and any(t.state == "FAILED" for t in state.tasks) or state.state == "FAILED":
            restart_failed(CONNECT, CONNECTOR)
            restarted = True
        time.sleep(2)
    pytest.fail(f"{CONNECTOR} did not get back to RUNNING")


@pytest.fixture
def scratch_table() -> Iterator[Any]:
    """Make tables in ``validate_tmp`` (outside the publication); dropped after the test."""
    conn = connect()
    made: list[str] = []

    def make(ddl_columns: str) -> str:
        name = f"t{uuid.uuid4().hex[:10]}"
        conn.execute(f"CREATE SCHEMA IF NOT EXISTS {SCRATCH_SCHEMA}")
        conn.execute(f"CREATE TABLE {SCRATCH_SCHEMA}.{name} ({ddl_columns})")
        made.append(name)
        return f"{SCRATCH_SCHEMA}.{name}"

    try:
        yield make
    finally:
        for name in made:
            conn.execute(f"DROP TABLE IF EXISTS {SCRATCH_SCHEMA}.{name}")
        try:
            conn.execute(f"DROP SCHEMA IF EXISTS {SCRATCH_SCHEMA}")  # not CASCADE: another run's tables stay
        except Exception:
            pass
        conn.close()


def test_healthy_stack_table_passes_every_check(spark, tmp_path: Path, database, connector_running) -> None:
    report = validate(kafka_config(tmp_path / "t"), spark=spark, database=database, connect_url=CONNECT)
    assert [c.name for c in report.checks] == FULL_CHECKS
    assert report.ok, "\n".join(report.lines())
    assert {c.status for c in report.checks if c.name not in ("shape.transforms", "types.mappings")} <= {
        "ok",
        "warn",
    }, "\n".join(report.lines())
    assert status(report, "shape.transforms")[0] == status(report, "types.mappings")[0] == "skip"  # none set
    # The connector is found by the topic's prefix, and its slot and publication are the ones checked.
    assert f"{CONNECTOR} (PostgresConnector) RUNNING" in status(report, "connect.connector")[1]
    slot_status, slot_detail = status(report, "postgres.slot")
    assert slot_status == "ok" and "slot debezium_inventory (pgoutput) active" in slot_detail
    assert status(report, "postgres.publication") == ("ok", "publication dbz_publication covers inventory.customers")
    assert "FULL" in status(report, "postgres.replica_identity")[1]
    assert status(report, "postgres.primary_key") == ("ok", "inventory.customers: primary key (id)")
    assert "has data" in status(report, "kafka.topic")[1]
    assert status(report, "registry.key_schema")[1].endswith("fields id, the record key")
    assert json.loads(json.dumps(report.to_dict()))["ok"] is True


def test_a_table_without_primary_key_outside_the_publication(database, scratch_table, tmp_path: Path) -> None:
    table = scratch_table("id int, name text")
    report = validate(kafka_config(tmp_path / "t"), database=database, source_table=table)
    assert not report.ok
    pk_status, pk_detail = status(report, "postgres.primary_key")
    assert pk_status == "fail" and f"{table} has no primary key" in pk_detail
    pub_status, pub_detail = status(report, "postgres.publication")
    assert pub_status == "fail" and f"no publication covers {table}" in pub_detail
    assert f"ADD TABLE {table}" in (report.check("postgres.publication").fix or "")


def test_a_table_not_in_the_connectors_publication(database, scratch_table, tmp_path: Path, connector_running) -> None:
    table = scratch_table("id int PRIMARY KEY")
    report = validate(kafka_config(tmp_path / "t"), database=database, connect_url=CONNECT, source_table=table)
    pub_status, pub_detail = status(report, "postgres.publication")
    assert pub_status == "fail"
    assert f"publication 'dbz_publication' (the connector's publication.name) does not cover {table}" in pub_detail
    assert status(report, "postgres.primary_key")[0] == "ok"
    assert "DEFAULT" in status(report, "postgres.replica_identity")[1]


def test_a_checkpoint_older_than_the_retained_offsets(tmp_path: Path) -> None:
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    topic = f"it.v{uuid.uuid4().hex[:10]}.customers"
    create_topic(BOOTSTRAP, topic)
    admin = AdminClient({"bootstrap.servers": BOOTSTRAP})
    try:
        produce(BOOTSTRAP, topic, ((b"k", b"v", 0) for _ in range(5)))
        for future in admin.delete_records([TopicPartition(topic, 0, 3)]).values():
            future.result(30)  # the log now starts at offset 3
        stale = f"{topic},0:1"  # HoodieStreamer's form: partition 0 at offset 1

        report = validate(kafka_config(tmp_path / "t", topic=topic, checkpoint=stale))
        retention = report.check("kafka.retention")
        assert retention.status == "fail", retention
        assert f"{topic}-0: checkpoint offset 1, earliest retained 3" in retention.detail
        assert "Changes were lost" in retention.detail and "re-snapshot" in (retention.fix or "")
        assert "topic" in status(report, "kafka.topic")[1] and "0:3..5" in status(report, "kafka.topic")[1]

        accepted = validate(kafka_config(tmp_path / "t", topic=topic, checkpoint=stale, allow_data_loss=True))
        assert accepted.check("kafka.retention").status == "warn"

        current = validate(kafka_config(tmp_path / "t", topic=topic, checkpoint=f"{topic},0:4"))
        assert current.check("kafka.retention").status == "ok"
        assert "1 message(s) behind" in current.check("kafka.retention").detail
    finally:
        admin.delete_topics([topic])[topic].result(30)


def test_a_topic_that_does_not_exist(tmp_path: Path) -> None:
    topic = f"it.v{uuid.uuid4().hex[:10]}.missing"
    report = validate(kafka_config(tmp_path / "t", topic=topic))
    assert status(report, "kafka.topic")[0] == "fail"
    assert f"topic {topic!r} does not exist on {BOOTSTRAP}" in status(report, "kafka.topic")[1]
    # Checks that need the topic's offsets point at the one that failed instead of repeating it.
    assert status(report, "kafka.retention") == ("skip", "not checked: kafka.topic failed")


def test_a_paused_connector_is_named_as_the_cause_of_lag(tmp_path: Path) -> None:
    name = f"validate-paused-{uuid.uuid4().hex[:8]}"
    config = _connector_config()
    config.update({"topic.prefix": f"vp{uuid.uuid4().hex[:8]}", "slot.name": f"vp_{uuid.uuid4().hex[:8]}"})
    _connect("POST", "/connectors", {"name": name, "config": config, "initial_state": "PAUSED"})
    try:
        report = validate(kafka_config(tmp_path / "t"), connect_url=CONNECT, connector=name)
        check = report.check("connect.connector")
        assert check.status == "fail", check
        assert f"{name}: connector PAUSED" in check.detail and "customers lags" in check.detail
        assert "resume" in (check.fix or "")
    finally:
        _connect("DELETE", f"/connectors/{name}", None)


def _connector_config() -> dict[str, str]:
    # The stack's connector config as the file has it (the REST API hides the password).
    path = Path(__file__).resolve().parents[2] / "stack" / "conf" / "inventory-connector.properties"
    from hudi_cdc.config import parse_props

    props = parse_props(path.read_text(), origin=str(path))
    props.pop("name", None)
    return props


def _connect(method: str, path: str, body: dict[str, Any] | None) -> Any:
    request = urllib.request.Request(
        CONNECT + path,
        data=json.dumps(body).encode() if body is not None else None,
        headers={"Content-Type": "application/json"},
        method=method,
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        text = response.read()
    return json.loads(text) if text else None


def test_cli_exit_codes_and_json(spark, tmp_path: Path) -> None:
    topic = f"it.v{uuid.uuid4().hex[:10]}.missing"
    args = [
        "validate", "--source", "kafka", "--topic", topic, "--bootstrap-servers", BOOTSTRAP,
        "--schema-registry-url", REGISTRY, "--target-base-path", str(tmp_path / "t"), "--target-table", "t",
    ]  # fmt: skip
    text = CliRunner().invoke(main, args, catch_exceptions=False)
    assert text.exit_code == 1, text.output
    assert f"FAIL  kafka.topic: topic {topic!r} does not exist" in text.output
    assert (
        "ok    target.writable:" in text.output and "skip  postgres.wal_level: no source database given" in text.output
    )

    result = CliRunner().invoke(main, [*args, "--json"], catch_exceptions=False)
    assert result.exit_code == 1
    report = json.loads(result.output)
    assert report["ok"] is False and report["counts"]["fail"] >= 1
    by_name = {c["name"]: c for c in report["checks"]}
    assert by_name["kafka.topic"]["status"] == "fail" and by_name["target.writable"]["status"] == "ok"

    unusable = CliRunner().invoke(main, ["validate", "--source", "kafka", "--topic", topic], catch_exceptions=False)
    assert unusable.exit_code == 2 and "cannot validate" in unusable.output
