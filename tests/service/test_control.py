"""The control files: a repair request's life (asked, pending, settled, its outcome), and whether a runner lives."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hudi_cdc.errors import ConfigError
from hudi_cdc.service import control


def test_a_repair_request_is_pending_until_its_outcome_is_settled(tmp_path: Path) -> None:
    request_id = control.request_repair(tmp_path, "inventory.customers", {"source_table": "inventory.customers"})
    assert control.instructions(tmp_path) == {"inventory.customers": {control.REPAIR}}
    pending = control.pending_repair(tmp_path, "inventory.customers")
    assert pending == {"source_table": "inventory.customers", "id": request_id}
    with pytest.raises(ConfigError, match="already requested"):
        control.request_repair(tmp_path, "inventory.customers", {})
    assert control.repair_outcome(tmp_path, "inventory.customers", request_id) is None
    control.settle_repair(tmp_path, "inventory.customers", request_id, {"applied": True})
    assert control.repair_outcome(tmp_path, "inventory.customers", request_id) == {"applied": True}
    assert control.pending_repair(tmp_path, "inventory.customers") is None and control.instructions(tmp_path) == {}


def test_a_runner_is_alive_while_its_heartbeat_is_younger_than_its_expiry_and_it_has_not_ended() -> None:
    # The heartbeat, not the pid: a runner on another host is judged the same way.
    beat = {"pid": 2**22 + 12345, "host": "elsewhere", "heartbeat_at": 1000.0, "heartbeat_expiry_s": 60.0}
    assert control.runner_alive({**beat, "ended": False}, now=1059.0)
    assert not control.runner_alive({**beat, "ended": False}, now=1061.0)  # it stopped beating: dead
    assert not control.runner_alive({**beat, "ended": True}, now=1001.0)
    assert not control.runner_alive({"pid": os.getpid(), "ended": False})  # no heartbeat: an old runner's file
    assert not control.runner_alive(None)
