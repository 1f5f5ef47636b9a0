"""``HudiTable``: Hudi's own placeholder fill, through real ``hudi-cdc ingest`` rounds."""

from __future__ import annotations

from pathlib import Path

import pytest

from hudi_cdc import pipeline, small_plan
from hudi_cdc.sink import options as opt
from hudi_cdc.sink.hudi import HudiTable
from hudi_cdc.testing import envelope_schema, pg_event, write_events
from tests.support import PLACEHOLDER as PH
from tests.support import ingest_args, read_rows, run_cli

pytestmark = pytest.mark.hudi

SCHEMA = envelope_schema(
    "customers",
    [("id", "long"), ("name", ["null", "string"]), ("bio", ["null", "string"]), ("data", ["null", "bytes"])],
)


def _properties(base: str) -> str:
    return (Path(base) / ".hoodie" / "hoodie.properties").read_text()


@pytest.mark.parametrize(
    ("table_type", "merger", "partitioned", "hudi_fills"),
    [
        ("cow", None, False, True),
        ("cow", opt.AVRO_RECORD_MERGER, False, True),
        ("cow", None, True, False),
        ("mor", None, False, False),
    ],
    ids=["cow", "cow-avro-merger", "cow-partitioned", "mor"],
)
def test_placeholders_take_the_stored_value_whoever_fills_them(
    spark, tmp_path: Path, monkeypatch, table_type: str, merger: str | None, partitioned: bool, hudi_fills: bool
) -> None:
    """On an unpartitioned COW table Hudi's merge fills string placeholders, and the lookup reads no string
    values; bytes, MOR and partitioned tables are filled from the lookup (a small MOR round's by the driver's
    plan). Either way the table ends right."""
    requested: list[list[str]] = []
    stored_columns, stored_frame = pipeline._stored_columns, small_plan._stored_frame
    monkeypatch.setattr(
        pipeline,
        "_stored_columns",
        lambda table, columns: requested.append(list(columns)) or stored_columns(table, columns),
    )
    by_driver: list[list[str]] = []
    monkeypatch.setattr(  # its columns come last; the rest passed on as they are
        small_plan,
        "_stored_frame",
        lambda *args: requested.append(list(args[-1])) or by_driver.append(list(args[-1])) or stored_frame(*args),
    )
    source, base = tmp_path / "events", str(tmp_path / "table")
    extra = ["--source-limit", "1"]
    if merger:
        extra += ["--hoodie-conf", f"{opt.RECORD_MERGER_CLASSES}={merger}"]
    if partitioned:
        extra += ["--partition-path-field", "name"]
    after = {k: {"id": k, "name": "a", "bio": f"bio{k}", "data": f"d{k}".encode()} for k in range(8)}
    write_events(source / "0001.avro", SCHEMA, [pg_event("c", lsn=100 + k, after=row) for k, row in after.items()])
    write_events(
        source / "0002.avro",
        SCHEMA,
        # Keys 0-3 and 6: the values only in the table. Key 4: a real value earlier in the batch. Key 5: a
        # value change. Key 7: left alone.
        [pg_event("u", lsn=200 + k, after={"id": k, "name": "a", "bio": PH, "data": PH.encode()}) for k in range(4)]
        + [
            pg_event("u", lsn=204, after={"id": 4, "name": "a", "bio": "new4", "data": b"n4"}),
            pg_event("u", lsn=205, after={"id": 4, "name": "a", "bio": PH, "data": PH.encode()}),
            pg_event("u", lsn=206, after={"id": 5, "name": "a", "bio": "new5", "data": b"n5"}),
            pg_event("u", lsn=207, after={"id": 6, "name": "a", "bio": PH, "data": PH.encode()}),
        ],
    )
    for _ in range(2):
        result = run_cli(*ingest_args(str(source), base, table_type=table_type, extra=extra))
        assert result.exit_code == 0, result.output

    after[4].update(bio="new4", data=b"n4")
    after[5].update(bio="new5", data=b"n5")
    want = sorted((k, r["bio"], r["data"]) for k, r in after.items())
    got = [(k, bio, bytes(data)) for k, bio, data in read_rows(spark, base, ("id", "bio", "data"))]
    assert got == want
    assert requested, "the placeholders were never looked up"
    assert bool(by_driver) is (table_type == "mor"), "a small MOR round's lookup is the driver plan's"
    assert ("bio" not in requested[-1]) is hudi_fills and "data" in requested[-1]
    assert (f"{opt.PARTIAL_UPDATE_MODE}=FILL_UNAVAILABLE" in _properties(base)) is hudi_fills
    assert HudiTable(spark, base).fills_placeholders(PH) is hudi_fills, "the table's own type and partitioning decide"


def test_the_fill_is_set_once_and_never_for_another_placeholder(spark, tmp_path: Path) -> None:
    source, base = tmp_path / "events", str(tmp_path / "table")
    write_events(source / "0001.avro", SCHEMA, [pg_event("c", lsn=100, after={"id": 1, "bio": "b", "data": b"d"})])
    assert run_cli(*ingest_args(str(source), base, table_type="cow")).exit_code == 0
    table = HudiTable(spark, base)
    assert table.fills_placeholders(PH)
    assert table.fills_placeholders(PH), "asked again: already set"
    assert not table.fills_placeholders("another placeholder"), "set for another value: not ours to fill"


def test_a_round_after_a_kill_during_the_property_update_finishes_the_job(spark, tmp_path: Path) -> None:
    """Hudi's update writes a backup, deletes the properties, writes the new ones: a kill in between leaves
    only the backup. The next round reads the table from it and sets the fill."""
    source, base = tmp_path / "events", str(tmp_path / "table")
    write_events(source / "0001.avro", SCHEMA, [pg_event("c", lsn=100, after={"id": 1, "bio": "b", "data": b"d"})])
    write_events(source / "0002.avro", SCHEMA, [pg_event("u", lsn=200, after={"id": 1, "name": "n", "bio": PH})])
    args = ingest_args(str(source), base, table_type="cow", extra=["--source-limit", "1"])
    assert run_cli(*args).exit_code == 0
    meta = Path(base) / ".hoodie"
    (meta / "hoodie.properties").rename(meta / "hoodie.properties.backup")

    result = run_cli(*args)
    assert result.exit_code == 0, result.output
    assert read_rows(spark, base, ("id", "name", "bio")) == [(1, "n", "b")]
    assert f"{opt.PARTIAL_UPDATE_MODE}=FILL_UNAVAILABLE" in _properties(base)


def test_the_index_of_a_table_written_otherwise_is_simple_and_a_new_ones_the_bucket(spark, tmp_path: Path) -> None:
    """``index_conf``: a table with commits but no recorded layout (written by hand, or by an older
    hudi-cdc) keeps Hudi's SIMPLE; a path with no completed commit gets the bucket index for its rows."""
    from hudi_cdc.sink.hudi import index_conf

    base = str(tmp_path / "table")
    new = index_conf(HudiTable(spark, base), {}, partitioned=False, rows=10_000_000)
    assert (new[opt.INDEX_TYPE], new[opt.NUM_BUCKETS]) == ("BUCKET", "8")
    options = opt.write_options(
        table_name="t", table_type="COPY_ON_WRITE", record_key_fields=("id",), partition_path_field=None,
        ordering_field="ord", user_conf={},
    )  # fmt: skip
    rows = spark.createDataFrame([(1, "a", 1)], "id long, name string, ord long")
    rows.write.format("hudi").options(**options).mode("append").save(base)
    table = HudiTable(spark, base)
    assert table.has_commits() and table.checkpoint_commit() is None
    assert index_conf(table, {}, partitioned=False, rows=10_000_000) == {}
    assert index_conf(table, {"x": "y"}, partitioned=True) == {"x": "y"}  # the settings decide: not read
