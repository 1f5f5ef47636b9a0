"""Buckets that grow (sink.buckets): a table whose bucket files pass ``bucket_max_mb`` is rewritten into more
buckets in one replace commit, and every writer after it (the datasource, the Java writer) finds its keys there.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from hudi_cdc.sink import options as opt
from hudi_cdc.sink.hudi import HudiTable
from hudi_cdc.testing.samples import SampleCustomers
from tests.support import collect_counting_files, ingest_json, kill_when_pending, table_state

COLUMNS = ("id", "name", "email", "notes")
HUDI_CDC = str(Path(sys.executable).parent / "hudi-cdc")
MiB = 2**20


@pytest.mark.parametrize(
    ("sizes", "buckets", "max_bytes", "grown"),
    [
        ([10, 10, 10, 10], 4, 10, None),  # none past the limit
        ([11, 10, 10, 10], 4, 10, 16),  # 41 bytes: 8 buckets would hold 5.1 each, over half the limit
        ([11, 1, 1, 1], 4, 10, 8),  # 14 bytes: 8 buckets hold 1.75 each
        ([300, 300], 2, 10, 128),  # 600 bytes: 64 buckets would hold 9.4 each, 128 hold 4.7
        ([11] * 256, 256, 10, None),  # at the ceiling already
        ([11, 10], 4, 0, None),  # bucket_max_mb = 0: the count stays
    ],
)
def test_the_grown_count_doubles_until_the_average_is_under_half_the_limit(
    sizes: list[int], buckets: int, max_bytes: int, grown: int | None
) -> None:
    assert opt.grown_bucket_count(sizes, buckets, max_bytes) == grown


def _options(**user_conf: str) -> dict[str, str]:
    resolved = opt.resolve_index(user_conf, partitioned=False, committed=False, recorded=None, rows=10)
    return opt.write_options(
        table_name="t",
        table_type="MERGE_ON_READ",
        record_key_fields=["id"],
        partition_path_field=None,
        ordering_field="_source_order",
        user_conf=resolved,
    )


def test_only_the_bucket_default_grows_never_a_count_or_index_the_user_set() -> None:
    assert opt.grows_buckets({}, _options())
    for key, value in [
        (opt.NUM_BUCKETS, "4"),
        (opt.INDEX_TYPE, "BUCKET"),
        (opt.BUCKET_ENGINE, "SIMPLE"),
        (opt.INDEX_TYPE, "SIMPLE"),
    ]:
        user = {key: value}
        assert not opt.grows_buckets(user, _options(**user)), user


# MERGE_ON_READ: a compaction every second delta commit, so that a few rounds make base files to check.
OFTEN = ("--hoodie-conf", "hoodie.compact.inline.max.delta.commits=2")


def _ingest(sample: SampleCustomers, base: Path, table_type: str, *extra: str) -> dict[str, Any]:
    """One ``hudi-cdc ingest`` round, in this process; its result."""
    extra = (*OFTEN, *extra) if table_type == "mor" else extra
    return ingest_json(
        "--source", "files", "--source-path", sample.source_path, "--flavor", "postgres",
        "--target-base-path", str(base), "--target-table", "customers", "--table-type", table_type,
        "--record-key-fields", "id", *extra,
    )  # fmt: skip


def _equal_to_source(spark, base: Path, sample: SampleCustomers) -> None:  # noqa: ANN001
    """The table holds the source's rows, each once."""
    assert table_state(spark, str(base), COLUMNS) == sample.rows()
    assert spark.read.format("hudi").load(str(base)).count() == len(sample.state)


def _limit_mb(spark, base: Path) -> float:  # noqa: ANN001
    """A bucket_max_mb just under the table's largest base file now: the next round's commit passes it."""
    return max(HudiTable(spark, str(base)).base_file_bytes()) * 0.9 / MiB


@pytest.mark.spark
@pytest.mark.hudi
@pytest.mark.parametrize("table_type", ["cow", "mor"])
def test_a_table_past_bucket_max_mb_grows_its_buckets_and_every_writer_after_follows(
    spark,  # noqa: ANN001
    tmp_path: Path,
    table_type: str,
) -> None:
    sample = SampleCustomers(tmp_path / "events", keys=3000)
    sample.snapshot(rows=2000)
    base = tmp_path / "table"
    first = _ingest(sample, base, table_type)
    assert "buckets" not in first["details"]  # 256 MiB: far from it
    table = HudiTable(spark, str(base))
    assert len(table.base_file_bytes()) == 4
    if table_type == "mor":  # its rounds write log files: a compaction's base files are what it checks
        sample.changes(seed=1)
        _ingest(sample, base, table_type)  # the second delta commit schedules one, the one-shot run runs it
        assert next(table.iter_commits()).operation == "compact"
    limit = _limit_mb(spark, base)

    sample.changes(seed=2)  # inserts, updates with TOAST placeholders, deletes
    grown = _ingest(sample, base, table_type, "--bucket-max-mb", f"{limit:.6f}")
    growth = grown["details"]["buckets"]
    assert growth["from"] == 4 and growth["to"] >= 8, growth
    buckets = growth["to"]
    newest = next(table.iter_commits())
    assert (newest.instant, newest.action, newest.operation) == (
        growth["instant"],
        "replacecommit",
        "insert_overwrite_table",
    )
    assert newest.extra[opt.INDEX_KEY] == f"BUCKET(SIMPLE, {buckets}, id)"
    # It carries the round's checkpoint: the next round starts where that round ended.
    assert table.latest_checkpoint() == json.dumps(grown["checkpoint"], sort_keys=True)
    assert len(table.base_file_bytes()) == buckets  # the 4 old file groups replaced
    _equal_to_source(spark, base, sample)

    sample.changes(seed=3)  # updates and deletes of keys now in the new buckets
    after = _ingest(sample, base, table_type)
    assert after["events"] > 0 and "buckets" not in after["details"]
    if table_type == "mor":  # a small MOR round: Hudi's Java client, tagging by the new count
        assert after["details"]["writer"] == "java", after["details"]
        # planned in the driver, its placeholders filled from stored rows read by the new count's buckets
        assert after["details"]["plan"] == "driver" and after["toast_filled"] > 0, after
        _a_key_lookup_reads_its_new_bucket(table, buckets)
    assert table.checkpoint_commit().extra[opt.INDEX_KEY] == f"BUCKET(SIMPLE, {buckets}, id)"
    assert len(table.base_file_bytes()) == buckets  # no key went to a file group of its own
    _equal_to_source(spark, base, sample)


def _a_key_lookup_reads_its_new_bucket(table: HudiTable, buckets: int) -> None:
    """The driver plan's stored-row lookup of one key in a bucket the growth made (its id above the old count's)
    reads that key's row and that file group alone: Hudi's reader is given the grown count. With the old
    count it would look in another file group and miss the row."""
    from hudi_cdc import small_plan
    from hudi_cdc.sink.hudi import index_conf

    key, group = next(
        (row["id"], row["_hoodie_file_name"][:8])
        for row in table.read().select("id", "_hoodie_file_name").collect()
        if int(row["_hoodie_file_name"][:8]) >= 4
    )
    options = opt.bucket_read_options(index_conf(table, {}, partitioned=False), ("id",))
    assert options[opt.NUM_BUCKETS] == str(buckets)
    rows, files = collect_counting_files(small_plan._stored_frame(table, options, ("id",), [(key,)], ["notes"]))
    assert [r["id"] for r in rows] == [key] and files == 1, (group, rows, files)


@pytest.mark.spark
@pytest.mark.hudi
def test_a_run_killed_while_it_grows_the_buckets_keeps_table_and_checkpoint_and_a_later_round_grows_them(
    spark,  # noqa: ANN001
    tmp_path: Path,
) -> None:
    sample = SampleCustomers(tmp_path / "events", keys=3000)
    sample.snapshot(rows=2000)
    base = tmp_path / "table"
    _ingest(sample, base, "cow")
    limit = f"{_limit_mb(spark, base):.6f}"
    table = HudiTable(spark, str(base))

    sample.changes(seed=1)
    command = [
        HUDI_CDC, "ingest", "--source", "files", "--source-path", sample.source_path, "--flavor", "postgres",
        "--target-base-path", str(base), "--target-table", "customers", "--table-type", "cow",
        "--record-key-fields", "id", "--bucket-max-mb", limit,
    ]  # fmt: skip
    killed = kill_when_pending(command, base / ".hoodie" / "timeline", "replacecommit")
    # The round's own commit completed before the rewrite began; the rewrite's never did.
    assert next(table.iter_commits()).action == "commit"
    assert next(table.iter_commits()).extra[opt.INDEX_KEY] == "BUCKET(SIMPLE, 4, id)"
    assert len(table.base_file_bytes()) == 4
    _equal_to_source(spark, base, sample)

    sample.changes(seed=2)
    grown = _ingest(sample, base, "cow", "--bucket-max-mb", limit)
    assert grown["details"]["buckets"]["from"] == 4 and grown["details"]["buckets"]["instant"] not in killed
    assert len(table.base_file_bytes()) == grown["details"]["buckets"]["to"]
    _equal_to_source(spark, base, sample)
