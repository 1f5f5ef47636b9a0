"""Run a command and measure its wall time and the peak resident memory of its whole process tree; CPU seconds
of a process group and of the whole machine."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Measured:
    seconds: float
    peak_rss_mib: float
    returncode: int
    log: Path


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []


def _tree_rss_kib(root: int) -> int:
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        try:
            with open(f"/proc/{pid}/status") as f:
                total += next((int(line.split()[1]) for line in f if line.startswith("VmRSS:")), 0)
        except OSError:
            continue
        stack += _children(pid)
    return total


_TICK = os.sysconf("SC_CLK_TCK")


def _stat_fields(pid: int | str) -> list[str]:
    """/proc/PID/stat's fields after the command name (which may hold spaces): [0] is the state, [2] the
    process group, [11:15] utime, stime, cutime, cstime in clock ticks. OSError once the process ended."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()


def process_cpu_s(pid: int) -> float:
    """User and system CPU seconds of process ``pid`` so far, all its threads (not its children)."""
    fields = _stat_fields(pid)
    return (int(fields[11]) + int(fields[12])) / _TICK


def group_cpu_s(pgid: int) -> float:
    """CPU seconds of the live processes of group ``pgid`` so far, each with the children it has reaped: a
    runner started in its own session (its JVM, its Python driver, Spark's Python workers)."""
    total = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            fields = _stat_fields(entry.name)
        except OSError:
            continue  # ended meanwhile
        if int(fields[2]) == pgid:
            total += sum(int(x) for x in fields[11:15])  # utime, stime, cutime, cstime
    return total / _TICK


def machine_cpu_s() -> float:
    """CPU seconds all cores have been busy since boot (/proc/stat's first line: all but idle and iowait)."""
    with open("/proc/stat") as f:
        user, nice, system, idle, iowait, irq, softirq, steal = (int(x) for x in f.readline().split()[1:9])
    return (user + nice + system + irq + softirq + steal) / _TICK


def run_measured(
    command: list[str], log: Path, *, env: dict[str, str] | None = None, cwd: str | None = None
) -> Measured:
    """Run ``command`` (output to ``log``), sampling the tree's RSS every 0.25 s (JVM and Python workers)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    peak = 0
    with open(log, "w") as out:
        started = time.perf_counter()
        proc = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})}, cwd=cwd
        )
        done = threading.Event()

        def sample() -> None:
            nonlocal peak
            while not done.is_set():
                peak = max(peak, _tree_rss_kib(proc.pid))
                done.wait(0.25)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        returncode = proc.wait()
        seconds = time.perf_counter() - started
        done.set()
        sampler.join()
    return Measured(seconds, peak / 1024, returncode, log)
