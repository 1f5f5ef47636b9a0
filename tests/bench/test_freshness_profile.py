"""bench.freshness's split of a change's latency: capture + queue + round, from a run's records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.freshness import _rounds, profile


def _result(instant: str, duration_s: float) -> str:
    return json.dumps({"base_path": "/t", "commit_time": instant, "duration_s": duration_s, "events": 10})


def test_rounds_end_with_their_last_instant_and_the_parts_add_up(tmp_path: Path) -> None:
    log = tmp_path / "ingest.log"
    # Two rounds; the first also compacts (its compaction instant completes after its delta commit).
    log.write_text(
        "\n".join(
            ["spark noise", _result("0001", 2.0), '{"base_path": "/t", "commit_time": null}', _result("0003", 1.0)]
        )
    )
    stamped = {
        "0001_0001x.deltacommit": 101.0,
        "0002_0002x.commit": 102.5,  # the inline compaction of round 0001
        "0003_0003x.deltacommit": 104.0,
        "0000_0000x.clean": 50.0,  # before the measured rounds
    }
    rounds = _rounds(log, stamped)
    assert [(r["instant"], r["start"], r["end"], r["compacted"]) for r in rounds] == [
        ("0001", 100.5, 102.5, True),
        ("0003", 103.0, 104.0, False),
    ]
    # Transaction 1 committed at 99.0, in Kafka at 99.5, seen when round 0001 compacted; 2 at 101.0 / 102.0.
    committed = {1: 99.0, 2: 101.0}
    visible = {1: (102.5, ["0001", "0002"]), 2: (104.0, ["0003"])}
    split = profile(committed, visible, [99.5, 102.0], rounds, start=0.0)
    assert split["split"] == 2 and split["rounds"] == 2 and split["compactions"] == 1
    assert split["round_median_s"] == 1.0 and split["compaction_round_median_s"] == 2.0
    # 1: capture 0.5, queue 1.0 (100.5 - 99.5), round 2.0; 2: capture 1.0, queue 1.0 (103.0 - 102.0), round 1.0.
    assert (split["capture_p50_s"], split["queue_p50_s"], split["round_p50_s"]) == (0.75, 1.0, 1.5)
    # The slowest 1% are the transactions from the p99 rank on (as the run's p99): of two, both.
    assert split["tail"] == 2
    assert (split["tail_capture_s"], split["tail_queue_s"], split["tail_round_s"]) == (0.75, 1.0, 1.5)


def test_transactions_before_the_window_or_without_a_round_are_left_out(tmp_path: Path) -> None:
    log = tmp_path / "ingest.log"
    log.write_text(_result("0001", 1.0))
    rounds = _rounds(log, {"0001_x.deltacommit": 10.0})
    committed = {1: 5.0, 2: 8.0, 3: 8.5}
    visible = {1: (10.0, ["0001"]), 2: (10.0, ["0001"]), 3: (12.0, ["0009"])}  # 0009: not a round of the log
    split = profile(committed, visible, [5.5, 8.5, 9.0], rounds, start=6.0)
    assert split["split"] == 1 and split["capture_p50_s"] == pytest.approx(0.5)
    assert profile(committed, visible, [5.5, 8.5, 9.0], rounds, start=20.0) == {}
