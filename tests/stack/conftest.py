"""The local CDC stack (`make stack-up`): its tests (here, and any marked `stack`) are skipped when it is down,
except in CI, where it must be up (the hook is in tests/conftest.py, so it also runs when only tests/ops is collected)."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import pytest

from hudi_cdc.testing import envelope_schema, pg_event
from hudi_cdc.testing.kafka import Framer, create_topic, produce, register_schema

PORTS = {"postgres": 55432, "mariadb": 53306, "kafka": 59092, "apicurio": 58080, "connect": 58083}
BOOTSTRAP = "127.0.0.1:59092"
REGISTRY = "http://127.0.0.1:58080/apis/ccompat/v7"
# The stack's Hive metastore (stack/start.sh); HUDI_CDC_TEST_METASTORE_URI points the tests at another one.
METASTORE_URI = os.environ.get("HUDI_CDC_TEST_METASTORE_URI", "thrift://127.0.0.1:59083")


def _listening(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex((host, port)) == 0


def stack_down() -> list[str]:
    return [name for name, port in PORTS.items() if not _listening(port)]


class CustomersTopic:
    """A Debezium-like topic ``<server>.<schema>.customers`` written by hand (keys, values, registry subjects):
    for runner tests that need a topic's messages exactly when they say, without Debezium's delays."""

    def __init__(self, server: str, schema: str) -> None:
        self.name = f"{server}.{schema}.customers"
        create_topic(BOOTSTRAP, self.name)
        key = {"type": "record", "name": "Key", "namespace": self.name, "fields": [{"name": "id", "type": "long"}]}
        value = envelope_schema("customers", [("id", "long"), ("name", ["null", "string"])], schema=schema)
        self.key = Framer(register_schema(REGISTRY, f"{self.name}-key", key), key)
        self.value = Framer(register_schema(REGISTRY, f"{self.name}-value", value), value)
        self.sent = 0

    def send(self, count: int, *, garbage_first: bool = False, age_s: float = 30.0) -> None:
        """``count`` inserts of new ids, committed at the source ``age_s`` ago (a garbage message first)."""
        ts_ms = int((time.time() - age_s) * 1000)
        messages = [
            (self.key({"id": i}), self.value(pg_event("c", lsn=100 + i, after={"id": i, "name": "n"}, ts_ms=ts_ms)), 0)
            for i in range(self.sent, self.sent + count)
        ]
        if garbage_first:
            messages.insert(0, (None, b"\x7fELF not in the wire format", 0))
        self.sent += produce(BOOTSTRAP, self.name, messages)


def wait_until(what: str, ready: Callable[[], Any], timeout_s: float = 90.0) -> Any:  # noqa: ANN401
    """``ready()``'s first truthy value, polled every 0.05 s; an AssertionError naming ``what`` after the timeout."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if got := ready():
            return got
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout_s:.0f}s waiting for {what}")


@pytest.fixture(scope="session")
def metastore_uri() -> str:
    """The Hive metastore's thrift URI. Not one of ``PORTS``: only the tests that use it skip when it is down
    (in CI, where the stack must be up, they fail)."""
    where = urlsplit(METASTORE_URI)
    if not _listening(where.port or 9083, where.hostname or "127.0.0.1"):
        why = f"the Hive metastore at {METASTORE_URI} is down: make stack-up"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but {why}")
        pytest.skip(why)
    return METASTORE_URI
