"""payloads.shards on local frames: the tenure tag a unique-keys table's kept events carry."""

from __future__ import annotations

from typing import Any

from payloads.shards import SHARD_ID_WIDTH, hand_over

T1, T2 = "20260101000000000000", "20260102000000000000"
_FLAT = (
    "id int, _source_schema string, _source_order string, __hudi_cdc_arrival int, _source_op string, "
    "__hudi_cdc_error string"
)


def test_the_tag_advances_only_when_a_key_changes_hands(spark: Any) -> None:  # noqa: ANN401
    from pyspark.sql import functions as F

    def shard_id(shard: str) -> str:
        return spark.range(1).select(F.substring(F.sha2(F.lit(shard), 256), 1, SHARD_ID_WIDTH)).first()[0]

    a, b = shard_id("hub_a"), shard_id("hub_b")
    stored = spark.createDataFrame([(1, "hub_a", T1 + a + "0020")], ["id", "_source_schema", "_source_order"])
    tombstones = spark.createDataFrame([(2, T1 + a + "0030"), (3, T1 + b + "0900")], ["id", "_source_order"])
    flat = spark.createDataFrame(
        [
            (1, "hub_a", "0010", 1, "u", None),  # the row's shard: its tag, so the replay is below the row
            (2, "hub_a", "0020", 2, "u", None),  # no holder: the tombstone's shard's events, with its tag
            (2, "hub_a", "0030", 3, "d", None),
            (2, "hub_0", "0001", 4, "d", None),  # a stray delete of another shard: dropped
            (3, "hub_a", "0005", 5, "c", None),  # deleted in hub_b, now in hub_a: a move, the new round's tag
            (4, "hub_b", "0007", 6, "c", None),  # a new key: the new round's tag
        ],
        _FLAT,
    )
    out = hand_over(
        flat,
        key_fields=["id"],
        shard_columns=["_source_schema"],
        stored_rows=lambda columns: stored.select(*[c for c in columns if c in stored.columns]),
        tombstones=lambda: tombstones,
        round_tag=T2,
    )
    rows = [(r["id"], r["_source_schema"], r["_source_order"]) for r in out.orderBy("__hudi_cdc_arrival").collect()]
    assert rows == [
        (1, "hub_a", T1 + a + "0010"),
        (2, "hub_a", T1 + a + "0020"),
        (2, "hub_a", T1 + a + "0030"),
        (3, "hub_a", T2 + a + "0005"),
        (4, "hub_b", T2 + b + "0007"),
    ]
