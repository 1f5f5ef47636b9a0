"""A Debezium Postgres connector of our own on the stack's Connect worker (the stack's converter settings)."""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hudi_cdc.testing.postgres import connect

CONNECT = "http://127.0.0.1:58083"
_PROPERTIES = Path(__file__).resolve().parents[2] / "stack" / "conf" / "inventory-connector.properties"


def _stack_settings() -> dict[str, str]:
    settings = {}
    for line in _PROPERTIES.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#") and "=" in line:
            key, _, value = line.partition("=")
            settings[key.strip()] = value.strip()
    return settings


def _call(method: str, path: str, body: dict | None = None) -> object:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(CONNECT + path, data=data, method=method)
    request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=30) as response:
        text = response.read()
    return json.loads(text) if text else None


@contextmanager
def postgres_connector(name: str, *, slot: str, topic_prefix: str, table: str, **extra: str) -> Iterator[None]:
    """The connector, RUNNING, until the block ends; then it is deleted and its slot dropped."""
    settings = {
        **_stack_settings(),
        "name": name,
        "slot.name": slot,
        "topic.prefix": topic_prefix,
        "table.include.list": table,
        **extra,
    }
    settings.pop("schema.include.list", None)
    _call("PUT", f"/connectors/{name}/config", settings)
    try:
        deadline = time.monotonic() + 120
        while True:
            status = _call("GET", f"/connectors/{name}/status")
            tasks = status["tasks"] if isinstance(status, dict) else []
            if tasks and all(t["state"] == "RUNNING" for t in tasks):
                break
            if any(t["state"] == "FAILED" for t in tasks):
                raise AssertionError(f"connector {name} failed: {tasks[0].get('trace', '')[:2000]}")
            if time.monotonic() > deadline:
                raise AssertionError(f"connector {name} not RUNNING: {status}")
            time.sleep(0.5)
        yield
    finally:
        _call("DELETE", f"/connectors/{name}")
        with connect() as conn:
            for _ in range(60):  # the task lets go of the slot shortly after the delete
                active = conn.execute(
                    "select active from pg_replication_slots where slot_name = %s", (slot,)
                ).fetchone()
                if active is None:
                    break
                if not active[0]:
                    conn.execute("select pg_drop_replication_slot(%s)", (slot,))
                    break
                time.sleep(0.5)
