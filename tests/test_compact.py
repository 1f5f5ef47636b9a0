"""Compaction off the rounds' path (MERGE_ON_READ's default, ``compaction = "async"``): a round's commit only
schedules the plan; a one-shot ``ingest`` (CLI or Python) runs it before it exits, under the table's writer lease,
a continuous one on its compactor thread; a kill mid-compaction leaves the table right and ``hudi-cdc compact`` runs
the plan again (tests/test_crash_recovery.py: the next run does). One table for every step, in the order a table
lives them."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import hudi_cdc
from hudi_cdc.cli import main
from hudi_cdc.config import IngestConfig, load_config
from hudi_cdc.sink.hudi import HudiTable
from hudi_cdc.sink.lease import LeaseOwner, TableLease
from hudi_cdc.testing.samples import SampleCustomers
from tests.support import kill_when_pending, pending_instants, table_state

pytestmark = [pytest.mark.spark, pytest.mark.hudi]

HUDI_CDC = str(Path(sys.executable).parent / "hudi-cdc")
COLUMNS = ("id", "name", "email", "notes")
# A plan at every delta commit; no small-file packing, so updates land in log files a compaction must merge.
RO = "read_optimized"
COMPACT_EACH_ROUND = {"hoodie.compact.inline.max.delta.commits": "1", "hoodie.parquet.small.file.limit": "0"}


def _args(sample: SampleCustomers, base: Path) -> list[str]:
    return [
        "--source", "files", "--source-path", sample.source_path, "--flavor", "postgres",
        "--target-base-path", str(base), "--target-table", "customers", "--table-type", "mor",
        "--record-key-fields", "id", *[a for k, v in COMPACT_EACH_ROUND.items() for a in ("--hoodie-conf", f"{k}={v}")],
    ]  # fmt: skip


def _config(sample: SampleCustomers, base: Path, **settings: Any) -> IngestConfig:  # noqa: ANN401
    """The same settings as ``_args``, for the Python API."""
    return load_config(
        source="files", source_path=sample.source_path, flavor="postgres", target_base_path=str(base),
        target_table="customers", table_type="mor", record_key_fields="id", hoodie_conf=COMPACT_EACH_ROUND,
        **settings,
    )  # fmt: skip


def _cli(command: str, sample: SampleCustomers, base: Path) -> dict[str, Any]:
    result = CliRunner().invoke(main, [command, *_args(sample, base), "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads([line for line in result.stdout.splitlines() if line.startswith("{")][-1])


def _source(sample: SampleCustomers) -> dict[Any, tuple[Any, ...]]:
    return {k: tuple(row[c] for c in COLUMNS) for k, row in sample.state.items()}


def _compactions(table: HudiTable) -> list[str]:
    return sorted(c.instant for c in table.commits() if c.operation == "compact")


@pytest.fixture(scope="module")
def compacted(spark, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:  # noqa: ANN001
    """One MOR table with the default compaction through each way of running its plans, what each step left."""
    tmp_path = tmp_path_factory.mktemp("compact")
    sample = SampleCustomers(tmp_path / "events", keys=200)
    sample.snapshot(rows=150)  # every one of the new table's 4 buckets gets a file group: the Java client may write
    base = tmp_path / "table"
    table = HudiTable(spark, str(base))
    timeline = base / ".hoodie" / "timeline"
    seen: dict[str, Any] = {"sample": sample, "base": base, "table": table}

    def state(step: str) -> None:
        seen[f"{step}_pending"] = table.pending_compactions()
        seen[f"{step}_compactions"] = _compactions(table)
        seen[f"{step}_equal"] = table_state(spark, str(base), COLUMNS) == _source(sample)

    _cli("ingest", sample, base)  # the first commit writes base files only: nothing to compact
    assert _compactions(table) == [] and table.pending_compactions() == []

    # A one-shot `hudi-cdc ingest` past the trigger: its commit schedules the plan, it runs it before it exits.
    sample.changes(seed=1)
    seen["one_shot"] = _cli("ingest", sample, base)
    state("one_shot")
    # Read through the compacted base files alone: every change of the round reached them.
    seen["one_shot_optimized_equal"] = table_state(spark, str(base), COLUMNS, query_type=RO) == _source(sample)

    # The same in a process of its own, SIGKILLed while that compaction runs; then `hudi-cdc compact`.
    sample.changes(seed=2)
    seen["killed"] = kill_when_pending([HUDI_CDC, "ingest", *_args(sample, base)], timeline, "compaction.inflight")
    state("killed")
    seen["compact"] = _cli("compact", sample, base)  # the dead holder's lease is taken over; Hudi rolls back first
    state("compact")
    seen["compact_timeline_pending"] = pending_instants(timeline, "compaction")
    seen["nothing_pending"] = _cli("compact", sample, base)

    # A continuous run (the datasource's round): the round returns with its plan only scheduled, the compactor
    # thread has it; a run that ends by itself (--max-rounds) runs what is due before it ends.
    sample.changes(seed=3)
    rounds = hudi_cdc.run(
        _config(sample, base, continuous=True, max_rounds=1, min_sync_interval_seconds=0, java_writer_max_rows=0),
        spark=spark,
    )
    seen["continuous"] = next(rounds)
    seen["continuous_pending_at_yield"] = table.pending_compactions()
    seen["continuous_compactions_at_yield"] = _compactions(table)
    seen["continuous_more"] = list(rounds)
    state("continuous")

    # The Python API's one-shot call (the Java client's round): as the CLI's.
    sample.changes(seed=4)
    seen["python"] = hudi_cdc.ingest(_config(sample, base), spark=spark)
    state("python")
    seen["python_optimized_equal"] = table_state(spark, str(base), COLUMNS, query_type=RO) == _source(sample)
    return seen


def test_a_one_shot_ingest_runs_the_plan_its_round_scheduled_before_it_exits(compacted: dict[str, Any]) -> None:
    one_shot = compacted["one_shot"]
    assert one_shot["details"]["writer"] == "java" and one_shot["commit_time"]
    assert compacted["one_shot_pending"] == []
    plans = compacted["one_shot_compactions"]
    assert len(plans) == 1 and plans[0] > one_shot["commit_time"]  # the plan its commit scheduled, completed
    assert compacted["one_shot_equal"] and compacted["one_shot_optimized_equal"]


def test_killed_while_compacting_the_table_reads_and_hudi_cdc_compact_runs_the_plan(compacted: dict) -> None:
    killed = {name.split(".")[0] for name in compacted["killed"]}
    # Killed in its compaction, after its round: the round's commit stands, the plan stays pending.
    assert killed and set(compacted["killed_pending"]) == killed
    assert compacted["killed_compactions"] == compacted["one_shot_compactions"]
    assert compacted["killed_equal"]  # readable, every change there (the snapshot merges the log files)
    assert compacted["compact"]["compacted"] == sorted(killed)  # rolled back and run again
    assert compacted["compact_pending"] == [] and compacted["compact_timeline_pending"] == []
    assert compacted["compact_compactions"] == sorted([*compacted["one_shot_compactions"], *killed])
    assert compacted["compact_equal"]
    assert compacted["nothing_pending"]["compacted"] == []


def test_a_continuous_round_only_schedules_and_a_run_that_ends_runs_the_plan(compacted: dict[str, Any]) -> None:
    result = compacted["continuous"]
    assert result.committed and result.details.get("writer", "spark") == "spark"
    # The datasource's round returned with its plan scheduled and not run (inline, it would have run it first).
    scheduled = compacted["continuous_pending_at_yield"]
    assert len(scheduled) == 1 and scheduled[0] > result.commit_time
    assert compacted["continuous_compactions_at_yield"] == compacted["compact_compactions"]
    assert compacted["continuous_more"] == []  # --max-rounds 1
    assert compacted["continuous_pending"] == []
    assert compacted["continuous_compactions"] == sorted([*compacted["compact_compactions"], *scheduled])
    assert compacted["continuous_equal"]


def test_the_python_ingest_runs_the_plan_as_the_cli_does(compacted: dict[str, Any]) -> None:
    result = compacted["python"]
    assert result.committed and result.details["writer"] == "java"
    assert compacted["python_pending"] == []
    new = sorted(set(compacted["python_compactions"]) - set(compacted["continuous_compactions"]))
    assert len(new) == 1 and new[0] > result.commit_time
    assert compacted["python_equal"] and compacted["python_optimized_equal"]


def test_compact_takes_the_writer_lease(compacted: dict[str, Any]) -> None:
    sample, base = compacted["sample"], compacted["base"]
    other = TableLease(str(base), owner=LeaseOwner("etl-2", 4121, "other-ingest", "hudi-cdc ingest"))
    assert other.try_acquire() is None
    try:
        refused = CliRunner().invoke(main, ["compact", *_args(sample, base)], catch_exceptions=False)
    finally:
        other.release()
    assert refused.exit_code != 0
    assert "host etl-2, pid 4121, `hudi-cdc ingest`" in refused.output, refused.output
