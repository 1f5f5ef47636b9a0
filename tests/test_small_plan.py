"""A small MERGE_ON_READ round planned in the driver (``hudi_cdc.small_plan``) lands what the Spark plan lands.

Two tables ingest the same files round after round: one with the defaults (small rounds planned in the
driver and written by Hudi's Java client), one with ``java_writer_max_rows = 0`` (the Spark plan, Spark's
datasource). Rounds of updates, deletes and re-inserts arrive shuffled, with duplicates, replays of an
earlier file and late events below a stored delete's tombstone. After each round both results' counts
are equal, both tables equal the source, and the driver's rounds start no Spark job at all. Then a round of
TOAST placeholders, filled from the stored rows and from the batch, is planned in the driver too, and one
that nothing can fill goes to the Spark plan, which refuses it.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from hudi_cdc.testing import envelope_schema, pg_event, write_events
from tests.support import CUSTOMERS, PLACEHOLDER, apply_events, collect_counting_files, expected_rows, read_rows

pytestmark = pytest.mark.hudi

SCHEMA = envelope_schema("customers", CUSTOMERS)
COLUMNS = ["id", "name", "bio"]
COUNTS = ("events", "upserts", "deletes", "stale", "superseded", "toast_filled", "ops", "tombstones_held")


def _config(source: Path, base: Path, **settings: Any) -> Any:  # noqa: ANN401
    from hudi_cdc import load_config

    return load_config(
        env={},
        source="files",
        source_path=str(source),
        target_base_path=str(base),
        target_table=base.name,
        table_type="MERGE_ON_READ",
        record_key_fields="id",
        toast_placeholder=PLACEHOLDER,
        **{"flavor": "postgres", **settings},
    )


def _changes(rng: random.Random, live: dict[int, dict], lsn: int, keys: int) -> tuple[list[dict], int]:
    events = []
    for key in rng.sample(range(keys), keys // 2):
        lsn += rng.randint(1, 3)
        if key not in live:
            live[key] = {"id": key, "name": f"again {lsn}", "bio": None}
            events.append(pg_event("c", lsn=lsn, after=live[key], txid=lsn))
        elif rng.random() < 0.3:
            events.append(pg_event("d", lsn=lsn, before={"id": key, "name": None, "bio": None}))
            del live[key]
        else:
            live[key] = {**live[key], "name": f"n{lsn}", "bio": f"b{lsn}" if rng.random() < 0.7 else None}
            events.append(pg_event("u", lsn=lsn, after=live[key], txid=lsn))
    return events, lsn


def test_driver_planned_rounds_equal_the_spark_plans(spark, tmp_path: Path) -> None:  # noqa: ANN001
    import hudi_cdc

    rng = random.Random(58)
    source = tmp_path / "events"
    driver = _config(source, tmp_path / "t_driver")
    spark_planned = _config(source, tmp_path / "t_spark", java_writer_max_rows=0)
    keys, lsn = 40, 1000
    live = {k: {"id": k, "name": f"k{k}", "bio": f"bio {k}"} for k in range(keys)}
    history = [pg_event("r", lsn=lsn, after=row) for row in live.values()]
    batches, seen = [list(history)], [list(history)]  # each round's events, and the history up to it
    for _ in range(3):
        events, lsn = _changes(rng, live, lsn, keys)
        late = [e for e in history if e["op"] != "d" and rng.random() < 0.1]  # replays and late, older events
        used = {e["source"]["lsn"] for e in history}
        # Late updates of keys deleted since: below their tombstone, so stale.
        late += [
            pg_event("u", lsn=e["source"]["lsn"] - 1, after={"id": e["before"]["id"], "name": "late", "bio": None})
            for e in history
            if e["op"] == "d" and e["source"]["lsn"] - 1 not in used and rng.random() < 0.5
        ]
        history += events + [e for e in late if e["source"]["lsn"] not in used]
        batch = events + late + rng.sample(events, len(events) // 4)  # duplicates
        rng.shuffle(batch)
        batches.append(batch)
        seen.append(list(history))
    context = spark.sparkContext
    decisions = {"stale": 0, "superseded": 0, "deletes": 0}
    for number, batch in enumerate(batches):
        write_events(source / f"{number:04d}.avro", SCHEMA, batch)
        context.setJobGroup(f"small-plan-{number}", "a round planned in the driver")
        ours = hudi_cdc.ingest(driver, spark=spark)
        context.setJobGroup(f"spark-plan-{number}", "the same round planned by Spark")
        theirs = hudi_cdc.ingest(spark_planned, spark=spark)
        context.setJobGroup(None, None)  # type: ignore[arg-type]
        assert {c: getattr(ours, c) for c in COUNTS} == {c: getattr(theirs, c) for c in COUNTS}, number
        assert theirs.details["plan"] == "spark"
        if number == 0:  # the first commit creates the table: Spark's
            assert ours.details["driver_declined"] == "a new table"
            continue
        decisions = {k: n + getattr(ours, k) for k, n in decisions.items()}
        assert ours.details["plan"] == "driver" and ours.details["writer"] == "java", ours.details.get(
            "driver_declined"
        )
        assert list(context.statusTracker().getJobIdsForGroup(f"small-plan-{number}")) == []
        assert list(context.statusTracker().getJobIdsForGroup(f"spark-plan-{number}")) != []
        expected = expected_rows(apply_events(seen[number]), COLUMNS)
        assert read_rows(spark, str(tmp_path / "t_driver"), COLUMNS) == expected
        assert read_rows(spark, str(tmp_path / "t_spark"), COLUMNS) == expected
    assert all(decisions.values()), decisions  # the driver's rounds made each kind of decision
    # Every written column, the round's own stamp and position included, as the Spark plan writes it.
    written = ["id", "name", "bio", "_source_op", "_source_lsn", "_source_txid", "_source_ts_ms", "_source_snapshot"]
    written += ["_source_order", "_hoodie_is_deleted"]
    assert read_rows(spark, str(tmp_path / "t_driver"), written) == read_rows(spark, str(tmp_path / "t_spark"), written)
    # Each row's stamp is its round's start: the two tables' rounds began seconds apart, never hours (a zone).
    stamps = {t: dict(read_rows(spark, str(tmp_path / t), ["id", "_ingested_at"])) for t in ("t_driver", "t_spark")}
    apart = [abs((stamps["t_driver"][k] - stamps["t_spark"][k]).total_seconds()) for k in stamps["t_spark"]]
    assert stamps["t_driver"].keys() == stamps["t_spark"].keys() and max(apart) < 300, max(apart)

    # TOAST placeholders: filled from the stored rows (read once, for those keys only), from the batch, and one
    # older than its stored row (stale); planned in the driver, counted and written as the Spark plan does.
    stored_key, batch_key, late_key = sorted(live)[:3]
    events = [
        pg_event("u", lsn=lsn + 1, after={"id": stored_key, "name": "kept bio", "bio": PLACEHOLDER}, txid=lsn + 1),
        pg_event("u", lsn=lsn + 2, after={**live[batch_key], "bio": "new bio"}, txid=lsn + 2),
        pg_event("u", lsn=lsn + 3, after={"id": batch_key, "name": "again", "bio": PLACEHOLDER}, txid=lsn + 3),
        pg_event("u", lsn=1, after={"id": late_key, "name": "late", "bio": PLACEHOLDER}, txid=1),
    ]
    history += events[:3]  # the late one is a replay of nothing the source holds now
    write_events(source / "9999.avro", SCHEMA, events)
    context.setJobGroup("small-plan-toast", "placeholders planned in the driver")
    ours = hudi_cdc.ingest(driver, spark=spark)
    context.setJobGroup(None, None)  # type: ignore[arg-type]
    theirs = hudi_cdc.ingest(spark_planned, spark=spark)
    assert ours.details["plan"] == "driver" and "driver_declined" not in ours.details, ours.details
    assert (ours.toast_filled, ours.stale) == (2, 1)
    assert {c: getattr(ours, c) for c in COUNTS} == {c: getattr(theirs, c) for c in COUNTS}
    expected = expected_rows(apply_events(history), COLUMNS)
    assert read_rows(spark, str(tmp_path / "t_driver"), COLUMNS) == expected
    assert read_rows(spark, str(tmp_path / "t_spark"), COLUMNS) == expected
    assert read_rows(spark, str(tmp_path / "t_driver"), written) == read_rows(spark, str(tmp_path / "t_spark"), written)

    # The stored-row lookup reads only the file group its keys hash to (Hudi's bucket query pruning), not the table.
    from hudi_cdc import small_plan
    from hudi_cdc.sink.hudi import HudiTable

    table = HudiTable(spark, str(tmp_path / "t_driver"))
    options = small_plan._read_options(driver, table, ("id",))
    assert options["hoodie.bucket.index.num.buckets"] == "4", options
    rows, files = collect_counting_files(small_plan._stored_frame(table, options, ("id",), [(stored_key,)], ["bio"]))
    assert [(r["id"], r["bio"]) for r in rows] == [(stored_key, live[stored_key]["bio"])]
    assert files == 1
    _, unpruned = collect_counting_files(small_plan._stored_frame(table, {}, ("id",), [(stored_key,)], ["bio"]))
    assert unpruned == 4

    # A placeholder neither the batch nor the table can fill (a key never seen): the Spark plan's to settle.
    unknown = pg_event("u", lsn=lsn + 4, after={"id": 10_000, "name": "?", "bio": PLACEHOLDER}, txid=lsn + 4)
    write_events(source / "9999b.avro", SCHEMA, [unknown])
    from hudi_cdc.errors import MergeError

    with pytest.raises(MergeError, match="never seen"):
        hudi_cdc.ingest(driver, spark=spark)


@pytest.mark.parametrize("flavor", ["postgres", "mysql"])
def test_driver_rows_are_the_spark_flattens(spark, tmp_path: Path, flavor: str) -> None:  # noqa: ANN001
    """One file of every kind of event, decoded and flattened by Spark (``change_rows``) and by the driver
    (``read_in_driver``, ``flat_rows``): the same rows, value by value, every written column."""
    from datetime import UTC, datetime

    from hudi_cdc.envelope.batch import change_rows
    from hudi_cdc.envelope.driver_rows import flat_rows
    from hudi_cdc.policy import merge_policy
    from hudi_cdc.sources.files import FileSource, read_in_driver
    from hudi_cdc.testing import mysql_event
    from payloads.driver import written_columns

    def event(op: str, n: int, image: dict) -> dict:
        side = {"before": image} if op == "d" else {"after": image}
        if flavor == "postgres":
            return pg_event(op, lsn=None if op == "r" and n % 2 else 100 + n, txid=n if n % 3 else None, **side)
        return mysql_event(
            op, file=f"mysql-bin.{n % 3:06d}", pos=4 + n, row=n % 2, gtid=f"g:{n}" if n % 2 else None, **side
        )

    images = [{"id": n, "name": None if n % 4 == 0 else f"ü{n}", "bio": "x" * n if n % 3 else None} for n in range(12)]
    ops = ["r", "c", "u", "d"]
    events = [
        event(ops[n % 4], n, {**image, **({"name": None, "bio": None} if n % 4 == 3 else {})})
        for n, image in enumerate(images)
    ]
    write_events(tmp_path / "events" / "0.avro", envelope_schema("customers", CUSTOMERS, flavor=flavor), events)
    config = _config(tmp_path / "events", tmp_path / "t", flavor=flavor)
    policy = merge_policy(config)
    batch = FileSource(spark, config).next_batch(None)
    assert batch is not None and len(batch.parts) == 1
    now = datetime(2026, 11, 29, 3, 0, tzinfo=UTC)
    flat = change_rows(
        batch, policy, key_fields=("id",), ingested_at=now, behavior=config.schema_change_behavior, table_schema=None
    )
    columns = [c for c in written_columns(flat.columns) if c not in ("_ingested_at",)]
    theirs = sorted(tuple(r) for r in flat.select(*columns).collect())
    read = read_in_driver(batch.parts[0], 100)
    assert not isinstance(read, str), read
    rows = flat_rows(
        read[0], batch.parts[0].avro_schema, source_meta_columns=policy.source_meta_columns, ingested_at=now
    )
    assert not isinstance(rows, str), rows
    ours = sorted(tuple(policy.order_of(r) if c == "_source_order" else r[c] for c in columns) for r in rows.rows)
    assert ours == theirs
    assert {c: t for c, t in rows.types.items()} == {
        f.name: f.dataType.simpleString() for f in flat.schema.fields if f.name in rows.types
    }


def test_kafka_driver_decodes_are_the_spark_decodes(spark, tmp_path: Path) -> None:  # noqa: ANN001
    """A Kafka round's messages as the source's consumer hands them over (Confluent-framed, two writer versions
    of the subject, two partitions, out of arrival order, replays): decoded in one pass and flattened by Spark
    (``_single_pass`` over the frame ``_read_on_driver`` makes, ``change_rows``) and by the driver
    (``decode_in_driver``, ``flat_rows``): the same rows, value by value, at the same arrivals (partition,
    offset). What the single pass turns into an error row (a message not framed, an unknown schema id, a payload
    that does not decode) the driver declines, as it declines a Kafka tombstone; the Spark plan takes those."""
    import dataclasses
    from datetime import UTC, datetime

    from hudi_cdc.envelope.avro_schemas import merged_reader_schema
    from hudi_cdc.envelope.batch import change_rows
    from hudi_cdc.envelope.driver_rows import flat_rows
    from hudi_cdc.envelope.events import Batch
    from hudi_cdc.envelope.types import reader_schema
    from hudi_cdc.policy import merge_policy
    from hudi_cdc.sources.kafka import MESSAGE_SCHEMA, KafkaSource
    from hudi_cdc.sources.kafka_driver import decode_in_driver
    from hudi_cdc.testing.kafka import Framer
    from payloads.base import ARRIVAL_COLUMN, ERROR_COLUMN
    from payloads.driver import written_columns

    topic = "dbserver1.public.customers"
    old, new = CUSTOMERS[:2], CUSTOMERS  # v2 adds bio: v1's messages read it as its default, NULL
    writers = {7: envelope_schema("customers", old), 9: envelope_schema("customers", new)}
    framers = {i: Framer(i, s) for i, s in writers.items()}
    rng = random.Random(11)
    messages: list[tuple[bytes | None, bytes | None, int, int]] = []
    offsets = {0: 40, 1: 3}
    events = []
    for n in range(24):
        op = "rcud"[n % 4]
        image = {"id": n % 9, "name": None if n % 5 == 0 else f"ü{n}", "bio": "b" * n if n % 3 else None}
        schema_id = 7 if n % 2 else 9
        if schema_id == 7:
            image.pop("bio")
        side = {"before": image} if op == "d" else {"after": image}
        events.append((schema_id, pg_event(op, lsn=100 + rng.randint(0, 6), txid=n if n % 3 else None, **side)))
    events += rng.sample(events, 5)  # replays: the same change again, later
    for schema_id, event in events:
        partition = rng.randint(0, 1)
        messages.append((b"k", framers[schema_id](event), partition, offsets[partition]))
        offsets[partition] += rng.randint(1, 2)  # gaps: a compacted topic
    rng.shuffle(messages)  # the consumer interleaves partitions
    config = load_config_for_kafka(tmp_path)
    policy = merge_policy(config)
    source = KafkaSource(spark, config, reader_schema=reader_schema)
    reader = merged_reader_schema([writers[7], writers[9]])
    assert reader is not None

    def single_pass(batch: list) -> Any:  # noqa: ANN401 - a BatchPart
        import pandas as pd

        frame = pd.DataFrame(batch, columns=["key", "value", "partition", "offset"])
        part = source._single_pass(  # the source's own decode of the frame it reads in the driver
            spark.createDataFrame(frame, schema=MESSAGE_SCHEMA), [7, 9], writers, reader, f"{topic}-value"
        )
        schemas = {i: reader_schema(s) for i, s in writers.items()}
        return dataclasses.replace(part, messages=tuple(batch), writer_schemas=schemas)

    part = single_pass(messages)
    now = datetime(2026, 11, 29, 3, 0, tzinfo=UTC)
    flat = change_rows(
        Batch([part], {}, "kafka"),
        policy,
        key_fields=("id",),
        ingested_at=now,
        behavior=config.schema_change_behavior,
        table_schema=None,
    )
    columns = [c for c in written_columns(flat.columns) if c != "_ingested_at"]
    theirs = sorted(
        ((r[ARRIVAL_COLUMN]["partition"], r[ARRIVAL_COLUMN]["offset"]), *r[1:])
        for r in (flat.select(ARRIVAL_COLUMN, *columns).collect())
    )
    read = decode_in_driver(part, 100)
    assert not isinstance(read, str), read
    records, arrivals = read
    assert arrivals == sorted(arrivals) and len(arrivals) == len(messages)  # arrival order, every message
    rows = flat_rows(records, part.avro_schema, source_meta_columns=policy.source_meta_columns, ingested_at=now)
    assert not isinstance(rows, str), rows
    ours = sorted(
        (arrival, *(policy.order_of(r) if c == "_source_order" else r[c] for c in columns))
        for arrival, r in zip(arrivals, rows.rows, strict=True)
    )
    assert ours == theirs
    assert any(r[2] is None for r in ours) and any(r[2] for r in ours)  # v1's bio read as NULL, v2's kept

    # What the single pass makes an error row of: the driver declines each.
    good = messages[0]
    bad = {
        "a message not in the Confluent wire format": b'{"op": "c"}',
        "schema id 8 at": b"\x00\x00\x00\x00\x08" + good[1][5:],  # type: ignore[index]
        "a payload that does not decode": good[1][:5] + b"\x02\xff",  # type: ignore[index]
    }
    for offset, (why, value) in enumerate(bad.items(), start=999):
        found = decode_in_driver(single_pass([good, (b"k", value, 1, offset)]), 100)
        assert isinstance(found, str) and why in found and f"partition 1 offset {offset}" in found, found
    # The Spark plan reports (or quarantines) each; a Kafka tombstone its single pass drops, and so does the driver.
    tombstone = (b"k", None, 1, 1002)
    spark_part = single_pass([good, *((b"k", value, 1, offset) for offset, value in enumerate(bad.values(), 999)),
                              tombstone])  # fmt: skip
    errors = spark_part.envelopes.where(f"{ERROR_COLUMN} IS NOT NULL").select(f"{ARRIVAL_COLUMN}.offset").collect()
    assert sorted(r[0] for r in errors) == [999, 1000, 1001] and spark_part.envelopes.count() == 4
    with_tombstone = decode_in_driver(single_pass([good, tombstone]), 100)
    assert with_tombstone == decode_in_driver(single_pass([good]), 100) and not isinstance(with_tombstone, str)
    assert decode_in_driver(part, len(messages) - 1) == f"more than {len(messages) - 1} events"

    # A failure of the driver's own (here a writer schema fastavro cannot parse) hands the round to the Spark plan.
    from hudi_cdc.small_plan import Declined, plan_in_driver

    broken = dataclasses.replace(part, writer_schemas={**part.writer_schemas, 9: {"type": "no such type"}})
    details = {"read": "driver", "decode": "single-pass"}
    failed = plan_in_driver(
        spark,
        config,
        Batch([broken], {}, "kafka", details=details),
        policy=policy,
        table=None,  # type: ignore[arg-type] - never reached
        keys=("id",),
        tombstones=None,  # type: ignore[arg-type]
        now=now,
        truncated_at=None,
        committed=True,
    )
    assert isinstance(failed, Declined) and failed.failed and "no such type" in failed.why, failed


def load_config_for_kafka(tmp_path: Path, **settings: Any) -> Any:  # noqa: ANN401
    from hudi_cdc import load_config

    return load_config(
        env={},
        source="kafka",
        topic="dbserver1.public.customers",
        bootstrap_servers="127.0.0.1:1",  # never asked: the messages are given
        schema_registry_url="http://127.0.0.1:1",
        target_base_path=str(tmp_path / "t"),
        target_table="t",
        record_key_fields="id",
        flavor="postgres",
        **{"table_type": "MERGE_ON_READ", **settings},
    )


def test_which_kafka_tables_the_driver_plans(tmp_path: Path) -> None:
    """By its settings alone: a MERGE_ON_READ table of an Avro topic may be planned in the driver; a JSON topic,
    a COPY_ON_WRITE table, or a table with no Java writer never is (their rounds go to the Spark plan)."""
    from hudi_cdc.policy import merge_policy
    from hudi_cdc.small_plan import ineligible

    def why(**settings: Any) -> str | None:
        config = load_config_for_kafka(tmp_path, **settings)
        return ineligible(config, merge_policy(config), ("id",))

    assert why() is None
    assert why(kafka_value_format="json") == "a json topic (the driver decodes Avro in the Confluent wire format only)"
    assert why(table_type="COPY_ON_WRITE") == why(java_writer_max_rows=0) == "not a small MERGE_ON_READ round"


def test_what_the_schema_alone_declines_is_declined_before_any_message_is_decoded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A table whose columns the driver never reads (here a geometry, a record) costs no decode of its
    rounds' messages: the benchmark's 50 tables decoded and flattened every round in Python, then declined."""
    from types import SimpleNamespace

    from hudi_cdc import small_plan
    from hudi_cdc.envelope.events import Batch, BatchPart
    from hudi_cdc.policy import merge_policy
    from hudi_cdc.spark import ARROW_ENABLED

    config = load_config_for_kafka(tmp_path)
    geometry = {"type": "record", "name": "Point", "namespace": "io.debezium.data.geometry", "fields": [
        {"name": "x", "type": "double"}, {"name": "y", "type": "double"}]}  # fmt: skip
    schema = envelope_schema("customers", [*CUSTOMERS, ("at", ["null", geometry])])
    monkeypatch.setattr(small_plan, "decode_in_driver", lambda *args: pytest.fail("a message was decoded"))
    part = BatchPart(envelopes=SimpleNamespace(columns=["before", "after", "source", "op"]), avro_schema=schema,  # type: ignore[arg-type]
                     messages=((b"k", b"\x00\x00\x00\x00\x01", 0, 0),), writer_schemas={1: schema})  # fmt: skip
    declined = small_plan.plan_in_driver(
        SimpleNamespace(conf={ARROW_ENABLED: "true"}),  # type: ignore[arg-type]
        config,
        Batch([part], {}, "kafka", details={"read": "driver", "decode": "single-pass"}),
        policy=merge_policy(config),
        table=None,  # type: ignore[arg-type] - never reached
        keys=("id",),
        tombstones=None,  # type: ignore[arg-type]
        now=datetime.now(UTC),
        truncated_at=None,
        committed=True,
    )
    assert declined == small_plan.Declined("column 'at': an Avro record, which the driver does not read")


def _typed_image(rng: random.Random, key: int) -> dict[str, Any]:
    """A row of every logical type the driver converts (tests/envelope/test_driver_rows.py's columns), its
    values from 1900 to 2100 (before 1900, Spark's Avro writer refuses a timestamp), NULLs now and then."""
    from tests.envelope.test_driver_rows import _unscaled, _zoned

    day = rng.randint(-25_567, 47_482)  # 1900-01-01 .. 2100-01-01
    us = day * 86_400_000_000 + rng.randint(0, 86_400_000_000 - 1)

    def number(digits: int) -> bytes:
        return _unscaled(
            rng.choice([10**digits - 1, -(10**digits) + 1, 0, rng.randint(-(10**digits) + 1, 10**digits - 1)])
        )

    image = {
        "id": key,
        "day": day,
        "ts_ms": us // 1000,
        "ts_us": us,
        "ts_ns": us * 1000 + rng.randint(0, 999),
        "tstz": _zoned(datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=us), rng.randint(-600, 600), 6),
        "t_ms": rng.choice([0, 86_400_000, rng.randint(0, 86_399_999)]),
        "t_us": rng.choice([0, 86_400_000_000, rng.randint(0, 86_399_999_999)]),
        "t_ns": rng.randint(0, 86_400_000_000_000),
        "price": number(10),
        "widest": number(38),
        "huge": number(50),
        "loose": number(45),
        "anynum": {"scale": rng.randint(-3, 12), "value": number(30)},
        "a_day": day,
        "a_ms": us // 1000,
        "a_us": us,
        "a_dec": number(38),
        "c_day": day,
        "c_ts": us // 1000,
        "days": [day, None, day - 1],
        "stamps": [us, None],
        "prices": [number(10), None],
        "ints": [key, None],
    }
    return {c: (None if c != "id" and rng.random() < 0.1 else v) for c, v in image.items()}


def test_a_table_of_logical_types_is_planned_in_the_driver(spark, tmp_path: Path) -> None:  # noqa: ANN001
    """Dates, timestamps (ms, µs, ns, zoned), times of day, decimals of every width, arrays of them, and Avro's
    own date, timestamp and decimal: a MERGE_ON_READ table of these has its small rounds planned in the driver
    (no driver_declined, no Spark job) and read back equal to the same rounds planned by Spark."""
    import hudi_cdc
    from tests.envelope.test_driver_rows import SCHEMA, TYPES

    rng = random.Random(66)
    source = tmp_path / "events"
    driver = _config(source, tmp_path / "t_driver")
    spark_planned = _config(source, tmp_path / "t_spark", java_writer_max_rows=0)
    keys, lsn = 12, 1000
    live = {k: _typed_image(rng, k) for k in range(keys)}
    rounds = [[pg_event("r", lsn=lsn, after=row) for row in live.values()]]
    keys_after = [sorted(live)]  # the keys each round leaves
    for _ in range(2):
        events = []
        for key in rng.sample(range(keys + 4), 8):
            lsn += 1
            if key in live and rng.random() < 0.3:
                events.append(pg_event("d", lsn=lsn, before=live.pop(key)))
            else:
                op = "u" if key in live else "c"
                live[key] = _typed_image(rng, key)
                events.append(pg_event(op, lsn=lsn, after=live[key], txid=lsn))
        rounds.append(events + rng.sample(events, 2))  # duplicates
        keys_after.append(sorted(live))
    context = spark.sparkContext
    columns = ["id", *[c for c in TYPES if c != "id"], "_source_op", "_source_lsn", "_hoodie_is_deleted"]
    for number, batch in enumerate(rounds):
        write_events(source / f"{number:04d}.avro", SCHEMA, batch)
        context.setJobGroup(f"typed-driver-{number}", "a round of logical types planned in the driver")
        ours = hudi_cdc.ingest(driver, spark=spark)
        context.setJobGroup(None, None)  # type: ignore[arg-type]
        theirs = hudi_cdc.ingest(spark_planned, spark=spark)
        assert {c: getattr(ours, c) for c in COUNTS} == {c: getattr(theirs, c) for c in COUNTS}, number
        if number:
            assert ours.details["plan"] == "driver" and "driver_declined" not in ours.details, ours.details
            assert ours.details["writer"] == "java"
            assert list(context.statusTracker().getJobIdsForGroup(f"typed-driver-{number}")) == []
        found = read_rows(spark, str(tmp_path / "t_driver"), columns)
        assert found == read_rows(spark, str(tmp_path / "t_spark"), columns)
        assert [r[0] for r in found] == keys_after[number]
    schemas = [spark.read.format("hudi").load(str(tmp_path / t)).schema for t in ("t_driver", "t_spark")]
    assert {f.name: f.dataType.simpleString() for f in schemas[0].fields if f.name in TYPES} == TYPES
    assert schemas[0] == schemas[1]
