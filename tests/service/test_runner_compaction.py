"""``hudi-cdc run`` compacts MERGE_ON_READ tables off their rounds' path: a round's commit schedules the plan,
the runner's compactor runs it under the table's lease while the next rounds go on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hudi_cdc.service import run_pipeline
from hudi_cdc.sink.hudi import HudiTable
from hudi_cdc.testing.samples import SampleCustomers
from tests.support import table_state

pytestmark = [pytest.mark.spark, pytest.mark.hudi]

COLUMNS = ("id", "name", "email", "notes")


def test_the_runner_compactor_runs_the_plans_its_rounds_schedule(spark, tmp_path: Path) -> None:  # noqa: ANN001
    sample = SampleCustomers(tmp_path / "landing", keys=200, topic="dbserver1.public.t1")
    sample.snapshot(150)  # every one of the 4 buckets gets a file group: later rounds are the Java client's
    path = tmp_path / "p.toml"
    path.write_text(f"""
[source]
source = "files"
source_path = "{tmp_path / "landing"}"
tables = "dbserver1.public.*"

[defaults]
target_base_path = "{tmp_path / "lake"}/{{table}}"
target_table = "{{table}}"
record_key_fields = "id"
table_type = "mor"
min_sync_interval_seconds = 0

[defaults.hoodie_conf]
"hoodie.compact.inline.max.delta.commits" = "1"
"hoodie.parquet.small.file.limit" = "0"

[run]
discovery_interval_seconds = 0
""")
    table = HudiTable(spark, str(tmp_path / "lake" / "t1"))
    seen: list[dict[str, Any]] = []

    def on_round(state: Any, result: Any) -> None:  # noqa: ANN401
        assert result is not None, state.last_error
        # Right after the round: the compactor is told of its commit only now, so what the round left is visible.
        done = sorted(c.instant for c in table.commits() if c.operation == "compact")
        seen.append({"writer": result.details.get("writer"), "pending": table.pending_compactions(), "done": done})
        if len(seen) < 3:
            sample.changes(seed=len(seen))

    report = run_pipeline(path, spark=spark, continuous=True, max_rounds=3, on_round=on_round)
    assert report.exit_code == 0, report.tables
    assert [s["writer"] for s in seen] == ["spark", "java", "java"]
    # The second round's commit scheduled a plan and returned without running it (inline, it would have).
    plan = seen[1]["pending"]
    assert len(plan) == 1 and seen[1]["done"] == []
    # The compactor ran it while the third round was written, or after: by the run's end every plan is run.
    compacted = sorted(c.instant for c in table.commits() if c.operation == "compact")
    assert set(plan) <= set(compacted) and table.pending_compactions() == []
    expected = sample.rows()
    assert table_state(spark, str(tmp_path / "lake" / "t1"), COLUMNS) == expected
