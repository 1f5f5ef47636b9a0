"""Every Debezium logical type through the real ingest path, value for value (docs/types.md)."""

from __future__ import annotations

import datetime as dt
import decimal
from decimal import Decimal
from pathlib import Path

import pytest

from hudi_cdc.envelope.types import reader_schema, value_conversions
from hudi_cdc.testing import envelope_schema, pg_event, write_events
from tests.support import ingest_args, run_cli


def _t(physical: str, connect_name: str | None = None, **extra: object) -> list:
    schema: dict = {"type": physical, **extra}
    if connect_name:
        schema["connect.name"] = connect_name
    return ["null", schema]


def _unscaled(value: int, length: int = 16) -> bytes:
    return value.to_bytes(length, "big", signed=True)


D = "io.debezium."
# (column, Avro type as Debezium writes it, value written, Spark type, value read back)
CASES = [
    # Avro, and so Hudi, has no 16-bit int: smallint comes back as int.
    ("i16", _t("int", **{"connect.type": "int16"}), -32768, "int", -32768),
    ("i32", ["null", "int"], 2**31 - 1, "int", 2**31 - 1),
    ("i64", ["null", "long"], -(2**63), "bigint", -(2**63)),
    ("f32", ["null", "float"], 1.5, "float", 1.5),
    ("f64", ["null", "double"], 1e300, "double", 1e300),
    ("flag", ["null", "boolean"], True, "boolean", True),
    (
        "price",
        _t(
            "bytes",
            "org.apache.kafka.connect.data.Decimal",
            logicalType="decimal",
            precision=10,
            scale=2,
            **{"connect.parameters": {"scale": "2", "connect.decimal.precision": "10"}},
        ),
        Decimal("-12345678.91"),
        "decimal(10,2)",
        Decimal("-12345678.91"),
    ),
    (
        "huge",
        [
            "null",
            {
                "type": "bytes",
                "connect.name": "org.apache.kafka.connect.data.Decimal",
                "scale": 5,
                "precision": 50,
                "logicalType": "decimal",
                "connect.parameters": {"scale": "5", "connect.decimal.precision": "50"},
            },
        ],
        Decimal("123456789012345678901234567890123456789012.34567"),
        "string",
        "123456789012345678901234567890123456789012.34567",
    ),
    (
        "any_numeric",
        [
            "null",
            {
                "type": "record",
                "name": "VariableScaleDecimal",
                "namespace": "io.debezium.data",
                "fields": [{"name": "scale", "type": "int"}, {"name": "value", "type": "bytes"}],
                "connect.name": D + "data.VariableScaleDecimal",
            },
        ],
        {"scale": 7, "value": _unscaled(-31415926535)},
        "string",
        "-3141.5926535",
    ),
    ("day", _t("int", D + "time.Date"), 19782, "date", dt.date(2024, 2, 29)),
    ("before_epoch", _t("int", D + "time.Date"), -25567, "date", dt.date(1900, 1, 1)),
    # Confluent's Avro converter adds Avro's logical type to Connect's Date, Time and Timestamp.
    ("c_day", _t("int", "org.apache.kafka.connect.data.Date", logicalType="date"), 19782, "date", dt.date(2024, 2, 29)),
    (
        "c_ts",
        _t("long", "org.apache.kafka.connect.data.Timestamp", logicalType="timestamp-millis"),
        1709251199123,
        "timestamp",
        dt.datetime(2024, 2, 29, 23, 59, 59, 123000),
    ),
    (
        "c_time",
        _t("int", "org.apache.kafka.connect.data.Time", logicalType="time-millis"),
        45296789,
        "string",
        "12:34:56.789",
    ),  # fmt: skip
    (
        "ts_ms",
        _t("long", D + "time.Timestamp"),
        1709251199123,
        "timestamp",
        dt.datetime(2024, 2, 29, 23, 59, 59, 123000),
    ),
    (
        "ts_us",
        _t("long", D + "time.MicroTimestamp"),
        1709251199123456,
        "timestamp",
        dt.datetime(2024, 2, 29, 23, 59, 59, 123456),
    ),
    (
        "ts_ns",
        _t("long", D + "time.NanoTimestamp"),
        1709251199123456789,
        "timestamp",
        dt.datetime(2024, 2, 29, 23, 59, 59, 123456),
    ),
    ("ts_old", _t("long", D + "time.MicroTimestamp"), -1, "timestamp", dt.datetime(1969, 12, 31, 23, 59, 59, 999999)),
    (
        "tstz",
        _t("string", D + "time.ZonedTimestamp"),
        "2024-02-29T23:59:59.123456+02:00",
        "timestamp",
        dt.datetime(2024, 2, 29, 21, 59, 59, 123456),
    ),
    ("t_ms", _t("int", D + "time.Time"), 45296789, "string", "12:34:56.789"),
    ("t_us", _t("long", D + "time.MicroTime"), 45296789012, "string", "12:34:56.789012"),
    ("t_ns", _t("long", D + "time.NanoTime"), 45296789012345, "string", "12:34:56.789012345"),
    ("t_tz", _t("string", D + "time.ZonedTime"), "12:34:56.789Z", "string", "12:34:56.789Z"),
    ("dur", _t("long", D + "time.MicroDuration"), 90061000001, "bigint", 90061000001),
    ("yr", _t("int", D + "time.Year"), 2024, "int", 2024),
    ("dec_as_double", ["null", "double"], 0.1, "double", 0.1),  # decimal.handling.mode=double
    ("dec_as_text", ["null", "string"], "12.3400", "string", "12.3400"),  # decimal.handling.mode=string
    ("doc", _t("string", D + "data.Json"), '{"a": [1, 2]}', "string", '{"a": [1, 2]}'),
    (
        "uid",
        _t("string", D + "data.Uuid"),
        "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
        "string",
        "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
    ),
    ("mood", _t("string", D + "data.Enum"), "happy", "string", "happy"),
    ("moods", _t("string", D + "data.EnumSet"), "happy,sad", "string", "happy,sad"),
    ("xml", _t("string", D + "data.Xml"), "<a>1</a>", "string", "<a>1</a>"),
    ("bits", _t("bytes", D + "data.Bits"), b"\x05", "binary", b"\x05"),
    ("raw", ["null", "bytes"], b"\x00\xffbytes", "binary", b"\x00\xffbytes"),
    ("ints", ["null", {"type": "array", "items": ["null", "int"]}], [1, None, 3], "array<int>", [1, None, 3]),
    ("texts", ["null", {"type": "array", "items": ["null", "string"]}], ["a", "b"], "array<string>", ["a", "b"]),
    (
        "days",
        ["null", {"type": "array", "items": ["null", {"type": "int", "connect.name": D + "time.Date"}]}],
        [0, 19782],
        "array<date>",
        [dt.date(1970, 1, 1), dt.date(2024, 2, 29)],
    ),
    (
        "geo",
        [
            "null",
            {
                "type": "record",
                "name": "Geometry",
                "namespace": "io.debezium.data.geometry",
                "fields": [{"name": "wkb", "type": "bytes"}, {"name": "srid", "type": ["null", "int"]}],
                "connect.name": D + "data.geometry.Geometry",
            },
        ],
        {"wkb": b"\x01\x01", "srid": 4326},
        "struct<wkb:binary,srid:int>",
        (b"\x01\x01", 4326),
    ),
]
COLUMNS = [("id", "long")] + [(name, avro) for name, avro, *_ in CASES]
SCHEMA = envelope_schema("all_types", COLUMNS)


def test_schema_mapping_needs_no_spark() -> None:
    conversions = value_conversions(reader_schema(SCHEMA))
    assert conversions["day"].target == "date" and conversions["days"].target == "array<date>"
    assert conversions["huge"].target == "string" and "i16" not in conversions
    assert "price" not in conversions  # spark-avro reads decimal(10,2) itself
    huge = next(f for f in reader_schema(SCHEMA)["fields"][0]["type"][1]["fields"] if f["name"] == "huge")
    assert "logicalType" not in huge["type"][1]  # read as raw bytes, converted exactly


def _normalise(value: object) -> object:
    if isinstance(value, bytearray):
        return bytes(value)
    if hasattr(value, "asDict"):
        return tuple(_normalise(v) for v in value)  # type: ignore[attr-defined]
    return value


@pytest.mark.hudi
@pytest.mark.parametrize("table_type", ["cow", "mor"])
def test_every_type_round_trips(spark, tmp_path: Path, table_type: str) -> None:
    source, base = tmp_path / "events", str(tmp_path / "table")
    full = {"id": 1, **{name: written for name, _, written, _, _ in CASES}}
    empty = {"id": 2, **{name: None for name, *_ in CASES}}
    with decimal.localcontext(prec=100):  # fastavro encodes Decimals in the current context
        write_events(source / "a.avro", SCHEMA, [pg_event("c", lsn=10, after=full), pg_event("c", lsn=11, after=empty)])
    result = run_cli(*ingest_args(str(source), base, table_type=table_type))
    assert result.exit_code == 0, result.output

    table = spark.read.format("hudi").load(base)
    types = {f.name: f.dataType.simpleString() for f in table.schema.fields}
    rows = {r["id"]: r for r in table.collect()}
    wrong = []
    for name, _, _, spark_type, expected in CASES:
        got = _normalise(rows[1][name])
        if types[name] != spark_type or got != expected:
            wrong.append(f"{name}: expected {spark_type} {expected!r}, table has {types[name]} {got!r}")
        if rows[2][name] is not None:
            wrong.append(f"{name}: NULL came back as {rows[2][name]!r}")
    assert not wrong, "\n".join(wrong)


def test_nanosecond_timestamps_are_cut_to_the_microsecond_exactly(spark) -> None:  # noqa: ANN001
    """NanoTimestamp's floor to microseconds, by Spark and by the driver's twin (``Conversion.value``): the same,
    and exact. It divided in double before, a microsecond early for about 2% of today's values (53 bits)."""
    import random

    from pyspark.sql import functions as F

    from hudi_cdc.envelope.types import _BY_CONNECT_NAME

    nanos = _BY_CONNECT_NAME[D + "time.NanoTimestamp"]
    rng = random.Random(7)
    values = [1_180_968_666_138_000_868, -1, -1_000, -1_001, 0, 999, 2**63 - 1, -(2**63) + 1000]
    values += [rng.randint(10**18, 2 * 10**18) for _ in range(500)]
    frame = spark.createDataFrame([(v,) for v in values], "n bigint")
    found = frame.select("n", F.unix_micros(nanos.expr(F.col("n")))).collect()  # type: ignore[misc]
    assert [(n, m) for n, m in found] == [(v, v // 1000) for v in values]
    epoch = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    assert all(nanos.value(v) == epoch + dt.timedelta(microseconds=v // 1000) for v in values)  # type: ignore[misc]
