"""A small Kafka round planned in the driver (``hudi_cdc.small_plan``) lands what the Spark plan lands.

A real topic (two partitions) and registry (Apicurio's ccompat API), two writer versions of its value
subject. Three tables ingest it round after round: MERGE_ON_READ planned in the driver (the defaults: the
round's messages read by the source's own consumer, decoded by fastavro, written by Hudi's Java client),
MERGE_ON_READ planned by Spark (``HUDI_CDC_TEST_SMALL_PLAN=off``, the same writer), and COPY_ON_WRITE (never
planned in the driver). Rounds of inserts, updates and deletes, replays of earlier messages and late events
below a stored delete arrive across the partitions; a round of v1 messages (read as the subject's one reader
schema, v2's), one mixing both versions (each resolved to that reader schema), a last one carrying Debezium's
Kafka tombstone (dropped, as the Spark plan drops it). After each round the driver's and Spark's counts are equal, all three tables
equal the source, and the driver's rounds say they were planned in the driver and start no Spark job.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from hudi_cdc.testing import pg_event
from tests.stack.conftest import BOOTSTRAP, REGISTRY
from tests.stack.test_kafka_source import Topic
from tests.support import apply_events, expected_rows, read_rows

pytestmark = [pytest.mark.kafka, pytest.mark.hudi]

COLUMNS = ["id", "name", "tier"]
COUNTS = ("events", "upserts", "deletes", "stale", "superseded", "ops", "tombstones_held")


def _config(topic: Topic, base: Path, **settings: Any) -> Any:  # noqa: ANN401
    from hudi_cdc import load_config

    return load_config(
        env={},
        source="kafka",
        topic=topic.name,
        bootstrap_servers=BOOTSTRAP,
        schema_registry_url=REGISTRY,
        target_base_path=str(base),
        target_table=base.name,
        record_key_fields="id",
        flavor="postgres",
        **{"table_type": "MERGE_ON_READ", **settings},
    )


def test_kafka_rounds_planned_in_the_driver_equal_the_spark_plans(
    spark,  # noqa: ANN001
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import hudi_cdc

    rng = random.Random(5863)  # a seed whose second round holds late events below a stored delete (stale)
    topic = Topic(partitions=2)
    tables = {
        "driver": _config(topic, tmp_path / "t_driver"),
        "spark": _config(topic, tmp_path / "t_spark"),
        "cow": _config(topic, tmp_path / "t_cow", table_type="COPY_ON_WRITE"),
    }
    keys, lsn = 16, 1000
    live = {k: {"id": k, "name": f"k{k}"} for k in range(keys)}
    history = [pg_event("r", lsn=lsn + k, after=row) for k, row in enumerate(live.values())]
    lsn += keys
    rounds = [list(history)]
    # Round 1 writes v1 only (read as the subject's one reader schema, tier NULL), round 2 both versions
    # (v2 with tier set): each message is resolved from its own writer version.
    for number in (1, 2):
        events = []
        for key in rng.sample(range(keys), keys // 2):
            lsn += rng.randint(2, 4)  # a gap below each: room for a late event just below a delete
            tier = {"tier": lsn % 4} if number == 2 and lsn % 2 else {}
            if key not in live:
                live[key] = {"id": key, "name": f"again {lsn}", **tier}
                events.append(pg_event("c", lsn=lsn, after=live[key], txid=lsn))
            elif rng.random() < 0.3:
                events.append(pg_event("d", lsn=lsn, before={"id": key, "name": None, **dict.fromkeys(tier)}))
                del live[key]
            else:
                live[key] = {"id": key, "name": f"n{lsn}", **tier}
                events.append(pg_event("u", lsn=lsn, after=live[key], txid=lsn))
        used = {e["source"]["lsn"] for e in history}
        late = [e for e in history if e["op"] != "d" and rng.random() < 0.15]  # replays of earlier events
        touched = {(e["after"] or e["before"])["id"] for e in events}
        late += [  # late updates of keys deleted since (and not back this round): below their tombstone, so stale
            pg_event("u", lsn=e["source"]["lsn"] - 1, after={"id": e["before"]["id"], "name": "late"})
            for e in history
            if e["op"] == "d" and e["source"]["lsn"] - 1 not in used and e["before"]["id"] not in touched
        ]
        history += events + [e for e in late if e["source"]["lsn"] not in used]
        batch = events + late
        rng.shuffle(batch)
        rounds.append(batch)
    context = spark.sparkContext
    decisions = {"stale": 0, "superseded": 0, "deletes": 0}
    for number, batch in enumerate(rounds):
        for version in (1, 2):  # each event in the version its image was written with
            topic.send([e for e in batch if _version(e) == version], version=version)
        results = {}
        for name, config in tables.items():
            if name == "cow" and number > 1:
                continue  # refused by its settings: two rounds prove it
            with monkeypatch.context() as patched:
                if name == "spark":
                    patched.setenv("HUDI_CDC_TEST_SMALL_PLAN", "off")
                context.setJobGroup(f"kafka-{name}-{number}", "a small Kafka round")
                results[name] = hudi_cdc.ingest(config, spark=spark)
                context.setJobGroup(None, None)  # type: ignore[arg-type]
        ours, theirs = results["driver"], results["spark"]
        assert {c: getattr(ours, c) for c in COUNTS} == {c: getattr(theirs, c) for c in COUNTS}, number
        assert ours.details["read"] == "driver" and ours.details["decode"] == "single-pass", ours.details
        assert theirs.details["plan"] == "spark" and theirs.details["driver_declined"] == "HUDI_CDC_TEST_SMALL_PLAN=off"
        if "cow" in results:
            assert results["cow"].details["driver_declined"] == "not a small MERGE_ON_READ round"
        if number == 0:  # the first commit creates the table: Spark's
            assert ours.details["driver_declined"] == "a new table", ours.details
        else:
            assert ours.details["plan"] == "driver" and ours.details["writer"] == "java", ours.details
            assert list(context.statusTracker().getJobIdsForGroup(f"kafka-driver-{number}")) == []
            decisions = {k: n + getattr(ours, k) for k, n in decisions.items()}
        expected = _expected([e for b in rounds[: number + 1] for e in b])
        for name in results:
            assert read_rows(spark, str(tmp_path / f"t_{name}"), COLUMNS) == expected, (name, number)
    assert all(decisions.values()), decisions  # the driver's rounds made each kind of decision
    assert any(row[2] is not None for row in expected) and any(row[2] is None for row in expected)

    # Debezium's Kafka tombstone after a delete: dropped by the driver as by the Spark plan's single pass.
    key = min(live)
    lsn += 1
    delete = pg_event("d", lsn=lsn, before={"id": key, "name": None})
    topic.send([delete], version=1)
    topic.send_raw([(key, None)])
    done = hudi_cdc.ingest(tables["driver"], spark=spark)
    assert done.details["plan"] == "driver", done.details
    assert done.deletes == 1 and done.events == 1
    expected = _expected([e for b in rounds for e in b] + [delete])
    assert read_rows(spark, str(tmp_path / "t_driver"), COLUMNS) == expected


def _version(event: dict[str, Any]) -> int:
    return 2 if "tier" in (event["after"] or event["before"]) else 1


def _expected(events: list[dict[str, Any]]) -> list[tuple]:
    return expected_rows({k: {"tier": None, **row} for k, row in apply_events(events).items()}, COLUMNS)


def test_a_real_debezium_table_of_logical_types_is_planned_in_the_driver(spark, tmp_path: Path) -> None:  # noqa: ANN001
    """The stack's Debezium Postgres connector's own types: timestamp (MicroTimestamp), timestamptz
    (ZonedTimestamp), date, time (MicroTime), numeric(10,2) (a Connect decimal) and numeric (VariableScaleDecimal).
    After the table's first commit (Spark's), a round of updates is planned in the driver, and both tables (the
    driver's and Spark's, ``java_writer_max_rows = 0``) read back alike and hold Postgres' values."""
    import uuid
    from datetime import date
    from decimal import Decimal

    import hudi_cdc
    from hudi_cdc import load_config
    from hudi_cdc.testing.postgres import connect as postgres
    from hudi_cdc.testing.postgres import wait_for_stream

    name = f"sp_{uuid.uuid4().hex[:6]}"
    topic = f"dbserver1.inventory.{name}"
    columns = ["id", "at", "at_tz", "day", "opens", "amount", "any_num"]

    def config(base: Path, **settings: Any) -> Any:  # noqa: ANN401
        return load_config(
            env={}, source="kafka", topic=topic, bootstrap_servers=BOOTSTRAP, schema_registry_url=REGISTRY,
            target_base_path=str(base), target_table=base.name, record_key_fields="id", flavor="postgres",
            table_type="MERGE_ON_READ", **settings,
        )  # fmt: skip

    tables = {"driver": config(tmp_path / "t_driver"), "spark": config(tmp_path / "t_spark", java_writer_max_rows=0)}
    with postgres() as conn:
        conn.execute(
            f"create table inventory.{name} (id int primary key, at timestamp, at_tz timestamptz, day date, "
            "opens time, amount numeric(10,2), any_num numeric)"
        )
        conn.execute(
            f"insert into inventory.{name} values "  # noqa: S608
            "(1, '2024-02-29 23:59:59.123456', '2024-02-29 23:59:59.5+02', '2024-02-29', '24:00:00', 12345678.91, "
            "3.14159265358979323846), "
            "(2, '1969-12-31 23:59:59.999999', '1960-01-01 00:00:00+00', '1960-01-01', '00:00:00', -0.01, -1e-20), "
            "(3, null, null, null, null, null, null)"
        )
        try:
            offsets = wait_for_stream(conn, BOOTSTRAP, [topic], since={})
            first = {label: hudi_cdc.ingest(c, spark=spark) for label, c in tables.items()}
            assert first["driver"].details["driver_declined"] == "a new table", first["driver"].details
            conn.execute(
                f"update inventory.{name} set at = at + interval '1 microsecond', amount = -99999999.99, "  # noqa: S608
                "any_num = 123456789012345678901234567890.123, opens = '12:34:56.789012' where id = 1"
            )
            conn.execute(f"update inventory.{name} set opens = '24:00:00', day = '1700-01-01' where id = 3")  # noqa: S608
            wait_for_stream(conn, BOOTSTRAP, [topic], since=offsets)
            spark.sparkContext.setJobGroup("real-types-driver", "a round of Debezium's types planned in the driver")
            ours = hudi_cdc.ingest(tables["driver"], spark=spark)
            spark.sparkContext.setJobGroup(None, None)  # type: ignore[arg-type]
            theirs = hudi_cdc.ingest(tables["spark"], spark=spark)
        finally:
            conn.execute(f"drop table inventory.{name}")
    assert ours.details["plan"] == "driver" and "driver_declined" not in ours.details, ours.details
    assert list(spark.sparkContext.statusTracker().getJobIdsForGroup("real-types-driver")) == []
    assert (ours.upserts, theirs.upserts) == (2, 2)
    found = read_rows(spark, str(tmp_path / "t_driver"), columns)
    assert found == read_rows(spark, str(tmp_path / "t_spark"), columns)
    rows = {r[0]: r for r in found}
    assert rows[1][3:] == (date(2024, 2, 29), "12:34:56.789012", Decimal("-99999999.99"),
                           "123456789012345678901234567890.123")  # fmt: skip
    assert rows[2][3:] == (date(1960, 1, 1), "00:00:00.000000", Decimal("-0.01"), "-0.00000000000000000001")
    assert rows[3][1:] == (None, None, date(1700, 1, 1), "24:00:00.000000", None, None)
    stamps = spark.read.format("hudi").load(str(tmp_path / "t_driver")).selectExpr("id", "unix_micros(at)",
                                                                                   "unix_micros(at_tz)")  # fmt: skip
    assert sorted(tuple(r) for r in stamps.collect()) == [
        (1, 1_709_251_199_123_457, 1_709_243_999_500_000),
        (2, -1, -315_619_200_000_000),
        (3, None, None),
    ]
