"""The continuous runner on a real broker: idle tables cost no round, the earliest deadline goes first, and a
table past its freshness target says what it waits for.

Four tables, one slot (``max_concurrent_tables = 1``), so the order of rounds is the
scheduler's alone. Messages are produced by hand at known moments; the offset watch
(every 0.2 s) is what tells the runner about them.
"""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path

import pytest

from hudi_cdc.ops.status import pipeline_status
from hudi_cdc.service import Runner, control, load_pipeline
from hudi_cdc.service.control import read_status
from tests.stack.conftest import BOOTSTRAP, REGISTRY, CustomersTopic, wait_until

pytestmark = [pytest.mark.kafka, pytest.mark.hudi]

SERVER = f"sc{uuid.uuid4().hex[:8]}"
URGENT, RELAXED, QUIET, PAUSED = "urgent.customers", "relaxed.customers", "quiet.customers", "paused.customers"


def _pipeline(tmp_path: Path) -> Path:
    path = tmp_path / "schedule.toml"
    path.write_text(
        f"""
[source]
source = "kafka"
bootstrap_servers = "{BOOTSTRAP}"
schema_registry_url = "{REGISTRY}"
tables = "{SERVER}.*"

[defaults]
target_base_path = "{tmp_path}/lake/{{schema}}"
target_table = "{{schema}}"
table_type = "mor"
max_freshness_seconds = 600

[tables."{URGENT}"]
max_freshness_seconds = 0.5

[tables."{PAUSED}"]
max_freshness_seconds = 0.5

[run]
max_concurrent_tables = 1
discovery_interval_seconds = 3600
offset_poll_seconds = 0.2
"""
    )
    return path


def test_idle_tables_get_no_rounds_and_the_earliest_deadline_goes_first(spark, tmp_path: Path) -> None:  # noqa: ANN001
    topics = {n: CustomersTopic(SERVER, n.split(".")[0]) for n in (URGENT, RELAXED, QUIET, PAUSED)}
    for topic in topics.values():
        topic.send(2)
    spec = load_pipeline(_pipeline(tmp_path))
    rounds: list[tuple[str, int]] = []  # (table, events) in the order the rounds ended
    hold = threading.Event()

    def on_round(table, result) -> None:  # noqa: ANN001 - on the runner's loop: while it holds, no round starts
        assert result is not None, table.last_error
        rounds.append((table.name, result.events))
        if hold.is_set():
            hold.clear()
            topics[RELAXED].send(3)  # first seen, then, after the watch has looked twice, the urgent one's
            time.sleep(0.6)
            topics[URGENT].send(1)
            time.sleep(0.9)  # the urgent change is past its 0.5 s before a slot is free

    runner = Runner(spec, spark, continuous=True, on_round=on_round)
    running = threading.Thread(target=runner.run, name="schedule-test-runner")
    running.start()
    try:
        wait_until("every table's first round", lambda: len(rounds) == 4)
        assert sorted(rounds) == sorted((n, 2) for n in topics)
        time.sleep(2.0)  # ten looks at the offsets, nothing new: no table is given a round
        assert len(rounds) == 4, rounds
        assert {n: t.state for n, t in runner.tables.items()} == dict.fromkeys(topics, "waiting")
        # The first rounds waited for the JVM and each other (on a loaded machine, past even 60 s).
        missed_before = runner.tables[URGENT].freshness_missed
        relaxed_missed_before = runner.tables[RELAXED].freshness_missed

        # A change to one table: that table's round, and only it, within moments.
        control.pause(spec.run.state_dir, PAUSED)
        hold.set()
        topics[QUIET].send(1)
        wait_until("the quiet table's round", lambda: len(rounds) >= 5)
        # While that round's end held the loop, the relaxed table's change came first and the urgent one's
        # later: the urgent one's deadline (0.5 s) is nearer than the relaxed one's (600 s), so it goes first.
        wait_until("two more rounds", lambda: len(rounds) >= 7)
        assert rounds[4:7] == [(QUIET, 1), (URGENT, 1), (RELAXED, 3)], rounds
        urgent = runner.tables[URGENT]
        assert urgent.freshness_missed == missed_before + 1 and urgent.last_miss is not None
        # Where its time went: the loop held 0.9 s after the send (the watch sees it within 0.2 s), then its round.
        spent = dict(part.rsplit(" ", 2)[:2] for part in urgent.last_miss.split(": ", 1)[1].split(", "))
        assert float(spent["waiting for a slot"]) >= 0.6 and "commit" in spent, urgent.last_miss
        assert runner.tables[RELAXED].freshness_missed == relaxed_missed_before
        counted = [
            s.value
            for family in runner.metrics.registry.collect()
            if family.name == "hudi_cdc_freshness_missed"
            for s in family.samples
            if s.name.endswith("_total") and s.labels["table"] == URGENT
        ]
        assert sum(counted) == urgent.freshness_missed

        # A paused table past its target: status says so, and what it waits for.
        topics[PAUSED].send(1)
        status = wait_until(
            "the paused table reported late",
            lambda: (s := read_status(spec.run.state_dir)) and s["tables"][PAUSED].get("late") and s,
        )
        paused = status["tables"][PAUSED]
        assert paused["late"] == "the table is paused" and paused["oldest_pending_s"] >= 0.5  # rounded to 0.1 s
        assert status["tables"][QUIET]["late"] is None and status["tables"][QUIET]["pending_since"] is None
        shown = pipeline_status(spark, spec, tables=[PAUSED, URGENT])
        freshness = {t.name: t.freshness for t in shown.tables}
        assert freshness[PAUSED] is not None and freshness[PAUSED]["late"] == "the table is paused"
        assert freshness[URGENT] is not None and freshness[URGENT]["missed"] == urgent.freshness_missed
        assert "late: its oldest change has waited" in shown.describe() and "missed by" in shown.describe()
        assert len(rounds) == 7, rounds  # the paused table's message started no round
    finally:
        runner.stop()
        running.join(timeout=120)
    assert not running.is_alive()
    steps = runner.tables[QUIET].last_round["steps_s"]
    assert {"open", "read", "plan", "commit"} <= set(steps) and all(v >= 0 for v in steps.values()), steps
