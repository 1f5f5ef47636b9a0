"""Runners sharing a pipeline (issue 55): a pause, remove or repair reaches the table, not only the runner it was
given through. Runner objects without Spark (a local lake needs no JVM for its leases and flags); the other
runner is a lease of another owner, killed by stopping its heartbeat, as in tests/ops/test_repair_lease.py."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from hudi_cdc import service
from hudi_cdc.service import control
from hudi_cdc.service.runner import Runner
from hudi_cdc.service.spec import PipelineSpec, TableRef, load_pipeline
from hudi_cdc.service.states import PAUSED, REMOVED, WAITING
from hudi_cdc.sink import lease as lease_mod
from hudi_cdc.sink.lease import LeaseOwner, TableLease, lease_holder

TABLE = "acc.customers"


def _spec(tmp_path: Path, runner: str) -> PipelineSpec:
    """Runner ``runner``'s copy of the pipeline: the same source and lake, a state folder of its own."""
    (tmp_path / "landing" / TABLE).mkdir(parents=True, exist_ok=True)
    path = tmp_path / f"acc-{runner}.toml"
    path.write_text(
        f"""
name = "acc"

[source]
source = "files"
source_path = "{tmp_path / "landing"}"
tables = "acc.*"

[defaults]
target_base_path = "{tmp_path / "lake"}/{{table}}"
target_table = "{{table}}"
record_key_fields = "id"
lease_expiry_seconds = 0.6

[run]
state_dir = "{tmp_path / (runner + ".state")}"
"""
    )
    return load_pipeline(path)


def _runner(spec: PipelineSpec, **options: Any) -> Runner:  # noqa: ANN401
    runner = Runner(spec, None, continuous=True, **options)  # type: ignore[arg-type] # no Spark: a local lake
    runner.tables[TABLE] = runner._new_table(TableRef(TABLE))
    return runner


def _other_runner(spec: PipelineSpec) -> TableLease:
    """Runner ``a`` of another process, holding the table."""
    owner = LeaseOwner("etl-1", 4242, "runner-a", "hudi-cdc run acc", pipeline="acc",
                       state_dir=spec.run.state_dir, table=TABLE)  # fmt: skip
    held = TableLease(str(spec.table_config(TableRef(TABLE)).target_base_path), owner=owner, expiry_s=0.6)
    assert held.try_acquire() is None
    return held


def _kill(held: TableLease) -> None:
    lease_mod._Heartbeat.get().discard(held)  # it stops renewing: its lease expires 0.6 s after its heartbeat
    time.sleep(0.8)


def _pass(runner: Runner) -> list[str]:
    """One scheduling pass of ``runner``: the tables it would start a round of now."""
    runner._apply_control()
    return [t.name for t in runner._due(runner.clock(), 2)]


def test_a_pause_given_through_the_killed_holders_folder_holds_for_the_runner_that_takes_the_table(
    tmp_path: Path,
) -> None:
    spec_a, spec_b = _spec(tmp_path, "a"), _spec(tmp_path, "b")
    a = _other_runner(spec_a)
    b = _runner(spec_b)
    try:
        base = str(tmp_path / "lake" / "customers")
        service.pause(spec_a, TABLE)  # through runner a's state folder, a holding the table
        assert control.instructions(spec_b.run.state_dir) == {}  # b's own folder knows nothing of it
        assert _pass(b) == []  # a holds it
        _kill(a)
        assert _pass(b) == []  # b takes the table over, and reads its pause before any round of it
        holder = lease_holder(base)
        assert holder is not None and holder.live() and holder.owner.id == lease_mod.process_owner_id()
        assert b.tables[TABLE].state == PAUSED
        assert _pass(b) == [] and b.tables[TABLE].state == PAUSED  # still, pass after pass
        assert service.pause(spec_a, TABLE) == base  # where it was written (the CLI prints it)

        service.resume(spec_b, TABLE)  # through b's folder this time: clears the table's folder too
        assert _pass(b) == [TABLE] and b.tables[TABLE].state == WAITING  # at once: no wait for b's discovery
    finally:
        b._release_leases()


def test_a_remove_reaches_the_holder_at_its_next_discovery_and_a_resume_elsewhere_ends_a_stale_pause(
    tmp_path: Path,
) -> None:
    spec_a, spec_b = _spec(tmp_path, "a"), _spec(tmp_path, "b")
    b = _runner(spec_b)
    a = _runner(spec_a)  # a runner that does not hold the table
    try:
        assert _pass(b) == [TABLE]  # b holds it and runs it
        service.remove(spec_a, TABLE)  # given through a's folder
        assert _pass(a) == [] and a.tables[TABLE].state == REMOVED
        b._read_table_flags()  # b's next discovery
        assert _pass(b) == [] and b.tables[TABLE].state == REMOVED
        b._release_leases()  # b stops; a runner taking the table later finds it removed too
        c = _runner(_spec(tmp_path, "c"))
        assert _pass(c) == [] and c.tables[TABLE].state == REMOVED
        c._release_leases()

        time.sleep(0.01)
        service.resume(spec_b, TABLE)  # through b's folder: a's own "removed" is older than this resume
        a._read_table_flags()  # a's next discovery
        assert _pass(a) == [TABLE] and a.tables[TABLE].state == WAITING
        assert control.instructions(spec_a.run.state_dir).get(TABLE, set()) <= {control.RETRY}
    finally:
        a._release_leases()
        b._release_leases()


def test_a_pause_and_resume_in_a_state_folder_alone_stay_that_runners_own(tmp_path: Path) -> None:
    # A file made by hand (or control.pause without the table's folder) is the runner's own, as before: it is
    # not carried to the table, so its resume (the file deleted, or control.resume alone) ends it at once.
    spec_a, spec_b = _spec(tmp_path, "a"), _spec(tmp_path, "b")
    a = _runner(spec_a)
    try:
        assert _pass(a) == [TABLE]
        control.pause(spec_a.run.state_dir, TABLE)
        a._read_table_flags()  # a's next discovery
        assert _pass(a) == [] and a.tables[TABLE].state == PAUSED
        assert control.table_flags(str(tmp_path / "lake" / "customers")).flags == set()
        control.resume(spec_a.run.state_dir, TABLE)
        assert _pass(a) == [TABLE] and a.tables[TABLE].state == WAITING
        a._release_leases()
        b = _runner(spec_b)
        assert _pass(b) == [TABLE]
        b._release_leases()
    finally:
        a._release_leases()


def test_a_resume_given_through_another_runners_folder_retries_the_table_where_it_failed(tmp_path: Path) -> None:
    from hudi_cdc.errors import TerminalError

    spec_a, spec_b = _spec(tmp_path, "a"), _spec(tmp_path, "b")
    b = _runner(spec_b)
    try:
        assert _pass(b) == [TABLE]  # b holds the table
        b._failed(b.tables[TABLE], TerminalError("an incompatible schema change"), b.clock())
        assert _pass(b) == [] and b.tables[TABLE].state == "failed"
        service.resume(spec_a, TABLE)  # through a's folder: b's own has no retry file
        b._read_table_flags()  # b's next discovery
        assert _pass(b) == [TABLE] and b.tables[TABLE].state == WAITING
    finally:
        b._release_leases()


def test_a_repair_left_by_a_killed_runner_is_settled_as_done_by_the_runner_that_did_it(tmp_path: Path) -> None:
    spec_a, spec_b = _spec(tmp_path, "a"), _spec(tmp_path, "b")
    request = {"source_url": "postgresql://debezium@db/inventory", "source_table": TABLE, "apply": True}
    calls: list[str] = []

    def repairer(spark, config, request, catch_up):  # noqa: ANN001, ANN202
        calls.append(request["id"])
        return {"applied": True, "described": "repaired 2 keys", "commits": ["20261128000000000"]}

    left = control.request_repair(spec_a.run.state_dir, TABLE, request)  # a was killed while it ran it
    time.sleep(0.01)
    again = control.request_repair(spec_b.run.state_dir, TABLE, request)  # the shell's retry, to b
    b = _runner(spec_b, repairer=repairer)
    b._repair_round(b.tables[TABLE], control.pending_repair(spec_b.run.state_dir, TABLE))  # type: ignore[arg-type]
    assert calls == [again]

    a = _runner(spec_a, repairer=repairer)  # a, restarted, holds the table again
    result = a._repair_round(a.tables[TABLE], control.pending_repair(spec_a.run.state_dir, TABLE))  # type: ignore[arg-type]
    assert calls == [again]  # not run again
    assert result.commit_time is None  # b's commit is not counted as a's
    outcome = control.repair_outcome(spec_a.run.state_dir, TABLE, left)
    assert outcome is not None and outcome["already_done_in"] == again and outcome["applied"] is True
    assert f"pid {os.getpid()}" in outcome["already_done_by"] and "state folder" in outcome["already_done_by"]
    assert control.pending_repair(spec_a.run.state_dir, TABLE) is None

    later = control.request_repair(spec_a.run.state_dir, TABLE, request)  # asked for again since: it runs
    a._repair_round(a.tables[TABLE], control.pending_repair(spec_a.run.state_dir, TABLE))  # type: ignore[arg-type]
    assert calls == [again, later]


def test_pause_names_what_is_missing_when_the_tables_folder_cannot_be_known(tmp_path: Path) -> None:
    from hudi_cdc.errors import ConfigError

    spec = _spec(tmp_path, "a")
    text = Path(spec.origin).read_text().replace("/{table}", "/{server}_{table}")
    Path(spec.origin).write_text(text)
    with pytest.raises(ConfigError, match=r"its Hudi table's folder is not known .* names the source's \{server\}"):
        service.pause(load_pipeline(spec.origin), TABLE)
    assert control.instructions(spec.run.state_dir) == {}  # nothing written
    control.write_status(spec.run.state_dir, {"tables": {TABLE: {"target": str(tmp_path / "lake" / "x_t")}}})
    assert service.pause(load_pipeline(spec.origin), TABLE) == str(tmp_path / "lake" / "x_t")  # as the runner saw it
    assert control.table_flags(str(tmp_path / "lake" / "x_t")).flags == {control.PAUSED}


def test_a_repair_asked_for_goes_before_the_other_tables_rounds(tmp_path: Path) -> None:
    """A repair has someone waiting for its outcome: with one slot free, its table starts before tables whose
    changes have waited longer (here: named first, and due as long)."""
    spec = _spec(tmp_path, "a")
    for name in ("acc.accounts", "acc.balances"):
        (tmp_path / "landing" / name).mkdir(parents=True)
    runner = _runner(spec, repairer=lambda *args: {})
    try:
        for name in ("acc.accounts", "acc.balances"):
            runner.tables[name] = runner._new_table(TableRef(name))
        runner._apply_control()
        assert [t.name for t in runner._due(runner.clock(), 1)] == ["acc.accounts"]  # the name breaks the tie
        control.request_repair(spec.run.state_dir, TABLE, {"source_table": "public.customers"})
        runner._apply_control()
        assert runner.tables[TABLE].repair is not None
        assert [t.name for t in runner._due(runner.clock(), 1)] == [TABLE]
    finally:
        runner._release_leases()
