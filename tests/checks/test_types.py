"""``validate``'s type-mapping check: what would lose information is refused, naming the column and why."""

from __future__ import annotations

from hudi_cdc.checks.types import mapping_problems
from hudi_cdc.envelope.type_mapping import TypeMapping


def _source(name: str, **params: str) -> dict:
    return {f"__debezium.source.column.{k}": v for k, v in {"type": name, **params}.items()}


def _decimal(p: int, s: int) -> list:
    return ["null", {"type": "bytes", "logicalType": "decimal", "precision": p, "scale": s,
                     "connect.name": "org.apache.kafka.connect.data.Decimal"}]  # fmt: skip


FIELDS = {
    "id": "long",
    "price": _decimal(12, 4),
    "flag": ["null", {"type": "int", "connect.type": "int16", "connect.parameters": _source("TINYINT", length="1")}],
    "level": ["null", {"type": "int", "connect.type": "int16", "connect.parameters": _source("TINYINT", length="4")}],
    "small": ["null", {"type": "int", "connect.type": "int16"}],  # no propagated source type
    "big": ["null", {"type": "long", "connect.parameters": _source("BIGINT UNSIGNED", length="20")}],
    "amount": [
        "null",
        {
            "type": "record",
            "name": "VariableScaleDecimal",
            "connect.name": "io.debezium.data.VariableScaleDecimal",
            "fields": [{"name": "scale", "type": "int"}, {"name": "value", "type": "bytes"}],
        },
    ],  # fmt: skip
    "note": ["null", "string"],
    "at": ["null", {"type": "long", "connect.name": "io.debezium.time.MicroTimestamp"}],
}
ENVELOPE = {
    "type": "record",
    "name": "Envelope",
    "fields": [
        {
            "name": "before",
            "type": [
                "null",
                {"type": "record", "name": "V", "fields": [{"name": n, "type": t} for n, t in FIELDS.items()]},
            ],
        },  # fmt: skip
        {"name": "after", "type": ["null", "V"]},
    ],
}


def test_lossless_mappings_pass() -> None:
    mapping = TypeMapping(
        by_type={"tinyint(1)": "boolean", "bigint unsigned": "decimal(20,0)", "timestamp": "timestamp:Europe/Paris"},
        by_column={"price": "decimal(14,4)", "note": "string", "id": "decimal(19,0)"},
    )
    assert mapping_problems(ENVELOPE, mapping) == ([], [])


def test_lossy_mappings_are_refused_naming_column_and_reason() -> None:
    mapping = TypeMapping(
        by_type={"tinyint": "boolean", "bigint unsigned": "bigint"},
        by_column={"price": "decimal(10,2)", "note": "int", "at": "int", "ghost": "text"},
    )
    problems, _ = mapping_problems(ENVELOPE, mapping)
    assert "column_types names 'ghost', not a column of the source" in problems[0]
    by_column = {p.split("'")[1]: p for p in problems[1:]}
    assert (
        by_column["price"]
        == "column 'price' (decimal(12,4)) -> decimal(10,2) (column_types.price): 2 fewer decimal(s) would round values"
    )
    assert by_column["level"].endswith("a tinyint(4) holds values other than 0 and 1")
    assert "tinyint(1)" not in by_column.get("flag", "") and "flag" not in by_column  # tinyint(1) -> boolean is fine
    assert by_column["big"].endswith("bigint cannot hold every bigint unsigned(20) value")
    assert by_column["note"].endswith("int cannot hold every string value")
    narrow = mapping_problems(ENVELOPE, TypeMapping(by_column={"price": "decimal(9,4)"}))[0]
    assert narrow == [
        "column 'price' (decimal(12,4)) -> decimal(9,4) (column_types.price): 3 fewer integral digit(s) would not hold every value"
    ]


def test_what_only_the_values_can_tell_is_a_warning() -> None:
    problems, notes = mapping_problems(
        ENVELOPE, TypeMapping(by_type={"numeric": "decimal(38,10)"}, by_column={"small": "boolean"})
    )
    assert problems == []
    assert any(n.startswith("column 'amount' (numeric) -> decimal(38,10)") and "never rounded" in n for n in notes)
    assert any(n.startswith("column 'small'") and "column.propagate.source.type" in n for n in notes)


def test_validate_runs_the_check_on_the_source_schema(tmp_path) -> None:  # noqa: ANN001
    from decimal import Decimal

    from hudi_cdc.checks.validate import validate
    from hudi_cdc.testing import envelope_schema, pg_event, write_events
    from tests.checks.support import files_config, status

    schema = envelope_schema("orders", [("id", "long"), ("price", _decimal(12, 4))])
    write_events(
        tmp_path / "events" / "0001.avro", schema, [pg_event("c", lsn=1, after={"id": 1, "price": Decimal("1.5")})]
    )
    lossy = files_config(tmp_path / "events", tmp_path / "t", column_types={"price": "decimal(10,2)"})
    state, detail = status(validate(lossy), "types.mappings")
    assert state == "fail" and "column 'price' (decimal(12,4)) -> decimal(10,2)" in detail, detail
    fine = files_config(tmp_path / "events", tmp_path / "t", column_types={"price": "decimal(14,4)"})
    assert status(validate(fine), "types.mappings")[0] == "ok"
    assert status(validate(files_config(tmp_path / "events", tmp_path / "t")), "types.mappings")[0] == "skip"
