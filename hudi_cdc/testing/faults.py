"""Faults on purpose: a Hudi instant left pending, a process group killed, a stack service restarted.

Shared by the crash tests and the chaos harness (``chaos/``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

__all__ = ["STACK_SERVICES", "fill_disk", "kill_group", "pending_instants", "restart_service", "timeline_of"]

# The local stack's JVM services, by the names of their folders under .stack/ (stack/start.sh).
STACK_SERVICES = ("kafka", "apicurio", "connect")


def timeline_of(base_path: str | Path) -> Path:
    return Path(base_path) / ".hoodie" / "timeline"


def pending_instants(timeline: Path, action: str = "") -> list[str]:
    """Instants (of ``action``, or any) requested or inflight and not completed."""
    if not timeline.is_dir():
        return []
    names = os.listdir(timeline)
    completed = {n.split("_")[0] for n in names if "_" in n}
    return [
        n for n in names if n.endswith((".requested", ".inflight")) and action in n and n.split(".")[0] not in completed
    ]


def kill_group(process: subprocess.Popen) -> None:
    """SIGKILL a process started with ``start_new_session=True`` and everything it started (its JVM)."""
    if process.poll() is None:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    process.wait()


def restart_service(repo: Path, service: str, *, down_s: float = 5.0, stack_dir: Path | None = None) -> float:
    """Stop one stack service (SIGTERM by its pid file), keep it down ``down_s``, start it again.

    Returns the seconds from the stop to the service being ready again (stack/start.sh's checks).
    """
    if service not in STACK_SERVICES:
        raise ValueError(f"unknown stack service {service!r}: one of {', '.join(STACK_SERVICES)}")
    stack = stack_dir or Path(os.environ.get("HUDI_CDC_STACK_DIR", repo / ".stack"))
    pid_file = stack / service / f"{service}.pid"
    started = time.monotonic()
    pid = int(pid_file.read_text())
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.2)
    if _alive(pid):
        os.kill(pid, signal.SIGKILL)
    time.sleep(down_s)
    subprocess.run(["bash", str(repo / "stack" / "start.sh")], check=True, capture_output=True, timeout=300)
    return time.monotonic() - started


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def fill_disk(mount: Path) -> Path:
    """Take every free byte of the filesystem at ``mount``; delete the returned file to give them back."""
    filler = mount / "filler"
    with open(filler, "wb", buffering=0) as f:
        for size in (1 << 20, 4096):
            try:
                while True:
                    f.write(b"\0" * size)
            except OSError:
                pass
    return filler
