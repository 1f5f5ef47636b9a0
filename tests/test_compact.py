"""Compaction off the rounds' path (MERGE_ON_READ's default, ``compaction = "async"``): a one-shot round only
schedules the plan, ``hudi-cdc compact`` runs it under the table's writer lease, a kill mid-run is re-run."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from hudi_cdc.cli import main
from hudi_cdc.sink.hudi import HudiTable
from hudi_cdc.sink.lease import LeaseOwner, TableLease
from hudi_cdc.testing.samples import SampleCustomers
from tests.support import kill_when_pending, pending_instants, table_state

pytestmark = [pytest.mark.spark, pytest.mark.hudi]

HUDI_CDC = str(Path(sys.executable).parent / "hudi-cdc")
COLUMNS = ("id", "name", "email", "notes")
# A plan at every delta commit; no small-file packing, so updates land in log files a compaction must merge.
COMPACT_EACH_ROUND = ("--hoodie-conf", "hoodie.compact.inline.max.delta.commits=1",
                      "--hoodie-conf", "hoodie.parquet.small.file.limit=0")  # fmt: skip


def _args(sample: SampleCustomers, base: Path) -> list[str]:
    return [
        "--source", "files", "--source-path", sample.source_path, "--flavor", "postgres",
        "--target-base-path", str(base), "--target-table", "customers", "--table-type", "mor",
        "--record-key-fields", "id", *COMPACT_EACH_ROUND,
    ]  # fmt: skip


def _cli(command: str, sample: SampleCustomers, base: Path, env: dict[str, str] | None = None) -> dict[str, Any]:
    result = CliRunner().invoke(main, [command, *_args(sample, base), "--json"], env=env, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads([line for line in result.stdout.splitlines() if line.startswith("{")][-1])


def _source(sample: SampleCustomers) -> dict[Any, tuple[Any, ...]]:
    return {k: tuple(row[c] for c in COLUMNS) for k, row in sample.state.items()}


def _compactions(table: HudiTable) -> list[str]:
    return sorted(c.instant for c in table.commits() if c.operation == "compact")


@pytest.fixture(scope="module")
def compacted(spark, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:  # noqa: ANN001
    """A MOR table's rounds with the default compaction, each writer's, and the compactions run after them."""
    tmp_path = tmp_path_factory.mktemp("compact")
    sample = SampleCustomers(tmp_path / "events", keys=200)
    sample.snapshot(rows=150)  # every one of the new table's 4 buckets gets a file group: the Java client may write
    base = tmp_path / "table"
    table = HudiTable(spark, str(base))
    seen: dict[str, Any] = {"sample": sample, "base": base, "table": table}
    _cli("ingest", sample, base)
    sample.changes(seed=1)
    seen["scheduling_round"] = _cli("ingest", sample, base)
    seen["pending_after_round"] = table.pending_compactions()
    seen["compactions_after_round"] = _compactions(table)
    sample.changes(seed=2)  # a plan is pending: the next round writes all the same, and runs nothing
    seen["second_round"] = _cli("ingest", sample, base)
    seen["pending_after_second"] = table.pending_compactions()
    seen["read_before"] = table_state(spark, str(base), COLUMNS) == _source(sample)
    seen["compact"] = _cli("compact", sample, base)
    seen["compactions"] = _compactions(table)
    seen["read_after"] = table_state(spark, str(base), COLUMNS) == _source(sample)
    seen["nothing_pending"] = _cli("compact", sample, base)
    # Later rounds, the datasource's then the Java client's, still right; the datasource's schedules and runs nothing.
    sample.changes(seed=3)
    seen["spark_round"] = _cli("ingest", sample, base, env={"HUDI_CDC__JAVA_WRITER_MAX_ROWS": "0"})
    seen["pending_after_spark"] = table.pending_compactions()
    seen["compactions_after_spark"] = _compactions(table)
    sample.changes(seed=4)
    seen["java_round"] = _cli("ingest", sample, base)
    return seen


def test_a_round_that_schedules_a_compaction_returns_without_running_it(compacted: dict[str, Any]) -> None:
    assert compacted["scheduling_round"]["details"]["writer"] == "java"
    assert len(compacted["pending_after_round"]) == 1  # its commit scheduled the plan
    assert compacted["compactions_after_round"] == []  # and nothing ran it
    # With a plan pending the Java client still takes the round (inline, it would hand it to the datasource).
    assert compacted["second_round"]["details"]["writer"] == "java"
    assert compacted["pending_after_second"] == compacted["pending_after_round"]
    assert compacted["read_before"]  # the snapshot merges the log files meanwhile


def test_hudi_cdc_compact_runs_the_plans_and_the_table_reads_back_equal(compacted: dict[str, Any]) -> None:
    assert compacted["compact"]["compacted"] == compacted["pending_after_round"] == compacted["compactions"]
    assert compacted["read_after"]
    assert compacted["nothing_pending"]["compacted"] == []


def test_later_rounds_of_both_writers_stay_right_and_leave_compaction_to_it(spark, compacted: dict) -> None:  # noqa: ANN001
    assert compacted["spark_round"]["details"].get("writer", "spark") == "spark"
    assert compacted["compactions_after_spark"] == compacted["compactions"]  # the datasource's round ran none
    assert compacted["java_round"]["details"]["writer"] == "java"
    sample, base, table = compacted["sample"], compacted["base"], compacted["table"]
    assert table_state(spark, str(base), COLUMNS) == _source(sample)
    pending = table.pending_compactions()
    assert pending and set(compacted["pending_after_spark"]) <= set(pending)
    assert _cli("compact", sample, base)["compacted"] == pending
    assert table.pending_compactions() == []
    assert table_state(spark, str(base), COLUMNS) == _source(sample)


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


def test_killed_during_a_compaction_the_table_reads_and_the_plan_runs_again(spark, tmp_path: Path) -> None:  # noqa: ANN001
    sample = SampleCustomers(tmp_path / "events", keys=300)
    sample.snapshot(rows=200)
    base = tmp_path / "table"
    _cli("ingest", sample, base)
    sample.changes(seed=2)
    _cli("ingest", sample, base)
    table = HudiTable(spark, str(base))
    plans = table.pending_compactions()
    assert plans
    timeline = base / ".hoodie" / "timeline"
    command = [HUDI_CDC, "compact", *_args(sample, base)]
    killed = kill_when_pending(command, timeline, "compaction.inflight")
    assert killed and {n.split(".")[0] for n in killed} == set(plans)
    assert table_state(spark, str(base), COLUMNS) == _source(sample)  # readable, every change there

    result = _cli("compact", sample, base)  # the dead holder's lease is taken over; Hudi rolls the plan back first
    assert result["compacted"] == plans
    assert not pending_instants(timeline, "compaction")
    completed = {n.split("_")[0] for n in os.listdir(timeline) if n.endswith(".commit")}
    assert set(plans) <= completed
    assert table_state(spark, str(base), COLUMNS) == _source(sample)
