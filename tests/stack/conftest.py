"""The local CDC stack (`make stack-up`): its tests (here, and any marked `stack`) are skipped when it is down,
except in CI, where it must be up (the hook is in tests/conftest.py, so it also runs when only tests/ops is collected)."""

from __future__ import annotations

import socket

PORTS = {"postgres": 55432, "mariadb": 53306, "kafka": 59092, "apicurio": 58080, "connect": 58083}
BOOTSTRAP = "127.0.0.1:59092"
REGISTRY = "http://127.0.0.1:58080/apis/ccompat/v7"


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def stack_down() -> list[str]:
    return [name for name, port in PORTS.items() if not _listening(port)]
