"""Kill ``hudi-cdc ingest`` (its whole process group, SIGKILL) while Hudi has an instant pending, then run again.

The next run must finish the job with no human step: the table equals the
source, nothing lost, nothing doubled. A writer killed during the table's very
first commit leaves ``.hoodie`` with a pending instant and no completed one;
that once wedged every later run.

Only the killed run is a process of its own (it is what gets killed); the runs
before and after it are the same command in this process, on the test's Spark
session, which saves a JVM start (10-25 s here) each.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from hudi_cdc.cli import main
from hudi_cdc.testing.samples import SampleCustomers
from tests.support import kill_when_pending, pending_instants

pytestmark = [pytest.mark.spark, pytest.mark.hudi]

HUDI_CDC = str(Path(sys.executable).parent / "hudi-cdc")
COLUMNS = ("id", "name", "email", "notes")
# A compaction plan at every delta commit; no small-file packing, so updates land in log files it must merge.
COMPACT_EACH_ROUND = (
    "--hoodie-conf",
    "hoodie.compact.inline.max.delta.commits=1",
    "--hoodie-conf",
    "hoodie.parquet.small.file.limit=0",
)


def _command(sample: SampleCustomers, base: Path, table_type: str, *extra: str) -> list[str]:
    return [
        HUDI_CDC, "ingest", "--source", "files", "--source-path", sample.source_path, "--flavor", "postgres",
        "--target-base-path", str(base), "--target-table", "customers", "--table-type", table_type,
        "--record-key-fields", "id", *extra,
    ]  # fmt: skip


def _ingest(sample: SampleCustomers, base: Path, table_type: str, *extra: str) -> None:
    """The same ``hudi-cdc ingest`` in this process; it must exit 0."""
    result = CliRunner().invoke(main, _command(sample, base, table_type, *extra)[1:], catch_exceptions=False)
    assert result.exit_code == 0, result.output


def _table(spark, base: Path) -> dict:  # noqa: ANN001
    frame = spark.read.format("hudi").load(str(base))
    return {r["id"]: r.asDict() for r in frame.select(*COLUMNS).collect()}


# A new table's first commit is a bulk insert: a commit of base files on MOR too.
@pytest.mark.parametrize(("table_type", "action"), [("cow", "commit"), ("mor", "commit")])
def test_killed_during_the_first_commit_the_next_run_finishes(spark, tmp_path: Path, table_type: str, action: str):
    sample = SampleCustomers(tmp_path / "events", keys=300)
    sample.snapshot(rows=200)
    sample.changes(seed=1)
    base = tmp_path / "table"
    pending = kill_when_pending(_command(sample, base, table_type), base / ".hoodie" / "timeline", action)
    assert pending and not any("_" in n for n in os.listdir(base / ".hoodie" / "timeline") if action in n)

    _ingest(sample, base, table_type, "--json")
    assert _table(spark, base) == sample.state


def test_killed_during_a_compaction_the_next_run_finishes(spark, tmp_path: Path) -> None:
    sample = SampleCustomers(tmp_path / "events", keys=300)
    sample.snapshot(rows=200)
    base = tmp_path / "table"
    inline = ("--compaction", "inline", *COMPACT_EACH_ROUND)
    _ingest(sample, base, "mor", *inline)

    sample.changes(seed=2)
    timeline = base / ".hoodie" / "timeline"
    kill_when_pending(_command(sample, base, "mor", *inline), timeline, "compaction")

    sample.changes(seed=3)
    _ingest(sample, base, "mor", *inline)
    assert _table(spark, base) == sample.state
    assert not pending_instants(timeline, "commit") and not pending_instants(timeline, "compaction")


def test_killed_during_a_later_commit_the_next_run_finishes(spark, tmp_path: Path) -> None:
    sample = SampleCustomers(tmp_path / "events", keys=300)
    sample.snapshot(rows=200)
    base = tmp_path / "table"
    _ingest(sample, base, "cow")
    sample.changes(seed=5)
    kill_when_pending(_command(sample, base, "cow"), base / ".hoodie" / "timeline", "commit")
    _ingest(sample, base, "cow", "--json")
    assert _table(spark, base) == sample.state


def test_killed_during_an_async_compaction_the_next_run_finishes(spark, tmp_path: Path) -> None:
    # A continuous MOR process with compactions on a thread of their own.
    sample = SampleCustomers(tmp_path / "events", keys=300)
    sample.snapshot(rows=200)
    base = tmp_path / "table"
    continuous = ["--continuous", "--min-sync-interval-seconds", "0", "--compaction", "async"]
    _ingest(sample, base, "mor", *COMPACT_EACH_ROUND)

    sample.changes(seed=2)
    timeline = base / ".hoodie" / "timeline"
    killed = kill_when_pending(
        _command(sample, base, "mor", *COMPACT_EACH_ROUND, *continuous), timeline, "compaction.inflight"
    )
    assert killed

    sample.changes(seed=3)
    _ingest(sample, base, "mor", *COMPACT_EACH_ROUND, *continuous, "--max-rounds", "2", "--json")
    assert _table(spark, base) == sample.state
    assert not pending_instants(timeline, "compaction") and not pending_instants(timeline, "commit")
    # The plan killed mid-run was run again to completion (Hudi rolls an inflight compaction back first).
    completed = {n.split("_")[0] for n in os.listdir(timeline) if n.endswith(".commit")}
    assert {name.split(".")[0] for name in killed} <= completed


def test_killed_during_a_bucket_index_delta_commit_the_next_run_finishes(spark, tmp_path: Path) -> None:
    # The low-latency settings of docs/operations.md: a bucket's inserts and updates land in log files.
    low_latency = ("--hoodie-conf", "hoodie.index.type=BUCKET", "--hoodie-conf", "hoodie.bucket.index.num.buckets=2",
                   "--hoodie-conf", "hoodie.metadata.enable=false")  # fmt: skip
    sample = SampleCustomers(tmp_path / "events", keys=300)
    sample.snapshot(rows=200)
    base = tmp_path / "table"
    _ingest(sample, base, "mor", *low_latency)

    sample.changes(seed=5)
    timeline = base / ".hoodie" / "timeline"
    assert kill_when_pending(_command(sample, base, "mor", *low_latency), timeline, "deltacommit")
    sample.changes(seed=6)
    _ingest(sample, base, "mor", *low_latency, "--json")
    assert _table(spark, base) == sample.state
    assert spark.read.format("hudi").load(str(base)).count() == len(sample.state)  # no key written twice
    assert not pending_instants(timeline, "deltacommit")
