"""What the commands share: the Spark session with its JVM log, the error line, --hoodie-conf."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import NoReturn

import click

from hudi_cdc.errors import ConfigError

__all__ = ["fail", "parse_hoodie_conf", "jvm_log", "session"]


def parse_hoodie_conf(values: tuple[str, ...]) -> dict[str, str]:
    conf = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--hoodie-conf expects key=value, got {item!r}")
        conf[key.strip()] = value.strip()
    return conf


def jvm_log(verbose: int) -> Path | None:
    """Where the JVM this run starts writes (None with -v, or when a JVM is already running)."""
    from pyspark.sql import SparkSession

    from hudi_cdc.console import jvm_log_path

    starts_jvm = SparkSession.getActiveSession() is None and "PYSPARK_GATEWAY_PORT" not in os.environ
    return jvm_log_path() if starts_jvm and verbose == 0 else None


def session(log_path: Path | None):  # noqa: ANN202 - SparkSession
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
        spark = spark_session(jvm_log=log_path)
    else:
        with stdout_to_stderr():
            spark = spark_session()
    system = jvm(spark).java.lang.System
    system.setOut(system.err)
    return spark


def fail(message: str, code: int, log_path: Path | None) -> NoReturn:
    if log_path is not None and log_path.exists() and log_path.stat().st_size:
        message += f" (Spark's log: {log_path})"
    click.echo(message, err=True)
    sys.exit(code)
