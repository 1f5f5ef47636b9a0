"""Which checks run for a table's settings, in what order, and how an outcome becomes a line of the report (pure).

The names and their order are what ``hudi-cdc validate`` prints and ``--json``
keys by; the stack's tests (``tests/ops/test_validate.py``) see the same list
from a real run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hudi_cdc.checks.kit import _Context, _ok, _Outcome, _Skip
from hudi_cdc.checks.validate import _plan, _run
from hudi_cdc.config import IngestConfig, load_config
from hudi_cdc.errors import TransientError
from tests.checks.support import files_config

SHAPE_AND_TYPES = ["shape.transforms", "types.mappings"]  # Avro sources: checked against the schema
CONNECT_AND_POSTGRES = [
    "connect.decimal_handling",
    "connect.time_precision",
    "connect.tombstones",
    "postgres.wal_level",
    "postgres.slot",
    "postgres.publication",
    "postgres.replica_identity",
    "postgres.primary_key",
]
TARGET = ["env.java", "env.jars", "target.writable", "target.table_config", "target.checkpoint"]


def kafka(tmp_path: Path, **more: str) -> IngestConfig:
    return load_config(
        source="kafka",
        topic="dbserver1.inventory.customers",
        bootstrap_servers="127.0.0.1:1",
        schema_registry_url="http://127.0.0.1:1",
        target_base_path=str(tmp_path / "t"),
        target_table="t",
        env={},
        **more,
    )


def jdbc(tmp_path: Path) -> IngestConfig:
    return load_config(
        source="jdbc",
        jdbc_url="jdbc:postgresql://127.0.0.1:1/db",
        jdbc_table="public.t",
        jdbc_timestamp_column="updated_at",
        jdbc_incrementing_column="id",
        record_key_fields="id",
        target_base_path=str(tmp_path / "t"),
        target_table="t",
        env={},
    )


def names(config: IngestConfig, *, cheap: bool = False) -> list[str]:
    return [name for name, _ in _plan(config, cheap)]


def test_each_source_runs_its_own_checks_in_a_fixed_order(tmp_path: Path) -> None:
    assert names(kafka(tmp_path)) == [
        *TARGET,
        "kafka.topic",
        "kafka.retention",
        "registry.subjects",
        "registry.key_schema",
        "registry.value_schema",
        "connect.connector",
        "connect.converter",
        *SHAPE_AND_TYPES,
        *CONNECT_AND_POSTGRES,
    ]
    assert names(kafka(tmp_path, kafka_value_format="json")) == [
        *TARGET,
        "kafka.topic",
        "kafka.retention",
        "kafka.json_messages",
        "connect.connector",
        "connect.converter",
        *CONNECT_AND_POSTGRES,
    ]
    assert names(files_config(tmp_path / "events", tmp_path / "t")) == [
        *TARGET,
        "files.folder",
        "files.decode",
        "files.envelope",
        "connect.connector",
        "connect.converter",
        *SHAPE_AND_TYPES,
        *CONNECT_AND_POSTGRES,
    ]
    assert names(jdbc(tmp_path)) == [*TARGET, "jdbc.relation", "jdbc.cursor_index", "jdbc.primary_key"]


def test_the_cheap_checks_are_what_a_round_asks_anyway(tmp_path: Path) -> None:
    assert names(kafka(tmp_path), cheap=True) == ["target.table_config", "target.writable", "kafka.topic"]
    assert names(files_config(tmp_path / "events", tmp_path / "t"), cheap=True) == [
        "target.table_config",
        "target.writable",
    ]


@pytest.fixture
def ctx(tmp_path: Path) -> _Context:
    return _Context(files_config(tmp_path / "events", tmp_path / "t"), None, None, None, None, None)


def test_a_service_that_does_not_answer_fails_once_and_the_checks_after_it_skip(ctx: _Context) -> None:
    asked = []

    def fetch() -> None:
        asked.append(1)
        raise TransientError("the registry did not answer")

    def needs_the_service(c: _Context) -> _Outcome:
        c.memo("service", fetch)
        return _ok("unreachable")

    first = _run("area.first", needs_the_service, ctx)
    assert (first.status, first.detail, first.transient) == ("fail", "the registry did not answer", True)
    assert isinstance(first.error, TransientError)
    second = _run("area.second", needs_the_service, ctx)
    assert (second.status, second.detail) == ("skip", "not checked: area.first failed")
    assert asked == [1]  # asked once, remembered


def test_a_missing_input_skips_saying_what_to_pass(ctx: _Context) -> None:
    def needs_an_input(c: _Context) -> _Outcome:
        raise _Skip("no Kafka Connect URL given", "pass --connect-url")

    check = _run("connect.connector", needs_an_input, ctx)
    assert (check.status, check.detail, check.fix) == ("skip", "no Kafka Connect URL given", "pass --connect-url")


def test_a_check_that_breaks_fails_alone(ctx: _Context) -> None:
    def broken(c: _Context) -> _Outcome:
        raise KeyError("slot_name")

    check = _run("postgres.slot", broken, ctx)
    assert check.status == "fail" and check.detail == "the check itself failed: 'slot_name'"
    assert not check.transient and isinstance(check.error, KeyError)
