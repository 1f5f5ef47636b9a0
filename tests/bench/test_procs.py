"""bench.procs: the CPU a runner's process group and the machine spent, as the pipeline benchmark reads it."""

from __future__ import annotations

import subprocess
import sys
import time

from bench.pipeline import _cpu_per_changes
from bench.procs import group_cpu_s, machine_cpu_s

# A parent that starts a child in its own group; both spin for about 0.4 s of CPU, then wait on stdin.
_SPIN = "import time\nend = time.process_time() + 0.4\nwhile time.process_time() < end: pass\n"
_PARENT = (
    "import subprocess, sys\n"
    f"child = subprocess.Popen([sys.executable, '-c', {_SPIN + 'input()'!r}], stdin=sys.stdin)\n"
    + _SPIN
    + "print('spun', flush=True)\ninput()\n"
)


def test_a_group_counts_every_process_in_it_and_the_machine_at_least_as_much() -> None:
    machine_before = machine_cpu_s()
    runner = subprocess.Popen(
        [sys.executable, "-c", _PARENT], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip
    try:
        assert runner.stdout is not None and runner.stdout.readline() == "spun\n"
        # The child spins as long as the parent: wait until the group has both spins' worth.
        deadline = time.monotonic() + 30
        while group_cpu_s(runner.pid) < 0.75 and time.monotonic() < deadline:
            time.sleep(0.05)
        spent = group_cpu_s(runner.pid)
        assert 0.75 <= spent < 5
        assert machine_cpu_s() - machine_before >= spent
        assert group_cpu_s(runner.pid + 10_000_000) == 0  # no such group
    finally:
        runner.communicate("\n\n", timeout=30)


def test_cpu_per_changes_splits_the_runner_from_the_stack() -> None:
    per = _cpu_per_changes({"runner": 30.0, "machine": 50.0, "load": 5.0}, 10_000)
    assert per == {
        "runner_cpu_s": 30.0,
        "stack_cpu_s": 15.0,
        "runner_cpu_per_1k_changes_s": 3.0,
        "stack_cpu_per_1k_changes_s": 1.5,
    }
