from __future__ import annotations

import re

import pytest

from hudi_cdc.errors import ConfigError
from hudi_cdc.sink import options as opt


def _options(**kw: object) -> dict[str, str]:
    base = dict(
        table_name="t",
        table_type="COPY_ON_WRITE",
        record_key_fields=("id",),
        partition_path_field=None,
        ordering_field="_source_order",
        user_conf={},
    )
    base.update(kw)
    return opt.write_options(**base)  # type: ignore[arg-type]


def test_event_time_ordering_on_the_source_order() -> None:
    options = _options()
    assert options[opt.MERGE_MODE] == "EVENT_TIME_ORDERING"
    assert options[opt.PRECOMBINE_FIELD] == "_source_order"
    assert options[opt.OPERATION] == "upsert"
    assert options[opt.KEYGEN_CLASS].endswith("NonpartitionedKeyGenerator")
    assert options[opt.COMMIT_META_PREFIX] == opt.META_PREFIX
    assert opt.CHECKPOINT_KEY.startswith(opt.META_PREFIX)


def test_composite_key_and_partitioned_table_use_a_global_index() -> None:
    options = _options(record_key_fields=("a", "b"), partition_path_field="region")
    assert options[opt.RECORD_KEY] == "a,b"
    assert options[opt.KEYGEN_CLASS].endswith("ComplexKeyGenerator")
    assert options[opt.INDEX_TYPE] == "GLOBAL_SIMPLE"
    assert options[opt.GLOBAL_SIMPLE_UPDATE_PARTITION] == "true"
    assert _options(partition_path_field="region")[opt.KEYGEN_CLASS].endswith("SimpleKeyGenerator")


def test_mor_compacts_inline_unless_the_user_says_otherwise() -> None:
    assert _options(table_type="MERGE_ON_READ")[opt.COMPACT_INLINE] == "true"
    user = {opt.COMPACT_INLINE_MAX_DELTA_COMMITS: "1"}
    assert _options(table_type="MERGE_ON_READ", user_conf=user)[opt.COMPACT_INLINE_MAX_DELTA_COMMITS] == "1"
    assert opt.COMPACT_INLINE not in _options()


@pytest.mark.parametrize("key", [opt.PRECOMBINE_FIELD, opt.MERGE_MODE, opt.RECORD_KEY, "hudi_cdc.checkpoint"])
def test_owned_keys_cannot_be_overridden(key: str) -> None:
    with pytest.raises(ConfigError, match="may not set"):
        _options(user_conf={key: "x"})


def test_base_files_are_zstd_unless_the_user_says_otherwise() -> None:
    assert _options()[opt.PARQUET_CODEC] == "zstd"
    assert _options(table_type="MERGE_ON_READ")[opt.PARQUET_CODEC] == "zstd"
    assert _options(user_conf={opt.PARQUET_CODEC: "snappy"})[opt.PARQUET_CODEC] == "snappy"


@pytest.mark.parametrize(
    ("user_conf", "bloom"),
    [
        ({}, None),  # Hudi's default index (SIMPLE) may be switched to BLOOM, which reads the filters
        ({"hoodie.index.type": "bloom"}, None),
        ({"hoodie.index.type": "GLOBAL_SIMPLE"}, None),
        ({"hoodie.index.type": "BUCKET"}, "false"),
        ({"hoodie.index.type": "RECORD_INDEX"}, "false"),
        ({"hoodie.index.type": "BUCKET", opt.METADATA_BLOOM_INDEX[0]: "true"}, None),
        ({"hoodie.index.type": "BUCKET", opt.METADATA_BLOOM_INDEX[1]: "True"}, None),
        ({"hoodie.index.type": "BUCKET", opt.BLOOM_FILTER: "true"}, "true"),
    ],
)
def test_base_files_carry_a_bloom_filter_only_where_an_index_may_read_it(user_conf, bloom) -> None:
    assert _options(user_conf=user_conf).get(opt.BLOOM_FILTER) == bloom
    assert _options(table_type="MERGE_ON_READ", user_conf=user_conf).get(opt.BLOOM_FILTER) == bloom


def test_clean_is_planned_every_tenth_commit_unless_the_user_says_otherwise() -> None:
    # Planning a clean after every commit was 0.2 s of a 1.5 s small commit (make bench-commit-cost).
    assert _options()[opt.CLEAN_TRIGGER_MAX_COMMITS] == "10"
    assert _options(user_conf={opt.CLEAN_TRIGGER_MAX_COMMITS: "1"})[opt.CLEAN_TRIGGER_MAX_COMMITS] == "1"


@pytest.mark.parametrize(
    ("user_conf", "bulk"),
    [
        ({}, True),
        ({"hoodie.index.type": "BLOOM"}, True),
        ({"hoodie.index.type": "global_simple"}, True),
        ({"hoodie.datasource.write.operation": "upsert"}, False),
        ({"hoodie.index.type": "BUCKET"}, False),
        ({"hoodie.index.type": "RECORD_INDEX"}, False),
        ({"hoodie.metadata.record.index.enable": "true"}, False),
    ],
)
def test_a_first_commit_bulk_inserts_only_with_an_index_that_reads_the_files(user_conf, bulk: bool) -> None:
    assert opt.first_commit_bulk_insert(user_conf) is bulk


def test_the_bucket_default_first_commit_is_an_upsert_and_a_partitioned_tables_a_bulk_insert() -> None:
    new = {"partitioned": False, "committed": False, "recorded": None, "rows": 1000}
    assert not opt.bulk_inserts(_options(user_conf=opt.resolve_index({}, **new)))  # type: ignore[arg-type]
    partitioned = opt.resolve_index({}, **{**new, "partitioned": True})  # type: ignore[arg-type]
    assert opt.bulk_inserts(_options(user_conf=partitioned, partition_path_field="region"))


def test_async_mor_compaction_is_scheduled_by_the_commit_and_run_under_the_in_process_lock() -> None:
    options = _options(table_type="MERGE_ON_READ", async_compaction=True)
    assert options[opt.COMPACT_INLINE] == "false" and options[opt.COMPACT_SCHEDULE_INLINE] == "true"
    assert options[opt.LOCK_PROVIDER] == opt.IN_PROCESS_LOCK
    assert options[opt.COMPACT_INLINE_MAX_DELTA_COMMITS] == "5"
    # A user's lock provider (several writers) wins; COW has nothing to compact.
    zk = "org.apache.hudi.client.transaction.lock.ZookeeperBasedLockProvider"
    assert (
        _options(table_type="MERGE_ON_READ", async_compaction=True, user_conf={opt.LOCK_PROVIDER: zk})[
            opt.LOCK_PROVIDER
        ]
        == zk
    )
    cow = _options(async_compaction=True)
    assert opt.COMPACT_INLINE not in cow and opt.LOCK_PROVIDER not in cow


def test_the_compaction_procedure_gets_the_table_settings_it_can_carry(caplog) -> None:  # noqa: ANN001
    from hudi_cdc.sink.compaction import procedure_options

    options = _options(
        table_type="MERGE_ON_READ",
        async_compaction=True,
        user_conf={
            "hoodie.parquet.max.file.size": "1000", "hoodie.some.list": "a,b", "hoodie.index.type": "BUCKET",
            "hoodie.bucket.index.num.buckets": "4", "hoodie.metadata.enable": "false",
        },
    )  # fmt: skip
    carried = dict(kv.split("=", 1) for kv in procedure_options(options).split(","))
    assert carried["hoodie.metadata.enable"] == "false"
    assert not any(k.startswith(("hoodie.index.", "hoodie.bucket.")) for k in carried)  # no key lookups
    assert carried[opt.LOCK_PROVIDER] == opt.IN_PROCESS_LOCK
    assert carried[opt.COLUMN_STATS] == "false" and carried["hoodie.parquet.max.file.size"] == "1000"
    assert not any(k.startswith("hoodie.datasource.") for k in carried)
    assert "hoodie.some.list" not in carried and "hoodie.some.list" in caplog.text


@pytest.mark.parametrize(
    ("first", "second", "same"),
    [
        ({}, {"hoodie.index.type": "BLOOM"}, True),  # both read the files themselves
        ({"hoodie.index.type": "simple"}, {"hoodie.index.type": "GLOBAL_SIMPLE"}, True),
        ({}, {"hoodie.index.type": "BUCKET", "hoodie.bucket.index.num.buckets": "4"}, False),
        (
            {"hoodie.index.type": "BUCKET"},
            {"hoodie.index.type": "BUCKET", "hoodie.bucket.index.num.buckets": "256"},
            True,
        ),
        (
            {"hoodie.index.type": "BUCKET"},
            {"hoodie.index.type": "BUCKET", "hoodie.bucket.index.num.buckets": "4"},
            False,
        ),
        (
            {"hoodie.index.type": "BUCKET", "hoodie.index.bucket.engine": "CONSISTENT_HASHING"},
            {
                "hoodie.index.type": "BUCKET",
                "hoodie.index.bucket.engine": "consistent_hashing",
                "hoodie.bucket.index.num.buckets": "8",
            },
            True,
        ),  # fmt: skip
        (  # Hudi hashes the record key unless told otherwise
            {"hoodie.index.type": "BUCKET", "hoodie.bucket.index.hash.field": "id"},
            {"hoodie.index.type": "BUCKET", opt.RECORD_KEY: "id"},
            True,
        ),
        (
            {"hoodie.index.type": "BUCKET", "hoodie.bucket.index.hash.field": "a"},
            {"hoodie.index.type": "BUCKET", opt.RECORD_KEY: "a,b"},
            False,
        ),
        ({}, {"hoodie.index.type": "RECORD_INDEX"}, False),
    ],
)
def test_index_layouts_equal_only_when_a_writer_finds_the_others_keys(first, second, same: bool) -> None:
    assert (opt.index_layout(first) == opt.index_layout(second)) is same
    opt.check_index_layout(opt.index_layout(first), first, "t")  # its own layout passes
    if same:
        opt.check_index_layout(opt.index_layout(first), second, "t")
    else:
        with pytest.raises(ConfigError, match=f"^t was written with the index {re.escape(opt.index_layout(first))}"):
            opt.check_index_layout(opt.index_layout(first), second, "t")


def test_a_table_without_a_recorded_index_takes_any() -> None:
    opt.check_index_layout(None, {"hoodie.index.type": "BUCKET"}, "t")  # written before hudi-cdc recorded it


BUCKET_READ = {"hoodie.index.type": "BUCKET", "hoodie.index.bucket.engine": "SIMPLE"}


@pytest.mark.parametrize(
    ("written", "keys", "read"),
    [
        (
            {"hoodie.index.type": "BUCKET", "hoodie.bucket.index.num.buckets": "16"},
            ("id",),
            {**BUCKET_READ, "hoodie.bucket.index.num.buckets": "16", "hoodie.bucket.index.hash.field": "id"},
        ),
        (
            {"hoodie.index.type": "BUCKET"},
            ("a", "b"),
            {**BUCKET_READ, "hoodie.bucket.index.num.buckets": "256", "hoodie.bucket.index.hash.field": "a,b"},
        ),
        (
            {
                "hoodie.index.type": "BUCKET",
                "hoodie.bucket.index.num.buckets": "8",
                "hoodie.bucket.index.hash.field": "a",
            },
            ("a", "b"),
            {**BUCKET_READ, "hoodie.bucket.index.num.buckets": "8", "hoodie.bucket.index.hash.field": "a"},
        ),
        ({"hoodie.index.type": "BUCKET", "hoodie.index.bucket.engine": "CONSISTENT_HASHING"}, ("id",), {}),
        ({"hoodie.index.type": "BUCKET", "hoodie.bucket.index.partition.expressions": "p=1,8"}, ("id",), {}),
        ({}, ("id",), {}),  # Hudi's SIMPLE: files looked up, nothing to prune by
        ({"hoodie.index.type": "RECORD_INDEX"}, ("id",), {}),
    ],
)
def test_a_read_by_key_prunes_buckets_only_with_the_written_simple_bucket_layout(written, keys, read) -> None:
    # Hudi's reader prunes with the count it is given: another count than the table's would skip rows.
    assert opt.bucket_read_options(written, keys) == read


def test_the_spark_record_merger_where_the_index_is_partition_local() -> None:
    # A COW upsert into a 1M-row table: 16% less time than with Hudi's Avro merger (make bench-index).
    assert _options()[opt.RECORD_MERGER_CLASSES] == opt.SPARK_RECORD_MERGER
    assert _options(table_type="MERGE_ON_READ")[opt.RECORD_MERGER_CLASSES] == opt.SPARK_RECORD_MERGER
    bucket = {opt.INDEX_TYPE: "bucket"}
    assert _options(user_conf=bucket)[opt.RECORD_MERGER_CLASSES] == opt.SPARK_RECORD_MERGER
    avro = {opt.RECORD_MERGER_CLASSES: opt.AVRO_RECORD_MERGER}
    assert _options(table_type="MERGE_ON_READ", user_conf=avro)[opt.RECORD_MERGER_CLASSES] == opt.AVRO_RECORD_MERGER


@pytest.mark.parametrize("index", [None, "GLOBAL_SIMPLE", "GLOBAL_BLOOM", "RECORD_INDEX", "HBASE", "SomeCustomIndex"])
def test_the_avro_record_merger_with_any_other_index(index: str | None) -> None:
    # Hudi 1.2's Spark path misreads the stored row when it outlives a stale event (tests/payloads/test_partition_moves.py).
    user = {opt.INDEX_TYPE: index} if index else {}
    for table_type in ("COPY_ON_WRITE", "MERGE_ON_READ"):
        options = _options(table_type=table_type, partition_path_field="region", user_conf=user)
        assert options[opt.RECORD_MERGER_CLASSES] == opt.AVRO_RECORD_MERGER
    if index:  # unpartitioned, a global index is still global
        assert _options(user_conf=user)[opt.RECORD_MERGER_CLASSES] == opt.AVRO_RECORD_MERGER


def test_the_spark_record_merger_with_a_global_index_is_refused() -> None:
    spark = {opt.RECORD_MERGER_CLASSES: opt.SPARK_RECORD_MERGER}
    with pytest.raises(ConfigError, match="global index .* wrong partition") as refused:
        _options(partition_path_field="region", user_conf=spark)
    assert f"{opt.INDEX_TYPE}=GLOBAL_SIMPLE" in str(refused.value)  # hudi-cdc's own choice for a partitioned table
    with pytest.raises(ConfigError, match="global index"):
        _options(user_conf={**spark, opt.INDEX_TYPE: "GLOBAL_SIMPLE"})


@pytest.mark.parametrize("index", ["SIMPLE", "bloom", "BUCKET"])
def test_a_partition_local_index_on_a_partitioned_table_is_refused(index: str) -> None:
    with pytest.raises(ConfigError, match=f"hoodie.index.type={index} with --partition-path-field: .* kept twice"):
        _options(partition_path_field="region", user_conf={opt.INDEX_TYPE: index})
    assert _options(user_conf={opt.INDEX_TYPE: index})[opt.INDEX_TYPE] == index  # unpartitioned: fine


@pytest.mark.parametrize("block_format", ["parquet", "PARQUET", "hfile"])
def test_log_blocks_other_than_avro_are_refused(block_format: str) -> None:
    # Hudi 1.2 with Parquet log blocks let a stale update win on MOR (test_scenarios, found with the Spark merger).
    with pytest.raises(ConfigError, match=f"{opt.LOG_BLOCK_FORMAT}={block_format}: hudi-cdc writes Avro log blocks"):
        _options(table_type="MERGE_ON_READ", user_conf={opt.LOG_BLOCK_FORMAT: block_format})
    assert opt.LOG_BLOCK_FORMAT not in _options(table_type="MERGE_ON_READ")
    assert _options(user_conf={opt.LOG_BLOCK_FORMAT: "avro"})[opt.LOG_BLOCK_FORMAT] == "avro"


@pytest.mark.parametrize(
    ("task_heap", "block"),
    [
        ((4096 - 300) * 4 // 10 // 2 << 20, 63 << 20),  # 4 GiB, local[2]: the scale run's driver
        (((1024 - 300) * 4 // 10) << 20, 24 << 20),  # 1 GiB (Spark's default), one task
        (0, 16 << 20),  # never below Hudi's newer floor
        (64 << 30, 256 << 20),  # never above Hudi's default
    ],
)
def test_the_log_block_is_a_twelfth_of_a_tasks_heap_within_hudis_bounds(task_heap: int, block: int) -> None:
    assert opt.log_block_max_size(task_heap) == pytest.approx(block, rel=0.02)


@pytest.mark.parametrize(
    ("rows", "buckets"),
    [
        (None, 4),  # not known: the floor, the write's parallelism
        (0, 4),
        (300_000, 4),
        (8_000_000, 4),  # 2M rows a bucket
        (8_000_001, 8),
        (100_000_000, 64),  # 1.56M a bucket
        (512_000_000, 256),
        (10_000_000_000, 256),  # Hudi's default is the cap
    ],
)
def test_a_new_tables_bucket_count_is_a_power_of_two_of_at_most_2m_rows_each(rows: int | None, buckets: int) -> None:
    assert opt.bucket_count(rows) == buckets


def _resolved(user_conf: dict[str, str], **kw: object) -> dict[str, str]:
    state: dict[str, object] = {"partitioned": False, "committed": False, "recorded": None, "rows": 20_000_000}
    state.update(kw)
    return opt.resolve_index(user_conf, **state)  # type: ignore[arg-type]


def test_a_new_unpartitioned_table_gets_the_bucket_index_sized_by_its_first_commit() -> None:
    resolved = _resolved({"hoodie.metadata.enable": "false"})
    assert resolved == {
        "hoodie.metadata.enable": "false",
        opt.INDEX_TYPE: "BUCKET",
        opt.BUCKET_ENGINE: "SIMPLE",
        opt.NUM_BUCKETS: "16",
    }
    assert opt.index_layout(_options(user_conf=resolved)) == "BUCKET(SIMPLE, 16, id)"
    assert _resolved({opt.NUM_BUCKETS: "32"})[opt.NUM_BUCKETS] == "32"  # the user's count wins


@pytest.mark.parametrize(
    "user_conf",
    [{opt.INDEX_TYPE: "SIMPLE"}, {opt.INDEX_TYPE: "bloom"}, {opt.RECORD_INDEX_ENABLE: "true"}],
)
def test_a_users_index_is_left_alone(user_conf: dict[str, str]) -> None:
    assert _resolved(user_conf) == user_conf


def test_a_partitioned_table_keeps_the_global_simple_index() -> None:
    resolved = _resolved({}, partitioned=True)
    assert resolved == {}
    assert _options(user_conf=resolved, partition_path_field="region")[opt.INDEX_TYPE] == "GLOBAL_SIMPLE"


def test_an_existing_table_keeps_the_layout_it_recorded_and_one_without_keeps_simple() -> None:
    assert _resolved({}, committed=True, recorded=opt.FILE_LOOKUP) == {}
    assert _resolved({}, committed=True, recorded=None) == {}  # an older hudi-cdc's: SIMPLE, Hudi's default
    bucket = _resolved({}, committed=True, recorded="BUCKET(SIMPLE, 8, id)", rows=900_000_000)
    assert opt.index_layout(_options(user_conf=bucket)) == "BUCKET(SIMPLE, 8, id)"
    assert opt.index_layout(_options(user_conf={})) == opt.FILE_LOOKUP
    # A count given now that differs from the recorded one is the user's, and the guard refuses it.
    changed = _resolved({opt.NUM_BUCKETS: "16"}, committed=True, recorded="BUCKET(SIMPLE, 8, id)")
    with pytest.raises(ConfigError, match="written with the index BUCKET"):
        opt.check_index_layout("BUCKET(SIMPLE, 8, id)", _options(user_conf=changed), "t")


def test_a_recorded_layout_the_defaults_cannot_give_is_left_to_the_users_settings() -> None:
    assert _resolved({}, committed=True, recorded="RECORD_INDEX") == {}
    assert _resolved({}, committed=True, recorded="BUCKET(CONSISTENT_HASHING, id)") == {}


def test_a_compaction_takes_the_index_and_bloom_filters_the_table_recorded() -> None:
    """The async compactor's options are made before a new table exists: its recorded index decides."""
    rounds = _options(table_type="MERGE_ON_READ")  # no index set: made without the table
    assert opt.BLOOM_FILTER not in rounds
    bucket = opt.compaction_options(rounds, "BUCKET(SIMPLE, 4, id)")
    assert (bucket[opt.INDEX_TYPE], bucket[opt.NUM_BUCKETS], bucket[opt.BLOOM_FILTER]) == ("BUCKET", "4", "false")
    assert opt.compaction_options(rounds, opt.FILE_LOOKUP) == rounds  # the simple index: blooms kept
    assert opt.compaction_options(rounds, None) == rounds  # an older hudi-cdc's table: SIMPLE
    asked = _options(table_type="MERGE_ON_READ", user_conf={opt.BLOOM_FILTER: "true"})
    assert opt.compaction_options(asked, "BUCKET(SIMPLE, 4, id)")[opt.BLOOM_FILTER] == "true"
