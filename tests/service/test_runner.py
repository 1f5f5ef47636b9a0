"""``hudi-cdc run``: many tables from one pipeline file in one process, against real Spark and Hudi tables.

The source is a folder per table of Debezium Avro files (the embedded default);
each table is read back and compared with the source state its events lead to.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from hudi_cdc.cli import main
from hudi_cdc.ops.status import pipeline_status
from hudi_cdc.service import load_pipeline, resume, run_pipeline
from hudi_cdc.service.control import read_status
from hudi_cdc.service.spec import TableRef
from hudi_cdc.testing import pg_event
from hudi_cdc.testing.faults import fill_disk
from hudi_cdc.testing.samples import SampleCustomers
from tests.support import commit_instants, read_rows

pytestmark = pytest.mark.hudi

COLUMNS = ("id", "name", "email", "notes")


def _pipeline(
    tmp_path: Path,
    *,
    lake: Path | None = None,
    run: str = "",
    sections: str = '[tables."public.t2"]\ntable_type = "mor"',
) -> Path:
    """A pipeline of the folders under landing/; ``sections``: its table sections (each must match a table)."""
    path = tmp_path / "inventory.toml"
    path.write_text(
        f"""
[source]
source = "files"
source_path = "{tmp_path / "landing"}"
tables = "dbserver1.public.*"

[defaults]
target_base_path = "{lake or tmp_path / "lake"}/{{table}}"
target_table = "{{table}}"
record_key_fields = "id"
table_type = "cow"

{sections}

[run]
max_concurrent_tables = 2
discovery_interval_seconds = 0
{run}
"""
    )
    return path


def _sample(tmp_path: Path, table: str, *, seed: int) -> SampleCustomers:
    sample = SampleCustomers(tmp_path / "landing", keys=25, topic=f"dbserver1.public.{table}")
    sample.snapshot(10)
    sample.changes(seed)
    return sample


def _equal(spark, base: Path, sample: SampleCustomers) -> bool:  # noqa: ANN001
    expected = sorted(tuple(row[c] for c in COLUMNS) for row in sample.state.values())
    return read_rows(spark, str(base), COLUMNS) == expected


def test_every_table_once_and_a_failing_table_stops_no_other(spark, tmp_path: Path) -> None:  # noqa: ANN001
    samples = {t: _sample(tmp_path, t, seed=n) for n, t in enumerate(("t1", "t2", "t3"))}
    garbage = samples["t3"].folder / "dbserver1.public.t3+0+9999999999.avro"
    garbage.write_bytes(b"not avro at all")
    path = _pipeline(tmp_path)

    report = run_pipeline(path, spark=spark)
    assert report.failed == ["public.t3"] and report.exit_code == 1
    assert {n: t.state for n, t in report.tables.items()} == {
        "public.t1": "done",
        "public.t2": "done",
        "public.t3": "failed",
    }
    for table in ("t1", "t2"):
        assert _equal(spark, tmp_path / "lake" / table, samples[table])
    status = read_status(load_pipeline(path).run.state_dir)
    assert status is not None and status["ended"] is True
    failed = status["tables"]["public.t3"]
    assert failed["last_error_kind"] == "terminal" and str(garbage) in failed["last_error"]
    assert status["tables"]["public.t1"]["commits"] == 1 and status["tables"]["public.t1"]["events"] > 0
    assert not (tmp_path / "lake" / "t3" / ".hoodie" / "timeline").exists() or not commit_instants(
        spark, str(tmp_path / "lake" / "t3")
    )

    # Status, from the tables and the source folders (no runner running).
    shown = pipeline_status(spark, load_pipeline(path))
    by_name = {t.name: t for t in shown.tables}
    assert shown.runner is not None and shown.runner["ended"] and not shown.runner["alive"]
    assert by_name["public.t1"].state == "done" and by_name["public.t1"].behind == 0 and by_name["public.t1"].lag_s == 0
    assert by_name["public.t1"].recent["events"] == status["tables"]["public.t1"]["events"]
    assert by_name["public.t1"].last_commit == status["tables"]["public.t1"]["last_commit"]
    assert by_name["public.t3"].state == "failed" and str(garbage) in str(by_name["public.t3"].last_error)
    assert by_name["public.t3"].behind == 3 and by_name["public.t3"].last_commit is None  # all three files pending
    samples["t1"].changes(7)
    shown = CliRunner().invoke(main, ["status", "--pipeline", str(path), "--tables", "public.t1", "--json"])
    assert shown.exit_code == 0, shown.output
    t1 = json.loads(shown.output.strip().splitlines()[-1])["tables"]
    assert [(t["name"], t["behind"], t["behind_unit"]) for t in t1] == [("public.t1", 1, "files")]
    assert t1[0]["lag_s"] is not None and t1[0]["lag_s"] > 0  # behind: now minus the newest source commit time

    # Fixed and resumed: the next run completes it; the others have nothing new.
    garbage.unlink()
    resume(path, "public.t3")
    before = commit_instants(spark, str(tmp_path / "lake" / "t2"))
    report = run_pipeline(path, spark=spark)
    assert report.failed == [] and _equal(spark, tmp_path / "lake" / "t3", samples["t3"])
    assert _equal(spark, tmp_path / "lake" / "t1", samples["t1"])
    assert commit_instants(spark, str(tmp_path / "lake" / "t2")) == before  # nothing new: no commit


def test_pause_remove_resume_and_a_subset_from_the_cli(spark, tmp_path: Path) -> None:  # noqa: ANN001
    samples = {t: _sample(tmp_path, t, seed=10 + n) for n, t in enumerate(("t1", "t2", "t3"))}
    path = _pipeline(tmp_path)
    cli = CliRunner()
    assert cli.invoke(main, ["pause", "--pipeline", str(path), "public.t2"]).exit_code == 0
    assert cli.invoke(main, ["remove", "--pipeline", str(path), "public.t3"]).exit_code == 0
    done = cli.invoke(main, ["run", "--pipeline", str(path), "--json"], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    final = json.loads(done.output.strip().splitlines()[-1])
    assert {n: t["state"] for n, t in final["tables"].items()} == {
        "public.t1": "done",
        "public.t2": "paused",
        "public.t3": "removed",
    }
    assert _equal(spark, tmp_path / "lake" / "t1", samples["t1"])
    # no Hudi table: only the pause and remove, kept beside the tables for every runner (.hudi_cdc/control)
    assert not (tmp_path / "lake" / "t2" / ".hoodie").exists() and not (tmp_path / "lake" / "t3" / ".hoodie").exists()
    assert (tmp_path / "lake" / "t2" / ".hudi_cdc" / "control" / "paused.json").is_file()

    samples["t1"].changes(99)  # more for t1, which the subset run must leave alone
    before = commit_instants(spark, str(tmp_path / "lake" / "t1"))
    assert cli.invoke(main, ["resume", "--pipeline", str(path), "public.t2", "public.t3"]).exit_code == 0
    done = cli.invoke(main, ["run", "--pipeline", str(path), "--tables", "public.t2,dbserver1.public.t3"])
    assert done.exit_code == 0, done.output
    assert _equal(spark, tmp_path / "lake" / "t2", samples["t2"]) and _equal(
        spark, tmp_path / "lake" / "t3", samples["t3"]
    )
    assert commit_instants(spark, str(tmp_path / "lake" / "t1")) == before
    wrong = cli.invoke(main, ["run", "--pipeline", str(path), "--tables", "public.nope"])
    assert wrong.exit_code == 2 and "public.nope" in wrong.output


def test_continuous_new_tables_concurrency_and_a_transient_failure(
    spark,  # noqa: ANN001
    tmp_path: Path,
    small_disk: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="hudi_cdc.runner")
    samples = {t: _sample(tmp_path, t, seed=20 + n) for n, t in enumerate(("t1", "t2"))}
    path = _pipeline(tmp_path, lake=small_disk)
    assert run_pipeline(path, spark=spark).failed == []  # the tables exist: a full disk now fails a commit
    samples["t1"].changes(31)
    samples["t2"].changes(32)
    filler = fill_disk(small_disk)
    rounds: list[tuple[str, float, float, str]] = []  # table, end, duration, state

    def on_round(table, result) -> None:  # noqa: ANN001
        rounds.append((table.name, time.monotonic(), result.duration_s if result else 0.0, table.state))
        if result is None and table.last_error_kind == "transient" and filler.exists():
            filler.unlink()  # space is back: the retry must finish the job
        if table.name == "public.t1" and table.rounds == 1 and "t9" not in samples:
            samples["t9"] = _sample(tmp_path, "t9", seed=40)  # a new table while the pipeline runs

    report = run_pipeline(path, spark=spark, continuous=True, max_rounds=3, on_round=on_round)
    assert report.failed == [], {n: t.last_error for n, t in report.tables.items()}
    assert set(report.tables) == {"public.t1", "public.t2", "public.t9"}
    new = f"new table public.t9 (topic dbserver1.public.t9, target {small_disk / 't9'}): replicating it from now on"
    assert new in caplog.messages, caplog.messages
    for table, sample in samples.items():
        assert _equal(spark, small_disk / table, sample), table
    retried = [t for t in report.tables.values() if t.failures_total]
    assert retried and all(t.last_error_kind is None for t in report.tables.values())
    assert any("No space left on device" in r for r in [str(t.last_error) for t in retried])
    # Rounds of different tables ran at the same time: some round ended while another table's was under way.
    spans = [(name, end - duration, end) for name, end, duration, _ in rounds if duration]
    assert any(a[0] != b[0] and a[1] < b[2] and b[1] < a[2] for a in spans for b in spans), spans


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_metrics_are_served_while_the_pipeline_runs(spark, tmp_path: Path) -> None:  # noqa: ANN001
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families

    port = _free_port()
    samples = {t: _sample(tmp_path, t, seed=50 + n) for n, t in enumerate(("t1", "t2"))}
    path = _pipeline(tmp_path, run=f"metrics_port = {port}")
    scraped: list[dict[tuple[str, tuple], float]] = []

    def on_round(table, result) -> None:  # noqa: ANN001
        if table.name == "public.t1" and table.rounds == 1:
            samples["t1"].changes(51)  # a second committed round for t1
        if table.name == "public.t1" and table.rounds == 2:
            deadline = time.monotonic() + 30
            while True:  # the backlog is measured on a thread of its own, just after the round: wait for it
                text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()  # noqa: S310
                metrics = {
                    (s.name, tuple(sorted(s.labels.items()))): s.value
                    for family in text_string_to_metric_families(text)
                    for s in family.samples
                }
                if metrics.get(("hudi_cdc_behind", (("table", "public.t1"),))) == 0 or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
            scraped.append(metrics)
            scraped.append({"events": table.events, "commits": table.commits})  # type: ignore[dict-item]

    report = run_pipeline(path, spark=spark, continuous=True, max_rounds=3, on_round=on_round)
    assert report.failed == []
    metrics, seen = scraped
    t1 = (("table", "public.t1"),)
    assert metrics[("hudi_cdc_events_total", t1)] == seen["events"] > 0
    assert metrics[("hudi_cdc_rounds_total", (("result", "committed"), ("table", "public.t1")))] == seen["commits"] == 2
    upserts = metrics[("hudi_cdc_changes_total", (("outcome", "upsert"), ("table", "public.t1")))]
    deletes = metrics[("hudi_cdc_changes_total", (("outcome", "delete"), ("table", "public.t1")))]
    assert upserts > 0 and deletes > 0
    by_op = {
        dict(labels)["op"]: v
        for (name, labels), v in metrics.items()
        if name == "hudi_cdc_events_by_op_total" and ("table", "public.t1") in labels
    }
    assert sum(by_op.values()) == seen["events"] and by_op["r"] == 10 and by_op["d"] > 0  # snapshot reads, deletes
    assert (
        metrics[("hudi_cdc_freshness_seconds_count", t1)] == 2 and metrics[("hudi_cdc_freshness_seconds_sum", t1)] > 0
    )
    assert metrics[("hudi_cdc_behind", t1)] == 0 and metrics[("hudi_cdc_lag_seconds", t1)] == 0
    assert metrics[("hudi_cdc_table_state", (("state", "running"), ("table", "public.t1")))] == 0
    assert (
        sum(
            v
            for (name, labels), v in metrics.items()
            if name == "hudi_cdc_table_state" and ("table", "public.t1") in labels
        )
        == 1
    )
    with pytest.raises(OSError):  # the endpoint ends with the run
        urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5)  # noqa: S310


def test_no_secret_in_output_status_or_logs(spark, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:  # noqa: ANN001
    """A pipeline with a SASL password and registry credentials, against a Kafka that is not there."""
    secret = "s3cret-Pa55-word"
    path = tmp_path / "secret.toml"
    path.write_text(
        f"""
[source]
source = "kafka"
bootstrap_servers = "127.0.0.1:1"
schema_registry_url = "http://reader:{secret}@127.0.0.1:2/apis/ccompat/v7"
tables = "dbserver1.inventory.*"
[defaults]
target_base_path = "{tmp_path}/lake/{{table}}"
target_table = "{{table}}"
[defaults.hoodie_conf]
"kafka.security.protocol" = "SASL_PLAINTEXT"
"kafka.sasl.mechanism" = "PLAIN"
"kafka.sasl.username" = "replicator"
"kafka.sasl.password" = "{secret}"
"kafka.socket.connection.setup.timeout.ms" = "1000"
"kafka.socket.timeout.ms" = "2000"
"""
    )
    caplog.set_level("DEBUG")
    cli = CliRunner()
    done = cli.invoke(main, ["-v", "run", "--pipeline", str(path)])
    assert done.exit_code == 75, done.output  # Kafka unreachable at discovery: transient
    shown = cli.invoke(main, ["status", "--pipeline", str(path), "--json"])
    assert shown.exit_code == 0, shown.output
    assert "127.0.0.1:1" in done.output
    for text in (done.output, shown.output, caplog.text, repr(load_pipeline(path).table_config(TableRef("a.b.c")))):
        assert secret not in text
    state = tmp_path / "secret.state"
    assert not state.exists() or all(secret not in p.read_text() for p in state.rglob("*") if p.is_file())


def test_a_table_whose_settings_are_refused_fails_alone(spark, tmp_path: Path) -> None:  # noqa: ANN001
    samples = {t: _sample(tmp_path, t, seed=60 + n) for n, t in enumerate(("t1", "t2"))}
    path = _pipeline(tmp_path)
    path.write_text(path.read_text().replace('table_type = "mor"', 'table_type = "morr"'))
    report = run_pipeline(path, spark=spark)
    assert report.failed == ["public.t2"]
    assert "table_type='MORR' is not one of" in str(report.tables["public.t2"].last_error)
    assert str(path) in str(report.tables["public.t2"].last_error)
    assert _equal(spark, tmp_path / "lake" / "t1", samples["t1"])
    # Status reports the refused table and still reads the healthy one.
    shown = {t.name: t for t in pipeline_status(spark, load_pipeline(path)).tables}
    assert shown["public.t2"].state == "failed" and "table_type='MORR'" in str(shown["public.t2"].last_error)
    assert shown["public.t1"].last_commit is not None and shown["public.t1"].behind == 0


def test_quarantine_per_table_with_counts_in_status(spark, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:  # noqa: ANN001
    sample = _sample(tmp_path, "t1", seed=80)
    path = _pipeline(tmp_path, sections='[tables."public.t1"]\non_bad_event = "quarantine"')
    key = next(iter(sample.state))
    sample.write([pg_event("x", lsn=sample.lsn + 1, after=sample.state[key])])  # unknown op
    sample.changes(81)
    caplog.set_level("INFO", logger="hudi_cdc")
    report = run_pipeline(path, spark=spark)
    assert report.failed == [] and report.tables["public.t1"].quarantined == 1
    assert _equal(spark, tmp_path / "lake" / "t1", sample)  # the rest of the batch, and the rounds after, applied
    assert any("round table=public.t1" in r.message and "quarantined=1" in r.message for r in caplog.records)
    t1 = {t.name: t for t in pipeline_status(spark, load_pipeline(path)).tables}["public.t1"]
    assert t1.quarantined == 1 and t1.recent["quarantined"] == 1


def _java_children(pid: int) -> list[int]:
    """The java processes whose parent is ``pid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                comm = (entry / "comm").read_text().strip()
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            if ppid == pid and comm == "java":
                found.append(int(entry.name))
    return found


def test_a_runner_whose_jvm_is_killed_stops(tmp_path: Path) -> None:
    # Killed by the OOM killer or by hand, the driver JVM is gone for good: the runner must end (so that a
    # supervisor restarts it), not live on polling Kafka and failing every round.
    path = _pipeline(tmp_path, sections="")  # t1 alone
    _sample(tmp_path, "t1", seed=3)
    hudi_cdc = str(Path(sys.executable).parent / "hudi-cdc")
    command = [hudi_cdc, "run", "--pipeline", str(path), "--continuous"]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and not list((tmp_path / "lake").glob("*/.hoodie/timeline/*.commit")):
            assert process.poll() is None, process.communicate()
            time.sleep(0.5)
        java = _java_children(process.pid)
        assert len(java) == 1, java
        os.kill(java[0], signal.SIGKILL)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode != 0
    assert "the Spark driver's JVM is gone" in err, err[-2000:]


def test_a_listing_that_fails_because_the_jvm_is_gone_stops_the_run_as_the_jvm_check_does(
    spark,  # noqa: ANN001
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A files source lists its folders through the JVM: killed mid-listing, the JVM surfaces as the source's
    # "cannot list" error, which must still end the run as a dead JVM (the kill test above hits this by timing).
    from hudi_cdc.errors import SourceError, TerminalError

    path = _pipeline(tmp_path, sections="")
    _sample(tmp_path, "t1", seed=4)

    def listing_fails(spark, spec):  # noqa: ANN001, ANN202
        raise SourceError(f"cannot list {spec.source.path}: An error occurred while calling o1.getFileSystem")

    monkeypatch.setattr("hudi_cdc.service.discovery.discover", listing_fails)
    monkeypatch.setattr("hudi_cdc._jvm.jvm_alive", lambda spark: False)
    with pytest.raises(TerminalError, match="the Spark driver's JVM is gone"):
        run_pipeline(path, spark=spark, continuous=True)


def test_an_idle_continuous_runner_sleeps_between_its_passes(spark, tmp_path: Path) -> None:  # noqa: ANN001
    # With no round under way the loop waits for its next event (a due table, discovery, a control file);
    # concurrent.futures.wait on no futures returns at once, and the loop spun on a core for as long as it
    # was idle, taking that core from the rounds of any other process on the machine (a second runner).
    import threading

    from hudi_cdc.service.runner import Runner

    path = _pipeline(tmp_path, sections="")
    text = path.read_text().replace("discovery_interval_seconds = 0", "discovery_interval_seconds = 60")
    path.write_text(text.replace('table_type = "cow"', 'table_type = "cow"\nmin_sync_interval_seconds = 60'))
    _sample(tmp_path, "t1", seed=5)
    runner = Runner(load_pipeline(path), spark, continuous=True)
    thread = threading.Thread(target=runner.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 240
        while not list((tmp_path / "lake").glob("t1/.hoodie/timeline/*.commit")):
            assert thread.is_alive() and time.monotonic() < deadline, "no first round"
            time.sleep(0.2)
        time.sleep(1.0)  # its round's end; then nothing is due for a minute
        cpu, wall = time.process_time(), time.monotonic()
        time.sleep(4.0)
        busy = (time.process_time() - cpu) / (time.monotonic() - wall)
    finally:
        runner.stop()
        thread.join(60)
    assert busy < 0.25, f"this process used {busy:.0%} of a core while its runner was idle"


def test_a_repair_cut_short_by_a_stop_is_left_for_the_next_start(spark, tmp_path: Path) -> None:  # noqa: ANN001
    # SIGTERM to a runner's process group stops its JVM's SparkContext under a repair: that failure is the
    # stop's, not the repair's, so the request stays (not settled as failed and deleted) and runs next start.
    import threading

    from hudi_cdc.service import control
    from hudi_cdc.service.runner import Runner

    path = _pipeline(tmp_path, sections="")
    _sample(tmp_path, "t1", seed=6)
    spec = load_pipeline(path)
    request_id = control.request_repair(spec.run.state_dir, "public.t1", {"source_table": "public.t1"})
    calls: list[str] = []

    def repairer(spark, config, request, catch_up):  # noqa: ANN001, ANN202
        calls.append(request["id"])
        runner.stop()  # what the SIGTERM handler does; the JVM's own shutdown then fails the repair's job
        raise RuntimeError("Cannot call methods on a stopped SparkContext")

    runner = Runner(spec, spark, continuous=True, repairer=repairer)
    thread = threading.Thread(target=runner.run, daemon=True)
    thread.start()
    thread.join(240)
    assert not thread.is_alive() and calls == [request_id]
    assert control.pending_repair(spec.run.state_dir, "public.t1")["id"] == request_id  # type: ignore[index]
    assert control.repair_outcome(spec.run.state_dir, "public.t1", request_id) is None
