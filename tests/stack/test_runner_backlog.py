"""The runner's backlog gauges against a real broker: what ``hudi-cdc status`` reports, whatever a table is doing.

Three tables of one pipeline hold a backlog in three ways: one paused, one
waiting out a long ``min_sync_interval_seconds``, one failed on a message that
is not Avro. The metrics endpoint is scraped while new messages wait and
compared with ``pipeline_status``; once the paused table is resumed and has
caught up, its gauges read 0.
"""

from __future__ import annotations

import socket
import threading
import time
import urllib.request
import uuid
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from hudi_cdc.ops.status import TableStatus, pipeline_status
from hudi_cdc.service import Runner, control, load_pipeline
from tests.stack.conftest import BOOTSTRAP, REGISTRY, CustomersTopic, wait_until

pytestmark = [pytest.mark.kafka, pytest.mark.hudi]

SERVER = f"bk{uuid.uuid4().hex[:8]}"
INTERVAL_S = 0.5  # [run] backlog_interval_seconds
PAUSED, WAITING, FAILED = "paused.customers", "waiting.customers", "failed.customers"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _scrape(port: int) -> dict[str, dict[str, float]]:
    """gauge -> table -> value, for hudi_cdc_behind and hudi_cdc_lag_seconds."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()  # noqa: S310
    found: dict[str, dict[str, float]] = {"hudi_cdc_behind": {}, "hudi_cdc_lag_seconds": {}}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name in found:
                found[sample.name][sample.labels["table"]] = sample.value
    return found


def test_gauges_are_what_status_reports_for_paused_waiting_and_failed_tables(spark, tmp_path: Path) -> None:  # noqa: ANN001
    topics = {n: CustomersTopic(SERVER, n.split(".")[0]) for n in (PAUSED, WAITING, FAILED)}
    for name, topic in topics.items():
        topic.send(3, garbage_first=name == FAILED)
    port = _free_port()
    path = tmp_path / "backlog.toml"
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
table_type = "cow"
min_sync_interval_seconds = 1

[tables."{WAITING}"]
min_sync_interval_seconds = 3600

[run]
max_concurrent_tables = 3
discovery_interval_seconds = 3600
metrics_port = {port}
backlog_interval_seconds = {INTERVAL_S}
"""
    )
    spec = load_pipeline(path)

    def on_round(table, result) -> None:  # noqa: ANN001
        if table.name == PAUSED and table.rounds == 1:
            control.pause(spec.run.state_dir, PAUSED)  # read before the table is next due

    runner = Runner(spec, spark, continuous=True, on_round=on_round)
    running = threading.Thread(target=runner.run, name="backlog-test-runner")
    running.start()
    try:
        states = {PAUSED: "paused", WAITING: "waiting", FAILED: "failed"}
        wait_until("the first rounds", lambda: {n: t.state for n, t in runner.tables.items()} == states)
        assert runner.tables[PAUSED].commits == runner.tables[WAITING].commits == 1
        assert runner.tables[FAILED].last_error_kind == "terminal" and runner.tables[FAILED].commits == 0

        # New arrivals none of the three takes: the gauges must show them, as status does.
        topics[PAUSED].send(4)
        topics[WAITING].send(2)
        topics[FAILED].send(1)
        held = {PAUSED: 4.0, WAITING: 2.0, FAILED: 5.0}  # the failed table has no checkpoint: all its messages
        wait_until("the gauges to show the backlog", lambda: _scrape(port)["hudi_cdc_behind"] == held)
        _same_as_status(spark, spec, port, held, states)

        # Resumed, the paused table catches up: its gauges go to 0, as status does.
        control.resume(spec.run.state_dir, PAUSED)
        wait_until(
            "the resumed table's gauges at 0",
            lambda: (g := _scrape(port))["hudi_cdc_behind"].get(PAUSED) == 0 and g["hudi_cdc_lag_seconds"][PAUSED] == 0,
        )
        assert runner.tables[PAUSED].commits == 2
        shown = {t.name: t for t in pipeline_status(spark, spec, tables=[PAUSED]).tables}
        assert (shown[PAUSED].behind, shown[PAUSED].lag_s) == (0, 0.0)
    finally:
        runner.stop()
        running.join(timeout=120)
    assert not running.is_alive()


def _same_as_status(spark, spec, port: int, held: dict[str, float], states: dict[str, str]) -> None:  # noqa: ANN001
    """The gauges equal ``pipeline_status``'s figures; lag, measured a moment earlier, within that moment."""
    scraped_at = time.time()
    gauges = _scrape(port)
    shown: dict[str, TableStatus] = {t.name: t for t in pipeline_status(spark, spec).tables}
    elapsed = time.time() - scraped_at
    assert {n: t.state for n, t in shown.items()} == states
    assert {n: t.behind for n, t in shown.items()} == gauges["hudi_cdc_behind"] == held
    for name in (PAUSED, WAITING):
        lag_status, lag_gauge = shown[name].lag_s, gauges["hudi_cdc_lag_seconds"][name]
        assert lag_status is not None and lag_gauge >= 29  # the source committed 30 s before it was sent
        assert 0 <= lag_status - lag_gauge <= elapsed + INTERVAL_S + 1, (lag_status, lag_gauge)
    # No commit holds a source time for the failed table: status says "?" and there is no sample.
    assert shown[FAILED].lag_s is None and FAILED not in gauges["hudi_cdc_lag_seconds"]
