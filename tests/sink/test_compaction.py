"""Async MERGE_ON_READ compaction: the round's commit schedules it, a thread of its own runs it."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from hudi_cdc.config import load_config
from hudi_cdc.pipeline import run
from hudi_cdc.sink.hudi import HudiTable
from hudi_cdc.testing.samples import SampleCustomers
from tests.support import base_file_bloom_filters, base_file_codecs

pytestmark = [pytest.mark.spark, pytest.mark.hudi]

COLUMNS = ("id", "name", "email", "notes")
# A compaction plan after every delta commit; no small-file packing, so updates go to log files.
COMPACT_EVERY_COMMIT = {"hoodie.compact.inline.max.delta.commits": "1", "hoodie.parquet.small.file.limit": "0"}


def _table(spark, base: str) -> dict:  # noqa: ANN001
    return {r["id"]: r.asDict() for r in spark.read.format("hudi").load(base).select(*COLUMNS).collect()}


def _completed_compactions(table: HudiTable) -> set[str]:
    return {c.instant for c in table.commits() if c.operation == "compact"}


@pytest.mark.parametrize(
    "settings",
    [{}, {"hoodie.index.type": "BUCKET", "hoodie.bucket.index.num.buckets": "2", "hoodie.metadata.enable": "false"}],
    ids=["defaults", "bucket-index-no-metadata-table"],
)
def test_a_continuous_mor_round_leaves_its_compaction_to_the_thread(spark, tmp_path: Path, settings: dict) -> None:
    sample = SampleCustomers(tmp_path / "events", keys=300)
    sample.snapshot(rows=200)
    base = str(tmp_path / "table")
    config = load_config(
        source_path=sample.source_path, target_base_path=base, target_table="customers", record_key_fields="id",
        table_type="mor", compaction="async", continuous=True, max_rounds=4,
        hoodie_conf={**COMPACT_EVERY_COMMIT, **settings},
    )  # fmt: skip
    assert config.async_compaction
    table = HudiTable(spark, base)
    for round_no, result in enumerate(run(config, spark=spark), start=1):
        assert result.committed
        if round_no >= 2:  # the first commit writes base files only (a bulk insert, or new buckets): nothing to compact
            # The round is over and its commit visible, its compaction not run yet:
            # inline, the round would have returned only after it.
            pending = table.pending_compactions()
            assert pending, f"round {round_no} left no compaction plan"
            # The generator is suspended here, so only the compaction thread can finish it.
            deadline = time.monotonic() + 180
            while not set(pending) <= _completed_compactions(table) and time.monotonic() < deadline:
                time.sleep(0.2)
            assert set(pending) <= _completed_compactions(table)
            assert _table(spark, base) == sample.state
        if round_no < 4:
            sample.changes(seed=round_no)
    assert len(_completed_compactions(table)) == 3
    assert _table(spark, base) == sample.state
    # Read through the compacted base files alone: every change reached them.
    optimized = spark.read.format("hudi").option("hoodie.datasource.query.type", "read_optimized").load(base)
    assert {r["id"]: r.asDict() for r in optimized.select(*COLUMNS).collect()} == sample.state
    # The thread's compactions write with the rounds' options: zstd, not Hudi's gzip, and a key
    # bloom filter only where the table's index may read one: neither the bucket default nor BUCKET does.
    assert all(c == {"ZSTD"} for c in base_file_codecs(base).values())
    blooms = base_file_bloom_filters(base)
    assert HudiTable(spark, base).checkpoint_commit().extra["hudi_cdc.index"].startswith("BUCKET(SIMPLE, ")
    assert blooms and not any(blooms.values()), blooms
