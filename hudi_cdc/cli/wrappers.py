"""The one wrapper every command runs in: its JVM log and Spark session, and its failure as one line and an exit code.

A command declares what a failure looks like (:class:`OnFailure`) and takes an
:class:`Invocation` as its first argument::

    @click.command()
    @click.option(...)
    @command(OnFailure("hudi-cdc status", terminal=CANNOT_ANSWER, kinds=False))
    def status(run: Invocation, ...) -> None:
        spark = run.session()

The wrapper maps what escapes the command to ``<prefix>: <kind>: <message>``
on stderr and the command's exit code, by class (``HudiCdcError.transient``),
never by message; it names the JVM's log file in that line, and deletes the
file after a run that did not fail.

Exit codes, the same for every command (docs/cli.md "Exit codes")::

    0   done: nothing to report
    1   done, and the answer is "no": validate: a check failed; verify: the table differs (or a repair
        left keys); run: a table failed (the others ran); connect status: a connector is not running.
        A command that writes (ingest, bootstrap, quarantine, tombstones, pause...): a terminal error of the
        input or the table (undecodable event, incompatible schema change, bad checkpoint): a retry
        fails the same way until someone fixes it
    2   configuration error or bad usage (a ConfigError, click's usage errors), from every command; also
        whatever else stops validate, verify, run, status or connect before their answer, so that
        their 1 means only their finding
    75  transient (EX_TEMPFAIL): a broker, registry, database or store was not there; a retry may succeed
    130 interrupted (Ctrl-C)

A command picks 1 or 2 for a terminal error that is not a ConfigError
(:attr:`OnFailure.terminal`); everything else in the table is the wrapper's.
"""

from __future__ import annotations

import functools
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Concatenate, NoReturn, ParamSpec

import click

from hudi_cdc.errors import ConfigError, HudiCdcError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "CANNOT_ANSWER",
    "EXIT_CODES",
    "EXIT_CONFIG",
    "EXIT_FOUND",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_TRANSIENT",
    "Invocation",
    "OnFailure",
    "command",
    "fail",
    "jvm_log",
    "session",
    "worst",
]

EXIT_OK = 0
EXIT_FOUND = 1
"""The command ran and its answer is "no" (a failed check, a difference, a failed table), or a command that
writes met a terminal error of its input or table."""
EXIT_CONFIG = 2
"""A configuration error or bad usage, from every command (click's usage errors are 2 as well)."""
EXIT_TRANSIENT = 75
"""EX_TEMPFAIL, what a command exits with on a :class:`~hudi_cdc.errors.TransientError`: a retry may succeed."""
EXIT_INTERRUPTED = 130
"""Stopped by Ctrl-C (128 + SIGINT)."""

EXIT_CODES: dict[int, str] = {
    EXIT_OK: "done",
    EXIT_FOUND: "done, and the answer is no: validate found a failed check, verify a difference, run a failed "
    "table, connect status a connector not running; a command that writes: a terminal error of the input or "
    "the table (a retry fails the same way)",
    EXIT_CONFIG: "configuration error or bad usage, from every command; validate, verify, run, status and "
    "connect also exit 2 for any other error that stops them before their answer",
    EXIT_TRANSIENT: "transient error (EX_TEMPFAIL): a service was not there; a retry may succeed",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C)",
}
"""Every exit code a command may return, and its meaning: the table docs/cli.md shows."""

CANNOT_ANSWER = EXIT_CONFIG
""":attr:`OnFailure.terminal` of a command whose 1 is its finding (validate, verify, run, status, connect)."""

# An error outranks a finding (the command gave no answer for that table), a terminal error a transient one
# (a retry answers a 75, not a 2).
_SEVERITY = (EXIT_OK, EXIT_FOUND, EXIT_TRANSIENT, EXIT_CONFIG)


def worst(codes: Iterable[int]) -> int:
    """The exit code of a command over many tables (``verify --pipeline`` without ``--table``): the worst of
    the tables' codes, in the order 0, 1, 75, 2 (docs/cli.md "Exit codes")."""
    return max(codes, key=lambda c: _SEVERITY.index(c) if c in _SEVERITY else len(_SEVERITY), default=EXIT_OK)


_P = ParamSpec("_P")


@dataclass(frozen=True)
class OnFailure:
    """What a command prints and exits with when it fails.

    With ``kinds`` the line is ``<prefix>: error: ...``, ``<prefix>: transient: ...``
    or ``<prefix>: unexpected error: ...``; without, ``<prefix>: ...``.
    """

    prefix: str = "hudi-cdc"
    terminal: int = EXIT_FOUND
    """A terminal error that is not a :class:`~hudi_cdc.errors.ConfigError` (and an unexpected one): 1 for a
    command that writes, 2 (:data:`CANNOT_ANSWER`) for one whose 1 is its finding. A ConfigError is always 2,
    a transient error always 75."""
    kinds: bool = True

    def line(self, exc: Exception) -> tuple[str, int]:
        """The stderr line and the exit code for ``exc``."""
        from hudi_cdc._jvm import java_message

        if not isinstance(exc, HudiCdcError):
            kind, code, text = "unexpected error", self.terminal, java_message(exc)
        elif exc.transient:
            kind, code, text = "transient", EXIT_TRANSIENT, str(exc)
        else:
            kind, code, text = "error", EXIT_CONFIG if isinstance(exc, ConfigError) else self.terminal, str(exc)
        return (f"{self.prefix}: {kind}: {text}" if self.kinds else f"{self.prefix}: {text}"), code


class Invocation:
    """What the wrapper hands a command: ``-v``'s count, and the Spark session with the log file of its JVM."""

    def __init__(self, verbose: int) -> None:
        self.verbose = verbose
        self.log_path: Path | None = None
        self.keep_log = False
        """Set by a command whose run did not fail but whose log a reader needs (a failed table, a failed check)."""

    def session(self, conf: dict[str, str] | None = None) -> SparkSession:
        """The Spark session; a JVM it starts writes to a log file named in the failure line (with -v: the terminal)."""
        self.log_path = jvm_log(self.verbose)  # set first: the failure line names it if the JVM does not start
        return session(self.log_path, conf)


def command(
    on_failure: OnFailure = OnFailure(),
) -> Callable[[Callable[Concatenate[Invocation, _P], int | None]], Callable[_P, None]]:
    """Run a click command's body with an :class:`Invocation`; its failures become ``on_failure``'s line and code.

    The body returns None or an exit code. click's own exceptions (usage errors,
    ``ctx.exit``) and ``sys.exit`` pass through untouched.
    """

    def decorate(body: Callable[Concatenate[Invocation, _P], int | None]) -> Callable[_P, None]:
        @functools.wraps(body)
        def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> None:
            obj = click.get_current_context().find_root().obj
            run = Invocation(obj["verbose"] if isinstance(obj, dict) else 0)
            try:
                code = body(run, *args, **kwargs)
            except (click.ClickException, click.exceptions.Exit, click.Abort):
                raise
            except Exception as exc:  # one line for the shell; the traceback with -v
                if not isinstance(exc, HudiCdcError):
                    logging.getLogger("hudi_cdc").info("%s: unexpected failure", on_failure.prefix, exc_info=True)
                fail(*on_failure.line(exc), run.log_path)
            if run.log_path is not None and not run.keep_log:
                run.log_path.unlink(missing_ok=True)
            if code:
                sys.exit(code)

        return wrapper

    return decorate


def jvm_log(verbose: int) -> Path | None:
    """Where the JVM this run starts writes (None with -v, or when a JVM is already running).

    librdkafka's log goes to the same file (without one, and without -v, nowhere: see ``main``).
    """
    from pyspark.sql import SparkSession

    from hudi_cdc.console import jvm_log_path, route_kafka_log

    starts_jvm = SparkSession.getActiveSession() is None and "PYSPARK_GATEWAY_PORT" not in os.environ
    path = jvm_log_path() if starts_jvm and verbose == 0 else None
    if path is not None:
        route_kafka_log(path, terminal=False)
    return path


def session(log_path: Path | None, conf: dict[str, str] | None = None) -> SparkSession:
    """The Spark session, its JVM writing to ``log_path`` (or, without one, stdout sent to stderr).

    stdout belongs to the command's output (--json lines). A JVM started here
    (and Spark's launcher before it, which prints Ivy's resolution) inherits the
    log file as its stdout and stderr, or stderr as its stdout; a running one
    gets System.out pointed at System.err, for libraries inside it (Hudi's
    shaded JOL) that print there.
    """
    from hudi_cdc._jvm import jvm
    from hudi_cdc.console import stdout_to_stderr
    from hudi_cdc.spark import spark_session

    if log_path is not None:
        spark = spark_session(jvm_log=log_path, conf=conf)
    else:
        with stdout_to_stderr():
            spark = spark_session(conf=conf)
    system = jvm(spark).java.lang.System
    system.setOut(system.err)
    return spark


OUT_OF_MEMORY_HINT = (
    "the Spark driver ran out of memory (java.lang.OutOfMemoryError): make the round smaller with a lower "
    "--source-limit, or give Spark more memory (spark-submit --driver-memory, or PYSPARK_SUBMIT_ARGS="
    "'--driver-memory 4g pyspark-shell' for a session hudi-cdc starts)"
)


def fail(message: str, code: int, log_path: Path | None) -> NoReturn:
    """Print ``message`` on stderr, naming the JVM's log if it holds anything, and exit with ``code``."""
    if log_path is not None and log_path.exists() and log_path.stat().st_size:
        if _ran_out_of_memory(log_path):
            message += f"; {OUT_OF_MEMORY_HINT}"
        message += f" (Spark's log: {log_path})"
    click.echo(message, err=True)
    sys.exit(code)


def _ran_out_of_memory(log_path: Path) -> bool:
    # The JVM's own error rarely reaches Python intact (a dying JVM answers py4j with nothing).
    with open(log_path, "rb") as log:
        return any(b"java.lang.OutOfMemoryError" in line for line in log)


@contextmanager
def stop_signals(stop: Callable[[], object], *signals: signal.Signals) -> Iterator[None]:
    """``stop()`` on each of ``signals`` (systemd's SIGTERM, Ctrl-C's SIGINT) while the block runs, the process's
    own handlers restored after it: a command called in process (a notebook, a test, a scheduler's worker) leaves
    Ctrl-C as it found it. Off the main thread, where Python allows no handler, nothing is installed."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {sig: signal.getsignal(sig) for sig in signals}
    for sig in signals:
        signal.signal(sig, lambda *_: stop())
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
