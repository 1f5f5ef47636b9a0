"""The local CDC stack (`make stack-up`): skipped when it is down, except in CI, where it must be up."""

from __future__ import annotations

import os
import socket

import pytest

PORTS = {"postgres": 55432, "kafka": 59092, "apicurio": 58080, "connect": 58083}
BOOTSTRAP = "127.0.0.1:59092"
REGISTRY = "http://127.0.0.1:58080/apis/ccompat/v7"


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    mine = [item for item in items if "tests/stack/" in item.nodeid]
    for item in mine:
        item.add_marker(pytest.mark.spark)  # all of them run Spark, in process or through spark-submit
    down = [name for name, port in PORTS.items() if not _listening(port)]
    if not down:
        return
    if os.environ.get("CI") == "true" and mine:
        raise pytest.UsageError(f"CI=true but the local stack is down ({', '.join(down)}): run `make stack-up` first")
    for item in mine:
        item.add_marker(pytest.mark.skip(reason=f"the local CDC stack is down ({', '.join(down)}): make stack-up"))
