"""Type mappings on local frames: each target, the value that lands, and the value refused (never rounded)."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from hudi_cdc.envelope.flatten import flatten
from hudi_cdc.envelope.type_mapping import TypeMapping, mapped_conversions, source_types
from hudi_cdc.errors import ConfigError
from payloads import PostgresPolicy
from payloads.base import ERROR_COLUMN


def _param(avro: str, connect_name: str | None = None, **source: str) -> list:
    t: dict = {"type": avro}
    if connect_name:
        t["connect.name"] = connect_name
    if source:
        t["connect.parameters"] = {f"__debezium.source.column.{k}": v for k, v in source.items()}
    return ["null", t]


VSD = {
    "type": "record",
    "name": "VariableScaleDecimal",
    "namespace": "io.debezium.data",
    "connect.name": "io.debezium.data.VariableScaleDecimal",
    "fields": [{"name": "scale", "type": "int"}, {"name": "value", "type": "bytes"}],
}
FIELDS = [
    ("id", "long", "long"),
    ("flag", _param("int", type="TINYINT", length="1"), "int"),
    ("level", _param("int", type="TINYINT", length="4"), "int"),
    ("big", _param("long", type="BIGINT UNSIGNED", length="20"), "bigint"),
    ("amount", ["null", VSD], "struct<scale:int,value:binary>"),
    ("at", _param("long", "io.debezium.time.MicroTimestamp"), "bigint"),
    ("zoned", _param("string", "io.debezium.time.ZonedTimestamp"), "string"),
    ("doc", _param("string", "io.debezium.data.Json"), "string"),
]
SCHEMA = {
    "type": "record",
    "name": "Envelope",
    "fields": [
        {
            "name": "before",
            "type": [
                "null",
                {"type": "record", "name": "Value", "fields": [{"name": n, "type": t} for n, t, _ in FIELDS]},
            ],
        },
        {"name": "after", "type": ["null", "Value"]},
    ],
}
ROW = ", ".join(f"{n}:{d}" for n, _, d in FIELDS)
ENVELOPE = f"op string, before struct<{ROW}>, after struct<{ROW}>, source struct<lsn:bigint>"
NOON_PARIS_WALL = int(datetime(2024, 1, 15, 12, 0, tzinfo=UTC).timestamp() * 1_000_000)


def _vsd(text: str) -> tuple[int, bytes]:
    d = Decimal(text)
    scale = max(0, -d.as_tuple().exponent)  # type: ignore[operator]
    unscaled = int(d.scaleb(scale))
    return scale, unscaled.to_bytes(16, "big", signed=True)


def _row(key: int, flag: int, level: int, big: int, amount: str, doc: str | None) -> tuple:
    after = (key, flag, level, big, _vsd(amount), NOON_PARIS_WALL, "2024-01-15T12:00:00.5+01:00", doc)
    return ("c", None, after, (key,))


def _flat(spark, mapping: TypeMapping, rows: list[tuple]):  # noqa: ANN001, ANN202
    frame = spark.createDataFrame(rows, ENVELOPE)
    conversions = mapped_conversions(SCHEMA, frame.schema["after"].dataType, mapping, where="test batch")
    flat = flatten(
        frame,
        source_meta_columns=PostgresPolicy().source_meta_columns,
        key_fields=("id",),
        ingested_at=datetime.now(UTC),
        where="test batch",
        value_conversions=conversions,
    )
    return {r["id"]: r for r in flat.collect()}, {f.name: f.dataType.simpleString() for f in flat.schema.fields}


def test_source_type_names_from_propagated_parameters_and_logical_types() -> None:
    assert source_types(FIELDS[1][1]) == ["tinyint(1)", "tinyint"]
    assert source_types(FIELDS[3][1]) == ["bigint unsigned(20)", "bigint unsigned"]
    assert source_types(["null", VSD]) == ["numeric"]
    assert source_types(FIELDS[5][1]) == ["timestamp"]
    assert source_types(FIELDS[7][1]) == ["json"]


def test_mappings_by_source_type_land_exactly_and_refuse_what_does_not_fit(spark) -> None:
    mapping = TypeMapping(
        by_type={
            "tinyint(1)": "boolean",
            "BIGINT  UNSIGNED": "decimal(20,0)",
            "numeric": "decimal(12,2)",
            "timestamp": "timestamp:Europe/Paris",
            "timestamptz": "text",
            "json": "json:struct<a:int,b:string>",
        }
    )
    rows, types = _flat(
        spark,
        mapping,
        [
            _row(1, 1, 7, -1, "1234567890.12", '{"a": 1, "b": "x"}'),
            _row(2, 0, 7, 2**63 - 1, "1.230", '{"a": 2}'),
            _row(3, 2, 7, 5, "1.234", "not json"),  # a tinyint(1) of 2, 3 decimals, bad JSON: refused
            _row(4, 1, 7, 5, "12345678901.5", '{"a": "zz"}'),  # 11 integral digits, a mistyped field: refused
            _row(5, 1, 7, 5, "0", None),  # NULL JSON stays NULL
        ],
    )
    assert (types["flag"], types["level"], types["big"], types["amount"]) == (
        "boolean",
        "int",  # tinyint(4) is not tinyint(1): not mapped
        "decimal(20,0)",
        "decimal(12,2)",
    )
    assert (types["at"], types["zoned"], types["doc"]) == ("timestamp", "string", "struct<a:int,b:string>")
    assert rows[1]["flag"] is True and rows[2]["flag"] is False
    assert rows[1]["big"] == Decimal(2**64 - 1)  # long mode's wrapped pattern restored
    assert rows[2]["big"] == Decimal(2**63 - 1)
    assert (rows[1]["amount"], rows[2]["amount"]) == (Decimal("1234567890.12"), Decimal("1.23"))
    assert rows[1]["at"] == datetime(2024, 1, 15, 11, 0)  # noon in Paris, as the UTC instant
    assert rows[1]["zoned"] == "2024-01-15T12:00:00.5+01:00"
    assert (rows[1]["doc"]["a"], rows[1]["doc"]["b"], rows[2]["doc"]["b"]) == (1, "x", None)
    assert rows[1][ERROR_COLUMN] is None and rows[2][ERROR_COLUMN] is None
    assert rows[5]["doc"] is None and rows[5][ERROR_COLUMN] is None
    for key, columns in ((3, ("flag", "amount", "doc")), (4, ("amount", "doc"))):
        for column in columns:
            assert f"column '{column}': a value does not fit" in rows[key][ERROR_COLUMN], rows[key][ERROR_COLUMN]
    assert 'type_mappings."tinyint(1)"' in rows[3][ERROR_COLUMN]


def test_column_types_win_and_name_real_columns(spark) -> None:
    mapping = TypeMapping(
        by_type={"numeric": "decimal(38,10)", "timestamp": "timestamp:Europe/Paris", "json": "json:struct<a:int>"},
        by_column={"amount": "decimal(5,1)", "at": "text", "doc": "string", "level": "boolean"},
    )
    rows, types = _flat(spark, mapping, [_row(1, 1, 1, 1, "1234.5", '{"a": "zz"}'), _row(2, 1, 4, 1, "1.0", "{}")])
    assert (types["amount"], types["at"], types["doc"], types["level"]) == (
        "decimal(5,1)",
        "string",
        "string",
        "boolean",
    )
    assert rows[1]["amount"] == Decimal("1234.5") and rows[1]["at"] == "2024-01-15 12:00:00.000000"
    assert rows[1]["doc"] == '{"a": "zz"}' and rows[1][ERROR_COLUMN] is None
    assert "column 'level'" in rows[2][ERROR_COLUMN] and "column_types.level" in rows[2][ERROR_COLUMN]
    frame = spark.createDataFrame([], ENVELOPE)
    with pytest.raises(ConfigError, match=r"column_types names price, not a column of the source"):
        mapped_conversions(SCHEMA, frame.schema["after"].dataType, TypeMapping(by_column={"price": "int"}), where="b")
    with pytest.raises(ConfigError, match=r"column 'zoned' \(timestamp\) cannot be mapped to boolean"):
        mapped_conversions(
            SCHEMA, frame.schema["after"].dataType, TypeMapping(by_column={"zoned": "boolean"}), where="b"
        )


def test_json_converter_schemas_keep_propagated_source_types() -> None:
    from hudi_cdc.envelope.connect_schema import avro_envelope
    from hudi_cdc.envelope.types import avro_fields

    params = {"__debezium.source.column.type": "BIGINT UNSIGNED", "__debezium.source.column.length": "20"}
    value = {"type": "struct", "name": "s.db.t.Value", "optional": True, "fields": [
        {"field": "id", "type": "int32", "optional": False},
        {"field": "big", "type": "int64", "optional": True, "parameters": params},
    ]}  # fmt: skip
    envelope = {"type": "struct", "name": "s.db.t.Envelope", "fields": [
        {**value, "field": "before"}, {**value, "field": "after"}, {"field": "op", "type": "string"},
    ]}  # fmt: skip
    fields = avro_fields(avro_envelope(envelope))
    assert source_types(fields["big"]) == ["bigint unsigned(20)", "bigint unsigned"]
    assert source_types(fields["id"]) == []


def test_a_decimal_column_to_a_narrower_decimal_is_exact_or_refused(spark) -> None:
    decimal = {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 4,
               "connect.name": "org.apache.kafka.connect.data.Decimal"}  # fmt: skip
    schema = {"type": "record", "name": "Envelope", "fields": [
        {"name": "before", "type": ["null", {"type": "record", "name": "V", "fields": [
            {"name": "id", "type": "long"}, {"name": "price", "type": ["null", decimal]}]}]},
        {"name": "after", "type": ["null", "V"]}]}  # fmt: skip
    frame = spark.createDataFrame(
        [("c", None, (k, Decimal(v)), (k,)) for k, v in ((1, "12.3400"), (2, "0.0001"), (3, "1.2345"), (4, "12345.6"))],
        "op string, before struct<id:bigint,price:decimal(12,4)>, after struct<id:bigint,price:decimal(12,4)>, "
        "source struct<lsn:bigint>",
    )
    mapping = TypeMapping(by_column={"price": "decimal(6,2)"})
    conversions = mapped_conversions(schema, frame.schema["after"].dataType, mapping, where="b")
    flat = flatten(
        frame,
        source_meta_columns=PostgresPolicy().source_meta_columns,
        key_fields=("id",),
        ingested_at=datetime.now(UTC),
        where="b",
        value_conversions=conversions,
    )
    rows = {r["id"]: (r["price"], r[ERROR_COLUMN]) for r in flat.collect()}
    assert rows[1] == (Decimal("12.34"), None)
    for key in (2, 3, 4):  # 0.0001 and 1.2345 would round, 12345.6 has 5 integral digits
        assert rows[key][0] is None and "column 'price': a value does not fit decimal(6,2)" in rows[key][1], rows[key]


def test_numbers_to_int_bigint_double_survive_or_are_refused(spark) -> None:
    frame = spark.createDataFrame(
        [("c", None, (k, n, t), (k,)) for k, n, t in ((1, 7, "12"), (2, 3_000_000_000, "12.5"), (3, None, " 12"))],
        "op string, before struct<id:bigint,n:bigint,t:string>, after struct<id:bigint,n:bigint,t:string>, "
        "source struct<lsn:bigint>",
    )

    def flat(by_column: dict):  # noqa: ANN202
        mapping = TypeMapping(by_column=by_column)
        conversions = mapped_conversions(None, frame.schema["after"].dataType, mapping, where="b")
        out = flatten(frame, source_meta_columns=PostgresPolicy().source_meta_columns, key_fields=("id",),
                      ingested_at=datetime.now(UTC), where="b", value_conversions=conversions)  # fmt: skip
        return {r["id"]: r for r in out.collect()}

    rows = flat({"n": "double", "t": "int"})
    assert (rows[1]["n"], rows[1]["t"], rows[1][ERROR_COLUMN]) == (7.0, 12, None)
    assert "column 't'" in rows[2][ERROR_COLUMN] and "column 'n'" not in rows[2][ERROR_COLUMN]
    assert "column 't'" in rows[3][ERROR_COLUMN]
    rows = flat({"n": "int"})
    assert rows[1][ERROR_COLUMN] is None and "column 'n': a value does not fit int" in rows[2][ERROR_COLUMN]
