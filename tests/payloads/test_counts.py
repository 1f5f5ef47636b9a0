"""The counts are declared once (``ChangeCounts``): a plan's add what the sink needs, a round's result reports them."""

from __future__ import annotations

import json
from dataclasses import fields

from hudi_cdc.pipeline import IngestResult
from payloads import ChangeCounts, PlanCounts

PLAN = PlanCounts(
    events=8,
    upserts=3,
    deletes=1,
    stale=1,
    superseded=4,
    toast_filled=2,
    truncated=5,
    source_ts_ms_min=3_000,
    source_ts_ms_max=7_000,
    ops={"c": 4, "u": 3, "d": 1},
    new_tombstones=1,
)


def test_a_plans_change_counts_leave_out_what_only_the_sink_needs() -> None:
    shared = PLAN.change_counts()
    assert shared == {
        "events": 8,
        "upserts": 3,
        "deletes": 1,
        "stale": 1,
        "superseded": 4,
        "toast_filled": 2,
        "source_ts_ms_min": 3_000,
        "source_ts_ms_max": 7_000,
        "ops": {"c": 4, "u": 3, "d": 1},
    }
    assert shared["ops"] is not PLAN.ops  # the result's dict is its own
    assert ChangeCounts(**shared) == ChangeCounts(**{f.name: getattr(PLAN, f.name) for f in fields(ChangeCounts)})


def test_a_rounds_result_carries_the_plans_counts_under_the_same_keys() -> None:
    result = IngestResult(
        **PLAN.change_counts(),
        table="t",
        base_path="/o",
        commit_time="20260101000000000",
        checkpoint={"kind": "files/v1"},
        batch="1 file",
        tombstones_held=2,
        tombstones_purged=1,
        duration_s=1.5,
        details={"files": 1},
        quarantined=3,
        steps_s={"plan": 0.5, "commit": 1.0},
    )
    # What --json prints, the Airflow operator returns and the runner records (keys sorted there).
    assert json.dumps(result.to_dict(), sort_keys=True) == json.dumps(
        {
            "base_path": "/o",
            "batch": "1 file",
            "checkpoint": {"kind": "files/v1"},
            "commit_time": "20260101000000000",
            "deletes": 1,
            "details": {"files": 1},
            "duration_s": 1.5,
            "events": 8,
            "ops": {"c": 4, "d": 1, "u": 3},
            "quarantined": 3,
            "source_ts_ms_max": 7_000,
            "source_ts_ms_min": 3_000,
            "stale": 1,
            "steps_s": {"commit": 1.0, "plan": 0.5},
            "superseded": 4,
            "table": "t",
            "toast_filled": 2,
            "tombstones_held": 2,
            "tombstones_purged": 1,
            "upserts": 3,
        },
        sort_keys=True,
    )
    assert result.committed


def test_a_round_with_nothing_new_counts_nothing() -> None:
    result = IngestResult(table="t", base_path="/o", commit_time=None, checkpoint=None)
    assert not result.committed
    assert {k: v for k, v in result.to_dict().items() if k in PLAN.change_counts()} == ChangeCounts().change_counts()
