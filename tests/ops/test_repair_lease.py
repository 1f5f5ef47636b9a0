"""verify --repair never runs beside another live writer of the table (ops.repair.refuse_beside_a_writer), and a
repair handed to a runner (ops.repair.repair_through_runner) survives a retry after its runner was killed."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from hudi_cdc.config import IngestConfig
from hudi_cdc.errors import ConfigError, LeaseHeldError
from hudi_cdc.ops.repair import refuse_beside_a_writer, repair_through_runner
from hudi_cdc.sink import lease as lease_mod
from hudi_cdc.sink.lease import LeaseOwner, TableLease, hold


def _config(base: Path, **settings: float) -> IngestConfig:
    return IngestConfig(
        target_base_path=str(base), target_table="t", source="files", source_path=str(base) + "_events",
        record_key_fields=("id",), **settings,
    )  # fmt: skip


def test_refused_beside_an_ingest_and_pointed_to_the_runner_beside_a_runner(tmp_path: Path) -> None:
    base = tmp_path / "t"
    ingest = TableLease(str(base), owner=LeaseOwner("etl-2", 4121, "other-ingest", "hudi-cdc ingest"))
    assert ingest.try_acquire() is None
    with pytest.raises(LeaseHeldError) as refused:
        refuse_beside_a_writer(None, _config(base))
    assert "host etl-2, pid 4121, `hudi-cdc ingest`" in str(refused.value)
    assert "hands the repair to it" not in str(refused.value)
    ingest.release()
    refuse_beside_a_writer(None, _config(base))  # free: the repair goes on (its writes take the lease)

    runner = TableLease(
        str(base),
        owner=LeaseOwner(
            "etl-3", 77, "a-runner", "hudi-cdc run shop", pipeline="shop", state_dir="/s", table="public.t"
        ),
    )
    assert runner.try_acquire() is None
    with pytest.raises(LeaseHeldError, match=r"--pipeline <its file> --table public.t` hands the repair to it"):
        refuse_beside_a_writer(None, _config(base))
    runner.release()


def test_its_own_lease_does_not_refuse_it_and_a_holder_that_lets_go_is_waited_for(tmp_path: Path) -> None:
    base = tmp_path / "t"
    with hold(str(base), expiry_s=5):  # the runner's repair round: this process holds the table
        refuse_beside_a_writer(None, _config(base))
    other = TableLease(str(base), owner=LeaseOwner("etl-2", 4121, "other", "hudi-cdc ingest"), expiry_s=0.6)
    assert other.try_acquire() is None
    lease_mod._Heartbeat.get().discard(other)  # it dies elsewhere: its lease expires 0.6 s after its heartbeat
    started = time.monotonic()
    refuse_beside_a_writer(None, _config(base, lease_wait_seconds=10))
    assert 0.3 < time.monotonic() - started < 5


def _runner_holding(tmp_path: Path, table: str) -> tuple[Path, Path, TableLease]:
    """A pipeline, and a live continuous runner (as its lease and status.json show it) holding ``table``."""
    from hudi_cdc.service import control
    from tests.support import files_pipeline

    pipeline, state = files_pipeline(tmp_path, folders=[f"acc.{table}"]), tmp_path / "acc.state"
    owner = LeaseOwner("here", os.getpid(), "runner-1", "hudi-cdc run acc", pipeline="acc", state_dir=str(state),
                       table=table)  # fmt: skip
    lease = TableLease(str(tmp_path / "lake" / table.split(".")[1]), owner=owner)
    assert lease.try_acquire() is None
    control.write_status(state, {"continuous": True, "tables": {table: {"state": "waiting"}}})
    return pipeline, state, lease


def test_a_retry_after_its_runner_was_killed_mid_repair_waits_for_the_request_left_there(tmp_path: Path) -> None:
    from hudi_cdc.service import control

    table = "public.customers"
    pipeline, state, lease = _runner_holding(tmp_path, table)
    request = {"source_url": "postgresql://debezium@127.0.0.1:55432/inventory", "password_env": "PW",
               "password_file": None, "source_table": table, "apply": True, "max_repair": None, "key_fields": (),
               "recheck": True, "recheck_timeout_s": 600.0, "slot": None}  # fmt: skip
    try:
        # The first try's runner was killed while it ran the repair (that try exited 75): its request is left.
        first = control.request_repair(state, table, request)
        outcome: dict[str, object] = {}
        retry = threading.Thread(
            target=lambda: outcome.update(repair_through_runner(str(pipeline), f"acc.{table}", request, poll_s=0.05))
        )
        retry.start()
        time.sleep(0.5)
        assert retry.is_alive() and control.pending_repair(state, table)["id"] == first  # type: ignore[index]
        control.settle_repair(state, table, first, {"applied": True, "described": "repaired 2 keys"})
        retry.join(10)
        assert outcome == {"applied": True, "described": "repaired 2 keys"}
        # Another repair than the one pending there is refused, naming the request.
        control.request_repair(state, table, {**request, "apply": False})
        with pytest.raises(ConfigError, match="a repair is already requested"):
            repair_through_runner(str(pipeline), f"acc.{table}", request, poll_s=0.05)
    finally:
        lease.release()
