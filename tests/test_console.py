"""A CLI run shows hudi-cdc's lines only: Spark's go to a log file named when the run fails; a terminal gets progress.

One process run checks several things at once where they are all true of the same run: each CLI process
here costs a JVM start (10-25 s).
"""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from hudi_cdc.testing.samples import SampleCustomers

pytestmark = [pytest.mark.spark, pytest.mark.hudi]

HUDI_CDC = str(Path(sys.executable).parent / "hudi-cdc")


def _args(source: str, base: Path) -> list[str]:
    return [
        HUDI_CDC, "ingest", "--source", "files", "--source-path", source, "--flavor", "postgres",
        "--target-base-path", str(base), "--target-table", "customers", "--record-key-fields", "id",
    ]  # fmt: skip


def test_only_our_lines_and_the_spark_log_named_on_failure(spark, tmp_path: Path) -> None:  # noqa: ANN001
    from tests.support import run_cli

    sample = SampleCustomers(tmp_path / "events")
    sample.snapshot()
    first = run_cli(*_args(sample.source_path, tmp_path / "t")[2:])  # in this process: the table exists
    assert first.exit_code == 0, first.output
    sample.changes(seed=3)
    cwd, temp = tmp_path / "cwd", tmp_path / "tmp"
    cwd.mkdir()
    temp.mkdir()
    env = {**os.environ, "HUDI_CDC_LOG_DIR": str(tmp_path / "logs"), "TMPDIR": str(temp)}

    ok = subprocess.run(_args(sample.source_path, tmp_path / "t"), cwd=cwd, env=env, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert ok.stderr == "", ok.stderr  # no Spark, Hudi or Ivy warnings
    assert ok.stdout.startswith("customers: commit ") and len(ok.stdout.splitlines()) == 1
    assert not list((tmp_path / "logs").glob("*.log")), "a successful run keeps no log"
    # A round on an existing table reads it (unchanged TOAST values), and a read asks Spark's catalog,
    # which makes the warehouse folder: by Spark's default, in the working directory.
    assert list(cwd.iterdir()) == []
    assert (temp / "hudi-cdc" / "spark-warehouse").is_dir()

    bad = subprocess.run(_args(str(tmp_path / "missing"), tmp_path / "t"), env=env, capture_output=True, text=True)
    assert bad.returncode == 1
    (line,) = bad.stderr.splitlines()
    assert line.startswith("hudi-cdc: error: --source-path") and "(Spark's log: " in line
    log = Path(line.rsplit("(Spark's log: ", 1)[1].rstrip(")"))
    assert log.parent == tmp_path / "logs" and "WARN" in log.read_text()

    verbose = subprocess.run(
        [HUDI_CDC, "-v", *_args(str(tmp_path / "missing"), tmp_path / "t")[1:]], env=env, capture_output=True, text=True
    )
    assert verbose.returncode == 1 and "WARN" in verbose.stderr and "Spark's log" not in verbose.stderr


def test_a_terminal_gets_a_progress_line(tmp_path: Path) -> None:
    sample = SampleCustomers(tmp_path / "events")
    sample.snapshot()
    sample.changes(seed=1)
    primary, secondary = pty.openpty()
    process = subprocess.Popen(
        _args(sample.source_path, tmp_path / "t"), stdin=secondary, stdout=secondary, stderr=secondary
    )
    os.close(secondary)
    screen = b""
    while True:
        try:
            chunk = os.read(primary, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        screen += chunk
    assert process.wait() == 0
    text = screen.decode(errors="replace")
    assert "customers: reading, decoding and deciding" in text
    assert "events decided: writing" in text
    assert "\r" in text and text.rstrip().splitlines()[-1].strip().startswith("customers: commit ")


def _closed_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # closed again on leaving: nothing listens there


def test_librdkafka_logs_to_the_run_log_or_with_v_the_terminal_never_to_stderr(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    from confluent_kafka import Consumer, KafkaException

    from hudi_cdc.console import kafka_logger, route_kafka_log

    def ask_a_closed_port() -> None:
        client = Consumer(
            {"bootstrap.servers": f"127.0.0.1:{_closed_port()}", "group.id": "t", "logger": kafka_logger()}
        )
        with pytest.raises(KafkaException):
            client.list_topics(timeout=1)
        client.close()  # hands over the lines queued meanwhile

    log = tmp_path / "run.log"
    try:
        route_kafka_log(log, terminal=False)  # a CLI run without -v
        ask_a_closed_port()
        assert "Connection refused" in log.read_text()
        size = log.stat().st_size
        route_kafka_log(None, terminal=False)  # no log file (a JVM already running): nowhere
        ask_a_closed_port()
        assert log.stat().st_size == size
        caplog.clear()  # (pytest also hands its capture handler to loggers that do not propagate)
        route_kafka_log(None, terminal=True)  # -v: the root logger's handlers, the terminal's among them
        ask_a_closed_port()
        assert "Connect to ipv4#127.0.0.1" in caplog.text
    finally:
        route_kafka_log(None, terminal=True)
    assert "Connection refused" not in capfd.readouterr().err  # librdkafka's own printing to descriptor 2


def test_validate_against_a_closed_port_prints_its_report_and_no_librdkafka_lines(
    spark,  # noqa: ANN001 - in process, as a CLI test
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
) -> None:
    from click.testing import CliRunner

    from hudi_cdc.cli import main

    port, secret = _closed_port(), "s3cret-in-the-url"
    args = [
        "validate", "--source", "kafka", "--topic", "dbserver1.inventory.customers",
        "--bootstrap-servers", f"127.0.0.1:{port}",
        "--schema-registry-url", f"http://reader:{secret}@127.0.0.1:{port}/apis/ccompat/v7",
        "--connect-url", f"http://admin:{secret}@127.0.0.1:{port}",
        "--target-base-path", str(tmp_path / "customers"), "--target-table", "customers",
    ]  # fmt: skip
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    descriptors = capfd.readouterr()
    assert result.exit_code == 1, result.output
    assert f"FAIL  kafka.topic: cannot reach Kafka at 127.0.0.1:{port}" in result.output
    assert "FAIL  registry.subjects:" in result.output and "customers: " in result.output.splitlines()[-1]
    for terminal in (result.output, descriptors.out, descriptors.err):
        assert "Connect to ipv4#" not in terminal and "rdkafka#" not in terminal, terminal[:2000]
        assert secret not in terminal
