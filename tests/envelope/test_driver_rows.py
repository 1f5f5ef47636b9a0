"""Property: the driver's flat rows of Debezium's logical types are the Spark flatten's, value for value, type for type.

Hypothesis draws envelopes whose columns carry every conversion ``envelope.types`` makes (Debezium's dates,
timestamps in ms, µs and ns, ZonedTimestamp text, times of day in ms, µs and ns, Connect decimals narrow,
widest, wider than Spark's and without precision, VariableScaleDecimal), the logical types spark-avro reads
itself (date, timestamp-millis, timestamp-micros, decimal) and arrays of converted items, with their edges
(the epoch, before 1970, Python's first and last day, nanoseconds not divisible by 1000, 24:00:00, decimals of
every digit their precision allows, NULLs). Each batch goes through the files source or Confluent-framed
Kafka messages, decoded and flattened by Spark (``change_rows``) and by the driver (``read_in_driver`` or
``decode_in_driver``, then ``flat_rows``). Where no value is one whose conversion in Python is not certain (a
date Python cannot hold, a negative time of day, a ZonedTimestamp in another form, a decimal with more digits
than its precision...), the driver must take the batch and give Spark's values; where one is, it must decline,
naming the column.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from hudi_cdc.testing import envelope_schema, pg_event, write_events

D = "io.debezium.time."
CONNECT_DECIMAL = "org.apache.kafka.connect.data.Decimal"
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
FIRST_DAY, LAST_DAY = -719_162, 2_932_896  # 0001-01-01 and 9999-12-31, days from the epoch
FIRST_US, LAST_US = FIRST_DAY * 86_400_000_000, (LAST_DAY + 1) * 86_400_000_000 - 1
GREGORIAN, REBASED_US = -141_427, -2_208_988_800_000_000  # 1582-10-15 (days) and 1900-01-01T00:00:00Z (µs)
INGESTED = datetime(2026, 11, 29, 3, 0, tzinfo=UTC)


def _t(physical: str, connect_name: str | None = None, **extra: Any) -> list[Any]:  # noqa: ANN401
    return ["null", {"type": physical, **({"connect.name": connect_name} if connect_name else {}), **extra}]


def _connect_decimal(precision: int | None, scale: int) -> dict[str, Any]:
    parameters = {"scale": str(scale), **({"connect.decimal.precision": str(precision)} if precision else {})}
    logical = {"logicalType": "decimal", "precision": precision} if precision else {}
    return {"type": "bytes", "connect.name": CONNECT_DECIMAL, "scale": scale, **logical,
            "connect.parameters": parameters}  # fmt: skip


VARIABLE_SCALE = {
    "type": "record",
    "name": "VariableScaleDecimal",
    "namespace": "io.debezium.data",
    "fields": [{"name": "scale", "type": "int"}, {"name": "value", "type": "bytes"}],
    "connect.name": "io.debezium.data.VariableScaleDecimal",
}
COLUMNS: list[tuple[str, Any]] = [
    ("id", "long"),
    ("day", _t("int", D + "Date")),
    ("ts_ms", _t("long", D + "Timestamp")),
    ("ts_us", _t("long", D + "MicroTimestamp")),
    ("ts_ns", _t("long", D + "NanoTimestamp")),
    ("tstz", _t("string", D + "ZonedTimestamp")),
    ("t_ms", _t("int", D + "Time")),
    ("t_us", _t("long", D + "MicroTime")),
    ("t_ns", _t("long", D + "NanoTime")),
    ("price", ["null", _connect_decimal(10, 2)]),
    ("widest", ["null", _connect_decimal(38, 10)]),
    ("huge", ["null", _connect_decimal(50, 5)]),
    ("loose", ["null", _connect_decimal(None, 3)]),
    ("anynum", ["null", VARIABLE_SCALE]),
    ("a_day", _t("int", logicalType="date")),
    ("a_ms", _t("long", logicalType="timestamp-millis")),
    ("a_us", _t("long", logicalType="timestamp-micros")),
    ("a_dec", _t("bytes", logicalType="decimal", precision=38, scale=0)),
    # Connect's Date and Timestamp as Confluent's Avro converter writes them: with Avro's logical type too.
    ("c_day", _t("int", "org.apache.kafka.connect.data.Date", logicalType="date")),
    ("c_ts", _t("long", "org.apache.kafka.connect.data.Timestamp", logicalType="timestamp-millis")),
    ("days", ["null", {"type": "array", "items": _t("int", D + "Date")}]),
    ("stamps", ["null", {"type": "array", "items": _t("long", D + "MicroTimestamp")}]),
    ("prices", ["null", {"type": "array", "items": ["null", _connect_decimal(10, 2)]}]),
    ("ints", ["null", {"type": "array", "items": ["null", "int"]}]),
]
SCHEMA = envelope_schema("things", COLUMNS)
TYPES = {
    "id": "bigint",
    "day": "date",
    "ts_ms": "timestamp",
    "ts_us": "timestamp",
    "ts_ns": "timestamp",
    "tstz": "timestamp",
    "t_ms": "string",
    "t_us": "string",
    "t_ns": "string",
    "price": "decimal(10,2)",
    "widest": "decimal(38,10)",
    "huge": "string",
    "loose": "string",
    "anynum": "string",
    "a_day": "date",
    "a_ms": "timestamp",
    "a_us": "timestamp",
    "a_dec": "decimal(38,0)",
    "c_day": "date",
    "c_ts": "timestamp",
    "days": "array<date>",
    "stamps": "array<timestamp>",
    "prices": "array<decimal(10,2)>",
    "ints": "array<int>",
}


def _unscaled(value: int) -> bytes:
    return value.to_bytes(max(1, (value.bit_length() + 8) // 8), "big", signed=True)


def _edges(lo: int, hi: int, *more: int) -> st.SearchStrategy[int]:
    return st.one_of(st.sampled_from([lo, hi, 0, -1, 1, *more]), st.integers(lo, hi))


def _digits(n: int) -> st.SearchStrategy[int]:
    """An unscaled decimal of at most ``n`` digits, its edges first."""
    top = 10**n - 1
    return _edges(-top, top, 10 ** (n - 1))


def _zoned(instant: datetime, offset_minutes: int, decimals: int) -> str:
    local = instant + timedelta(minutes=offset_minutes)
    fraction = f"{local.microsecond:06d}"[:decimals].rstrip("0") if decimals else ""
    sign, minutes = ("+" if offset_minutes >= 0 else "-"), abs(offset_minutes)
    zone = "Z" if offset_minutes == 0 else f"{sign}{minutes // 60:02d}:{minutes % 60:02d}"
    text = f"{local.year:04d}-{local.month:02d}-{local.day:02d}T{local.hour:02d}:{local.minute:02d}:{local.second:02d}"
    return text + (f".{fraction}" if fraction else "") + zone


ZONED = st.builds(
    _zoned,
    st.datetimes(datetime(2, 1, 1), datetime(9998, 12, 31)).map(lambda d: d.replace(tzinfo=UTC)),
    st.one_of(st.just(0), st.integers(-18 * 60, 18 * 60)),
    st.integers(0, 6),
)


def _time(unit: int) -> st.SearchStrategy[int]:
    return _edges(0, 86_400 * unit, 86_400 * unit - 1, 43_200 * unit + 1).filter(lambda v: v >= 0)


# Per column: values the driver must take, and values it must decline (its conversion is not certain).
TAKEN: dict[str, st.SearchStrategy[Any]] = {
    "day": _edges(FIRST_DAY, LAST_DAY, GREGORIAN, GREGORIAN - 1),  # Debezium's days: no calendar of Spark's
    "ts_ms": _edges(FIRST_US // 1000, LAST_US // 1000, REBASED_US // 1000 - 1),
    "ts_us": _edges(FIRST_US, LAST_US, 1_709_251_199_123_456),
    "ts_ns": _edges(-(2**63) + 1000, 2**63 - 1, 1_180_968_666_138_000_868, -1_000_000_001),
    "tstz": st.one_of(
        ZONED,
        st.sampled_from(
            [
                "1970-01-01T00:00:00Z",
                "0001-01-01T00:00:00Z",
                "9999-12-31T23:59:59.999999Z",
                "1969-12-31T23:59:59.5-01:30",
            ]
        ),
    ),  # fmt: skip
    "t_ms": _time(1000),
    "t_us": _time(1_000_000),
    "t_ns": _time(1_000_000_000),
    "price": _digits(10).map(_unscaled),
    "widest": _digits(38).map(_unscaled),
    "huge": st.integers(0, 9)
    .flatmap(lambda n: _digits(50) if n else st.just(10**50))
    .map(_unscaled),  # see HUGE_ROUNDED
    "loose": _edges(-(10**60), 10**60).map(_unscaled),
    "anynum": st.builds(lambda s, v: {"scale": s, "value": _unscaled(v)}, st.integers(-5, 40), _digits(45)),
    # Avro's own logical types: from 1582-10-15 and 1900-01-01 on (before, Spark's Avro reader rebases or refuses).
    "a_day": _edges(GREGORIAN, LAST_DAY),
    "a_ms": _edges(REBASED_US // 1000, LAST_US // 1000),
    "a_us": _edges(REBASED_US, LAST_US),
    "a_dec": _digits(38).map(_unscaled),
    "c_day": _edges(FIRST_DAY, LAST_DAY, GREGORIAN - 1),  # read as the number (envelope.types.reader_schema)
    "c_ts": _edges(FIRST_US // 1000, LAST_US // 1000, REBASED_US // 1000 - 1),
    "days": st.lists(st.one_of(st.none(), _edges(FIRST_DAY, LAST_DAY)), max_size=3),
    "stamps": st.lists(st.one_of(st.none(), _edges(FIRST_US, LAST_US)), max_size=3),
    "prices": st.lists(st.one_of(st.none(), _digits(10).map(_unscaled)), max_size=3),
    "ints": st.lists(st.one_of(st.none(), st.integers(-(2**31), 2**31 - 1)), max_size=3),
}
DECLINED: dict[str, st.SearchStrategy[Any]] = {
    "day": st.sampled_from([FIRST_DAY - 1, LAST_DAY + 1, 2**31 - 1, -(2**31)]),
    "ts_ms": st.sampled_from([FIRST_US // 1000 - 1, LAST_US // 1000 + 1]),
    "ts_us": st.sampled_from([FIRST_US - 1, LAST_US + 1, 2**63 - 1]),
    "ts_ns": st.sampled_from([-(2**63), -(2**63) + 191]),  # its whole microseconds overflow a long in Spark
    "tstz": st.sampled_from(
        [
            "2024-02-29T21:59:59.123456789Z",
            "2024-02-29 21:59:59Z",
            "2024-02-29T21:59:59+05:30:15",
            "0001-01-01T00:30:00+01:00",
            "2024-02-30T00:00:00Z",
            "2024-02-29T24:00:00Z",
            "2024-02-29T21:59:59-00:00",
            "2024-02-29T21:59:59+19:00",
            "2024-02-29T21:59:59-18:30",  # beyond Java's offsets: Spark reads NULL
            "\u0661\u0669\u0667\u0660-01-01T00:00:00Z",  # Arabic-Indic digits: Python reads them
        ]
    ),  # fmt: skip
    "t_ms": st.sampled_from([-1, 86_400_001, 2**31 - 1]),
    "t_us": st.sampled_from([-1, 86_400_000_001]),
    "t_ns": st.sampled_from([-1, 86_400_000_000_001]),
    "price": st.sampled_from([10**10, -(10**10)]).map(_unscaled),  # 11 digits in a decimal(10,2)
    "widest": st.just(10**38).map(_unscaled),
    "a_dec": st.just(-(10**38)).map(_unscaled),
    "days": st.just([0, LAST_DAY + 1]),
    "c_day": st.sampled_from([FIRST_DAY - 1, LAST_DAY + 1]),  # from a file, fastavro's decode fails
    "a_day": st.sampled_from([GREGORIAN - 1, FIRST_DAY, FIRST_DAY - 1]),  # the last: fastavro's decode fails
    "a_ms": st.sampled_from([REBASED_US // 1000 - 1, FIRST_US // 1000]),
    "a_us": st.sampled_from([REBASED_US - 1, FIRST_US]),
}
HUGE_ROUNDED = _unscaled(10**50)  # from a file fastavro rounds it to 50 digits; Kafka's reader schema reads bytes


def _image(data: st.DataObject, key: int, rare: bool) -> tuple[dict[str, Any], str | None]:
    """A row image with a NULL now and then; with ``rare``, one value the driver must decline (its column)."""
    image: dict[str, Any] = {"id": key}
    for name, values in TAKEN.items():
        image[name] = data.draw(st.one_of(st.none(), values))
    if not rare:
        return image, None
    column = data.draw(st.sampled_from(sorted(DECLINED)))
    image[column] = data.draw(DECLINED[column])
    return image, column


def _comparable(value: Any, ddl: str) -> Any:  # noqa: ANN401
    """A value as the comparison sees it: a timestamp as µs from the epoch, a date as days, a decimal as a Fraction."""
    if value is None:
        return None
    if ddl.startswith("array<"):
        return [_comparable(v, ddl[6:-1]) for v in value]
    if ddl == "timestamp":
        return (value - EPOCH) // timedelta(microseconds=1)
    if ddl == "date":
        return (value - date(1970, 1, 1)).days
    if ddl.startswith("decimal"):  # its scale is the column's (a collect may print it otherwise: 1.00E-10)
        scale = int(ddl.rstrip(")").split(",")[1])
        assert value.as_tuple().exponent == -scale, (value, ddl)
        return Fraction(value)
    return value


def _spark_comparable(flat: Any, columns: list[str]) -> list[Any]:  # noqa: ANN401
    from pyspark.sql import functions as F

    def column(name: str) -> Any:  # noqa: ANN401
        ddl = flat.schema[name].dataType.simpleString()
        on = {"timestamp": F.unix_micros, "date": F.unix_date}
        if ddl in on:
            return on[ddl](F.col(name)).alias(name)
        if ddl[6:-1] in on:
            return F.transform(F.col(name), on[ddl[6:-1]]).alias(name)
        return F.col(name)

    rows = flat.select(*[column(c) for c in columns]).collect()
    return sorted(
        (tuple(Fraction(v) if isinstance(v, Decimal) else [Fraction(x) if isinstance(x, Decimal) else x
               for x in v] if isinstance(v, list) else v for v in r) for r in rows), key=repr)  # fmt: skip


def _parts(spark: Any, source: str, events: list[dict[str, Any]], where: Path) -> tuple[Any, Any]:  # noqa: ANN401
    """The batch's one part as the source makes it, and what the driver reads of it (records, arrivals) or why not."""
    from hudi_cdc.envelope.events import Batch
    from hudi_cdc.envelope.types import reader_schema
    from hudi_cdc.sources.files import FileSource, read_in_driver
    from hudi_cdc.sources.kafka import MESSAGE_SCHEMA, KafkaSource
    from hudi_cdc.sources.kafka_driver import decode_in_driver
    from hudi_cdc.testing.kafka import Framer
    from tests.test_small_plan import _config, load_config_for_kafka

    if source == "files":
        write_events(where / "events" / "0.avro", SCHEMA, events)
        config = _config(where / "events", where / "t")
        batch = FileSource(spark, config, reader_schema=reader_schema).next_batch(None)
        assert batch is not None and len(batch.parts) == 1
        return batch, read_in_driver(batch.parts[0], 100)
    import pandas as pd

    frame = Framer(5, SCHEMA)
    messages = [(None, frame(e), 0, offset) for offset, e in enumerate(events)]
    config = load_config_for_kafka(where)
    kafka = KafkaSource(spark, config, reader_schema=reader_schema)
    read = spark.createDataFrame(
        pd.DataFrame(messages, columns=["key", "value", "partition", "offset"]), MESSAGE_SCHEMA
    )
    part = kafka._single_pass(read, [5], {5: SCHEMA}, reader_schema(SCHEMA), "dbserver1.public.things-value")
    part = dataclasses.replace(part, messages=tuple(messages), writer_schemas={5: reader_schema(SCHEMA)})
    return Batch([part], {}, "kafka"), decode_in_driver(part, 100)


@pytest.mark.parametrize("source", ["files", "kafka"])
@settings(
    max_examples=20,  # a Spark read and flatten per example taken (~2 s); a decline needs none
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_driver_rows_of_logical_types_are_the_spark_flattens(spark, tmp_path_factory, source: str, data) -> None:  # noqa: ANN001
    from hudi_cdc.envelope.batch import change_rows
    from hudi_cdc.envelope.driver_rows import flat_rows
    from payloads import PostgresPolicy

    policy = PostgresPolicy()
    rare = data.draw(st.integers(0, 3)) == 0  # a value the driver must decline, one batch in four
    events, declines = [], set()
    for n in range(data.draw(st.integers(1, 4))):
        op = data.draw(st.sampled_from("crud"))
        image, column = _image(data, n, rare and n == 0)
        declines |= {column} if column else set()
        if source == "files" and image["huge"] == HUGE_ROUNDED:
            declines.add("huge")
        events.append(pg_event(op, lsn=100 + n, txid=n, **({"before": image} if op == "d" else {"after": image})))
    batch, read = _parts(spark, source, events, tmp_path_factory.mktemp(source))
    rows = read if isinstance(read, str) else flat_rows(read[0], batch.parts[0].avro_schema,
                                                         source_meta_columns=policy.source_meta_columns,
                                                         ingested_at=INGESTED)  # fmt: skip
    event("declined" if declines else "taken")
    if declines:
        # Named: the column's conversion, or fastavro's decode of a logical type Python cannot hold.
        assert isinstance(rows, str), f"taken: {declines}"
        assert any(f"column {c!r}" in rows for c in declines) or "decode" in rows, (rows, declines)
        return
    assert not isinstance(rows, str), rows
    assert {c: rows.types[c] for c in TYPES} == TYPES
    flat = change_rows(batch, policy, key_fields=("id",), ingested_at=INGESTED, behavior="evolve", table_schema=None)
    assert {c: flat.schema[c].dataType.simpleString() for c in TYPES} == TYPES  # type for type
    columns = [c for c in rows.columns if c in flat.columns and not c.startswith("_") or c in ("_source_op",)]
    ours = sorted((tuple(_comparable(r[c], rows.types.get(c, "")) for c in columns) for r in rows.rows), key=repr)
    assert ours == _spark_comparable(flat, columns)  # value for value
