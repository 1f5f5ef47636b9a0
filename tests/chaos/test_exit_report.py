"""chaos: how a runner that ended by itself ended, as the two-runner harness reports it.

The harness once reported "runner a ended by itself: exit 2 (no error line)": it looked for "hudi-cdc:" while
``hudi-cdc run`` fails with "hudi-cdc run: error: ...", and it showed nothing else of the log. The log below is
made of that runner's own lines (its JVM filled its code cache and Spark's handler of a fatal error ended it).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from chaos.common import PASSWORD_ENV, exit_report
from chaos.runners import RunnerProcess
from chaos.writers import Lives

ERROR = (
    "hudi-cdc run: error: pipeline chr_67097e: the Spark driver's JVM is gone (killed, or it crashed): the run "
    "stops; committed rounds stand and the next run resumes from each table's checkpoint"
)
RUNNER_LOG = [
    "2026-11-28 21:26:30,544 INFO hudi_cdc: chr_67097e_mor_3: reading, decoding and deciding each key's change",
    "[123.897s][warning][codecache] CodeCache is full. Compiler has been disabled.",
    "[123.897s][warning][codecache] Try increasing the code cache size using -XX:ReservedCodeCacheSize=",
    "CodeCache: size=49152Kb used=49151Kb max_used=49151Kb free=0Kb",
    "26/11/28 21:26:36 ERROR Executor: Exception in task 1.0 in stage 474.0 (TID 605)",
    "java.io.InvalidObjectException: ReflectiveOperationException during deserialization",
    "\tat java.base/java.lang.invoke.SerializedLambda.readResolve(SerializedLambda.java:280)",
    "Caused by: java.lang.VirtualMachineError: Out of space in CodeCache for method handle intrinsic",
    "26/11/28 21:26:36 ERROR SparkUncaughtExceptionHandler: Uncaught exception in thread Thread[Executor task "
    "launch worker for task 1.0 in stage 474.0 (TID 605),5,main]",
    "2026-11-28 21:26:37,001 INFO hudi_cdc: source_url=postgresql://debezium@db/inventory password=s3cr3t-inline",
    "py4j.protocol.Py4JNetworkError: Answer from Java side is empty",
    *[f"2026-11-28 21:26:38,{ms:03d} INFO py4j.clientserver: Closing down clientserver connection" for ms in range(89)],
    ERROR,
]


def test_the_run_commands_error_line_the_jvms_last_words_and_the_logs_end_are_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(PASSWORD_ENV, "dbz-password-value")
    log = tmp_path / "runner-a-001.log"
    log.write_text("\n".join([*RUNNER_LOG[:-1], "connecting with dbz-password-value", RUNNER_LOG[-1]]) + "\n")
    report = exit_report(log, 2, lines=8)
    lines = report.splitlines()
    assert lines[0] == f"exit 2: {ERROR} (log: {log})"
    assert "  the JVM: [123.897s][warning][codecache] CodeCache is full. Compiler has been disabled." in lines
    assert (
        "  the JVM: Caused by: java.lang.VirtualMachineError: Out of space in CodeCache for method handle intrinsic"
        in lines
    )
    assert any("SparkUncaughtExceptionHandler: Uncaught exception" in ln for ln in lines)
    # the 89 lines of py4j closing its connections are one line of the tail, with their count
    assert "    2026-11-28 21:26:38,000 INFO py4j.clientserver: Closing down clientserver connection  [x89]" in lines
    assert lines[-1] == f"    {ERROR}"
    assert "    connecting with ***" in lines
    assert "password=***" in report
    assert "dbz-password-value" not in report and "s3cr3t-inline" not in report


def test_clicks_usage_error_is_an_error_line_and_an_empty_log_says_so(tmp_path: Path) -> None:
    usage = tmp_path / "usage.log"
    usage.write_text(
        "Usage: hudi-cdc run [OPTIONS]\nTry 'hudi-cdc run --help' for help.\n\nError: No such option: --x\n"
    )
    assert exit_report(usage, 2).splitlines()[0] == f"exit 2: Error: No such option: --x (log: {usage})"
    empty = tmp_path / "empty.log"
    empty.write_text("")
    assert exit_report(empty, -6).splitlines()[0] == f"exit -6: (no error line) (log: {empty})"


def test_a_runner_that_ends_by_itself_is_noted_with_its_own_logs_error_and_started_again_with_a_fresh_log(
    tmp_path: Path,
) -> None:
    # A real `hudi-cdc run --continuous` that ends at once with exit 2 (its pipeline file is not there): no JVM.
    runner = RunnerProcess("a", tmp_path / "missing.toml", tmp_path / "state-a", tmp_path, Lives())
    runner.start()
    try:
        assert runner.process is not None
        assert runner.process.wait(60) == 2
        runner.revive()
        assert runner.starts == 2
        assert len(runner.exits) == 1
        first = runner.exits[0]
        assert first.startswith("runner a, start 1, after ")
        assert (
            f"exit 2: hudi-cdc run: error: cannot read pipeline file {tmp_path / 'missing.toml'}: "
            f"[Errno 2] No such file or directory: '{tmp_path / 'missing.toml'}' (log: {tmp_path / 'runner-a-001.log'})"
        ) in first
        runner.process.wait(60)
        assert (tmp_path / "runner-a-002.log").read_text().count("hudi-cdc run: error:") == 1  # its own, not appended
        runner.revive()
        assert runner.starts == 3 and len(runner.exits) == 2
        assert f"(log: {tmp_path / 'runner-a-002.log'})" in runner.exits[1]
    finally:
        deadline = time.monotonic() + 60
        while runner.alive() and time.monotonic() < deadline:
            time.sleep(0.05)
