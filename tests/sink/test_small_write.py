"""Small MERGE_ON_READ rounds through Hudi's Java write client (sink.small_write) against Spark's datasource.

The same stream goes into two tables through ``hudi-cdc ingest``, one with the Java client allowed
(the default), one with ``java_writer_max_rows = 0``; both must equal the source and each other,
read as snapshots and, after a compaction, read-optimized.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from hudi_cdc._jvm import jvm
from hudi_cdc.cli import main
from hudi_cdc.pipeline import IngestResult
from hudi_cdc.service.metrics import PipelineMetrics
from hudi_cdc.service.states import TableState
from hudi_cdc.sink import options as opt
from hudi_cdc.sink import small_write
from hudi_cdc.sink.hudi import HudiTable, SmallWrite
from hudi_cdc.sink.small_write import declined, round_bytes
from hudi_cdc.testing.envelopes import pg_event
from hudi_cdc.testing.faults import kill_group
from hudi_cdc.testing.samples import SampleCustomers
from payloads.base import DELETED_COLUMN, ORDER_COLUMN
from tests.support import pending_instants, table_state

pytestmark = [pytest.mark.spark, pytest.mark.hudi]

COLUMNS = ("id", "name", "email", "notes")
HUDI_CDC = str(Path(sys.executable).parent / "hudi-cdc")
NO_INLINE_COMPACTION = ("--hoodie-conf", "hoodie.compact.inline=false")
# jars/writer's test hooks: a pause at the Java client's latest point before its instant completes
# (the log blocks and the metadata table's delta commit written), and a failure before its commit starts.
PAUSE_ENV = "HUDI_CDC_TEST_PAUSE_BEFORE_JAVA_COMMIT"
FAIL_PROPERTY = "hudi_cdc.test.java_writer"


def _args(sample: SampleCustomers, base: Path, *extra: str) -> list[str]:
    return [
        "ingest", "--source", "files", "--source-path", sample.source_path, "--flavor", "postgres",
        "--target-base-path", str(base), "--target-table", "customers", "--table-type", "mor",
        "--record-key-fields", "id", *extra,
    ]  # fmt: skip


def _ingest(
    sample: SampleCustomers, base: Path, *extra: str, java_rows: int | None = None, env: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    """One ``hudi-cdc ingest``; its rounds' results."""
    env = {**(env or {}), **({} if java_rows is None else {"HUDI_CDC__JAVA_WRITER_MAX_ROWS": str(java_rows)})}
    result = CliRunner().invoke(main, [*_args(sample, base, *extra), "--json"], env=env, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]


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
    expected = sample.rows()
    assert table_state(spark, str(java), COLUMNS) == expected
    assert table_state(spark, str(spark_only), COLUMNS) == expected

    # A replay of every file changes nothing; its commit schedules a compaction, which the one-shot ingest runs
    # before it exits (compaction = "async", the default): it folds the Java client's log blocks.
    _ingest(sample, java, "--checkpoint", "earliest", "--hoodie-conf", "hoodie.compact.inline.max.delta.commits=1")
    assert _writers(spark, java)[-1] == "java"
    assert table_state(spark, str(java), COLUMNS) == expected
    table = HudiTable(spark, str(java))
    assert [c for c in table.commits() if c.operation == "compact"] and table.pending_compactions() == []
    assert table_state(spark, str(java), COLUMNS, query_type="read_optimized") == expected


def _layout(base: Path) -> dict[str, list[bool]]:
    """Per bucket (a file id's first 8 characters), each file group's latest data: whether it has a base file."""
    groups: dict[str, bool] = {}
    for name in os.listdir(base):
        if name.endswith(".crc"):  # the local file system's checksums
            continue
        if name.endswith(".parquet"):
            groups[name.split("_")[0]] = True
        elif name.startswith(".") and ".log." in name:
            groups.setdefault(name[1:].split("_")[0], False)
    by_bucket: dict[str, list[bool]] = {}
    for file_id, has_base in sorted(groups.items()):
        by_bucket.setdefault(file_id[:8], []).append(has_base)
    return by_bucket


def test_the_java_client_gives_a_new_bucket_a_log_only_file_group_the_datasource_takes_as_its_own(
    spark,  # noqa: ANN001
    tmp_path: Path,
) -> None:
    sample = SampleCustomers(tmp_path / "events", keys=40)
    sample.snapshot(rows=1)  # one key: one of the 4 buckets has a file group
    java, spark_only = tmp_path / "java", tmp_path / "spark"
    for seed in (None, 7, 8):  # new keys in the other buckets
        if seed is not None:
            sample.changes(seed=seed)
        for base, rows in ((java, None), (spark_only, 0)):
            _ingest(sample, base, *NO_INLINE_COMPACTION, java_rows=rows)
    assert _writers(spark, java) == ["spark", "java", "java"]
    expected = sample.rows()
    assert table_state(spark, str(java), COLUMNS) == expected == table_state(spark, str(spark_only), COLUMNS)
    # One file group a bucket, named for it. The datasource writes a new bucket's first slice as a base file;
    # the Java client writes it as log files only, as Spark's bucket writes do under non-blocking concurrency
    # control.
    assert _layout(spark_only) == {f"{b:08d}": [True] for b in range(4)}
    layout = _layout(java)
    assert sorted(layout) == [f"{b:08d}" for b in range(4)] and sorted(map(len, layout.values())) == [1, 1, 1, 1]
    assert sorted(has_base for (has_base,) in layout.values()) == [False, False, False, True]

    # Spark's bucket index takes the Java client's file groups as its own: a datasource round, then a
    # compaction, which gives each one a base file.
    sample.changes(seed=9)
    _ingest(sample, java, "--hoodie-conf", "hoodie.compact.inline.max.delta.commits=1", java_rows=0)
    assert _writers(spark, java)[-1] == "spark"
    assert HudiTable(spark, str(java)).pending_compactions() == []
    expected = sample.rows()
    assert table_state(spark, str(java), COLUMNS) == expected
    assert table_state(spark, str(java), COLUMNS, query_type="read_optimized") == expected
    assert _layout(java) == {f"{b:08d}": [True] for b in range(4)}
    sample.changes(seed=10)
    _ingest(sample, java, *NO_INLINE_COMPACTION)
    assert _writers(spark, java)[-1] == "java"
    assert table_state(spark, str(java), COLUMNS) == sample.rows()


def test_an_expression_index_in_the_metadata_table_sends_the_round_to_the_datasource(spark, tmp_path: Path) -> None:
    sample = SampleCustomers(tmp_path / "events", keys=40)
    sample.snapshot(rows=40)
    base = tmp_path / "table"
    _ingest(sample, base, *NO_INLINE_COMPACTION)
    # A user's index over lower(name), built by Spark SQL (as a single writer: Hudi wants a lock provider named).
    name = f"t_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE TABLE {name} USING hudi LOCATION '{base}'")
    try:
        spark.sql("SET hoodie.write.lock.provider=org.apache.hudi.client.transaction.lock.InProcessLockProvider")
        spark.sql(f"CREATE INDEX idx_lower ON {name} USING column_stats(name) OPTIONS(expr='lower')")
    finally:
        spark.sql("RESET hoodie.write.lock.provider")
        spark.sql(f"DROP TABLE IF EXISTS {name}")  # the catalog entry only: the table's files stay
    properties = (base / ".hoodie" / "hoodie.properties").read_text()
    assert "expr_index_idx_lower" in properties

    sample.changes(seed=21)
    (result,) = _ingest(sample, base, *NO_INLINE_COMPACTION)  # the Java client cannot maintain that index
    assert result["details"]["writer"] == "spark"
    declined = result["details"]["java_declined"]
    assert "expr_index_idx_lower" in declined and "does not maintain" in declined, declined
    assert _writers(spark, base) == ["spark", "spark"]
    assert table_state(spark, str(base), COLUMNS) == sample.rows()
    assert "expr_index_idx_lower" in (base / ".hoodie" / "hoodie.properties").read_text()  # still maintained


@pytest.mark.parametrize("first_rows", [200, 1], ids=["every bucket", "new buckets"])
def test_killed_after_the_metadata_tables_delta_commit_a_spark_round_rolls_the_instant_back(
    spark,  # noqa: ANN001
    tmp_path: Path,
    first_rows: int,
) -> None:
    sample = SampleCustomers(tmp_path / "events", keys=300)
    sample.snapshot(rows=first_rows)  # 1: the killed round makes file groups for three buckets
    base = tmp_path / "table"
    _ingest(sample, base, *NO_INLINE_COMPACTION)
    sample.changes(seed=5)
    # The Java client's latest point: its log blocks written, the metadata table's delta commit complete.
    marker = tmp_path / "paused"
    env = {**os.environ, PAUSE_ENV: str(marker)}
    command = [HUDI_CDC, *_args(sample, base, *NO_INLINE_COMPACTION)]
    process = subprocess.Popen(command, env=env, start_new_session=True, stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 240
        while not marker.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert marker.exists(), f"the Java client never reached its commit (exit {process.poll()})"
    finally:
        kill_group(process)
    instant = marker.read_text().split()[-1]
    if first_rows == 1:  # on disk beside the first round's file group: the killed round's three, log files only
        layout = _layout(base)
        assert sorted(map(len, layout.values())) == [1, 1, 1, 1]
        assert sorted(has_base for (has_base,) in layout.values()) == [False, False, False, True]
    timeline = base / ".hoodie" / "timeline"
    assert [n for n in pending_instants(timeline, "deltacommit") if n.startswith(instant)]
    assert any(n.startswith(f"{instant}_") for n in os.listdir(base / ".hoodie" / "metadata" / ".hoodie" / "timeline"))
    assert any(f"_{instant}.log." in n for n in os.listdir(base))  # the round's log blocks
    assert len(_writers(spark, base)) == 1  # the killed round committed nothing

    _ingest(sample, base, *NO_INLINE_COMPACTION)
    assert _writers(spark, base) == ["spark", "spark"]  # an instant was pending: Spark's round rolled it back
    assert not pending_instants(timeline, "deltacommit")
    assert any(n.endswith(".rollback") for n in os.listdir(timeline))
    assert instant not in {c.instant for c in HudiTable(spark, str(base)).commits()}
    expected = sample.rows()
    assert table_state(spark, str(base), COLUMNS) == expected
    assert spark.read.format("hudi").load(str(base)).count() == len(expected)  # no key twice
    assert all(len(groups) == 1 for groups in _layout(base).values())  # the killed round's groups are gone
    sample.changes(seed=6)
    _ingest(sample, base, *NO_INLINE_COMPACTION)
    assert _writers(spark, base)[-1] == "java"
    assert table_state(spark, str(base), COLUMNS) == sample.rows()


def test_compaction_is_scheduled_by_the_java_client_and_run_by_the_next_spark_round(spark, tmp_path: Path) -> None:
    sample = SampleCustomers(tmp_path / "events", keys=100)
    sample.snapshot(rows=80)
    base = tmp_path / "table"
    table = HudiTable(spark, str(base))
    every_other_round = ("--compaction", "inline", "--hoodie-conf", "hoodie.compact.inline.max.delta.commits=2")
    _ingest(sample, base, *every_other_round)
    sample.changes(seed=11)
    _ingest(sample, base, *every_other_round)
    assert _writers(spark, base) == ["spark", "java"]
    # The trigger was met in the Java client's round: it scheduled the plan and ran nothing.
    plans = table.pending_compactions()
    assert len(plans) == 1
    assert [c.action for c in table.commits()] == ["deltacommit", "deltacommit"]

    sample.changes(seed=12)
    _ingest(sample, base, *every_other_round)  # a plan is pending: this round is Spark's, whose compaction runs it
    assert _writers(spark, base) == ["spark", "java", "spark"]
    assert table.pending_compactions() == []
    compactions = [c for c in table.commits() if c.action == "commit"]
    assert [c.instant for c in compactions] == plans
    assert compactions[0].operation == "compact"

    sample.changes(seed=13)
    _ingest(sample, base, *every_other_round)
    assert _writers(spark, base) == ["spark", "java", "spark", "java"]
    assert table_state(spark, str(base), COLUMNS) == sample.rows()


def _update_notes(sample: SampleCustomers, keys: range, notes: str) -> None:
    """One file of updates of ``keys`` setting ``notes`` (a value stored out of line, as TOAST stores big text)."""
    events = []
    for key in keys:
        sample.lsn += 1
        sample.state[key] = {**sample.state[key], "notes": notes}
        events.append(pg_event("u", lsn=sample.lsn, after=sample.state[key], txid=sample.lsn))
    sample.write(events)


def test_a_round_of_few_rows_over_the_byte_bound_goes_to_the_datasource(spark, tmp_path: Path) -> None:
    sample = SampleCustomers(tmp_path / "events", keys=40)
    sample.snapshot(rows=40)
    base = tmp_path / "table"
    bound = {"HUDI_CDC__JAVA_WRITER_MAX_BYTES": str(500_000)}
    _ingest(sample, base, *NO_INLINE_COMPACTION, env=bound)
    _update_notes(sample, range(5), "t" * 200_000)  # 5 rows, 1 MB of text: far below the row bound
    _ingest(sample, base, *NO_INLINE_COMPACTION, env=bound)
    _update_notes(sample, range(10, 15), "short")
    _ingest(sample, base, *NO_INLINE_COMPACTION, env=bound)
    assert _writers(spark, base) == ["spark", "spark", "java"]
    assert table_state(spark, str(base), COLUMNS) == sample.rows()

    rows = spark.createDataFrame([(1, "ab", b"xyz"), (2, None, None)], "id long, s string, b binary")
    assert round_bytes(rows) == 2 * 8 + 2 + 3
    # Rows the driver holds (a small plan's local relation), arrays included: counted there, no job, as Spark
    # counts them (the JSON text of numbers, text and NULLs is Spark's to_json's).
    import pandas as pd

    frame = pd.DataFrame({"id": [1, 2], "ints": [[1, None, 3], None], "texts": [["a", 'ü"'], []]})
    local = spark.createDataFrame(frame, "id long, ints array<int>, texts array<string>")
    spark.sparkContext.setJobGroup("local-bytes", "a local relation's bytes")
    counted = round_bytes(local)
    spark.sparkContext.setJobGroup(None, None)  # type: ignore[arg-type]
    assert list(spark.sparkContext.statusTracker().getJobIdsForGroup("local-bytes")) == []
    assert counted == round_bytes(local.repartition(1)) == 2 * 8 + len("[1,null,3]") + len('["a","ü\\""]'.encode()) + 2
    # A frame made from dicts the driver holds (small_plan._local) is counted from them when made: the same bytes.
    dicts = [{"id": 1, "ints": [1, None, 3], "texts": ["a", 'ü"']}, {"id": 2, "ints": None, "texts": []}]
    made = small_write.counted(spark.createDataFrame(frame, local.schema), dicts, local.schema.fields)
    assert small_write._COUNTED[made] == counted == round_bytes(made)


def _sink_options(**changes: str) -> dict[str, str]:
    """A MOR upsert's options with the bucket index (two buckets), as sink.small_write takes it."""
    return _options(**{opt.NUM_BUCKETS: "2", opt.COMPACT_INLINE: "false", **changes})


def _metadata(round_: int) -> dict[str, str]:
    return {opt.CHECKPOINT_KEY: json.dumps({"round": round_})}


def test_a_null_in_a_not_null_column_is_declined_and_written_by_the_datasource(spark, tmp_path: Path) -> None:
    from pyspark.sql.types import BooleanType, LongType, StringType, StructField, StructType

    def schema(nullable: bool) -> StructType:
        return StructType([
            StructField("id", LongType(), False),
            StructField("name", StringType(), nullable),
            StructField(ORDER_COLUMN, StringType(), False),
            StructField(DELETED_COLUMN, BooleanType(), False),
        ])  # fmt: skip

    base = str(tmp_path / "t")
    table, options = HudiTable(spark, base), _sink_options()
    first = [(k, f"n{k}", "0001", False) for k in range(8)]  # both buckets get a file group
    table.write(spark.createDataFrame(first, schema(False)), options, _metadata(1))
    stored = HudiTable(spark, base).read().schema
    assert not stored["name"].nullable  # the table declares name NOT NULL

    # A delete carries no after image: its name is null (REPLICA IDENTITY DEFAULT).
    second = spark.createDataFrame([(3, None, "0002", True), (4, "m4", "0002", False)], schema(True))
    before = table.commits()
    outcome = small_write.write(spark, base, second, options, _metadata(2))
    assert outcome.instant is None and outcome.failed is None
    assert outcome.declined == "column name is null in a row but NOT NULL in the table's schema"
    assert table.commits() == before  # nothing written

    table.write(second, options, _metadata(2), small=SmallWrite(rows=2, max_rows=100))
    assert table.last_writer == "spark"
    third = spark.createDataFrame([(5, "m5", "0003", False)], schema(True))
    table.write(third, options, _metadata(3), small=SmallWrite(rows=1, max_rows=100))
    assert table.last_writer == "java"  # the datasource relaxed the column: nothing to decline any more
    names = {r["id"]: r["name"] for r in table.read().collect()}
    assert names == {0: "n0", 1: "n1", 2: "n2", 4: "m4", 5: "m5", 6: "n6", 7: "n7"}


def test_a_failure_before_the_commit_hands_the_round_to_the_datasource_and_is_counted(spark, tmp_path: Path) -> None:
    sample = SampleCustomers(tmp_path / "events", keys=60)
    sample.snapshot(rows=60)
    base = tmp_path / "table"
    _ingest(sample, base, *NO_INLINE_COMPACTION)
    sample.changes(seed=21)
    system = jvm(spark).java.lang.System
    system.setProperty(FAIL_PROPERTY, "fail-before-commit")
    try:
        results = _ingest(sample, base, *NO_INLINE_COMPACTION)
    finally:
        system.clearProperty(FAIL_PROPERTY)
    assert results[-1]["details"]["writer"] == "spark"
    assert "failure injected before the commit" in results[-1]["details"]["java_failed"]
    sample.changes(seed=22)
    results += _ingest(sample, base, *NO_INLINE_COMPACTION)
    assert results[-1]["details"]["writer"] == "java" and "java_failed" not in results[-1]["details"]
    assert _writers(spark, base) == ["spark", "spark", "java"]
    assert table_state(spark, str(base), COLUMNS) == sample.rows()

    metrics = PipelineMetrics("p")
    state = TableState("customers", sample.topic, str(base))
    for result in results:  # the failed-over round, then a Java round
        metrics.observe(state, IngestResult(**result))
    assert metrics.registry.get_sample_value("hudi_cdc_java_writer_fallbacks_total", {"table": "customers"}) == 1


def test_two_file_groups_in_one_bucket_are_refused_as_corruption(spark, tmp_path: Path) -> None:
    sample = SampleCustomers(tmp_path / "events", keys=40)
    sample.snapshot(rows=40)
    base = tmp_path / "table"
    no_metadata = ("--hoodie-conf", "hoodie.metadata.enable=false")  # the copy is seen by listing, not the index
    _ingest(sample, base, *NO_INLINE_COMPACTION, *no_metadata)
    # A second file group in bucket 1: its base file copied under another file id of the same bucket.
    original = next(f for f in os.listdir(base) if f.startswith("00000001-") and f.endswith(".parquet"))
    file_id = original.split("_")[0]
    copy_id = "00000001-" + str(uuid.uuid4())[9:] + file_id[36:]
    shutil.copy(base / original, base / original.replace(file_id, copy_id))
    sample.changes(seed=31)
    result = CliRunner().invoke(main, _args(sample, base, *NO_INLINE_COMPACTION, *no_metadata))
    assert result.exit_code == 1, result.output  # terminal: a retry fails the same way
    message = result.output
    for part in ("corrupt", "customers", str(base), "bucket 1 has two file groups", file_id, copy_id):
        assert part in message, (part, message)
    assert len(_writers(spark, base)) == 1  # nothing written

    # Spark's datasource refuses the same table (its bucket index): neither path writes it.
    spark_only = CliRunner().invoke(
        main,
        _args(sample, base, *NO_INLINE_COMPACTION, *no_metadata),
        env={"HUDI_CDC__JAVA_WRITER_MAX_ROWS": "0"},
    )
    assert spark_only.exit_code != 0
    assert "same bucket id = 1" in spark_only.output, spark_only.output
    assert len(_writers(spark, base)) == 1


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
