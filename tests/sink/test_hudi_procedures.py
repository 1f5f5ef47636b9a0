"""A table hudi-cdc writes stays writable after a user runs Hudi's own SQL procedures on it.

Hudi's procedures write with Hudi's defaults, not hudi-cdc's: ``run_compaction`` builds the metadata table's
column-stats index, which hudi-cdc leaves off. A write with it off drops it, and Hudi 1.2 fails that write;
hudi-cdc keeps the indexes a table has (``options.kept_metadata_indexes``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hudi_cdc.sink import options as opt
from hudi_cdc.testing.samples import SampleCustomers
from tests.support import ingest_args, ingest_json, table_state

COLUMNS = ("id", "name", "email", "notes")


def test_a_tables_metadata_indexes_stay_on_unless_the_user_says() -> None:
    partitions = {"files", "column_stats", "bloom_filters", "secondary_index_x"}
    assert opt.kept_metadata_indexes(partitions, {}) == {
        opt.COLUMN_STATS: "true",
        opt.METADATA_BLOOM_INDEX[0]: "true",
    }
    # A setting of the user's, under either of Hudi's names for it, is theirs to keep.
    user = {opt.COLUMN_STATS: "false", opt.METADATA_BLOOM_INDEX[1]: "false"}
    assert opt.kept_metadata_indexes(partitions, user) == {}
    assert opt.kept_metadata_indexes({"files"}, {}) == {}


def _ingest(sample: SampleCustomers, base: Path) -> dict[str, Any]:
    return ingest_json(*ingest_args(sample.source_path, str(base), table_type="mor"))


def _metadata_partitions(base: Path) -> set[str]:
    properties = (base / ".hoodie" / "hoodie.properties").read_text().splitlines()
    listed = next(
        (line.split("=", 1)[1] for line in properties if line.startswith("hoodie.table.metadata.partitions=")), ""
    )
    return set(filter(None, listed.split(",")))


@pytest.mark.spark
@pytest.mark.hudi
def test_rounds_after_hudis_run_compaction_procedure_write_and_read_back_equal(spark, tmp_path: Path) -> None:  # noqa: ANN001
    sample = SampleCustomers(tmp_path / "events", keys=300)
    sample.snapshot(rows=200)
    base = tmp_path / "table"
    _ingest(sample, base)
    sample.changes(seed=1)
    _ingest(sample, base)
    spark.sql(
        f"call run_compaction(op => 'scheduleAndExecute', path => '{base}', "
        "options => 'hoodie.compact.inline.max.delta.commits=1')"
    ).collect()
    assert "column_stats" in _metadata_partitions(base)  # Hudi's default, which hudi-cdc's writes leave off

    writers = []
    for seed in (2, 3):
        sample.changes(seed=seed)
        result = _ingest(sample, base)
        assert result["events"] > 0
        writers.append(result["details"]["writer"])
        assert table_state(spark, str(base), COLUMNS) == sample.rows()
    assert writers == ["java", "java"]  # small MOR rounds: Hudi's Java client, with the same settings
    assert "column_stats" in _metadata_partitions(base)  # kept up to date, not dropped
