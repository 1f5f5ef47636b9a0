"""The one wrapper of every command: a failure's class decides its line and exit code; no Spark needed."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from hudi_cdc.cli import main
from hudi_cdc.cli.wrappers import (
    CANNOT_ANSWER,
    EXIT_CONFIG,
    EXIT_TRANSIENT,
    Invocation,
    OnFailure,
    command,
    stop_signals,
    worst,
)
from hudi_cdc.errors import ConfigError, DecodeError, SinkError, TransientError

DEFAULT = OnFailure()


def _command(raised: Exception | None, on_failure: OnFailure = DEFAULT, log: Path | None = None) -> click.Command:
    @click.command()
    @click.option("--name", default="t")
    @command(on_failure)
    def probe(run: Invocation, name: str) -> int:
        run.log_path = log  # as run.session() sets it, without starting a JVM
        if raised is not None:
            raise raised
        click.echo(f"{name}: done")
        return 0

    return probe


def test_a_terminal_error_exits_with_its_code_and_one_line() -> None:
    done = CliRunner().invoke(_command(DecodeError("not Avro")), [])
    assert done.exit_code == 1
    assert done.output.splitlines() == ["hudi-cdc: error: not Avro"]
    answers = OnFailure("hudi-cdc verify", terminal=CANNOT_ANSWER)  # a command whose 1 is its finding
    assert CliRunner().invoke(_command(DecodeError("not Avro"), answers), []).exit_code == 2


def test_a_configuration_error_exits_2_from_every_command() -> None:
    for on_failure in (DEFAULT, OnFailure("hudi-cdc verify", terminal=CANNOT_ANSWER, kinds=False)):
        done = CliRunner().invoke(_command(ConfigError("--source-path is missing"), on_failure), [])
        assert done.exit_code == EXIT_CONFIG == 2
        assert done.output.splitlines()[-1].endswith(": --source-path is missing")


def test_a_transient_error_exits_with_the_transient_code() -> None:
    for error in (TransientError("broker down"), SinkError("write failed")):
        done = CliRunner().invoke(_command(error, OnFailure("hudi-cdc run", terminal=2)), [])
        assert done.exit_code == EXIT_TRANSIENT == 75
        assert done.output.splitlines() == [f"hudi-cdc run: transient: {error}"]


def test_an_unexpected_exception_exits_with_the_generic_code() -> None:
    done = CliRunner().invoke(_command(KeyError("boom"), OnFailure("hudi-cdc run", terminal=2)), [])
    assert done.exit_code == 2
    assert done.output.splitlines() == ["hudi-cdc run: unexpected error: 'boom'"]


def test_without_kinds_the_line_is_the_prefix_and_the_message() -> None:
    on_failure = OnFailure("hudi-cdc verify: could not run", terminal=2, kinds=False)
    assert on_failure.line(TransientError("no route")) == ("hudi-cdc verify: could not run: no route", 75)
    assert on_failure.line(ValueError("bad")) == ("hudi-cdc verify: could not run: bad", 2)


def test_clicks_own_errors_pass_through() -> None:
    done = CliRunner().invoke(_command(click.BadParameter("must be a table")), [])
    assert done.exit_code == 2 and "Error: Invalid value: must be a table" in done.output


def test_the_jvm_log_is_named_on_failure_and_deleted_after_success(tmp_path: Path) -> None:
    log = tmp_path / "spark.log"
    log.write_text("WARN something\n")
    failed = CliRunner().invoke(_command(ConfigError("bad"), log=log), [])
    assert failed.output.splitlines() == [f"hudi-cdc: error: bad (Spark's log: {log})"] and log.exists()
    done = CliRunner().invoke(_command(None, log=log), [])
    assert done.exit_code == 0 and done.output == "t: done\n" and not log.exists()


def _leaves(group: click.Group) -> list[click.Command]:
    found = []
    for sub in group.commands.values():
        found += _leaves(sub) if isinstance(sub, click.Group) else [sub]
    return found


@pytest.mark.parametrize("leaf", _leaves(main), ids=lambda c: c.name)
def test_every_command_runs_in_the_wrapper(leaf: click.Command) -> None:
    assert getattr(leaf.callback, "__wrapped__", None) is not None, f"{leaf.name}: decorate it with wrappers.command"


def test_connect_status_unreachable_is_transient() -> None:
    done = CliRunner().invoke(main, ["connect", "status", "--connect-url", "http://127.0.0.1:1"])
    assert done.exit_code == 75
    (line,) = done.output.splitlines()
    assert line.startswith("hudi-cdc: transient: Kafka Connect at http://127.0.0.1:1 cannot be reached")


def test_stop_signals_call_stop_in_the_block_and_leave_the_process_s_handlers_as_they_were() -> None:
    """``hudi-cdc run`` called in process (a notebook, a test worker): the process's own handlers are back after
    it, whatever they were (pytest-xdist's workers have their own)."""
    seen: list[int] = []
    own = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        for sig in own:  # the process's own handlers, as a notebook's or a scheduler's may be
            signal.signal(sig, lambda number, _frame: seen.append(number))
        mine = {sig: signal.getsignal(sig) for sig in own}
        stopped: list[str] = []
        with stop_signals(lambda: stopped.append("stop"), signal.SIGTERM, signal.SIGINT):
            os.kill(os.getpid(), signal.SIGTERM)
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.1)  # handlers run between bytecodes of the main thread
        assert stopped == ["stop", "stop"] and seen == []
        assert {sig: signal.getsignal(sig) for sig in own} == mine
        os.kill(os.getpid(), signal.SIGINT)  # the process's own handler again
        time.sleep(0.1)
        assert seen == [signal.SIGINT]
    finally:
        for sig, handler in own.items():
            signal.signal(sig, handler)


def test_stop_signals_off_the_main_thread_install_nothing_and_raise_nothing() -> None:
    errors: list[BaseException] = []

    def in_a_worker() -> None:
        try:
            with stop_signals(lambda: None, signal.SIGTERM):
                pass
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            errors.append(exc)

    worker = threading.Thread(target=in_a_worker)
    worker.start()
    worker.join()
    assert errors == []


def test_a_command_over_many_tables_exits_with_the_worst_table_s_code() -> None:
    # An error outranks a difference (that table got no answer), a terminal error a transient one.
    assert worst([0, 1, 0]) == 1
    assert worst([1, EXIT_TRANSIENT, 0]) == EXIT_TRANSIENT
    assert worst([EXIT_TRANSIENT, EXIT_CONFIG, 1]) == EXIT_CONFIG
    assert worst([]) == 0
