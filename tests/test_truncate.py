"""TRUNCATE events (op ``t``) under each ``--truncate-behavior``, through real ingest rounds into COW and MOR.

``apply``: every row older than the truncate goes, events after it in the same
batch survive, and a late event from before it (a replay) never brings a row
back; ``ignore``: the table keeps its rows; ``fail`` (the default): the round
fails naming the setting and nothing is committed.
"""

from __future__ import annotations

import pytest

from hudi_cdc.testing import envelope_schema, pg_event, write_events
from tests.support import CUSTOMERS, PLACEHOLDER, apply_events, commit_instants, ingest_args, read_rows, run_cli

pytestmark = pytest.mark.hudi

SCHEMA = envelope_schema("customers", CUSTOMERS)
COLUMNS = ("id", "name", "bio")


def _row(key: int, lsn: int, bio: str | None = None) -> dict:
    return {"id": key, "name": f"n{lsn}", "bio": bio or f"bio-{key}-{lsn}"}


def _before() -> list[dict]:
    return [pg_event("c", lsn=100 + k, after=_row(k, 100 + k)) for k in range(10)]


def _with_truncate() -> list[dict]:
    return [
        pg_event("u", lsn=200, after=_row(2, 200)),
        pg_event("d", lsn=210, before={"id": 4, "name": None, "bio": None}),
        pg_event("t", lsn=300),  # everything above goes
        pg_event("c", lsn=400, after=_row(3, 400)),  # re-inserted after the truncate
        pg_event("c", lsn=410, after=_row(11, 410)),
        pg_event("u", lsn=420, after={**_row(11, 420), "bio": PLACEHOLDER}),  # TOAST: from the insert at 410
        pg_event("c", lsn=430, after=_row(12, 430)),
        pg_event("d", lsn=440, before={"id": 12, "name": None, "bio": None}),
    ]


def _state(rows: dict[int, dict]) -> list[tuple]:
    return sorted(tuple(r[c] for c in COLUMNS) for r in rows.values())


@pytest.mark.parametrize("table_type", ["cow", "mor"])
def test_apply_deletes_what_came_before_and_keeps_what_came_after(spark, tmp_path, table_type: str) -> None:  # noqa: ANN001
    source, base = tmp_path / "events", str(tmp_path / "table")
    args = ingest_args(str(source), base, table_type=table_type, extra=["--truncate-behavior", "apply"])
    write_events(source / "a.avro", SCHEMA, _before())
    assert run_cli(*args).exit_code == 0
    write_events(source / "b.avro", SCHEMA, list(reversed(_with_truncate())))  # order comes from the LSN
    done = run_cli(*args, "--json")
    assert done.exit_code == 0, done.output
    after = {3: _row(3, 400), 11: {**_row(11, 420), "bio": _row(11, 410)["bio"]}}
    assert read_rows(spark, base, COLUMNS) == _state(after)

    # A replay of events from before the truncate (and one after it) in a later round: no row comes back.
    late = [pg_event("u", lsn=250, after=_row(5, 250)), pg_event("c", lsn=120, after=_row(1, 120))]
    write_events(source / "c.avro", SCHEMA, [*late, pg_event("c", lsn=500, after=_row(13, 500))])
    done = run_cli(*args, "--json")
    assert done.exit_code == 0, done.output
    assert read_rows(spark, base, COLUMNS) == _state({**after, 13: _row(13, 500)})


def test_apply_in_the_first_round_and_a_truncate_alone(spark, tmp_path) -> None:  # noqa: ANN001
    source, base = tmp_path / "events", str(tmp_path / "table")
    args = ingest_args(str(source), base, extra=["--truncate-behavior", "apply"])
    write_events(source / "a.avro", SCHEMA, _before() + _with_truncate())  # no table yet: nothing stored to delete
    assert run_cli(*args).exit_code == 0
    assert [r[0] for r in read_rows(spark, base, COLUMNS)] == [3, 11]
    write_events(source / "b.avro", SCHEMA, [pg_event("t", lsn=600)])  # a batch of only a truncate
    assert run_cli(*args).exit_code == 0
    assert read_rows(spark, base, COLUMNS) == []
    write_events(source / "c.avro", SCHEMA, [pg_event("u", lsn=590, after=_row(3, 590))])  # late, before it
    assert run_cli(*args).exit_code == 0
    assert read_rows(spark, base, COLUMNS) == []


def test_ignore_keeps_the_rows_and_fail_names_the_setting(spark, tmp_path) -> None:  # noqa: ANN001
    source, base = tmp_path / "events", str(tmp_path / "table")
    write_events(source / "a.avro", SCHEMA, _before())
    write_events(source / "b.avro", SCHEMA, _with_truncate())
    fail = ingest_args(str(source), base)
    done = run_cli(*fail)
    assert done.exit_code == 1 and "truncate_behavior = fail" in done.output and "b.avro" in done.output
    assert commit_instants(spark, base) == []
    assert run_cli(*ingest_args(str(source), base, extra=["--truncate-behavior", "ignore"])).exit_code == 0
    expected = apply_events([e for e in _before() + _with_truncate() if e["op"] != "t"])
    assert read_rows(spark, base, COLUMNS) == _state(expected)
