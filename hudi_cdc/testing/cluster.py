"""A Spark standalone cluster on 127.0.0.1: one master and one worker, each its own JVM.

What users outgrow one machine with: executors in another JVM, with their own
Python workers, that see only what ``spark-submit`` ships them. Started with
Spark's own ``spark-class`` (the one pyspark installs), stopped on exit.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["standalone_cluster", "spark_bin"]


def spark_bin(name: str) -> str:
    """A script of the Spark that pyspark installed (``spark-submit``, ``spark-class``)."""
    import pyspark

    return str(Path(pyspark.__file__).resolve().parent / "bin" / name)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_for(log: Path, text: str, process: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in log.read_text(errors="replace"):
            return
        if process.poll() is not None:
            break
        time.sleep(0.5)
    raise RuntimeError(f"Spark standalone: no {text!r} in {log} (exit {process.poll()}):\n{log.read_text()[-3000:]}")


@contextmanager
def standalone_cluster(work: Path, *, cores: int = 1, memory: str = "2g") -> Iterator[str]:
    """Start a master and one worker; yield the master URL (``spark://127.0.0.1:PORT``)."""
    work.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    url = f"spark://127.0.0.1:{port}"
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_NO_DAEMONIZE": "1"}
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    processes: list[subprocess.Popen[bytes]] = []
    try:
        master_log = work / "master.log"
        with open(master_log, "wb") as out:
            processes.append(
                subprocess.Popen(
                    [
                        spark_bin("spark-class"),
                        "org.apache.spark.deploy.master.Master",
                        "--host",
                        "127.0.0.1",
                        "--port",
                        str(port),
                        "--webui-port",
                        str(_free_port()),
                    ],
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    env=env,
                    start_new_session=True,
                )  # fmt: skip
            )
        _wait_for(master_log, "I have been elected leader", processes[0], 60)
        worker_log = work / "worker.log"
        with open(worker_log, "wb") as out:
            processes.append(
                subprocess.Popen(
                    [
                        spark_bin("spark-class"),
                        "org.apache.spark.deploy.worker.Worker",
                        "--host",
                        "127.0.0.1",
                        "--cores",
                        str(cores),
                        "--memory",
                        memory,
                        "--webui-port",
                        str(_free_port()),
                        "--work-dir",
                        str(work / "worker"),
                        url,
                    ],
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    env=env,
                    start_new_session=True,
                )  # fmt: skip
            )
        _wait_for(worker_log, "Successfully registered with master", processes[1], 60)
        yield url
    finally:
        for process in reversed(processes):
            process.terminate()
        for process in reversed(processes):
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
