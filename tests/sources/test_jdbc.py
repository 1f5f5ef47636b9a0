"""The JDBC source against the stack's real PostgreSQL and MariaDB, through ``hudi-cdc ingest --source jdbc``.

Each table is compared with its source by ``hudi-cdc verify``; the cursor is
read back from the Hudi commit. Covers the losses of Hudi's JDBC RFC (seed
003): a backlog larger than a round (paged, bounded), a late commit below the
cursor (missed without the look-back, read with it), rows whose cursor is NULL
(refused, not skipped), and a password that is never printed.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pytest

from hudi_cdc.ops.verify import verify
from hudi_cdc.sink.hudi import HudiTable
from hudi_cdc.testing import mariadb
from hudi_cdc.testing.postgres import connect
from hudi_cdc.upstream.database import SourceDatabase
from tests.support import run_cli

pytestmark = [pytest.mark.stack, pytest.mark.postgres, pytest.mark.hudi]

PG_URL = "jdbc:postgresql://127.0.0.1:55432/inventory"
PG = SourceDatabase("postgresql://debezium:dbz@127.0.0.1:55432/inventory")
MARIA_URL = "jdbc:mariadb://127.0.0.1:53306/inventory"
MARIA = SourceDatabase(mariadb.STACK_URL.replace("debezium@", "debezium:dbz@"))


@pytest.fixture(autouse=True)
def _password(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JDBC_TEST_PASSWORD", "dbz")


def _ingest(url: str, table: str, base: Path, *extra: str) -> object:
    return run_cli(
        "--source", "jdbc", "--jdbc-url", url, "--jdbc-table", table, "--jdbc-user", "debezium",
        "--jdbc-password-env", "JDBC_TEST_PASSWORD", "--jdbc-timestamp-column", "updated_at",
        "--jdbc-incrementing-column", "id", "--record-key-fields", "id", "--target-base-path", str(base),
        "--target-table", base.name, *extra,
    )  # fmt: skip


def _checkpoint(spark, base: Path) -> dict:  # noqa: ANN001
    text = HudiTable(spark, str(base)).latest_checkpoint()
    assert text is not None
    return json.loads(text)


@pytest.fixture
def pg_table():  # noqa: ANN201
    name = f"jdbc_{uuid.uuid4().hex[:8]}"
    with connect() as conn:
        # Outside the Debezium publication's schema: this table is only ever read through JDBC.
        conn.execute(
            f"create table public.{name} (id bigserial primary key, name text, amount numeric(12,2),"
            " updated_at timestamptz not null default clock_timestamp())"
        )
        try:
            yield conn, f"public.{name}"
        finally:
            conn.execute(f"drop table if exists public.{name}")


@pytest.mark.parametrize("table_type", ["cow", "mor"])
def test_postgres_pages_a_backlog_then_follows_inserts_and_updates(spark, tmp_path: Path, pg_table, table_type) -> None:  # noqa: ANN001
    conn, table = pg_table
    conn.execute(f"insert into {table} (name, amount) select 'n' || i, i * 1.25 from generate_series(1, 25) i")
    base = tmp_path / f"pg_{table_type}"
    seen = []
    for _ in range(3):  # 25 rows, 10 a round: three rounds, each past the last
        result = _ingest(PG_URL, table, base, "--source-limit", "10", "--table-type", table_type, "--json")
        assert result.exit_code == 0, result.output
        seen.append(_checkpoint(spark, base)["id"])
    assert seen == [10, 20, 25]
    idle = _ingest(PG_URL, table, base, "--source-limit", "10", "--table-type", table_type, "--json")
    assert idle.output.count('"commit_time": null') == 1, idle.output
    assert verify(spark, str(base), PG, table).equal

    conn.execute(f"update {table} set amount = amount + 100, updated_at = clock_timestamp() where id % 4 = 0")
    conn.execute(f"insert into {table} (name, amount) values ('late', 1), ('later', 2)")
    result = _ingest(PG_URL, table, base, "--table-type", table_type, "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output.strip().splitlines()[-1])
    assert report["events"] == 6 + 2  # the six updated rows and the two new ones
    result = verify(spark, str(base), PG, table)
    assert result.equal, result.describe()
    assert result.source_rows == 27
    checkpoint = _checkpoint(spark, base)
    assert checkpoint["mode"] == "timestamp+incrementing" and checkpoint["id"] == 27 and checkpoint["ts"]


def test_a_late_commit_below_the_cursor_needs_the_look_back(spark, tmp_path: Path, pg_table) -> None:  # noqa: ANN001
    conn, table = pg_table
    conn.execute(f"insert into {table} (name, amount) select 'n' || i, i from generate_series(1, 5) i")
    plain, lookback = tmp_path / "plain", tmp_path / "lookback"
    for base, extra in ((plain, ()), (lookback, ("--jdbc-lookback-seconds", "3600"))):
        assert _ingest(PG_URL, table, base, *extra).exit_code == 0
    # A transaction that began before the cursor's rows and committed after them: its timestamp is older.
    conn.execute(f"insert into {table} (name, amount, updated_at) values ('late', 9, now() - interval '10 minutes')")
    for base, extra in ((plain, ()), (lookback, ("--jdbc-lookback-seconds", "3600"))):
        result = _ingest(PG_URL, table, base, *extra, "--json")
        assert result.exit_code == 0, result.output
    missed = verify(spark, str(plain), PG, table)
    assert [(d.key["id"], d.kind) for d in missed.differences] == [("6", "missing")]
    caught = verify(spark, str(lookback), PG, table)
    assert caught.equal, caught.describe()
    # The tail is read again each round, but rows the table holds in that very version are not new: no commit.
    again = _ingest(PG_URL, table, lookback, "--jdbc-lookback-seconds", "3600", "--json")
    assert again.exit_code == 0 and '"commit_time": null' in again.output, again.output
    assert spark.read.format("hudi").load(str(lookback)).count() == 6


def test_a_null_cursor_is_refused_not_skipped(spark, tmp_path: Path) -> None:  # noqa: ANN001
    name = f"public.jdbc_{uuid.uuid4().hex[:8]}"
    with connect() as conn:
        conn.execute(f"create table {name} (id bigint primary key, updated_at timestamp)")
        try:
            conn.execute(f"insert into {name} values (1, now()), (2, null), (3, null)")
            base = tmp_path / "nulls"
            result = _ingest(PG_URL, name, base)
            assert result.exit_code == 1
            assert "2 row(s) have NULL in updated_at or id" in result.output and name in result.output
            assert not HudiTable(spark, str(base)).commits()
        finally:
            conn.execute(f"drop table if exists {name}")


def test_timestamp_mode_reads_rows_that_arrive_at_the_cursor(spark, tmp_path: Path, pg_table) -> None:  # noqa: ANN001
    conn, table = pg_table
    conn.execute(f"insert into {table} (name, amount, updated_at) values ('a', 1, '2026-01-01 00:00:00+00')")
    base = tmp_path / "ts"
    args = ("--jdbc-mode", "timestamp")
    assert _ingest(PG_URL, table, base, *args).exit_code == 0
    conn.execute(f"insert into {table} (name, amount, updated_at) values ('b', 2, '2026-01-01 00:00:00+00')")
    assert _ingest(PG_URL, table, base, *args).exit_code == 0
    assert verify(spark, str(base), PG, table).equal
    checkpoint = _checkpoint(spark, base)
    assert checkpoint["ts"] == "2026-01-01 00:00:00+00" and checkpoint["ts_micros"] == 1_767_225_600_000_000
    # The rows at the cursor are read again each round, but nothing is new: no commit.
    again = _ingest(PG_URL, table, base, *args, "--json")
    assert again.exit_code == 0 and '"commit_time": null' in again.output


def test_mariadb_datetime_and_timestamp_cursors(spark, tmp_path: Path) -> None:  # noqa: ANN001
    name = f"jdbc_{uuid.uuid4().hex[:8]}"
    with mariadb.connect() as conn, conn.cursor() as cur:
        cur.execute(
            f"create table {name} (id bigint auto_increment primary key, name varchar(32), amount decimal(12,2),"
            " at timestamp(6) null, updated_at datetime(6) not null default current_timestamp(6))"
        )
        try:
            cur.execute(f"insert into {name} (name, amount, at) select concat('n', seq), seq / 4, now(6)"
                        " from seq_1_to_30")  # fmt: skip
            base = tmp_path / "maria"
            for _ in range(2):
                result = _ingest(MARIA_URL, name, base, "--source-limit", "20", "--table-type", "mor")
                assert result.exit_code == 0, result.output
            cur.execute(f"update {name} set amount = amount * 2, updated_at = now(6) where id % 3 = 0")
            assert _ingest(MARIA_URL, name, base, "--table-type", "mor").exit_code == 0
            compared = verify(spark, str(base), MARIA, f"inventory.{name}")
            assert compared.equal, compared.describe()
            assert compared.source_rows == 30 and not compared.skipped_columns
        finally:
            cur.execute(f"drop table if exists {name}")


def test_a_wrong_password_is_named_not_printed(spark, tmp_path: Path, pg_table, monkeypatch) -> None:  # noqa: ANN001
    _, table = pg_table
    monkeypatch.setenv("JDBC_TEST_PASSWORD", "hunter2-wrong")
    result = _ingest(PG_URL, table, tmp_path / "denied")
    assert result.exit_code == 1, result.output
    assert "password authentication failed" in result.output and "hunter2" not in result.output
    refused = run_cli("--source", "jdbc", "--jdbc-url", PG_URL + "?password=hunter2", "--jdbc-table", table,
                      "--jdbc-timestamp-column", "updated_at", "--jdbc-incrementing-column", "id",
                      "--record-key-fields", "id", "--target-base-path", str(tmp_path / "x"), "--target-table", "x")  # fmt: skip
    assert refused.exit_code == 2 and "carries a password" in refused.output and "hunter2" not in refused.output
    assert os.environ["JDBC_TEST_PASSWORD"] not in result.output


def test_deletes_are_reconciled_by_key_ranges_and_a_key_written_again_comes_back(
    spark, tmp_path: Path, pg_table
) -> None:  # noqa: ANN001
    conn, table = pg_table
    conn.execute(f"insert into {table} (name, amount) select 'n' || i, i from generate_series(1, 400) i")
    plain, reconciled = tmp_path / "plain", tmp_path / "reconciled"
    for base in (plain, reconciled):
        assert _ingest(PG_URL, table, base).exit_code == 0
    conn.execute(f"delete from {table} where id in (7, 150, 399)")
    assert _ingest(PG_URL, table, plain).exit_code == 0
    missed = verify(spark, str(plain), PG, table)
    assert {(d.key["id"], d.kind) for d in missed.differences} == {("7", "extra"), ("150", "extra"), ("399", "extra")}

    result = _ingest(PG_URL, table, reconciled, "--jdbc-reconcile-deletes", "--json")
    assert result.exit_code == 0, result.output
    line = json.loads(result.output.strip().splitlines()[-1])
    assert (line["deletes"], line["details"]["deleted_in_source"]) == (3, 3), line
    assert verify(spark, str(reconciled), PG, table).equal
    # Written again after the delete: a newer cursor than the delete's, so the row is back.
    conn.execute(f"insert into {table} (id, name, amount) values (150, 'again', 1)")
    result = _ingest(PG_URL, table, reconciled, "--jdbc-reconcile-deletes", "--json")
    assert result.exit_code == 0, result.output
    assert verify(spark, str(reconciled), PG, table).equal
    assert HudiTable(spark, str(reconciled)).read().where("id = 150").select("name").first()[0] == "again"


def test_incrementing_mode_reconciles_deletes_and_names_updates_it_cannot_see(spark, tmp_path: Path, pg_table) -> None:  # noqa: ANN001
    conn, table = pg_table
    conn.execute(f"insert into {table} (name, amount) select 'n' || i, i from generate_series(1, 50) i")
    base = tmp_path / "inc"
    args = ("--jdbc-mode", "incrementing", "--jdbc-reconcile-deletes", "--json")
    assert _ingest(PG_URL, table, base, *args).exit_code == 0
    conn.execute(f"update {table} set name = 'changed' where id = 20")
    conn.execute(f"delete from {table} where id = 30")
    result = _ingest(PG_URL, table, base, *args)
    assert result.exit_code == 0, result.output
    line = json.loads(result.output.strip().splitlines()[-1])
    assert line["deletes"] == 1 and line["details"]["changed_after_read"] == 1, line
    left = verify(spark, str(base), PG, table)
    assert [(d.key["id"], d.kind) for d in left.differences] == [("20", "changed")]  # seen, warned of, not applied


@pytest.mark.parametrize("table_type", ["cow", "mor"])
def test_full_refresh_writes_only_what_changed_and_deletes_what_is_gone(spark, tmp_path: Path, table_type) -> None:  # noqa: ANN001
    name = f"public.jdbc_full_{uuid.uuid4().hex[:8]}"
    base = tmp_path / f"full_{table_type}"

    def refresh(*extra: str) -> dict:
        result = run_cli(
            "--source", "jdbc", "--jdbc-url", PG_URL, "--jdbc-table", name, "--jdbc-user", "debezium",
            "--jdbc-password-env", "JDBC_TEST_PASSWORD", "--jdbc-mode", "full", "--record-key-fields", "code",
            "--target-base-path", str(base), "--target-table", base.name, "--table-type", table_type, "--json", *extra,
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        return json.loads(result.output.strip().splitlines()[-1])

    with connect() as conn:
        # No column a cursor could follow: only a full refresh keeps this table current.
        conn.execute(f"create table {name} (code text primary key, label text, rate numeric(6,3))")
        try:
            conn.execute(f"insert into {name} select 'c' || i, 'label ' || i, i / 7.0 from generate_series(1, 300) i")
            first = refresh()
            assert first["upserts"] == 300 and verify(spark, str(base), PG, name).equal
            # Nothing differs: no commit (this round through the Python API).
            import hudi_cdc

            idle = hudi_cdc.ingest(
                spark=spark, source="jdbc", jdbc_url=PG_URL, jdbc_table=name, jdbc_user="debezium",
                jdbc_password_env="JDBC_TEST_PASSWORD", jdbc_mode="full", record_key_fields="code",
                target_base_path=str(base), target_table=base.name, table_type=table_type,
            )  # fmt: skip
            assert idle.commit_time is None and idle.events == 0
            conn.execute(f"update {name} set rate = rate + 1 where code in ('c1', 'c2', 'c3')")
            conn.execute(f"update {name} set label = null where code in ('c4', 'c5')")
            conn.execute(f"delete from {name} where code in ('c10', 'c11', 'c12')")
            conn.execute(f"insert into {name} values ('new1', 'x', 1), ('new2', null, null)")
            # Deleted and written again between two rounds: a new version of the key, not a delete.
            conn.execute(f"delete from {name} where code = 'c20'")
            conn.execute(f"insert into {name} values ('c20', 'again', 0)")
            line = refresh()
            assert (line["upserts"], line["deletes"]) == (5 + 2 + 1, 3), line
            assert line["details"]["rows_in_source"] == 300 - 3 + 2
            result = verify(spark, str(base), PG, name)
            assert result.equal, result.describe()
            # A key deleted, then back in a later round: it outranks the delete.
            conn.execute(f"delete from {name} where code = 'c30'")
            assert refresh()["deletes"] == 1
            conn.execute(f"insert into {name} values ('c30', 'back', 3)")
            assert refresh()["upserts"] == 1
            assert verify(spark, str(base), PG, name).equal
            checkpoint = _checkpoint(spark, base)
            assert checkpoint["mode"] == "full" and checkpoint["ts_micros"] > 0
            # A column added in the source: every row differs once, and the table gains the column.
            conn.execute(f"alter table {name} add column note text default 'n'")
            assert refresh()["upserts"] == 300 - 3 + 2
            assert verify(spark, str(base), PG, name).equal
            assert refresh()["commit_time"] is None
        finally:
            conn.execute(f"drop table if exists {name}")


def test_validate_checks_the_relation_the_cursor_index_and_the_key(spark, tmp_path: Path, pg_table) -> None:  # noqa: ANN001
    from click.testing import CliRunner

    from hudi_cdc.cli import main

    conn, table = pg_table
    conn.execute(f"insert into {table} (name, amount) values ('a', 1)")
    base = tmp_path / "validated"
    args = [
        "validate", "--source", "jdbc", "--jdbc-url", PG_URL, "--jdbc-table", table, "--jdbc-user", "debezium",
        "--jdbc-password-env", "JDBC_TEST_PASSWORD", "--jdbc-timestamp-column", "updated_at",
        "--jdbc-incrementing-column", "id", "--target-base-path", str(base), "--target-table", "v", "--json",
    ]  # fmt: skip

    def checks(*extra: str) -> dict[str, dict]:
        result = CliRunner().invoke(main, [*args, *extra], catch_exceptions=False)
        assert "dbz" not in result.output  # the password is never printed
        return {c["name"]: c for c in json.loads(result.output)["checks"]}

    found = checks("--record-key-fields", "id")
    assert found["jdbc.relation"]["status"] == "ok" and found["jdbc.primary_key"]["status"] == "ok", found
    assert (
        found["jdbc.cursor_index"]["status"] == "warn"
        and "no index leads with updated_at" in (found["jdbc.cursor_index"]["detail"])
    )
    assert not any(name.startswith(("kafka.", "postgres.", "connect.")) for name in found)
    conn.execute(f"create index on {table} (updated_at, id)")
    found = checks("--record-key-fields", "name")
    assert found["jdbc.cursor_index"]["status"] == "ok", found["jdbc.cursor_index"]
    assert found["jdbc.primary_key"]["status"] == "warn" and "primary key (id)" in found["jdbc.primary_key"]["detail"]
    found = checks("--record-key-fields", "id", "--jdbc-timestamp-column", "changed_at")
    assert (
        found["jdbc.relation"]["status"] == "fail"
        and "no column changed_at (cursor)" in (found["jdbc.relation"]["detail"])
    )
    # After a round, the stored cursor is shown.
    assert _ingest(PG_URL, table, base).exit_code == 0
    found = checks("--record-key-fields", "id")
    assert (
        found["target.checkpoint"]["status"] == "ok"
        and '"mode": "timestamp+incrementing"' in (found["target.checkpoint"]["detail"])
    )
    missing = checks("--record-key-fields", "id", "--jdbc-table", "public.no_such_table")
    assert (
        missing["jdbc.relation"]["status"] == "fail"
        and "no table public.no_such_table" in (missing["jdbc.relation"]["detail"])
    )
