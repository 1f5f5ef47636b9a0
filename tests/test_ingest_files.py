"""``hudi-cdc ingest`` from Debezium Avro files into real Hudi tables, read back with Spark."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hudi_cdc.sink.hudi import HudiTable
from hudi_cdc.testing import envelope_schema, pg_event, write_events
from tests.support import (
    CUSTOMERS,
    apply_events,
    base_file_bloom_filters,
    base_file_codecs,
    commit_instants,
    compact,
    expected_rows,
    ingest_args,
    random_history,
    read_rows,
    run_cli,
)

pytestmark = pytest.mark.hudi

SCHEMA = envelope_schema("customers", CUSTOMERS)
COLUMNS = ("id", "name", "bio")


@pytest.mark.parametrize("table_type", ["cow", "mor"])
def test_files_to_table_equals_source_and_rerun_changes_nothing(spark, tmp_path: Path, table_type: str) -> None:
    source, base = tmp_path / "events", str(tmp_path / "table")
    first, lsn = random_history(seed=1, keys=40, lsn_start=1000)
    write_events(source / "dbserver1.public.customers+0+0000000000.avro", SCHEMA, first[: len(first) // 2])
    write_events(source / "dbserver1.public.customers+0+0000000080.avro", SCHEMA, first[len(first) // 2 :])
    # No small-file packing, so MOR updates land in log files that compaction must merge; inline, as a table
    # made before compaction moved off the rounds' path (tests/test_compact.py has the default).
    compact_each_round = [
        "--compaction",
        "inline",
        "--hoodie-conf",
        "hoodie.compact.inline.max.delta.commits=1",
        "--hoodie-conf",
        "hoodie.parquet.small.file.limit=0",
    ]
    args = ingest_args(str(source), base, table_type=table_type, extra=compact_each_round)

    result = run_cli(*args)
    assert result.exit_code == 0, result.output
    assert read_rows(spark, base, COLUMNS) == expected_rows(apply_events(first), COLUMNS)

    second, lsn = random_history(seed=2, keys=40, lsn_start=lsn)
    write_events(source / "dbserver1.public.customers+0+0000000160.avro", SCHEMA, second)
    result = run_cli(*args, "--json")
    assert result.exit_code == 0, result.output
    stats = json.loads(result.output.strip().splitlines()[-1])
    assert stats["events"] == len(second) and stats["commit_time"]
    state = apply_events(first + second)
    assert read_rows(spark, base, COLUMNS) == expected_rows(state, COLUMNS)
    assert not any("__debezium_unavailable_value" in str(row) for row in read_rows(spark, base, COLUMNS))

    if table_type == "mor":
        # The small-round Java writer only schedules a compaction; the next round, which a pending plan hands
        # to Spark's datasource, runs it first (docs/tuning.md).
        third, _ = random_history(seed=3, keys=40, lsn_start=lsn)
        write_events(source / "dbserver1.public.customers+0+0000000240.avro", SCHEMA, third)
        assert run_cli(*args).exit_code == 0
        state = apply_events(first + second + third)
        assert read_rows(spark, base, COLUMNS) == expected_rows(state, COLUMNS)
        operations = [(c.action, c.operation) for c in HudiTable(spark, base).commits()]
        assert ("commit", "compact") in operations, f"expected an inline compaction, timeline has {operations}"
        assert read_rows(spark, base, COLUMNS, query_type="read_optimized") == expected_rows(state, COLUMNS)
    # The first commit, COW's rewrites and MOR's compactions all write zstd, not Hudi's gzip.
    codecs = base_file_codecs(base)
    assert len(codecs) >= 2 and all(c == {"ZSTD"} for c in codecs.values()), codecs
    # hudi-cdc's default index on a new unpartitioned table is the bucket index: no key filters.
    blooms = base_file_bloom_filters(base)
    assert blooms and not any(blooms.values()), blooms

    before = commit_instants(spark, base)
    result = run_cli(*args)
    assert result.exit_code == 0 and "nothing new" in result.output
    assert commit_instants(spark, base) == before


def test_checkpoint_is_in_the_data_commit(spark, tmp_path: Path) -> None:
    source, base = tmp_path / "events", str(tmp_path / "table")
    write_events(source / "a.avro", SCHEMA, [pg_event("c", lsn=10, after={"id": 1, "name": "x", "bio": None})])
    assert run_cli(*ingest_args(str(source), base)).exit_code == 0
    newest = HudiTable(spark, base).commits()[0]
    assert json.loads(newest.extra["hudi_cdc.checkpoint"])["folders"] == {"": "a.avro"}
    assert json.loads(newest.extra["hudi_cdc.stats"])["upserts"] == 1


@pytest.mark.parametrize("table_type", ["cow", "mor"])
def test_a_new_tables_first_commit_is_a_bulk_insert(spark, tmp_path: Path, table_type: str) -> None:
    """Nothing stored to merge with: the first commit bulk-inserts each key's row; deletes leave tombstones.
    With a file-lookup index: the bucket default's first commit is an upsert (options.bulk_inserts)."""
    source, base = tmp_path / "events", str(tmp_path / "table")
    events, lsn = random_history(seed=3, keys=60, lsn_start=1000)
    # A key that is deleted within the batch, then inserted again in the next one at an older position.
    events += [
        pg_event("c", lsn=lsn + 10, after={"id": 999, "name": "gone", "bio": "x"}),
        pg_event("d", lsn=lsn + 20, before={"id": 999, "name": None, "bio": None}),
    ]
    write_events(source / "a.avro", SCHEMA, events)
    args = ingest_args(str(source), base, table_type=table_type, extra=["--hoodie-conf", "hoodie.index.type=SIMPLE"])
    result = run_cli(*args, "--json")
    assert result.exit_code == 0, result.output
    state = apply_events(events)
    assert 999 not in state
    assert read_rows(spark, base, COLUMNS) == expected_rows(state, COLUMNS)
    first = HudiTable(spark, base).commits()[0]
    assert first.operation == "bulk_insert" and first.written["inserts"] == len(state)
    assert json.loads(result.output.strip().splitlines()[-1])["tombstones_held"] >= 1

    late = [pg_event("c", lsn=lsn + 15, after={"id": 999, "name": "stale", "bio": "y"})]
    more, _ = random_history(seed=4, keys=60, lsn_start=lsn + 100)
    write_events(source / "b.avro", SCHEMA, late + more)
    assert run_cli(*args).exit_code == 0, "second round"
    assert HudiTable(spark, base).commits()[0].operation == "upsert"
    assert read_rows(spark, base, COLUMNS) == expected_rows(apply_events(events + late + more), COLUMNS)


BAD_INPUTS = {
    "not-avro": (
        lambda path: path.write_bytes(b"PAR1 this is not an avro file"),
        "is not an Avro Object Container File",
    ),
    "no-op": (
        lambda path: write_events(
            path,
            envelope_schema("customers", CUSTOMERS, drop_fields=["op"]),
            [{k: v for k, v in pg_event("c", lsn=20, after={"id": 2, "name": "y", "bio": None}).items() if k != "op"}],
        ),
        "missing field(s) op",
    ),
    "unknown-op": (
        lambda path: write_events(path, SCHEMA, [pg_event("x", lsn=20, after={"id": 2, "name": "y", "bio": None})]),
        "unknown op 'x'",
    ),
    "null-lsn": (
        lambda path: write_events(path, SCHEMA, [pg_event("u", lsn=None, after={"id": 1, "name": "y", "bio": None})]),
        "source.lsn is null",
    ),
    "null-key": (
        lambda path: write_events(
            path,
            envelope_schema(
                "customers", [("id", ["null", "long"]), ("name", ["null", "string"]), ("bio", ["null", "string"])]
            ),
            [pg_event("c", lsn=20, after={"id": None, "name": "y", "bio": None})],
        ),
        "record key field 'id' is null",
    ),
}


def test_bad_input_fails_names_the_file_and_commits_nothing(spark, tmp_path: Path) -> None:
    source, base = tmp_path / "events", str(tmp_path / "table")
    write_events(source / "0001.avro", SCHEMA, [pg_event("c", lsn=10, after={"id": 1, "name": "x", "bio": None})])
    args = ingest_args(str(source), base)
    assert run_cli(*args).exit_code == 0
    table = HudiTable(spark, base)
    checkpoint, instants = table.latest_checkpoint(), commit_instants(spark, base)

    for name, (make, message) in BAD_INPUTS.items():
        bad = source / f"0002-{name}.avro"
        make(bad)
        result = run_cli(*args)
        assert result.exit_code == 1, f"{name}: {result.output}"
        error_line = result.output.strip().splitlines()[-1]
        assert message in error_line and bad.name in error_line, f"{name}: {error_line}"
        assert commit_instants(spark, base) == instants, name
        assert table.latest_checkpoint() == checkpoint, name
        bad.unlink()

    write_events(source / "0003.avro", SCHEMA, [pg_event("u", lsn=30, after={"id": 1, "name": "fixed", "bio": None})])
    assert run_cli(*args).exit_code == 0
    assert read_rows(spark, base, COLUMNS) == [(1, "fixed", None)]


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_composite_key_partitioned_table_and_python_api(spark, tmp_path: Path, table_type: str) -> None:
    import hudi_cdc

    columns = [("region", "string"), ("id", "long"), ("name", ["null", "string"])]
    schema = envelope_schema("accounts", columns)
    source, base = tmp_path / "events", str(tmp_path / "table")
    write_events(
        source / "a.avro",
        schema,
        [
            pg_event("c", lsn=10, after={"region": "eu", "id": 1, "name": "a"}),
            pg_event("c", lsn=11, after={"region": "us", "id": 1, "name": "b"}),
            pg_event("c", lsn=12, after={"region": "eu", "id": 2, "name": "c"}),
        ],
    )
    options = dict(
        source_path=str(source),
        target_base_path=base,
        target_table="accounts",
        record_key_fields="region,id",
        partition_path_field="region",
        table_type=table_type,
    )
    result = hudi_cdc.ingest(spark=spark, **options)
    assert (result.upserts, result.deletes) == (3, 0) and result.committed
    # A key may move between partitions: a global index (GLOBAL_SIMPLE), not the bucket default.
    assert HudiTable(spark, base).checkpoint_commit().extra["hudi_cdc.index"] == "file lookup"
    # REPLICA IDENTITY DEFAULT: the delete's before image holds only the key columns.
    write_events(
        source / "b.avro",
        schema,
        [
            pg_event("d", lsn=20, before={"region": "eu", "id": 1, "name": None}),
            pg_event("u", lsn=21, after={"region": "us", "id": 1, "name": "b2"}),
        ],
    )
    result = hudi_cdc.ingest(spark=spark, **options)
    assert (result.upserts, result.deletes, result.tombstones_held) == (1, 1, 1)
    assert read_rows(spark, base, ("region", "id", "name")) == [("eu", 2, "c"), ("us", 1, "b2")]


def test_continuous_mode_runs_rounds(spark, tmp_path: Path) -> None:
    source, base = tmp_path / "events", str(tmp_path / "table")
    write_events(source / "a.avro", SCHEMA, [pg_event("c", lsn=10, after={"id": 1, "name": "x", "bio": None})])
    result = run_cli(
        *ingest_args(str(source), base), "--continuous", "--max-rounds", "2", "--min-sync-interval-seconds", "0"
    )
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 2 and "commit" in lines[0] and "nothing new" in lines[1]


def test_a_round_leaves_no_cached_blocks_behind(spark, tmp_path: Path) -> None:
    # A continuous process must not carry one round's materialised data into the next.
    source, base = tmp_path / "events", str(tmp_path / "table")
    events, _ = random_history(seed=7, keys=30, lsn_start=100)
    write_events(source / "1.avro", SCHEMA, events[: len(events) // 2])
    before = spark.sparkContext._jsc.getPersistentRDDs().size()
    assert run_cli(*ingest_args(str(source), base)).exit_code == 0
    write_events(source / "2.avro", SCHEMA, events[len(events) // 2 :])  # TOAST fills from the table, deletes
    assert run_cli(*ingest_args(str(source), base)).exit_code == 0
    assert spark.sparkContext._jsc.getPersistentRDDs().size() == before
    assert read_rows(spark, base, COLUMNS) == expected_rows(apply_events(events), COLUMNS)


def test_a_table_keeps_the_index_it_was_written_with(spark, tmp_path: Path) -> None:
    from hudi_cdc.config import load_config
    from hudi_cdc.errors import ConfigError
    from hudi_cdc.pipeline import ingest_once
    from hudi_cdc.sink import options as opt

    source, base = tmp_path / "events", str(tmp_path / "table")
    bucket = ["--hoodie-conf", "hoodie.index.type=BUCKET", "--hoodie-conf", "hoodie.bucket.index.num.buckets=2"]
    write_events(
        source / "0001.avro", SCHEMA, [pg_event("c", lsn=10 + k, after={"id": k, "name": "a"}) for k in range(20)]
    )
    assert run_cli(*ingest_args(str(source), base, table_type="mor", extra=bucket)).exit_code == 0
    table = HudiTable(spark, base)
    assert table.checkpoint_commit().extra[opt.INDEX_KEY] == "BUCKET(SIMPLE, 2, id)"
    checkpoint, instants = table.latest_checkpoint(), commit_instants(spark, base)

    # With other index settings, Hudi would not see the bucketed keys in log files.
    write_events(
        source / "0002.avro", SCHEMA, [pg_event("u", lsn=100 + k, after={"id": k, "name": "b"}) for k in range(20)]
    )
    for wrong, given in (
        (["--hoodie-conf", "hoodie.index.type=SIMPLE"], "file lookup"),
        (["--hoodie-conf", "hoodie.index.type=BUCKET"], "BUCKET(SIMPLE, 256, id)"),
    ):
        result = run_cli(*ingest_args(str(source), base, table_type="mor", extra=wrong))
        assert result.exit_code == 2, result.output  # the preflight's refusal: a configuration error
        assert f"index 'BUCKET(SIMPLE, 2, id)', the command line '{given}'" in result.output, result.output
    # The round itself checks too (a continuous process, the runner), before reading anything.
    config = load_config(
        env={}, source_path=str(source), target_base_path=base, target_table="t_mor", table_type="MERGE_ON_READ",
        record_key_fields="id", hoodie_conf={"hoodie.index.type": "SIMPLE"},
    )  # fmt: skip
    with pytest.raises(
        ConfigError, match=r"written with the index BUCKET\(SIMPLE, 2, id\), and these settings give file lookup"
    ):
        ingest_once(config, spark=spark)
    assert commit_instants(spark, base) == instants and table.latest_checkpoint() == checkpoint

    # No index settings: the table's recorded layout.
    assert run_cli(*ingest_args(str(source), base, table_type="mor")).exit_code == 0
    assert read_rows(spark, base, ("id", "name")) == [(k, "b") for k in range(20)]
    # No index this table may use reads a key bloom filter, so its base files carry none.
    blooms = base_file_bloom_filters(base)
    assert blooms and not any(blooms.values()), blooms


def _bucket_ids(base: str) -> set[str]:
    """The bucket numbers of a table's file groups (the first part of a bucket index's file ids)."""
    names = [p.name.lstrip(".") for p in Path(base).rglob("*") if p.is_file() and ".hoodie" not in p.parts]
    return {n.split("_")[0].split("-")[0] for n in names if n.endswith(".parquet") or ".log." in n}


@pytest.mark.parametrize(
    ("table_type", "extra", "buckets"),
    [("cow", [], 4), ("mor", ["--hoodie-conf", "hoodie.bucket.index.num.buckets=2"], 2)],
)
def test_a_new_unpartitioned_table_gets_the_bucket_index(
    spark, tmp_path: Path, table_type: str, extra: list[str], buckets: int
) -> None:
    """No index set: a new table gets Hudi's bucket index, 4 buckets for a small first commit (or the
    user's count), recorded in the commit; a later round with no settings keeps it."""
    from hudi_cdc.sink import options as opt

    source, base = tmp_path / "events", str(tmp_path / "table")
    events, lsn = random_history(seed=5, keys=60, lsn_start=1000)
    write_events(source / "a.avro", SCHEMA, events)
    assert run_cli(*ingest_args(str(source), base, table_type=table_type, extra=extra)).exit_code == 0
    layout = f"BUCKET(SIMPLE, {buckets}, id)"
    first = HudiTable(spark, base).checkpoint_commit()
    assert first.extra[opt.INDEX_KEY] == layout and first.operation == "upsert"  # options.bulk_inserts
    assert _bucket_ids(base) == {f"{b:08d}" for b in range(buckets)}

    more, _ = random_history(seed=6, keys=60, lsn_start=lsn + 100)
    write_events(source / "b.avro", SCHEMA, more)
    result = run_cli(*ingest_args(str(source), base, table_type=table_type))  # no index settings now
    assert result.exit_code == 0, result.output
    assert HudiTable(spark, base).checkpoint_commit().extra[opt.INDEX_KEY] == layout
    assert _bucket_ids(base) == {f"{b:08d}" for b in range(buckets)}
    assert read_rows(spark, base, COLUMNS) == expected_rows(apply_events(events + more), COLUMNS)
    blooms = base_file_bloom_filters(base)  # no index this table may use reads them
    assert blooms and not any(blooms.values()), blooms


@pytest.mark.parametrize("table_type", ["cow", "mor"])
def test_a_table_created_with_the_simple_index_keeps_it(spark, tmp_path: Path, table_type: str) -> None:
    """A table written with SIMPLE (the default before the bucket index) takes rounds with no index set."""
    from hudi_cdc.sink import options as opt

    source, base = tmp_path / "events", str(tmp_path / "table")
    events, lsn = random_history(seed=7, keys=60, lsn_start=1000)
    write_events(source / "a.avro", SCHEMA, events)
    simple = ["--hoodie-conf", "hoodie.index.type=SIMPLE"]
    assert run_cli(*ingest_args(str(source), base, table_type=table_type, extra=simple)).exit_code == 0
    assert HudiTable(spark, base).checkpoint_commit().extra[opt.INDEX_KEY] == opt.FILE_LOOKUP

    more, _ = random_history(seed=8, keys=60, lsn_start=lsn + 100)
    write_events(source / "b.avro", SCHEMA, more)
    result = run_cli(*ingest_args(str(source), base, table_type=table_type))
    assert result.exit_code == 0, result.output
    assert HudiTable(spark, base).checkpoint_commit().extra[opt.INDEX_KEY] == opt.FILE_LOOKUP
    assert read_rows(spark, base, COLUMNS) == expected_rows(apply_events(events + more), COLUMNS)
    blooms = base_file_bloom_filters(base)  # SIMPLE may still be switched to the bloom index
    assert blooms and all(blooms.values()), blooms


def _log_files(base: str) -> list[Path]:
    """The table's MOR log files (not the metadata table's)."""
    return [p for p in Path(base).rglob("*.log.*") if ".hoodie" not in p.parts]


def _parquet_log_files(base: str) -> list[str]:
    """The MOR log files that hold a Parquet data block (Parquet's magic bytes)."""
    return [p.name for p in _log_files(base) if b"PAR1" in p.read_bytes()]


def test_a_mor_table_written_with_the_avro_merger_takes_the_spark_merger(spark, tmp_path: Path) -> None:
    """Tables from before the Spark record merger became the default read on, and the source order holds:
    a stale update that shares a batch with newer ones loses (with Parquet log blocks it won)."""
    source, base = tmp_path / "events", str(tmp_path / "table")
    avro_merger = [
        "--hoodie-conf",
        "hoodie.write.record.merge.custom.implementation.classes=org.apache.hudi.common.model.HoodieAvroRecordMerger",
    ]
    write_events(
        source / "0001.avro", SCHEMA, [pg_event("c", lsn=100 + k, after={"id": k, "name": "a"}) for k in range(40)]
    )
    write_events(
        source / "0002.avro", SCHEMA, [pg_event("u", lsn=200 + k, after={"id": k, "name": "b"}) for k in range(10)]
    )
    for _ in range(2):  # the first commit (a bulk insert), then a delta commit of updates into log files
        extra = [*avro_merger, "--source-limit", "1"]
        assert run_cli(*ingest_args(str(source), base, table_type="mor", extra=extra)).exit_code == 0

    # Every third key: odd ones stale (older than the stored row), even ones newer; key 39 deleted.
    write_events(
        source / "0003.avro",
        SCHEMA,
        [pg_event("u", lsn=(99 if k % 2 else 300) + k, after={"id": k, "name": "c"}) for k in range(0, 39, 3)]
        + [pg_event("d", lsn=400, before={"id": 39, "name": "a"})],
    )
    assert run_cli(*ingest_args(str(source), base, table_type="mor")).exit_code == 0
    want = sorted((k, "c" if k % 3 == 0 and k % 2 == 0 else "b" if k < 10 else "a") for k in range(39))
    assert read_rows(spark, base, ("id", "name")) == want
    assert not _parquet_log_files(base)
    compact(spark, base)  # Hudi's own procedure merges the log blocks of both mergers into base files
    assert read_rows(spark, base, ("id", "name"), query_type="read_optimized") == want
    assert read_rows(spark, base, ("id", "name")) == want


def _log_block_sizes(base: str) -> list[int]:
    """The size of every block in the table's MOR log files (each opens with Hudi's magic and its length)."""
    sizes = []
    for log in _log_files(base):
        data = log.read_bytes()
        at = data.find(b"#HUDI#")
        while at >= 0:
            sizes.append(int.from_bytes(data[at + 6 : at + 14], "big"))
            at = data.find(b"#HUDI#", at + 14)
    return sizes


def test_a_mor_round_is_appended_in_log_blocks_sized_to_the_heap(spark, tmp_path: Path) -> None:
    """Hudi's default 256 MB log block took several times that in heap and a 4 GiB driver ran out of it:
    an update round bigger than the block hudi-cdc picks for this session's heap is spread over several."""
    from hudi_cdc.sink.options import log_block_max_size
    from hudi_cdc.spark import task_heap_bytes

    block = log_block_max_size(task_heap_bytes(spark))
    assert 16 << 20 <= block < 256 << 20  # the test session's 2 GiB heap gives less than Hudi's default
    keys, size = 100, int(2.5 * block) // 100
    source, base = tmp_path / "events", str(tmp_path / "table")
    write_events(source / "0001.avro", SCHEMA, [pg_event("c", lsn=k, after={"id": k, "bio": "a"}) for k in range(keys)])
    assert run_cli(*ingest_args(str(source), base, table_type="mor")).exit_code == 0
    big = [pg_event("u", lsn=1000 + k, after={"id": k, "bio": chr(97 + k % 26) * size}) for k in range(keys)]
    write_events(source / "0002.avro", SCHEMA, big)
    assert run_cli(*ingest_args(str(source), base, table_type="mor")).exit_code == 0

    data_blocks = [s for s in _log_block_sizes(base) if s > 1 << 20]
    assert len(data_blocks) >= 2, data_blocks
    assert max(data_blocks) <= block + 2 * size, (data_blocks, block)
    assert read_rows(spark, base, ("id", "bio")) == sorted((k, chr(97 + k % 26) * size) for k in range(keys))
