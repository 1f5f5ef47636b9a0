"""Connect schemas (JsonConverter's) read as the Avro path reads Debezium's Avro, and decimals from their bytes."""

from __future__ import annotations

import base64
import json
from decimal import Decimal

import pytest

from hudi_cdc.envelope.connect_schema import (
    avro_envelope,
    connect_envelope,
    decimal_columns,
    decimal_from_bytes,
    json_read_type,
)
from hudi_cdc.envelope.types import value_conversions
from hudi_cdc.errors import DecodeError

ROW = {
    "type": "struct", "name": "db.inventory.t.Value", "optional": True,
    "fields": [
        {"type": "int64", "optional": False, "field": "id"},
        {"type": "int16", "optional": True, "field": "small"},
        {"type": "bytes", "optional": True, "name": "org.apache.kafka.connect.data.Decimal", "version": 1,
         "parameters": {"scale": "3", "connect.decimal.precision": "12"}, "field": "price"},
        {"type": "bytes", "optional": True, "name": "org.apache.kafka.connect.data.Decimal", "version": 1,
         "parameters": {"scale": "5", "connect.decimal.precision": "45"}, "field": "wide"},
        {"type": "struct", "optional": True, "name": "io.debezium.data.VariableScaleDecimal", "field": "free",
         "fields": [{"type": "int32", "optional": False, "field": "scale"},
                    {"type": "bytes", "optional": False, "field": "value"}]},
        {"type": "int64", "optional": True, "name": "io.debezium.time.MicroTimestamp", "field": "at"},
        {"type": "array", "optional": True, "items": {"type": "string", "optional": True}, "field": "tags"},
        {"type": "double", "optional": True, "field": "d"},
        {"type": "float", "optional": True, "field": "r"},
    ],
}  # fmt: skip
ENVELOPE = {
    "type": "struct", "name": "db.inventory.t.Envelope", "optional": False,
    "fields": [
        {**ROW, "field": "before"}, {**ROW, "field": "after"},
        {"type": "struct", "name": "io.debezium.connector.postgresql.Source", "optional": False, "field": "source",
         "fields": [{"type": "int64", "optional": True, "field": "lsn"}]},
        {"type": "string", "optional": False, "field": "op"},
    ],
}  # fmt: skip


def test_the_avro_equivalent_gets_the_avro_paths_conversions() -> None:
    avro = avro_envelope(ENVELOPE)
    after = next(f for f in avro["fields"] if f["name"] == "after")
    assert after["type"] == ["null", "db.inventory.t.Value"]  # a second use is a reference, as Avro requires
    conversions = value_conversions(avro)
    assert {name: c.target for name, c in conversions.items()} == {
        "wide": "string",  # wider than Spark's 38 digits: exact text, as for Avro
        "free": "string",
        "at": "timestamp",
    }
    assert decimal_columns(ENVELOPE) == {"price": (12, 3)}
    read = json_read_type(ENVELOPE)["after"].dataType
    assert read.simpleString() == (  # type: ignore[attr-defined]
        "struct<id:bigint,small:int,price:binary,wide:binary,free:struct<scale:int,value:binary>,at:bigint,"
        "tags:array<string>,d:double,r:float>"
    )


def test_a_whole_message_or_its_schema_is_accepted_and_anything_else_named() -> None:
    assert connect_envelope({"schema": ENVELOPE, "payload": {}}, "f") is ENVELOPE
    assert connect_envelope(ENVELOPE, "f") is ENVELOPE
    with pytest.raises(DecodeError, match="f: not a Kafka Connect struct schema"):
        connect_envelope({"type": "record", "fields": []}, "f")


VALUES = [0, 1, -1, 127, 128, -128, -129, 255, 256, -256, 2**63, -(2**63) - 1, 10**37 - 1, -(10**37) + 1]


@pytest.mark.parametrize("scale", [0, 2, 5])
def test_decimals_from_twos_complement_bytes_in_the_jvm(spark, scale: int) -> None:  # noqa: ANN001
    from pyspark.sql import functions as F

    precision = 38
    unscaled = [v for v in VALUES if len(str(abs(v))) <= precision]
    # As JsonConverter writes them: the shortest two's-complement bytes, in base64.
    encoded = [base64.b64encode(v.to_bytes((v.bit_length() + 8) // 8, "big", signed=True)).decode() for v in unscaled]
    frame = spark.createDataFrame([(json.dumps({"v": e}),) for e in encoded] + [('{"v": null}',)], "j string")
    read = frame.select(F.from_json("j", "struct<v:binary>")["v"].alias("v"))
    got = [r[0] for r in read.select(decimal_from_bytes(F.col("v"), precision, scale)).collect()]
    assert got == [Decimal(f"{v}E-{scale}") for v in unscaled] + [None]  # from text: no 28-digit context
