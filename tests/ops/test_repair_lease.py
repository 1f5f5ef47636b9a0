"""verify --repair never runs beside another live writer of the table (ops.repair.refuse_beside_a_writer)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from hudi_cdc.config import IngestConfig
from hudi_cdc.errors import LeaseHeldError
from hudi_cdc.ops.repair import refuse_beside_a_writer
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
