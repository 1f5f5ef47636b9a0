"""Keys that move between partitions, met by stale, replayed and key-only events, under the default settings.

The shape that failed every round (and, with another column order, silently moved a row into a
partition named by another column's value) when the default record merger was Spark's: a
partitioned table with a composite key, where a stale event of a key whose stored row lives in
another partition reaches Hudi's global index. The table is compared row by row with the source
state, including the partition each row's file sits in.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hudi_cdc.testing import envelope_schema, pg_event, write_events
from tests.support import PLACEHOLDER, apply_events, compact, ingest_args, run_cli

pytestmark = pytest.mark.hudi

KEY = ("tenant", "id")
# ``d`` sits five columns right of ``region``: Hudi 1.2's Spark record path read the partition from it.
COLUMNS = [
    ("tenant", "string"),
    ("id", "long"),
    ("region", ["null", "string"]),
    ("note", ["null", "string"]),
    ("a", ["null", "string"]),
    ("b", ["null", "string"]),
    ("c", ["null", "string"]),
    ("d", ["null", "string"]),
]
SCHEMA = envelope_schema("tbl", COLUMNS)
BIG, OTHER_BIG = "x" * 9_000, "y" * 9_000  # out of line in Postgres: the kind of value a placeholder stands for


def _row(tenant: str, key: int, region: str | None, note: str | None = "n", d: str | None = "elsewhere") -> dict:
    return {"tenant": tenant, "id": key, "region": region, "note": note, "a": "a", "b": "b", "c": "c", "d": d}


def _event(op: str, lsn: int, tenant: str, key: int, region: str | None, **values: Any) -> dict:
    image = _row(tenant, key, region, **values)
    # Small source times: with the old default a large one crashed the misread rather than corrupting it.
    return pg_event(op, lsn=lsn, ts_ms=1_000 + lsn, **({"before": image} if op == "d" else {"after": image}))


def _key_only_delete(lsn: int, tenant: str, key: int) -> dict:
    """REPLICA IDENTITY DEFAULT: the before image holds the key columns only."""
    gone = {name: None for name, _ in COLUMNS} | {"tenant": tenant, "id": key}
    return pg_event("d", lsn=lsn, ts_ms=1_000 + lsn, before=gone)


def _batches() -> list[list[dict]]:
    first = [
        _event("c", 100, "t1", 1, "eu"),
        _event("c", 101, "t1", 2, "eu"),
        _event("c", 102, "t1", 3, "eu", note=BIG),
        _event("c", 103, "t2", 1, "us"),
        _event("c", 104, "t1", 4, "eu"),
        _event("c", 106, "t1", 5, "us"),
        _event("c", 108, "t2", 2, "eu"),
        _event("c", 110, "t1", 6, "eu"),
    ]
    second = [
        _event("u", 200, "t1", 3, "eu", note=PLACEHOLDER),  # the 9,000 characters unchanged
        _event("u", 210, "t1", 2, "us"),  # a move
        _event("u", 211, "t2", 1, "eu"),  # a move and back, in one batch
        _event("u", 212, "t2", 1, "us"),
        _key_only_delete(220, "t1", 4),
        _event("u", 230, "t1", 1, "us"),  # moved: batch 3 brings it a stale event from its old partition
        _event("u", 240, "t1", 5, "eu"),
        _event("u", 250, "t2", 2, "us"),
        _event("u", 260, "t1", 6, "eu", d="kept"),
    ]
    third = [
        _event("d", 300, "t1", 3, "eu", note=BIG),  # full before image, in eu
        _event("c", 310, "t1", 3, "us", note=OTHER_BIG),  # re-inserted elsewhere
        _event("u", 320, "t1", 3, "us", note=PLACEHOLDER, d="again"),
        _event("u", 150, "t1", 1, "eu", d="stale"),  # the minimal case: stored at 230 in us
        _event("d", 107, "t1", 5, "us"),  # a stale delete from the old partition: stored at 240 in eu
        _key_only_delete(109, "t2", 2),  # a stale key-only delete: stored at 250 in us
        _event("u", 115, "t1", 6, "eu", d="stale"),  # a stale update in the stored row's own partition
        second[1],  # a replay of a move
    ]
    return [first, second, third]


def _table(spark: Any, base: str, query_type: str = "snapshot") -> dict[tuple, tuple]:
    frame = spark.read.format("hudi").option("hoodie.datasource.query.type", query_type).load(base)
    names = [name for name, _ in COLUMNS]
    rows = frame.select(*names, "_hoodie_partition_path").collect()
    return {tuple(r[k] for k in KEY): tuple(r) for r in rows}


def _expected(events: list[dict]) -> dict[tuple, tuple]:
    names = [name for name, _ in COLUMNS]
    state = apply_events(events, key=KEY)
    return {key: (*(row[n] for n in names), row["region"]) for key, row in state.items()}


def _check(actual: dict, expected: dict) -> None:
    def short(row: tuple | None) -> tuple | None:  # 9,000-character values, shown by their length
        return (
            None
            if row is None
            else tuple(f"<{len(v)} chars>" if isinstance(v, str) and len(v) > 40 else v for v in row)
        )

    wrong = {k: (short(expected.get(k)), short(actual.get(k))) for k in expected.keys() | actual.keys()
             if expected.get(k) != actual.get(k)}  # fmt: skip
    assert not wrong, f"{len(wrong)} row(s) differ (expected, table): {wrong}"


@pytest.mark.parametrize("table_type", ["cow", "mor"])
def test_moves_with_stale_and_key_only_events_end_equal_to_the_source(spark, tmp_path: Path, table_type: str) -> None:
    batches = _batches()
    source, base = tmp_path / "events", str(tmp_path / "table")
    flags = ["--partition-path-field", "region", "--hoodie-conf", "hoodie.compact.inline=false"]
    seen: list[dict] = []
    for number, batch in enumerate(batches):
        write_events(source / f"batch-{number}.avro", SCHEMA, batch)
        result = run_cli(*ingest_args(str(source), base, table_type=table_type, keys="tenant,id"), *flags)
        assert result.exit_code == 0, f"batch {number}: {result.output}"
        seen += batch
        _check(_table(spark, base), _expected(seen))

    # Every event again in one batch: a delete and a re-insert of one key, stale ones, all replays.
    write_events(source / "zz-replay.avro", SCHEMA, seen)
    result = run_cli(*ingest_args(str(source), base, table_type=table_type, keys="tenant,id"), *flags)
    assert result.exit_code == 0, result.output
    _check(_table(spark, base), _expected(seen))
    if table_type == "mor":
        compact(spark, base)
        _check(_table(spark, base, "read_optimized"), _expected(seen))
