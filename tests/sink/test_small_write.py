"""Small MERGE_ON_READ rounds through Hudi's Java write client (sink.small_write) against Spark's datasource.

The same stream goes into two tables through ``hudi-cdc ingest``, one with the Java client allowed
(the default), one with ``java_writer_max_rows = 0``; both must equal the source and each other,
read as snapshots and, after a compaction, read-optimized.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from hudi_cdc.cli import main
from hudi_cdc.sink import options as opt
from hudi_cdc.sink.hudi import HudiTable
from hudi_cdc.sink.small_write import declined
from hudi_cdc.testing.samples import SampleCustomers
from tests.support import compact, kill_when_pending, pending_instants, table_state

pytestmark = [pytest.mark.spark, pytest.mark.hudi]

COLUMNS = ("id", "name", "email", "notes")
HUDI_CDC = str(Path(sys.executable).parent / "hudi-cdc")
NO_INLINE_COMPACTION = ("--hoodie-conf", "hoodie.compact.inline=false")


def _args(sample: SampleCustomers, base: Path, *extra: str) -> list[str]:
    return [
        "ingest", "--source", "files", "--source-path", sample.source_path, "--flavor", "postgres",
        "--target-base-path", str(base), "--target-table", "customers", "--table-type", "mor",
        "--record-key-fields", "id", *extra,
    ]  # fmt: skip


def _ingest(sample: SampleCustomers, base: Path, *extra: str, java_rows: int | None = None) -> None:
    env = {} if java_rows is None else {"HUDI_CDC__JAVA_WRITER_MAX_ROWS": str(java_rows)}
    result = CliRunner().invoke(main, _args(sample, base, *extra), env=env, catch_exceptions=False)
    assert result.exit_code == 0, result.output


def _source(sample: SampleCustomers) -> dict[int, tuple]:
    """The source table's rows, keyed as ``table_state`` keys the table's."""
    return {k: tuple(v[c] for c in COLUMNS) for k, v in sample.state.items()}


def _writers(spark, base: Path) -> list[str]:  # noqa: ANN001
    """Who wrote each checkpointed commit, oldest first."""
    commits = [c for c in HudiTable(spark, str(base)).commits(newest_first=False) if opt.CHECKPOINT_KEY in c.extra]
    return [c.extra.get(opt.WRITER_KEY, "spark") for c in commits]


def test_small_rounds_are_written_by_the_java_client_and_equal_the_datasource(spark, tmp_path: Path) -> None:
    sample = SampleCustomers(tmp_path / "events", keys=200)
    sample.snapshot(rows=150)  # every one of the new table's 4 buckets gets a file group
    java, spark_only = tmp_path / "java", tmp_path / "spark"
    for base, rows in ((java, None), (spark_only, 0)):
        _ingest(sample, base, *NO_INLINE_COMPACTION, java_rows=rows)
    for seed in (1, 2, 3):
        # Updates with TOAST placeholders, deletes, re-inserts, shuffled within each file.
        sample.changes(seed=seed)
        if seed == 2:
            assert sample.late_update_of_deleted_row()  # it must not bring the row back
        for base, rows in ((java, None), (spark_only, 0)):
            _ingest(sample, base, *NO_INLINE_COMPACTION, java_rows=rows)
    assert _writers(spark, java) == ["spark", "java", "java", "java"]
    assert _writers(spark, spark_only) == ["spark"] * 4
    expected = _source(sample)
    assert table_state(spark, str(java), COLUMNS) == expected
    assert table_state(spark, str(spark_only), COLUMNS) == expected

    # A replay of every file changes nothing; then compaction folds the Java client's log blocks.
    _ingest(sample, java, "--checkpoint", "earliest", *NO_INLINE_COMPACTION)
    assert _writers(spark, java)[-1] == "java"
    assert table_state(spark, str(java), COLUMNS) == expected
    compact(spark, str(java))
    assert table_state(spark, str(java), COLUMNS, query_type="read_optimized") == expected


def test_a_bucket_without_a_file_group_goes_to_the_datasource(spark, tmp_path: Path) -> None:
    sample = SampleCustomers(tmp_path / "events", keys=40)
    sample.snapshot(rows=1)  # one key: one of the 4 buckets has a file group
    base = tmp_path / "table"
    _ingest(sample, base, *NO_INLINE_COMPACTION)
    sample.changes(seed=7)  # new keys in the other buckets
    _ingest(sample, base, *NO_INLINE_COMPACTION)
    sample.changes(seed=8)  # now every bucket has one: the Java client takes it
    _ingest(sample, base, *NO_INLINE_COMPACTION)
    assert _writers(spark, base) == ["spark", "spark", "java"]
    assert table_state(spark, str(base), COLUMNS) == _source(sample)


def test_killed_during_a_java_client_commit_the_next_run_finishes(spark, tmp_path: Path) -> None:
    sample = SampleCustomers(tmp_path / "events", keys=300)
    sample.snapshot(rows=200)
    base = tmp_path / "table"
    _ingest(sample, base, *NO_INLINE_COMPACTION)
    sample.changes(seed=5)
    timeline = base / ".hoodie" / "timeline"
    command = [HUDI_CDC, *_args(sample, base, *NO_INLINE_COMPACTION)]
    assert kill_when_pending(command, timeline, "deltacommit")
    assert len(_writers(spark, base)) == 1  # the killed round committed nothing

    _ingest(sample, base, *NO_INLINE_COMPACTION)
    assert _writers(spark, base) == ["spark", "java"]
    assert not pending_instants(timeline, "deltacommit")
    assert table_state(spark, str(base), COLUMNS) == _source(sample)


def test_inline_compaction_runs_in_the_java_clients_round(spark, tmp_path: Path) -> None:
    sample = SampleCustomers(tmp_path / "events", keys=100)
    sample.snapshot(rows=80)
    base = tmp_path / "table"
    every_round = ("--hoodie-conf", "hoodie.compact.inline.max.delta.commits=1")
    _ingest(sample, base, *every_round)
    sample.changes(seed=11)
    _ingest(sample, base, *every_round)
    assert _writers(spark, base) == ["spark", "java"]
    actions = [c.action for c in HudiTable(spark, str(base)).commits(newest_first=False)]
    assert actions[-2:] == ["deltacommit", "commit"], actions  # the Java client's round, then its compaction
    expected = _source(sample)
    assert table_state(spark, str(base), COLUMNS, query_type="read_optimized") == expected


def _options(**changes: str) -> dict[str, str]:
    options = opt.write_options(
        table_name="t", table_type="MERGE_ON_READ", record_key_fields=("id",), partition_path_field=None,
        ordering_field="_source_order", user_conf={opt.INDEX_TYPE: "BUCKET", opt.NUM_BUCKETS: "4"},
    )  # fmt: skip
    return {**options, **changes}


def test_declined_says_why_the_datasource_writes() -> None:
    assert declined(_options(), rows=1000, max_rows=20_000) is None
    assert "java_writer_max_rows = 10" in declined(_options(), rows=11, max_rows=10)
    assert declined(_options(), rows=0, max_rows=0) == "java_writer_max_rows = 0"  # off, whatever the round
    assert declined(_options(**{opt.TABLE_TYPE: "COPY_ON_WRITE"}), rows=1, max_rows=10) == "not MERGE_ON_READ"
    assert declined(_options(**{opt.OPERATION: "bulk_insert"}), rows=1, max_rows=10) == "a bulk_insert"
    assert declined(_options(**{opt.INDEX_TYPE: "SIMPLE"}), rows=1, max_rows=10) == "index file lookup"
    consistent = {opt.BUCKET_ENGINE: "CONSISTENT_HASHING"}
    assert declined(_options(**consistent), rows=1, max_rows=10).startswith("index BUCKET(CONSISTENT")
