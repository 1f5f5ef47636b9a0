"""Each kind of schema change under each action, through the real stack, on Postgres and on MariaDB.

One source table per database goes through four DDL phases (a column added and one widened, a column
dropped, a column renamed, a column changed to an incompatible type), each followed by rows. Two Hudi
tables follow the same topic with different actions, one COW and one MOR (swapped between the
databases): a ``fail`` is tried first (the error names the column, the change and the setting; the
table does not move; type_changed on both databases, the other kinds split between them to keep the
file short), then the phase is taken with the other action and the table read back.

- table ``lenient``: column_added = ignore, then keep, a rename seen as a new column (its old one was
  ignored), type_changed = fail, then evolve (the column becomes text);
- table ``strict``: column_added = fail then evolve, type_widened = fail then evolve, column_dropped =
  fail then keep, column_renamed = fail then keep_both, type_changed = quarantine, then the quarantined
  events re-applied with type_changed = evolve.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from hudi_cdc.cli import main
from hudi_cdc.ops.status import TableStatus, _schema_changes
from hudi_cdc.sink import options as opt
from hudi_cdc.sink.hudi import HudiTable
from hudi_cdc.testing import mariadb, postgres
from hudi_cdc.testing.kafka import end_offsets
from tests.stack.conftest import BOOTSTRAP, REGISTRY
from tests.support import run_cli

pytestmark = [pytest.mark.kafka, pytest.mark.postgres, pytest.mark.hudi]


@dataclass(frozen=True)
class Database:
    flavor: str
    topic_prefix: str
    connect: Callable[[], Any]
    wait: Callable[..., Any]
    create: str
    add_and_widen: tuple[str, ...]
    drop: str
    rename: str
    to_text: str
    fails: frozenset[str]  # the kinds whose fail is tried on this database (the unit tests try every one)


POSTGRES = Database(
    "postgres",
    "dbserver1.inventory.",
    postgres.connect,
    postgres.wait_for_stream,
    "create table inventory.{t} (id int primary key, name text, qty int, legacy text)",
    ("alter table inventory.{t} add column email text", "alter table inventory.{t} alter column qty type bigint"),
    "alter table inventory.{t} drop column legacy",
    "alter table inventory.{t} rename column email to mail",
    "alter table inventory.{t} alter column qty type text using qty::text",
    frozenset({"column_added", "type_widened", "type_changed"}),
)
MARIADB = Database(
    "mysql",
    "mariadb1.inventory.",
    mariadb.connect,
    mariadb.wait_for_stream,
    "create table {t} (id int primary key, name varchar(20), qty int, legacy varchar(20))",
    ("alter table {t} add column email varchar(20), modify qty bigint",),
    "alter table {t} drop column legacy",
    "alter table {t} rename column email to mail",
    "alter table {t} modify qty varchar(20)",
    frozenset({"column_dropped", "column_renamed", "type_changed"}),
)


class _Source:
    def __init__(self, db: Database, name: str) -> None:
        self.db, self.name, self.topic = db, name, db.topic_prefix + name
        self.conn = db.connect()
        self.table = f"inventory.{name}" if db.flavor == "postgres" else name

    def run(self, *statements: str, rows: tuple[tuple[Any, ...], ...] = ()) -> None:
        since = end_offsets(BOOTSTRAP, [self.topic]) if rows else {}
        for statement in statements:
            self._execute(statement.format(t=self.name))
        for row in rows:
            marks = ", ".join(["%s"] * len(row))
            self._execute(f"insert into {self.table} values ({marks})", row)  # noqa: S608
        self.db.wait(self.conn, BOOTSTRAP, [self.topic], since=since or None)

    def _execute(self, sql: str, args: tuple[Any, ...] = ()) -> None:
        if self.db.flavor == "postgres":
            self.conn.execute(sql, args)
        else:
            with self.conn.cursor() as cur:
                cur.execute(sql, args)

    def close(self) -> None:
        self._execute(f"drop table if exists {self.table}")
        self.conn.close()


def _args(src: _Source, base: str, table_type: str, *extra: str) -> list[str]:
    return [
        "--source", "kafka", "--topic", src.topic, "--bootstrap-servers", BOOTSTRAP, "--schema-registry-url", REGISTRY,
        "--target-base-path", base, "--target-table", Path(base).name, "--table-type", table_type,
        "--flavor", src.db.flavor, *extra,
    ]  # fmt: skip


def _ok(args: list[str]) -> None:
    done = run_cli(*args)
    assert done.exit_code == 0, done.output


def _refused(spark, db: Database, kind: str, args: list[str], *expected: str) -> None:  # noqa: ANN001
    if kind not in db.fails:
        return
    base = args[args.index("--target-base-path") + 1]
    before = [c.instant for c in HudiTable(spark, base).commits()]
    done = run_cli(*args)
    assert done.exit_code == 1, done.output
    for text in expected:
        assert text in done.output, done.output
    assert [c.instant for c in HudiTable(spark, base).commits()] == before  # nothing committed


def _table(spark, base: str) -> tuple[dict[str, str], dict[int, dict[str, Any]]]:  # noqa: ANN001
    frame = spark.read.format("hudi").load(base)
    data = [c for c in frame.columns if not c.startswith(("_hoodie", "_source", "_ingested"))]
    types = {f.name: f.dataType.simpleString() for f in frame.schema.fields if f.name in data}
    return types, {r["id"]: {c: r[c] for c in data if c != "id"} for r in frame.collect()}


def _taken(spark, base: str) -> list[tuple[str, str, str]]:  # noqa: ANN001
    """The schema changes the newest commit recorded."""
    newest = HudiTable(spark, base).commits()[0]
    return sorted(
        (c["kind"], c["column"], c["action"]) for c in json.loads(newest.extra.get(opt.SCHEMA_CHANGES_KEY, "[]"))
    )


@pytest.mark.parametrize(("db", "lenient_type", "strict_type"), [(POSTGRES, "cow", "mor"), (MARIADB, "mor", "cow")])
def test_each_schema_change_under_each_action(
    spark, tmp_path: Path, db: Database, lenient_type: str, strict_type: str
) -> None:  # noqa: ANN001, E501
    src = _Source(db, f"sc_{db.flavor}_{uuid.uuid4().hex[:6]}")  # a topic and subject of its own
    lenient, strict = str(tmp_path / "lenient"), str(tmp_path / "strict")
    quarantine = ["--on-bad-event", "quarantine"]
    try:
        src.run(db.create, rows=((1, "a", 1, "L1"), (2, "b", 2, "L2")))
        _ok(_args(src, lenient, lenient_type))
        _ok(_args(src, strict, strict_type, *quarantine))

        # 1. email added, qty int -> bigint.
        src.run(*db.add_and_widen, rows=((3, "c", 2**40, "L3", "c@x"),))
        _refused(spark, db, "column_added", _args(src, lenient, lenient_type, "--on-column-added", "fail"),
                 "column 'email' was added at the source", "schema_changes.column_added = fail", "--on-column-added")  # fmt: skip
        _ok(_args(src, lenient, lenient_type, "--on-column-added", "ignore"))
        _refused(spark, db, "type_widened", _args(src, strict, strict_type, *quarantine, "--on-type-widened", "fail"),
                 "column 'qty' was widened from int -> bigint", "--on-type-widened")  # fmt: skip
        _ok(_args(src, strict, strict_type, *quarantine))
        assert _taken(spark, strict) == [("column_added", "email", "evolve"), ("type_widened", "qty", "evolve")]
        types, rows = _table(spark, lenient)
        assert "email" not in types and types["qty"] == "bigint" and rows[3]["qty"] == 2**40
        types, rows = _table(spark, strict)
        assert (types["email"], types["qty"], rows[3]["email"], rows[1]["email"]) == ("string", "bigint", "c@x", None)

        # 2. legacy dropped.
        src.run(db.drop, rows=((4, "d", 4, "d@x"),))
        _ok(_args(src, lenient, lenient_type, "--on-column-added", "ignore"))  # email: ignored before, still
        _refused(spark, db, "column_dropped", _args(src, strict, strict_type, *quarantine, "--on-column-dropped", "fail"),
                 "column 'legacy' was dropped at the source", "--on-column-dropped")  # fmt: skip
        _ok(_args(src, strict, strict_type, *quarantine))
        assert _taken(spark, strict) == [("column_dropped", "legacy", "keep")]
        for base in (lenient, strict):
            _, rows = _table(spark, base)
            assert (rows[4]["legacy"], rows[2]["legacy"]) == (None, "L2")  # kept: NULL from now on

        # 3. email renamed to mail: a drop and an add in one change.
        src.run(db.rename, rows=((5, "e", 5, "e@x"),))
        _ok(_args(src, lenient, lenient_type, "--on-column-added", "ignore"))  # email was never in this table
        _refused(spark, db, "column_renamed", _args(src, strict, strict_type, *quarantine, "--on-column-renamed", "fail"),
                 "column 'email' was dropped and 'mail' added in one schema change",
                 'column_renames = { mail = "email" }', "--on-column-renamed")  # fmt: skip
        _ok(_args(src, strict, strict_type, *quarantine))
        assert _taken(spark, strict) == [("column_renamed", "mail", "keep_both")]
        types, rows = _table(spark, lenient)
        assert "mail" not in types and "email" not in types and rows[5]["name"] == "e"
        _, rows = _table(spark, strict)
        assert (rows[5]["mail"], rows[5]["email"], rows[3]["email"], rows[3]["mail"]) == ("e@x", None, "c@x", None)

        # 4. qty bigint -> text: incompatible.
        src.run(db.to_text, rows=((6, "f", "6", "f@x"),))
        src.run(f"update {src.table} set qty = 'many' where id = 1", rows=((7, "g", "7", "g@x"),))
        _refused(spark, db, "type_changed", _args(src, lenient, lenient_type, "--on-column-added", "ignore"),
                 "column 'qty' changed type from bigint to string", "--on-type-changed")  # fmt: skip
        _ok(_args(src, lenient, lenient_type, "--on-column-added", "ignore", "--on-type-changed", "evolve"))
        types, rows = _table(spark, lenient)
        assert types["qty"] == "string" and (rows[1]["qty"], rows[6]["qty"], rows[7]["qty"]) == ("many", "6", "7")

        held = _ingest_json(_args(src, strict, strict_type, *quarantine, "--on-type-changed", "quarantine"))
        assert held["quarantined"] == 3, held  # rows 6, 7 and the update of 1
        types, rows = _table(spark, strict)
        assert types["qty"] == "bigint" and sorted(rows) == [1, 2, 3, 4, 5] and rows[1]["qty"] == 1
        applied = _quarantine("reapply", _args(src, strict, strict_type, *quarantine, "--on-type-changed", "evolve"))
        assert (applied["reapplied"], applied["still_quarantined"]) == (3, 0), applied
        types, rows = _table(spark, strict)
        assert types["qty"] == "string" and (rows[1]["qty"], rows[6]["qty"], rows[7]["mail"]) == ("many", "6", "g@x")

        status = TableStatus("strict", src.topic, strict, "idle")
        _schema_changes(status, HudiTable(spark, strict).commits())
        assert status.schema_changes == {
            "column_added": 1,
            "type_widened": 1,
            "column_dropped": 1,
            "column_renamed": 1,
            "type_changed": 2,  # quarantined, then evolved at the re-apply
        }, status.schema_changes
        assert status.last_schema_change is not None and status.last_schema_change["action"] == "evolve"
    finally:
        src.close()


def _ingest_json(args: list[str]) -> dict[str, Any]:
    done = run_cli(*args, "--json")
    assert done.exit_code == 0, done.output
    return json.loads(done.output.strip().splitlines()[-1])


def _quarantine(command: str, args: list[str]) -> dict[str, Any]:
    result = CliRunner().invoke(main, ["quarantine", command, "--json", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output.strip().splitlines()[-1])
