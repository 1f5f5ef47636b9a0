"""``hudi-cdc run`` with a JDBC source: a database's tables found by pattern, keyed by their primary keys.

One pipeline file names the database once; each table is pulled by the mode its
section asks for (a cursor by default, a full refresh for a table with no
column to follow), a table without a key fails alone while the others commit,
and a table created between two runs is picked up by the next. Every Hudi
table is compared with its Postgres table by ``verify``.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from hudi_cdc.cli import main
from hudi_cdc.ops.verify import verify
from hudi_cdc.testing.postgres import connect
from hudi_cdc.upstream.database import SourceDatabase

pytestmark = [pytest.mark.stack, pytest.mark.postgres, pytest.mark.hudi]

PG = SourceDatabase("postgresql://debezium:dbz@127.0.0.1:55432/inventory")


def _run(path: Path) -> tuple[int, dict]:
    done = CliRunner().invoke(main, ["run", "--pipeline", str(path), "--json"], catch_exceptions=False)
    assert done.output.strip().endswith("}"), done.output
    return done.exit_code, json.loads(done.output.strip().splitlines()[-1])


def test_a_database_of_tables_in_one_pipeline(spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    monkeypatch.setenv("JDBC_PIPE_PASSWORD", "dbz")
    run = f"jp_{uuid.uuid4().hex[:6]}"
    orders, lines, codes, nokey, later = (f"{run}_{n}" for n in ("orders", "lines", "codes", "nokey", "later"))
    stamp = "updated_at timestamptz not null default clock_timestamp()"
    path = tmp_path / "shop.toml"
    path.write_text(
        f"""
[source]
source = "jdbc"
jdbc_url = "jdbc:postgresql://127.0.0.1:55432/inventory"
jdbc_user = "debezium"
jdbc_password_env = "JDBC_PIPE_PASSWORD"
tables = "public.{run}_*"

[defaults]
target_base_path = "{tmp_path}/lake/{{table}}"
target_table = "{{table}}"
jdbc_mode = "timestamp"
jdbc_timestamp_column = "updated_at"

[tables."public.{codes}"]
jdbc_mode = "full"
table_type = "mor"
"""
    )
    with connect() as conn:
        try:
            conn.execute(f"create table public.{orders} (id bigserial primary key, amount numeric(10,2), {stamp})")
            conn.execute(
                f"create table public.{lines} (order_id int, line_no int, qty int, {stamp}, primary key (order_id, line_no))"
            )
            conn.execute(f"create table public.{codes} (code text primary key, label text)")
            conn.execute(f"create table public.{nokey} (v int, {stamp})")
            conn.execute(f"insert into public.{orders} (amount) select i * 1.5 from generate_series(1, 120) i")
            conn.execute(f"insert into public.{lines} select i / 3, i % 3, i from generate_series(0, 89) i")
            conn.execute(f"insert into public.{codes} select 'k' || i, 'v' || i from generate_series(1, 40) i")
            conn.execute(f"insert into public.{nokey} values (1)")

            code, report = _run(path)
            assert code == 1 and report["failed"] == [f"public.{nokey}"], report
            assert "record_key_fields is empty" in report["tables"][f"public.{nokey}"]["last_error"]
            for table in (orders, lines, codes):
                assert report["tables"][f"public.{table}"]["state"] == "done", report["tables"][f"public.{table}"]

            conn.execute(f"drop table public.{nokey}")
            conn.execute(f"update public.{orders} set amount = 0, updated_at = clock_timestamp() where id % 10 = 0")
            conn.execute(f"update public.{lines} set qty = -qty, updated_at = clock_timestamp() where line_no = 2")
            conn.execute(f"delete from public.{codes} where code in ('k1', 'k2')")
            conn.execute(f"update public.{codes} set label = 'changed' where code = 'k3'")
            conn.execute(f"create table public.{later} (id int primary key, note text, {stamp})")
            conn.execute(f"insert into public.{later} values (1, 'a'), (2, 'b')")

            code, report = _run(path)
            assert code == 0 and report["failed"] == [], report
            assert set(report["tables"]) == {f"public.{t}" for t in (orders, lines, codes, later)}
            for table, keys in ((orders, ["id"]), (lines, ["order_id", "line_no"]), (codes, ["code"]), (later, ["id"])):
                result = verify(spark, f"{tmp_path}/lake/{table}", PG, f"public.{table}", key_fields=keys)
                assert result.equal and result.source_rows > 0, (table, result.describe())
        finally:
            for table in (orders, lines, codes, nokey, later):
                conn.execute(f"drop table if exists public.{table}")
