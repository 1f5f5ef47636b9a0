"""``--on-bad-event quarantine`` and ``hudi-cdc quarantine list|reapply``, through real ingest rounds.

Bad events of every kind sit in one batch beside good ones: the good ones commit,
the bad ones land in the quarantine table with their reason, position and bytes,
the checkpoint moves, and a re-apply after the fix brings in what now applies.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from hudi_cdc.cli import main
from hudi_cdc.sink.hudi import HudiTable
from hudi_cdc.testing import envelope_schema, pg_event, write_events
from tests.support import CUSTOMERS, PLACEHOLDER, commit_instants, ingest_args, read_rows, run_cli

pytestmark = pytest.mark.hudi

SCHEMA = envelope_schema("customers", CUSTOMERS)
NULLABLE_KEY = envelope_schema(
    "customers", [("id", ["null", "long"]), ("name", ["null", "string"]), ("bio", ["null", "string"])]
)
COLUMNS = ("id", "name", "bio")
QUARANTINE = ["--on-bad-event", "quarantine"]


def _row(key: int, lsn: int) -> dict:
    return {"id": key, "name": f"n{lsn}", "bio": f"bio-{key}-{lsn}"}


def _quarantine(*args: str) -> dict:
    result = CliRunner().invoke(main, ["quarantine", *args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    parsed: dict = json.loads(result.output.strip().splitlines()[-1])
    return parsed


def _reasons(report: dict) -> dict[str, int]:
    return dict(sorted(report["by_reason"].items()))


def test_bad_events_go_aside_the_rest_commits_and_a_fix_reapplies(spark, tmp_path: Path) -> None:  # noqa: ANN001
    source, base = tmp_path / "events", str(tmp_path / "table")
    args = ingest_args(str(source), base, extra=QUARANTINE)
    write_events(source / "a.avro", SCHEMA, [pg_event("c", lsn=100 + k, after=_row(k, 100 + k)) for k in range(1, 6)])
    assert run_cli(*args).exit_code == 0

    write_events(
        source / "b.avro",
        SCHEMA,
        [
            pg_event("u", lsn=200, after=_row(1, 200)),
            pg_event("x", lsn=210, after=_row(2, 210)),  # unknown op
            pg_event("u", lsn=240, after=_row(2, 240)),  # the same key's good event still applies
            pg_event("u", lsn=None, after=_row(3, 0)),  # no position
            pg_event("u", lsn=220, after={**_row(9, 220), "bio": PLACEHOLDER}),  # TOAST, key never seen
            pg_event("u", lsn=230, after=_row(4, 230)),
        ],
    )
    write_events(
        source / "c.avro", NULLABLE_KEY, [pg_event("c", lsn=250, after={"id": None, "name": "x", "bio": None})]
    )
    checkpoint = HudiTable(spark, base).latest_checkpoint()
    done = run_cli(*args, "--json")
    assert done.exit_code == 0, done.output
    result = json.loads(done.output.strip().splitlines()[-1])
    assert (result["events"], result["upserts"], result["quarantined"]) == (3, 3, 4), result
    assert result["ops"] == {"u": 3}  # the bad events are not counted as events
    assert HudiTable(spark, base).latest_checkpoint() != checkpoint  # moved past the bad events too
    assert read_rows(spark, base, COLUMNS) == sorted(
        tuple(r[c] for c in COLUMNS) for r in [_row(1, 200), _row(2, 240), _row(3, 103), _row(4, 230), _row(5, 105)]
    )
    report = _quarantine("list", *args)
    assert report["quarantined"] == 4 and report["reapplied"] == 0
    reasons = _reasons(report)
    assert reasons.pop("unknown op 'x'") == 1
    assert reasons.pop("record key field 'id' is null") == 1
    assert [n for r, n in reasons.items() if "source.lsn is null" in r] == [1]
    assert [n for r, n in reasons.items() if "TOAST placeholder" in r] == [1]
    by_origin = {(e["op"], json.loads(e["record_key"])["id"]): e for e in report["events"]}
    toast = by_origin[("u", 9)]
    assert toast["origin"].endswith("b.avro") and toast["source_order"] and toast["raw_format"] == "avro"
    assert json.loads(toast["event"])["bio"] == PLACEHOLDER

    # A replay of the same files (a new table path for the checkpoint, the same quarantine): nothing doubles.
    again = ingest_args(
        str(source), str(tmp_path / "table2"), extra=[*QUARANTINE, "--quarantine-path", base + "_hudi_cdc_quarantine"]
    )
    assert run_cli(*again).exit_code == 0
    assert _quarantine("list", *args)["quarantined"] == 4

    # Nothing fixed yet: a re-apply keeps them all, and writes no row.
    before = read_rows(spark, base, COLUMNS)
    kept = _quarantine("reapply", *args)
    assert (kept["reapplied"], kept["still_quarantined"]) == (0, 4), kept
    assert read_rows(spark, base, COLUMNS) == before

    # The fix: key 9's full row arrives (as an incremental snapshot would send it), from before the placeholder.
    write_events(source / "d.avro", SCHEMA, [pg_event("c", lsn=215, after=_row(9, 215))])
    assert run_cli(*args).exit_code == 0
    instants = commit_instants(spark, base)
    applied = _quarantine("reapply", *args)
    assert (applied["reapplied"], applied["still_quarantined"], applied["upserts"]) == (1, 3, 1), applied
    assert len(commit_instants(spark, base)) == len(instants) + 1
    rows = {r[0]: r for r in read_rows(spark, base, COLUMNS)}
    assert rows[9] == (9, "n220", "bio-9-215")  # the update, its unchanged bio from the row it follows
    assert (
        HudiTable(spark, base).latest_checkpoint() == HudiTable(spark, base).commits()[1].extra["hudi_cdc.checkpoint"]
    )
    report = _quarantine("list", *args)
    assert (report["quarantined"], report["reapplied"]) == (3, 1)
    assert _quarantine("reapply", *args)["reapplied"] == 0  # applied once, never again


def test_a_first_batch_of_only_bad_events_creates_the_table_and_moves_on(spark, tmp_path: Path) -> None:  # noqa: ANN001
    source, base = tmp_path / "events", str(tmp_path / "table")
    args = ingest_args(str(source), base, table_type="mor", extra=QUARANTINE)
    write_events(source / "a.avro", SCHEMA, [pg_event("x", lsn=10, after=_row(1, 10))])
    done = run_cli(*args, "--json")
    assert done.exit_code == 0, done.output
    assert json.loads(done.output.strip().splitlines()[-1])["quarantined"] == 1
    assert HudiTable(spark, base).latest_checkpoint() is not None
    assert read_rows(spark, base, COLUMNS) == []
    write_events(source / "b.avro", SCHEMA, [pg_event("c", lsn=20, after=_row(2, 20))])
    assert run_cli(*args).exit_code == 0
    assert read_rows(spark, base, COLUMNS) == [(2, "n20", "bio-2-20")]
    assert _quarantine("list", *args)["quarantined"] == 1


def test_fail_is_the_default_and_names_the_way_out(spark, tmp_path: Path) -> None:  # noqa: ANN001
    source, base = tmp_path / "events", str(tmp_path / "table")
    args = ingest_args(str(source), base)
    write_events(
        source / "a.avro", SCHEMA, [pg_event("c", lsn=10, after=_row(1, 10)), pg_event("x", lsn=11, after=_row(2, 11))]
    )
    done = run_cli(*args)
    assert done.exit_code == 1
    assert "--on-bad-event quarantine" in done.output and "unknown op 'x'" in done.output
    assert not HudiTable(spark, base).has_commits()
