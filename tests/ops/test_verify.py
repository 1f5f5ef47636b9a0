"""``hudi-cdc verify`` against the real stack: a table of every compared type, replicated through Debezium.

The table lives in the stack's ``inventory`` schema (so the connector publishes
it) under a name of its own, so no other test's workload moves it. It is
replicated by ``hudi-cdc ingest`` into COW and MOR tables, which verify must
find equal; then each Hudi table is corrupted in the six ways the issue names
and verify must name every one, and nothing else.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from click.testing import CliRunner

from hudi_cdc.cli import main
from hudi_cdc.ops.verify import Difference, verify
from hudi_cdc.testing.kafka import end_offsets
from hudi_cdc.testing.postgres import connect, wait_for_stream
from hudi_cdc.upstream.database import SourceDatabase
from payloads.base import ORDER_COLUMN, is_data_column
from tests.stack.conftest import BOOTSTRAP, REGISTRY
from tests.support import PLACEHOLDER, run_cli, tamper

pytestmark = [pytest.mark.stack, pytest.mark.kafka, pytest.mark.postgres, pytest.mark.hudi]

TABLE = f"verify_{uuid.uuid4().hex[:8]}"
TOPIC = f"dbserver1.inventory.{TABLE}"
DATABASE = SourceDatabase("postgresql://debezium@127.0.0.1:55432/inventory", password_env="VERIFY_TEST_PASSWORD")
KEYS = ("id", "part")
DELETED_IN_SOURCE: list[tuple] = []

DDL = f"""
create table inventory.{TABLE} (
  id integer not null, part varchar(8) not null,
  small smallint, big bigint, amount numeric(12,2), tiny numeric(20,9), free numeric, huge numeric(45,5),
  ratio real, weight double precision, flag boolean, name text, code char(5), uid uuid, doc jsonb, raw json,
  born date, seen timestamp, at timestamptz, clock time, data bytea, tags text[], nums int[], span interval,
  body text,
  primary key (id, part));
alter table inventory.{TABLE} alter column body set storage external;
"""
# Deterministic values of every kind, NULLs included; body is stored out of line (TOAST) when long.
FILL = f"""
select setseed(0.42);
insert into inventory.{TABLE}
select i, 'p' || (i % 3),
  case when i % 7 = 0 then null else (i % 30000)::smallint end, i::bigint * 1000003 - 50000000,
  round((random() * 20000 - 10000)::numeric, 2), case when i % 5 = 0 then 0.0000001 else round(random()::numeric, 9) end,
  case when i % 4 = 0 then null else round((random() * 1000)::numeric, (i % 6)) end,
  (random() * 1e30)::numeric(45,5),
  case when i % 11 = 0 then null else (random() * 100)::real end,
  case when i % 9 = 0 then -0.0 when i % 13 = 0 then null else random() * 1e6 - 5e5 end, i % 2 = 0,
  'name ' || i || ' ü€', 'c' || (i % 10), md5(i::text)::uuid,
  jsonb_build_object('i', i, 'nested', jsonb_build_array(1, 'two', null)), ('{{"b": ' || i || ', "a": [1, 2]}}')::json,
  date '2020-01-01' + i, timestamp '2024-02-29 12:34:56.123456' + i * interval '1 hour 1 microsecond',
  timestamptz '2024-06-01 00:00:00.5+02' + i * interval '37 minutes',
  time '00:00:00' + i * interval '17 seconds 3 microseconds', decode(md5(i::text), 'hex'),
  case when i % 6 = 0 then null else array['a' || i, null, 'x,y"z'] end, array[i, -i, null]::int[],
  i * interval '1 day 3 hours',
  case when i % 3 = 0 then repeat(md5(i::text), 200) else 'short ' || i end
from generate_series(1, 1500) i;
"""
CHANGES = f"""
update inventory.{TABLE} set amount = amount + 1, tags = array['changed'] where id % 10 = 0;  -- body left alone: placeholder
update inventory.{TABLE} set body = 'rewritten ' || id where id % 30 = 3;
delete from inventory.{TABLE} where id % 25 = 0;
update inventory.{TABLE} set part = 'moved' where id % 40 = 1;  -- a primary-key change
"""


@pytest.fixture(scope="module")
def tables(spark, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:  # noqa: ANN001
    base = tmp_path_factory.mktemp("verify")
    paths = {t: str(base / f"{TABLE}_{t}") for t in ("cow", "mor")}
    with connect() as conn:
        conn.execute(DDL)
        try:
            for sql in (FILL, CHANGES):
                before = (
                    end_offsets(BOOTSTRAP, [TOPIC]) if sql is CHANGES else {(TOPIC, 0): 0}
                )  # new topic: wait for it
                conn.execute(sql)
                wait_for_stream(conn, BOOTSTRAP, [TOPIC], since=before)
                for table_type, path in paths.items():
                    result = run_cli(
                        "--source", "kafka", "--topic", TOPIC, "--bootstrap-servers", BOOTSTRAP,
                        "--schema-registry-url", REGISTRY, "--target-base-path", path,
                        "--target-table", f"{TABLE}_{table_type}", "--table-type", table_type,
                    )  # fmt: skip
                    assert result.exit_code == 0, result.output
            yield paths
        finally:
            conn.execute(f"drop table if exists inventory.{TABLE}")


@pytest.fixture(autouse=True)
def _password(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VERIFY_TEST_PASSWORD", "dbz")


def _count(where: str = "true") -> int:
    with connect() as conn:
        return conn.execute(f"select count(*) from inventory.{TABLE} where {where}").fetchone()[0]  # noqa: S608


@pytest.mark.parametrize("table_type", ["cow", "mor"])
def test_a_replicated_table_is_equal(spark, tables: dict[str, str], table_type: str) -> None:  # noqa: ANN001
    result = verify(spark, tables[table_type], DATABASE, f"inventory.{TABLE}")
    assert result.equal, result.describe()
    assert result.source_rows == result.target_rows == _count() > 1000
    assert result.key_fields == KEYS
    # Every column is compared exactly except interval, whose Debezium form (30.4375-day months) has no exact twin.
    assert set(result.skipped_columns) == {"span"}
    assert len(result.compared_columns) == 24
    assert result.differences == [] and result.exit_code == 0


def _corrupt(spark: Any, path: str, table_type: str) -> dict[str, tuple[str, ...]]:  # noqa: ANN401
    """Six faults, written straight into the Hudi table; returns the expected kind per key."""
    frame = spark.read.format("hudi").load(path)
    data = [c for c in frame.columns if is_data_column(c)]
    rows = {(r["id"], r["part"]): r.asDict() for r in frame.select(*data).where("id between 100 and 160").collect()}
    pick = sorted(k for k, r in rows.items() if r["body"] and len(r["body"]) > 1000)
    changed, toasted, missing, duplicated = sorted(rows)[0], pick[0], sorted(rows)[1], sorted(rows)[2]
    top = "9" * 40  # above every stored _source_order (a string): the upserts win
    upserts = [
        {**rows[changed], "amount": rows[changed]["amount"] + 7, ORDER_COLUMN: top},
        {**rows[toasted], "body": PLACEHOLDER, ORDER_COLUMN: top},
        {**rows[changed], "id": 999_999, "part": "ghost", ORDER_COLUMN: top},  # a row the source never had
    ]
    tamper(spark, path, table_name=f"{TABLE}_{table_type}", table_type=table_type, keys=KEYS, upserts=upserts,
           deletes=[rows[missing]], duplicates=[rows[duplicated]])  # fmt: skip
    with connect() as conn:  # a row the source deleted and the table still has (both tables: never ingested)
        deleted = conn.execute(
            f"select id, part from inventory.{TABLE} where id between 161 and 200 order by id limit 1"  # noqa: S608
        ).fetchone()
        conn.execute(f"delete from inventory.{TABLE} where id = %s and part = %s", deleted)  # noqa: S608
    DELETED_IN_SOURCE.append(tuple(deleted))
    return {
        **{key: ("extra", (), None) for key in DELETED_IN_SOURCE},
        changed: ("changed", ("amount",), None),
        toasted: ("changed", ("body",), "TOAST placeholder in body"),
        (999_999, "ghost"): ("extra", (), None),
        missing: ("missing", (), None),
        duplicated: ("duplicate", (), "2 rows in Hudi"),
    }


def _found(differences: list[Difference]) -> dict[tuple, tuple]:
    return {(int(d.key["id"]), d.key["part"]): (d.kind, d.columns, d.note) for d in differences}


@pytest.mark.parametrize("table_type", ["cow", "mor"])
def test_every_corruption_is_named(spark, tables: dict[str, str], table_type: str) -> None:  # noqa: ANN001
    path = tables[table_type]
    expected = _corrupt(spark, path, table_type)
    result = verify(spark, path, DATABASE, f"inventory.{TABLE}")
    assert not result.equal and result.exit_code == 1
    assert _found(result.differences) == expected, result.describe()
    # +1 extra, +1 duplicate, -1 missing, +1 per row deleted in the source since the ingest
    assert result.target_rows == result.source_rows + 1 + len(DELETED_IN_SOURCE)
    # Narrowing (buckets split until few enough rows to fetch) finds the same, fetching a handful of rows at a time.
    narrow = verify(spark, path, DATABASE, f"inventory.{TABLE}", fetch_limit=3)
    assert _found(narrow.differences) == expected
    # A partial check: only the keys and the amount column, only rows with id < 150 ... sees only what is in it.
    partial = verify(spark, path, DATABASE, f"inventory.{TABLE}", columns=["amount"], where="id < 150")
    assert set(partial.compared_columns) == {"id", "part", "amount"}
    assert {k for k in _found(partial.differences) if k[0] < 150} == set(_found(partial.differences))
    assert all(kind != "changed" or cols == ("amount",) for kind, cols, _ in _found(partial.differences).values())
    # --max-diffs bounds what is listed and says so.
    bounded = verify(spark, path, DATABASE, f"inventory.{TABLE}", max_diffs=2)
    assert len(bounded.differences) == 2 and bounded.truncated
    # The recheck: a difference that is only lag disappears once the ingest catches up.
    rechecked = verify(spark, path, DATABASE, f"inventory.{TABLE}", recheck=lambda conn, position: "nothing")
    assert rechecked.passes == 2 and _found(rechecked.differences) == expected


def test_cli_exit_codes_and_json(spark, tables: dict[str, str]) -> None:  # noqa: ANN001
    args = ["verify", "--target-base-path", tables["cow"], "--source-url", DATABASE.url,
            "--password-env", "VERIFY_TEST_PASSWORD", "--table", f"inventory.{TABLE}", "--no-recheck"]  # fmt: skip
    result = CliRunner().invoke(main, [*args, "--json"], catch_exceptions=False)
    report = json.loads(result.output)
    assert result.exit_code == (0 if report["equal"] else 1)
    assert report["source_rows"] == _count()
    missing = CliRunner().invoke(main, [*args[:-3], "--table", "inventory.no_such_table"], catch_exceptions=False)
    assert missing.exit_code == 2 and "inventory.no_such_table does not exist" in missing.output
    wrong_url = "postgresql://debezium:hunter2@127.0.0.1:55432/inventory"  # a password in the URL, and wrong
    wrong = CliRunner().invoke(main, [*args[:3], "--source-url", wrong_url, *args[7:]])
    assert wrong.exit_code == 2 and "password authentication failed" in wrong.output
    assert "hunter2" not in wrong.output
