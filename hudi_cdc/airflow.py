"""Airflow: one hudi-cdc round for one table as a task.

``HudiCdcIngestOperator`` runs ``hudi-cdc ingest --json`` (or the same through
``spark-submit``) as a child process, so the Airflow worker needs neither
Spark nor a JVM and hudi-cdc may live in a venv of its own (Airflow's pins and
PySpark's rarely agree). The outcome is decided by the exit status the CLI
derives from hudi-cdc's error classes, never by reading messages:

- 0: the round's result (``IngestResult.to_dict()``) is the task's return
  value, so it lands in XCom;
- 75, a transient error (broker or registry down, a failed write): the task
  fails and Airflow retries it as its ``retries`` say; a process killed by a
  signal is treated the same, since the next round finishes the job;
- 2, a configuration error, or 1, a terminal error in the input (undecodable
  events, an incompatible schema change): ``AirflowFailException``, failed at
  once without retries (any status but 0 and 75 is; docs/cli.md has the table).

The command helpers need no Airflow; the operator class is built on first use
and says which ``pip install`` is missing when Airflow is not there.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from hudi_cdc.cli.wrappers import EXIT_TRANSIENT
from hudi_cdc.config import redact
from hudi_cdc.errors import ConfigError
from hudi_cdc.settings import PLACES, flag_name, lookup

# HudiCdcIngestOperator is built on first access (module __getattr__), so Airflow is imported only then.
__all__ = ["EXIT_TRANSIENT", "HudiCdcIngestOperator", "ingest_command", "outcome_of"]  # noqa: F822

# Options that are not settings: the files ingest reads its settings from.
_FILE_OPTIONS = {"props_file": "--props", "config_file": "--config"}


def ingest_command(
    options: Mapping[str, Any], *, command: Sequence[str] = ("hudi-cdc",), config_class: type | None = None
) -> list[str]:
    """The ``hudi-cdc ingest ... --json`` argument list for ``options``: the settings by their names
    (docs/settings.md; old names warn), ``props_file`` and ``config_file``.

    Each flag is derived from the setting's declaration: ``True``/``False`` is ``--x``/``--no-x``;
    ``None`` is left out; a list is the flag repeated, once per item; a mapping (``masks``,
    ``hoodie_conf``...) is the flag repeated, once per ``KEY=VALUE``. The ``on_<kind>`` shorthands of
    ``schema_changes`` pass as ``--on-<kind>``. An unknown name raises ConfigError with the closest
    names, when the DAG is parsed.
    """
    from hudi_cdc.config import SCHEMA_CHANGE_KINDS, IngestConfig

    argv = [*command, "ingest"]
    for name, value in options.items():
        if value is None:
            continue
        if name in _FILE_OPTIONS:
            argv += [_FILE_OPTIONS[name], str(value)]
            continue
        if name.startswith("on_") and name.removeprefix("on_") in SCHEMA_CHANGE_KINDS:
            argv += [flag_name(name), str(value)]
            continue
        d = lookup(config_class or IngestConfig, name, f"HudiCdcIngestOperator option {name}", warn=_deprecated)
        if "airflow" not in d.where:
            raise ConfigError(
                f"HudiCdcIngestOperator option {name}: {d.name} cannot be set in {PLACES['airflow']} "
                "(docs/settings.md says where it goes)"
            )
        if d.kind == "bool":
            argv.append(d.flag if value else f"--no-{d.flag[2:]}")
        elif d.kind == "mapping":
            for key, item in dict(value).items():
                argv += [d.flag, f"{key}={item}"]
        elif d.kind == "list" and not isinstance(value, str):
            for item in value:
                argv += [d.flag, str(item)]
        else:
            argv += [d.flag, str(value)]
    return [*argv, "--json"]


def _deprecated(message: str) -> None:
    warnings.warn(message, FutureWarning, stacklevel=3)


def outcome_of(returncode: int) -> Literal["ok", "retry", "fail"]:
    """What an exit status of ``hudi-cdc ingest`` means for a scheduler."""
    if returncode == 0:
        return "ok"
    if returncode == EXIT_TRANSIENT or returncode < 0:  # < 0: killed by a signal
        return "retry"
    return "fail"


def _printable(argv: Sequence[str]) -> str:
    """``argv`` for the task log: secret-looking settings and URL credentials hidden."""
    shown = []
    for arg in argv:
        key, sep, value = arg.partition("=")
        arg = f"{key}={redact({key: value})[key]}" if sep else arg
        shown.append(re.sub(r"//[^/@\s]+@", "//***@", arg))
    return " ".join(shown)


def _airflow() -> tuple[type, type[Exception], type[Exception]]:
    """Airflow's ``BaseOperator``, ``AirflowException`` and ``AirflowFailException`` (Airflow 3's, else 2's)."""
    try:
        from airflow.sdk import BaseOperator  # Airflow 3
        from airflow.sdk.exceptions import AirflowException, AirflowFailException
    except ImportError:
        try:
            from airflow.exceptions import AirflowException, AirflowFailException  # Airflow 2
            from airflow.models import BaseOperator
        except ImportError as exc:
            raise ImportError(
                "hudi_cdc.airflow.HudiCdcIngestOperator needs Apache Airflow in the environment that parses the "
                "DAG: pip install 'hudi-cdc[airflow]' (or apache-airflow)"
            ) from exc
    return BaseOperator, AirflowException, AirflowFailException


def _start(argv: Sequence[str], env: Mapping[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **env},
        start_new_session=True,  # on_kill stops Spark's JVM and Python workers too
    )


def _finish(
    process: subprocess.Popen[str],
    log: Any,  # noqa: ANN401 - the task's logger: stdlib's or structlog's
) -> tuple[int, list[dict[str, Any]], str | None]:
    """The exit status, the JSON results on stdout, and the last ``hudi-cdc: ...`` line on stderr (relayed to ``log``)."""
    last_error: list[str] = []

    def relay() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            log.info("%s", line.rstrip())
            if line.startswith("hudi-cdc: "):
                last_error[:] = [line.strip()]

    # stderr is drained on a thread of its own: a full pipe would block the child while stdout is read here.
    relayer = threading.Thread(target=relay, daemon=True)
    relayer.start()
    assert process.stdout is not None
    results = [json.loads(line) for line in process.stdout if line.startswith("{")]
    returncode = process.wait()
    relayer.join()
    return returncode, results, (last_error[0] if last_error else None)


def _build_operator() -> type:
    base_operator, airflow_exception, airflow_fail_exception = _airflow()

    class HudiCdcIngestOperator(base_operator):  # type: ignore[misc, valid-type]
        """One ``hudi-cdc ingest`` round for one table; its result goes to XCom.

        ``options`` are the settings by their names, as ``hudi_cdc.ingest``
        takes them (``source``, ``topic``, ``target_base_path``,
        ``columns_drop=["a", "b"]``, ``masks={...}``, ``hoodie_conf``...;
        docs/settings.md), templated.
        ``command`` starts hudi-cdc: ``["hudi-cdc"]`` from ``PATH``, the
        ``hudi-cdc`` of another venv, or a ``spark-submit ... <launcher>`` list
        for a cluster (``hudi-cdc jars`` prints one). ``env`` is added to the
        worker's environment (``PYSPARK_PYTHON``, ``HUDI_CDC_JARS_DIR``, secrets).
        """

        template_fields = ("options", "env")
        ui_color = "#e8f4fd"

        def __init__(
            self,
            *,
            options: Mapping[str, Any],
            command: Sequence[str] = ("hudi-cdc",),
            env: Mapping[str, str] | None = None,
            **kwargs: Any,
        ) -> None:
            super().__init__(**kwargs)
            self.options = dict(options)
            self.command = list(command)
            self.env = dict(env or {})
            ingest_command(self.options, command=self.command)  # unknown options fail when the DAG is parsed
            self._process: subprocess.Popen[str] | None = None

        def execute(self, context: Any) -> dict[str, Any]:
            argv = ingest_command(self.options, command=self.command)
            self.log.info("running %s", _printable(argv))
            self._process = _start(argv, self.env)
            returncode, results, last_error = _finish(self._process, self.log)
            reason = last_error or f"hudi-cdc exited with status {returncode}"
            outcome = outcome_of(returncode)
            if outcome == "fail":
                raise airflow_fail_exception(reason)
            if outcome == "retry":
                raise airflow_exception(reason)
            if not results:
                raise airflow_fail_exception("hudi-cdc exited 0 but printed no result")
            return results[-1]

        def on_kill(self) -> None:
            if self._process is not None and self._process.poll() is None:
                os.killpg(self._process.pid, signal.SIGTERM)

    HudiCdcIngestOperator.__module__ = __name__
    return HudiCdcIngestOperator


_operator: type | None = None


def __getattr__(name: str) -> Any:
    global _operator
    if name == "HudiCdcIngestOperator":
        if _operator is None:
            _operator = _build_operator()
        return _operator
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
