"""Property: a small batch decided in the driver (``payloads.driver``) is what the Spark plan decides.

Hypothesis draws flat batches for each flavor with a driver rule (Postgres LSNs, MySQL binlog
file/pos/row): few keys and few positions, so source orders tie and arrival decides; duplicates and
replays (the same event twice, arriving twice), out-of-order arrival, snapshot reads, deletes, NULLs,
events whose position is missing or out of range, decode errors, TOAST placeholders; with and
without stored tombstones and an applied TRUNCATE's position. Where the driver takes the batch, its
rows, tombstones and counts must be the Spark plan's (``MergePolicy.plan``); where it declines a bad
event, the Spark plan must find one too. Spark, no Hudi: one plan per example.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import event as tally
from hypothesis import strategies as st

from hudi_cdc.spark import release
from payloads import MySqlPolicy, PostgresPolicy, StoredState
from payloads.base import ARRIVAL_COLUMN, ERROR_COLUMN, ORDER_COLUMN, ORIGIN_COLUMN, MergePolicy
from payloads.driver import decide, toastable_columns, written_columns

PLACEHOLDER = "__debezium_unavailable_value"
POLICIES = {"postgres": PostgresPolicy, "mysql": MySqlPolicy}
SOURCE_META = {
    "postgres": [("_source_lsn", "bigint"), ("_source_txid", "string")],
    "mysql": [
        ("_source_file", "string"),
        ("_source_pos", "bigint"),
        ("_source_row", "int"),
        ("_source_txid", "string"),
    ],
}
ARRIVALS = {"files": "struct<file:string, block:bigint, row:bigint>", "kafka": "struct<partition:int, offset:bigint>"}
# The flat frame's columns the driver may fill, by type (``_rows``'s DDL).
TYPES = {"id": "bigint", "name": "string", "bio": "string", "amount": "bigint"}
SMALL = st.integers(0, 3)
TEXT = st.sampled_from([None, "a", "b", "ü", "\U0001f600"])
INGESTED = datetime(2026, 11, 29, 2, 30)


def _meta(flavor: str, rare: bool) -> st.SearchStrategy[tuple]:
    """An event's source position; with ``rare``, missing or out of range now and then (a position error)."""
    if flavor == "postgres":
        lsn = st.one_of(SMALL, st.just(2**63 - 1), st.just(-1), *([st.none()] if rare else []))
        return st.tuples(lsn, st.just("7"))
    files = ["mysql-bin.000009", "mysql-bin.000010", "mysql-bin.9", "a.b.000010"]
    if rare:
        files += [None, "binlog", "mysql-bin.12345678901", "mysql-bin.000011\n", "mysql-bin.000011\r"]
    pos = st.one_of(SMALL, *([st.none(), st.just(-1)] if rare else []))
    row = st.one_of(st.none(), SMALL, st.just(-2147483648))
    return st.tuples(st.sampled_from(files), pos, row, st.just(None))


def _event(flavor: str, rare: bool, placeholders: bool = False) -> st.SearchStrategy[tuple]:
    text = st.one_of(TEXT, st.just(PLACEHOLDER)) if placeholders else TEXT
    return st.tuples(
        st.integers(0, 4),  # the key
        st.sampled_from(["c", "u", "u", "d", "r"]),
        _meta(flavor, rare),
        text,
        text,
        st.one_of(st.none(), st.integers(-5, 5)),
        st.one_of(st.none(), st.integers(1_700_000_000_000, 1_700_000_000_005)),
        st.sampled_from([None, None, None, "the Avro payload does not decode"]) if rare else st.none(),
    )


def _rows(flavor: str, arrival: str, events: list[tuple]) -> tuple[list[dict[str, Any]], list[tuple], str]:
    """The events as flat rows (as ``envelope.flatten`` makes them), their arrivals, and the frame's DDL."""
    names = [name for name, _ in SOURCE_META[flavor]]
    rows, arrivals = [], []
    for i, (key, op, meta, name, bio, amount, ts, error) in enumerate(events):
        arrived = {"files": (f"file:/e/{i // 7}.avro", 0, i % 7), "kafka": (i % 2, i)}[arrival]
        rows.append(
            {
                "id": key,
                "name": name,
                "bio": bio,
                "amount": amount,
                ORIGIN_COLUMN: "e.avro",
                ARRIVAL_COLUMN: arrived,
                "_source_op": op,
                **dict(zip(names, meta, strict=True)),
                "_source_ts_ms": ts,
                "_hoodie_is_deleted": op == "d",
                "_ingested_at": INGESTED,
                ERROR_COLUMN: error,
            }
        )
        arrivals.append(arrived)
    meta_ddl = ", ".join(f"{n} {t}" for n, t in SOURCE_META[flavor])
    ddl = (
        f"id bigint, name string, bio string, amount bigint, {ORIGIN_COLUMN} string, {ARRIVAL_COLUMN} "
        f"{ARRIVALS[arrival]}, _source_op string, {meta_ddl}, _source_ts_ms bigint, _hoodie_is_deleted boolean, "
        f"_ingested_at timestamp, {ERROR_COLUMN} string"
    )
    return rows, arrivals, ddl


def _spark_plan(spark, policy: MergePolicy, rows, ddl: str, tombstones: dict, floor: str | None, table: Table):  # noqa: ANN001, ANN202
    frame = spark.createDataFrame([tuple(r.values()) for r in rows], ddl)
    stored = spark.createDataFrame([(k, o) for (k,), o in tombstones.items()], f"id bigint, {ORDER_COLUMN} string")
    state = StoredState(
        tombstones=lambda: stored if tombstones else None,
        stored_rows=lambda columns: table.frame(spark, columns),
        truncated_at=floor,
    )
    return policy.plan(policy.with_order(frame), key_fields=["id"], stored=state), frame.columns


class Table:
    """The stored rows a plan may read for its placeholders: ``_source_order``, ``name`` and ``bio`` per key
    (``columns``: those the table has; a column new in the batch is not there)."""

    def __init__(self, rows: dict[int, tuple[str | None, str | None, str | None]], columns: list[str]) -> None:
        self.rows, self.columns = rows, columns

    def frame(self, spark, wanted):  # noqa: ANN001, ANN201 - StoredState.stored_rows, as the pipeline's
        if not self.rows and not self.columns:
            return None  # no table yet
        ddl = f"id bigint, {ORDER_COLUMN} string, name string, bio string"
        whole = spark.createDataFrame([(k, *v) for k, v in self.rows.items()], ddl)
        return whole.select(*[c for c in wanted if c in ("id", ORDER_COLUMN, *self.columns)])

    def lookup(self, keys: list[tuple], columns: list[str]) -> dict[tuple, dict[str, Any]]:
        """``payloads.driver.StoredRows``: what ``small_plan._stored_frame`` reads of a table."""
        names = [ORDER_COLUMN, *[c for c in columns if c in self.columns]]
        found = {}
        for (key,) in keys:
            if key in self.rows:
                values = dict(zip((ORDER_COLUMN, "name", "bio"), self.rows[key], strict=True))
                found[(key,)] = {"id": key, **{n: values[n] for n in names}}
        return found


def _sorted(rows) -> list:  # noqa: ANN001
    return sorted((dict(r) for r in rows), key=repr)


SETTINGS = settings(
    max_examples=12,  # a Spark plan (a few jobs) per example
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)


def _table(data, keys: list[int], orders: list[str]) -> Table:  # noqa: ANN001
    """Stored rows for some of ``keys``: positions among the batch's (ties too), now and then none (a
    snapshot row without one) or before all; values that a placeholder may take; now and then a column missing."""
    order = st.one_of(st.sampled_from(orders), st.just("0"), st.none())
    row = st.tuples(order, TEXT, TEXT)
    rows = data.draw(st.dictionaries(st.sampled_from(keys), row)) if keys else {}
    columns = data.draw(st.sampled_from([["name", "bio"], ["name", "bio"], ["name"], []]))
    return Table(rows, columns)


@pytest.mark.parametrize("flavor", POLICIES)
@SETTINGS
@given(
    data=st.data(), arrival=st.sampled_from(sorted(ARRIVALS)), rare=st.booleans(), stored=st.booleans(),
    placeholders=st.booleans(),
)  # fmt: skip
def test_driver_decides_as_the_spark_plan(
    spark,
    flavor: str,
    data,
    arrival: str,
    rare: bool,
    stored: bool,
    placeholders: bool,  # noqa: ANN001
) -> None:
    """With ``stored``: tombstones, an applied TRUNCATE's position and stored rows for the placeholders."""
    policy = POLICIES[flavor](toast_placeholder=PLACEHOLDER)
    event = _event(flavor, rare, placeholders)
    streams = data.draw(st.lists(st.lists(event, min_size=1, max_size=25), min_size=1, max_size=4))
    events = [(key + 10 * n, *rest) for n, stream in enumerate(streams) for key, *rest in stream]
    # Replays: some events arrive again, later (the same change, another arrival).
    events += data.draw(st.lists(st.sampled_from(events), max_size=5))
    events = data.draw(st.permutations(events))  # out of order
    rows, arrivals, ddl = _rows(flavor, arrival, events)
    orders = sorted({o for r in rows if (o := policy.order_of(r)) is not None}) or ["0"]
    tombstones = (
        data.draw(st.dictionaries(st.tuples(st.sampled_from(sorted({r["id"] for r in rows}))), st.sampled_from(orders)))
        if stored
        else {}
    )
    floor = data.draw(st.one_of(st.none(), st.sampled_from(orders))) if stored else None
    table = _table(data, sorted({r["id"] for r in rows}), orders) if stored else Table({}, [])
    columns = list(rows[0])
    mine = decide(
        policy, rows, arrivals, columns=columns, key_fields=["id"], tombstones=tombstones or None, truncated_at=floor,
        toastable=toastable_columns(TYPES, ["id"]), stored_rows=table.lookup,
    )  # fmt: skip
    tally(f"driver: {mine.declined or ('filled placeholders' if mine.counts.toast_filled else 'took the batch')}")
    if mine.declined == "a TOAST placeholder with no value in the batch or the stored row":
        return  # the Spark plan's to settle: a moved key's value, else the round fails (test_scenarios)
    plan, spark_columns = _spark_plan(spark, policy, rows, ddl, tombstones, floor, table)
    try:
        assert spark_columns == columns
        assert mine.declined in (None, "a bad event", "an event without a usable source position"), mine.declined
        if mine.declined is not None:
            assert plan.errors, mine.declined  # Spark finds the bad event too
            return
        assert not plan.errors
        assert plan.upserts is not None and plan.tombstones is not None
        assert plan.upserts.columns == written_columns(columns)
        assert _sorted(mine.rows) == _sorted(r.asDict() for r in plan.upserts.collect())
        assert _sorted(mine.tombstones) == _sorted(r.asDict() for r in plan.tombstones.collect())
        assert mine.counts == plan.counts
    finally:
        release(*plan.materialised)


@pytest.mark.parametrize("flavor", POLICIES)
@SETTINGS
@given(data=st.data())
def test_placeholders_are_filled_as_the_spark_plan_fills_them(spark, flavor: str, data) -> None:  # noqa: ANN001
    """Batches where a placeholder is common and most keys have a stored row (at positions among the batch's):
    where the driver fills every placeholder, its rows and counts are the Spark plan's."""
    policy = POLICIES[flavor](toast_placeholder=PLACEHOLDER)
    text = st.sampled_from([PLACEHOLDER, PLACEHOLDER, None, "a", "b"])
    event = st.tuples(
        st.integers(0, 4), st.sampled_from(["c", "u", "u", "d", "r"]), _meta(flavor, False), text, text,
        st.none(), st.none(), st.none(),
    )  # fmt: skip
    events = data.draw(st.lists(event, min_size=1, max_size=25))
    events += data.draw(st.lists(st.sampled_from(events), max_size=3))  # replays
    rows, arrivals, ddl = _rows(
        flavor, data.draw(st.sampled_from(sorted(ARRIVALS))), data.draw(st.permutations(events))
    )
    orders = sorted({o for r in rows if (o := policy.order_of(r)) is not None}) or ["0"]
    table = Table(
        data.draw(st.dictionaries(st.integers(0, 4), st.tuples(st.sampled_from(orders), TEXT, TEXT), min_size=3)),
        data.draw(st.sampled_from([["name", "bio"], ["name", "bio"], ["bio"]])),
    )
    mine = decide(
        policy, rows, arrivals, columns=list(rows[0]), key_fields=["id"], tombstones=None, truncated_at=None,
        toastable=toastable_columns(TYPES, ["id"]), stored_rows=table.lookup,
    )  # fmt: skip
    tally(f"driver: {mine.declined or ('filled placeholders' if mine.counts.toast_filled else 'took the batch')}")
    if mine.declined is not None:
        assert mine.declined == "a TOAST placeholder with no value in the batch or the stored row", mine.declined
        return
    plan, _ = _spark_plan(spark, policy, rows, ddl, {}, None, table)
    try:
        assert plan.upserts is not None and not plan.errors
        assert _sorted(mine.rows) == _sorted(r.asDict() for r in plan.upserts.collect())
        assert mine.counts == plan.counts
    finally:
        release(*plan.materialised)


def test_stored_rows_under_keys_not_asked_for_decline_the_batch() -> None:
    """A key Spark hands back in another form than the batch's (a timestamp's zone) would match no winner and
    leave its placeholder to an older value: the driver declines instead."""
    policy = POLICIES["postgres"](toast_placeholder=PLACEHOLDER)
    events = [(1, "u", (5, "7"), "one", PLACEHOLDER, None, None, None)]
    rows, arrivals, _ = _rows("postgres", "kafka", events)

    def elsewhere(keys: list[tuple], columns: list[str]) -> dict[tuple, dict[str, Any]]:
        return {(str(k),): {ORDER_COLUMN: "0", "bio": "b"} for (k,) in keys}

    mine = decide(
        policy, rows, arrivals, columns=list(rows[0]), key_fields=["id"], tombstones=None, truncated_at=None,
        toastable=toastable_columns(TYPES, ["id"]), stored_rows=elsewhere,
    )  # fmt: skip
    assert mine.declined == "stored rows whose keys the driver does not match to the batch's"


def test_placeholders_filled_from_the_stored_rows_are_the_spark_plans(spark) -> None:  # noqa: ANN001
    """One batch with each case the fill meets: the stored row newer than the batch's value, older, tied, a
    key without a stored row, a winner older than its stored row (stale), a column the table lacks, and a
    delete; the driver takes it and decides it as the Spark plan does."""
    policy = POLICIES["postgres"](toast_placeholder=PLACEHOLDER)
    ph = PLACEHOLDER
    events = [
        (1, "u", (5, "7"), ph, "bio-1", None, None, None),  # stored (order 3) fills name
        (2, "u", (2, "7"), "two", "b", None, None, None),  # the batch's own value, older than the stored one
        (2, "u", (6, "7"), ph, ph, None, None, None),  # name: the stored one (4 > 2); bio: the batch's newer
        (3, "u", (4, "7"), "three", "b", None, None, None),  # tie: the batch's value is newer at equal positions
        (3, "u", (6, "7"), ph, "b", None, None, None),
        (4, "u", (1, "7"), "four", "b", None, None, None),  # no stored row: the batch's value
        (4, "u", (2, "7"), ph, "b", None, None, None),
        (5, "u", (1, "7"), ph, "b", None, None, None),  # older than its stored row (order 3): stale
        (6, "d", (7, "7"), ph, ph, None, None, None),  # a delete keeps what it holds
    ]
    rows, arrivals, ddl = _rows("postgres", "kafka", events)

    def at(lsn: int) -> str | None:
        return policy.order_of({**rows[0], "_source_lsn": lsn})

    table = Table(
        {1: (at(3), "one", "bio-stored"), 2: (at(4), "two-stored", "bio-2"), 3: (at(4), "three-stored", None),
         5: (at(3), "five", "b")},
        ["name"],  # bio is new in the batch: never read from the table
    )  # fmt: skip
    mine = decide(
        policy, rows, arrivals, columns=list(rows[0]), key_fields=["id"], tombstones=None, truncated_at=None,
        toastable=toastable_columns(TYPES, ["id"]), stored_rows=table.lookup,
    )  # fmt: skip
    assert mine.declined is None
    plan, _ = _spark_plan(spark, policy, rows, ddl, {}, None, table)
    try:
        assert plan.upserts is not None
        assert _sorted(mine.rows) == _sorted(r.asDict() for r in plan.upserts.collect())
        assert mine.counts == plan.counts
        names = {r["id"]: (r["name"], r["bio"]) for r in mine.rows}
        assert names[1] == ("one", "bio-1") and names[2][0] == "two-stored" and names[3][0] == "three"
        assert names[4][0] == "four" and 5 not in names and mine.counts.stale == 1 and mine.counts.toast_filled == 4
    finally:
        release(*plan.materialised)


@pytest.mark.parametrize("flavor", POLICIES)
@settings(SETTINGS, max_examples=5)  # up to 60 rows each, one job
@given(data=st.data())
def test_driver_order_and_position_errors_are_sparks(spark, flavor: str, data) -> None:  # noqa: ANN001
    """Each row's ``_source_order`` and whether its position is an error: the driver rule's are Spark's, row by row."""
    from pyspark.sql import functions as F

    policy = POLICIES[flavor]()
    events = data.draw(st.lists(_event(flavor, True), min_size=1, max_size=60))
    rows, _, ddl = _rows(flavor, "kafka", events)
    frame = spark.createDataFrame([tuple(r.values()) for r in rows], ddl).withColumn(ERROR_COLUMN, F.lit(None))
    found = policy.with_order(frame).select(ORDER_COLUMN, ERROR_COLUMN).collect()
    assert [(r[ORDER_COLUMN], r[ERROR_COLUMN]) for r in found] == [
        (policy.order_of(row), policy.position_error_of(row)) for row in rows
    ]


KAFKA_V1 = [("id", "long"), ("name", ["null", "string"])]
KAFKA_V2 = [*KAFKA_V1, ("bio", ["null", "string"])]  # a column added upstream: v1's messages read it as NULL


@settings(SETTINGS, max_examples=4)  # a decode, a flatten and a plan (a few jobs, ~8 s at load 14) per example
@given(data=st.data(), stored=st.booleans())
def test_kafka_messages_are_decided_as_the_spark_plan(spark, data, stored: bool) -> None:  # noqa: ANN001
    """Kafka-shaped batches: Debezium envelopes Confluent-framed under two writer versions of the value subject,
    over two partitions, with replays and out of arrival order, as the source's consumer hands them over.
    Decoded, flattened and decided in the driver (``decode_in_driver``, ``flat_rows``, ``decide``) and by the
    Spark plan (the source's single-pass decode, ``change_rows``, ``MergePolicy.plan``): the same rows,
    tombstones and counts, with and without stored tombstones and an applied TRUNCATE's position."""
    import dataclasses

    import pandas as pd

    from hudi_cdc import load_config
    from hudi_cdc.envelope.avro_schemas import merged_reader_schema
    from hudi_cdc.envelope.batch import change_rows
    from hudi_cdc.envelope.driver_rows import flat_rows
    from hudi_cdc.envelope.events import Batch
    from hudi_cdc.envelope.types import reader_schema
    from hudi_cdc.sources.kafka import MESSAGE_SCHEMA, KafkaSource
    from hudi_cdc.sources.kafka_driver import decode_in_driver
    from hudi_cdc.testing import envelope_schema, pg_event
    from hudi_cdc.testing.kafka import Framer
    from payloads.base import INGESTED_AT_COLUMN, TOMBSTONED_AT_COLUMN

    writers = {3: envelope_schema("customers", KAFKA_V1), 4: envelope_schema("customers", KAFKA_V2)}
    framers = {i: Framer(i, s) for i, s in writers.items()}
    event = st.tuples(st.integers(0, 4), st.sampled_from("cuudr"), SMALL, TEXT, TEXT, st.sampled_from([3, 4]))
    drawn = data.draw(st.lists(event, min_size=1, max_size=30))
    drawn += data.draw(st.lists(st.sampled_from(drawn), max_size=5))  # replays: the same message again, later
    offsets = {0: 0, 1: 0}
    messages = []
    for key, op, lsn, name, bio, schema_id in data.draw(st.permutations(drawn)):
        image = {"id": key, "name": name, **({"bio": bio} if schema_id == 4 else {})}
        side = {"before": image} if op == "d" else {"after": image}
        partition = data.draw(st.integers(0, 1))
        framed = framers[schema_id](pg_event(op, lsn=lsn, txid=7, **side))
        messages.append((None, framed, partition, offsets[partition]))
        offsets[partition] += data.draw(st.integers(1, 2))  # gaps: a compacted topic
    config = load_config(
        env={},
        source="kafka",
        topic="dbserver1.public.customers",
        bootstrap_servers="127.0.0.1:1",  # never asked: the messages are given
        schema_registry_url="http://127.0.0.1:1",
        target_base_path="/nonexistent/t",
        target_table="t",
        table_type="MERGE_ON_READ",
        record_key_fields="id",
        flavor="postgres",
    )
    policy = POLICIES["postgres"]()
    reader = merged_reader_schema(list(writers.values()))
    assert reader is not None
    frame = spark.createDataFrame(
        pd.DataFrame(messages, columns=["key", "value", "partition", "offset"]), MESSAGE_SCHEMA
    )
    source = KafkaSource(spark, config, reader_schema=reader_schema)
    part = source._single_pass(frame, sorted(writers), writers, reader, "dbserver1.public.customers-value")
    part = dataclasses.replace(
        part, messages=tuple(messages), writer_schemas={i: reader_schema(s) for i, s in writers.items()}
    )
    flat = change_rows(
        Batch([part], {}, "kafka"),
        policy,
        key_fields=("id",),
        ingested_at=INGESTED,
        behavior="evolve",
        table_schema=None,
    )
    read = decode_in_driver(part, 100)
    assert not isinstance(read, str), read
    rows = flat_rows(
        read[0], part.avro_schema or {}, source_meta_columns=policy.source_meta_columns, ingested_at=INGESTED
    )
    assert not isinstance(rows, str), rows
    orders = sorted({o for r in rows.rows if (o := policy.order_of(r)) is not None}) or ["0"]
    keys = sorted({r["id"] for r in rows.rows})
    tombstones = data.draw(st.dictionaries(st.tuples(st.sampled_from(keys)), st.sampled_from(orders))) if stored else {}
    floor = data.draw(st.one_of(st.none(), st.sampled_from(orders))) if stored else None
    mine = decide(
        policy,
        rows.rows,
        read[1],
        columns=rows.columns,
        key_fields=["id"],
        tombstones=tombstones or None,
        truncated_at=floor,
    )
    assert mine.declined is None, mine.declined
    held = spark.createDataFrame([(k, o) for (k,), o in tombstones.items()], f"id bigint, {ORDER_COLUMN} string")
    state = StoredState(
        tombstones=lambda: held if tombstones else None, stored_rows=lambda columns: None, truncated_at=floor
    )
    plan = policy.plan(flat, key_fields=["id"], stored=state)
    try:
        assert not plan.errors
        assert plan.upserts is not None and plan.tombstones is not None
        assert plan.upserts.columns == written_columns(rows.columns)
        stamps = (INGESTED_AT_COLUMN, TOMBSTONED_AT_COLUMN)  # the round's stamp: a zone apart in a collect

        def unstamped(found) -> list:  # noqa: ANN001
            return _sorted({k: v for k, v in dict(r).items() if k not in stamps} for r in found)

        assert unstamped(mine.rows) == unstamped(r.asDict() for r in plan.upserts.collect())
        assert unstamped(mine.tombstones) == unstamped(r.asDict() for r in plan.tombstones.collect())
        assert mine.counts == plan.counts
    finally:
        release(*plan.materialised)
