"""Tombstone retention: the bound it sets, the purge service and the metric."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from hudi_cdc.cli import main
from hudi_cdc.sink import tombstones as store_module
from hudi_cdc.sink.tombstones import TombstoneStore
from hudi_cdc.testing import envelope_schema, pg_event, write_events
from tests.support import CUSTOMERS, ingest_args, read_rows, run_cli

pytestmark = pytest.mark.hudi

SCHEMA = envelope_schema("customers", CUSTOMERS)


def test_retention_bounds_tombstones_and_purge_is_reported(spark, tmp_path: Path) -> None:
    source, base = tmp_path / "events", str(tmp_path / "table")
    write_events(
        source / "1.avro", SCHEMA, [pg_event("c", lsn=100, after={"id": k, "name": "a", "bio": None}) for k in (1, 2)]
    )
    args = ingest_args(str(source), base)
    assert run_cli(*args).exit_code == 0
    write_events(
        source / "2.avro", SCHEMA, [pg_event("d", lsn=300, before={"id": k, "name": None, "bio": None}) for k in (1, 2)]
    )
    result = run_cli(*args, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["tombstones_held"] == 2
    idle = run_cli(*args, "--json")
    assert json.loads(idle.output)["commit_time"] is None and json.loads(idle.output)["tombstones_held"] == 2

    status = CliRunner().invoke(
        main, ["tombstones", "--target-base-path", base, "--target-table", "t_cow", "--record-key-field", "id"]
    )
    assert status.exit_code == 0 and json.loads(status.output)["held"] == 2

    # Key 1's late update arrives within retention: dropped as stale.
    write_events(source / "3.avro", SCHEMA, [pg_event("u", lsn=200, after={"id": 1, "name": "zombie", "bio": None})])
    result = run_cli(*args, "--json")
    assert json.loads(result.output)["stale"] == 1
    assert read_rows(spark, base, ("id", "name")) == []

    # With retention 0 the next round purges both tombstones first: the documented
    # trade-off, a late event older than a purged tombstone brings its row back.
    write_events(source / "4.avro", SCHEMA, [pg_event("u", lsn=200, after={"id": 2, "name": "zombie", "bio": None})])
    result = run_cli(*args, "--json", "--tombstone-retention-hours", "0")
    stats = json.loads(result.output)
    assert (stats["tombstones_purged"], stats["tombstones_held"], stats["stale"]) == (2, 0, 0)
    assert read_rows(spark, base, ("id", "name")) == [(2, "zombie")]

    status = CliRunner().invoke(
        main,
        ["tombstones", "--target-base-path", base, "--target-table", "t_cow", "--record-key-field", "id", "--purge"],
    )
    assert json.loads(status.output) == {"tombstone_path": base + "_hudi_cdc_tombstones", "held": 0, "purged": 0}


def test_tombstones_held_follows_deletes_of_new_and_already_held_keys(spark, tmp_path: Path, monkeypatch) -> None:
    """A round's count comes from its plan (keys deleted for the first time) without reading the
    store again; it must equal what a process that knows nothing reads there."""
    source, base = tmp_path / "events", str(tmp_path / "table")
    write_events(
        source / "1.avro",
        SCHEMA,
        [pg_event("c", lsn=100, after={"id": k, "name": "a", "bio": None}) for k in (1, 2, 3, 4)],
    )
    args = ingest_args(str(source), base)
    assert run_cli(*args).exit_code == 0
    gone = {"name": None, "bio": None}
    write_events(source / "2.avro", SCHEMA, [pg_event("d", lsn=300, before={"id": k, **gone}) for k in (1, 2)])
    assert json.loads(run_cli(*args, "--json").output)["tombstones_held"] == 2
    # Key 1 comes back and goes again (held already), key 3 goes (new), key 2's late update is stale.
    write_events(
        source / "3.avro",
        SCHEMA,
        [
            pg_event("c", lsn=400, after={"id": 1, "name": "b", "bio": None}),
            pg_event("d", lsn=500, before={"id": 1, **gone}),
            pg_event("d", lsn=500, before={"id": 3, **gone}),
            pg_event("u", lsn=200, after={"id": 2, "name": "zombie", "bio": None}),
        ],
    )
    result = json.loads(run_cli(*args, "--json").output)
    assert (result["deletes"], result["stale"], result["tombstones_held"]) == (2, 1, 3)
    assert read_rows(spark, base, ("id", "name")) == [(4, "a")]

    monkeypatch.setattr(store_module, "_known", {})
    monkeypatch.setattr(store_module, "_schemas", {})
    fresh = TombstoneStore(spark, base + "_hudi_cdc_tombstones", key_fields=("id",))
    assert fresh.count() == 3
