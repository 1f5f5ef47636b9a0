"""The control files: a repair request's life (asked, pending, settled, its outcome), and whether a runner lives;
the table's own folder, where a pause, remove, resume or repair reaches every runner sharing the pipeline."""

from __future__ import annotations

import os
import time
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


# --- the table's own folder: pause, remove and resume reach every runner sharing the pipeline --------------------


def test_pause_remove_resume_write_beside_the_table_as_well_as_in_the_state_folder(tmp_path: Path) -> None:
    state_a, state_b, base = tmp_path / "a.state", tmp_path / "b.state", str(tmp_path / "lake" / "customers")
    table = "inventory.customers"
    control.pause(state_a, table, base_path=base)
    assert control.instructions(state_a) == {table: {control.PAUSED}}
    found = control.table_flags(base)
    assert found.flags == {control.PAUSED} and found.resumed_at is None
    assert found.paused is not None and found.paused["state_dir"] == str(state_a) and found.paused["table"] == table
    assert f"pid {os.getpid()}" in found.describe(control.PAUSED)
    assert sorted(os.listdir(Path(base) / ".hudi_cdc" / "control")) == ["paused.json"]

    control.remove(state_a, table, base_path=base)
    assert control.table_flags(base).flags == {control.PAUSED, control.REMOVED}

    # resumed through another runner's state folder: the table's folder is cleared and says when
    control.resume(state_b, table, base_path=base)
    found = control.table_flags(base)
    assert found.flags == set() and found.resumed_at is not None
    assert control.instructions(state_b) == {table: {control.RETRY}}
    # runner a's own flags are now stale (older than the resume): its runner drops them
    assert control.stale_flags(state_a, table, {control.PAUSED, control.REMOVED, control.RETRY}, found) == {
        control.PAUSED,
        control.REMOVED,
    }
    control.resume(state_b, "inventory.custmers", base_path=str(tmp_path / "lake" / "custmers"))
    assert not (tmp_path / "lake" / "custmers").exists()  # a misspelt name makes no folder in the lake
    control.pause(state_a, table)  # a pause after the resume (a file made by hand, say) is not stale
    os.utime(control._marker(state_a, table, control.PAUSED), (found.resumed_at + 1, found.resumed_at + 1))
    assert control.stale_flags(state_a, table, {control.PAUSED}, found) == set()


def test_a_table_folder_that_cannot_be_written_leaves_the_state_folder_untouched(tmp_path: Path) -> None:
    from hudi_cdc.errors import SinkError

    base = tmp_path / "lake" / "customers"
    base.mkdir(parents=True)
    (base / ".hudi_cdc").write_text("a file where the folder should be")
    with pytest.raises(SinkError, match=r"customers/\.hudi_cdc/control: the table's control flags cannot be written"):
        control.pause(tmp_path / "a.state", "inventory.customers", base_path=str(base))
    assert control.instructions(tmp_path / "a.state") == {}
    with pytest.raises(ConfigError, match=r"s3a:// is reached through Spark's JVM, and no Spark session was given"):
        control.pause(tmp_path / "a.state", "inventory.customers", base_path="s3a://lake/customers")


def test_a_repair_left_in_a_killed_runners_folder_is_settled_by_the_same_repair_done_since(tmp_path: Path) -> None:
    base, table = str(tmp_path / "lake" / "customers"), "inventory.customers"
    request = {"source_url": "postgresql://debezium@db/inventory", "source_table": table, "apply": True}
    left = control.request_repair(tmp_path / "a.state", table, request)  # runner a killed under it
    left_at = control.repair_requested_at(tmp_path / "a.state", table)
    assert left_at is not None
    assert control.repair_done_elsewhere(base, {**request, "id": left}, left_at) is None  # nothing done yet
    time.sleep(0.01)
    again = control.request_repair(tmp_path / "b.state", table, request)  # the retry, to runner b
    outcome = {"applied": True, "described": "repaired 2 keys", "verify": {"equal": False}}
    control.record_repair(base, {**request, "id": again}, outcome, started_at=time.time(), by="runner b")

    done = control.repair_done_elsewhere(base, {**request, "id": left}, left_at)
    assert done is not None and done["already_done_by"] == "runner b" and done["already_done_in"] == again
    assert done["applied"] is True and done["verify"] == {"equal": False}  # what verify prints and exits by
    assert done["described"].startswith("already done by runner b, started ")
    assert done["described"].endswith("not run again; its outcome: repaired 2 keys")
    # another repair (a dry run), or one asked for after that repair started, still runs
    assert control.repair_done_elsewhere(base, {**request, "apply": False, "id": left}, left_at) is None
    assert control.repair_done_elsewhere(base, {**request, "id": "later"}, time.time() + 1) is None
