"""Two runners on one pipeline, killed by turns, one of them in the middle of a repair (``make chaos-runners``
runs the longer form): nothing is lost or doubled, and no table ever has two writers.

Four tables of the run's own (two COW, two MOR through a pattern section) under a live workload; two
``hudi-cdc run --continuous`` processes sharing them through the writer leases (expiry 8 s), each SIGKILLed
(process group: Python and its JVM) inside a commit, and restarted 3 s later; a
``verify --repair --pipeline`` from a shell killed with its runner while the repair runs, exits 75 and is
issued again until done. At the end every table equals Postgres, and every rollback in every timeline rolled
back an instant of its own writer or of one the harness had killed before.

Four tables, not the long form's ten: each runner holds two (its share, as many as it runs at once), so a
kill still leaves more than one table to take over, and each phase (first commits, the repair's turn as its
table's next round, the catch-up) waits for fewer rounds: in a run of ten the repair waited 224 s for its turn.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from chaos.runners import markdown_rows, run_chaos_runners

# Not exclusive: it restarts no shared service, only processes of its own.
pytestmark = [pytest.mark.kafka, pytest.mark.postgres, pytest.mark.hudi]


def test_two_runners_killed_by_turns_and_a_repair_killed_in_flight_lose_nothing_and_never_share_a_table(
    tmp_path: Path,
) -> None:
    report = run_chaos_runners(tables=4, kills=1, work=tmp_path, seed=20261128, pause_s=0.2)
    summary = "\n".join(markdown_rows(report))
    print(summary)  # the run's row (pytest -s), as make chaos-runners adds it to docs/many-processes.md
    assert report.changes > 300, "the workload must really run while the runners are killed"
    for runner in report.runners:
        assert runner.kills >= 1 and runner.kills_in_commit >= 1, f"{runner}\n{summary}"
        # each exit with its error line, the JVM's last words and the end of that start's log (chaos.common.exit_report)
        assert runner.exits == [], f"runner {runner.name} ended by itself:\n" + "\n\n".join(runner.exits)
        assert runner.stop_exit == 0, f"runner {runner.name}'s clean stop: {runner.stop_exit}"
    assert all(k.takeover_s is not None for k in report.kills), report.kills
    repair = report.repair
    assert repair.killed_in_flight >= 1 and 75 in repair.exits, repair
    assert repair.done and repair.repaired_by == "runner", repair
    assert report.writers.violations == [], "\n".join(report.writers.violations)
    assert report.writers.unknown == [], "\n".join(report.writers.unknown)  # every instant attributed
    assert report.writers.rollbacks >= 1 and report.writers.of_dead_writers >= 1, report.writers
    for table in report.tables:
        assert table.equal and table.rows > 0, f"{table.name}: " + "\n".join(table.differences)
    # the pattern section [tables."inventory.<run>_mor_*"] made those MERGE_ON_READ, as Hudi recorded them
    assert all(t.table_type == ("mor" if "_mor_" in t.name else "cow") for t in report.tables), report.tables
    assert report.ok
