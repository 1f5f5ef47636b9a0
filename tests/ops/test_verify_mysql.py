"""``hudi-cdc verify`` against MariaDB on the real stack: a table of every compared type, replicated through
Debezium's MariaDB connector, Kafka and Apicurio by ``hudi-cdc ingest --flavor mysql``.

verify must find the COW and MOR tables equal to MariaDB, value for value
(doubles and floats by their IEEE bits, decimals, DATETIME and TIMESTAMP,
TIME, YEAR, ENUM, JSON, binary), then name every corruption written straight
into Hudi, and nothing else.
"""

from __future__ import annotations

import json
import math
import uuid
from typing import Any

import pytest
from click.testing import CliRunner

from hudi_cdc.cli import main
from hudi_cdc.ops.verify import Difference, verify
from hudi_cdc.testing.kafka import end_offsets
from hudi_cdc.testing.mariadb import STACK_URL, TOPIC_PREFIX, connect, wait_for_stream
from hudi_cdc.upstream.database import SourceDatabase
from payloads.base import ORDER_COLUMN, is_data_column
from tests.stack.conftest import BOOTSTRAP, REGISTRY
from tests.support import run_cli, tamper

pytestmark = [pytest.mark.stack, pytest.mark.kafka, pytest.mark.hudi]

TABLE = f"verify_{uuid.uuid4().hex[:8]}"
TOPIC = TOPIC_PREFIX + TABLE
DATABASE = SourceDatabase(STACK_URL, password_env="VERIFY_MYSQL_PASSWORD")
KEYS = ("id", "part")
DELETED_IN_SOURCE: list[tuple] = []

DDL = f"""
create table {TABLE} (
  id int not null, part varchar(8) not null,
  tiny tinyint, small smallint, medium mediumint unsigned, big bigint,
  amount decimal(12,2), fine decimal(20,9), huge decimal(45,5),
  ratio float, weight double, flag boolean,
  name varchar(64), code char(5), color enum('red', 'green', 'blue'), doc json,
  born date, seen datetime(6), at timestamp(6) null, clock time(6), yr year,
  data varbinary(32), body longtext, bits bit(3),
  primary key (id, part))
"""
# Deterministic values of every kind (rand(seed)), NULLs included; seq_1_to_N is MariaDB's sequence engine.
FILL = f"""
insert into {TABLE}
select seq, concat('p', seq % 3),
  if(seq % 7 = 0, null, seq % 128 - 64), seq % 30000, seq * 7, seq * 1000003 - 50000000,
  round(rand(seq) * 20000 - 10000, 2), if(seq % 5 = 0, 0.0000001, round(rand(seq + 1), 9)), rand(seq + 2) * 1e30,
  if(seq % 11 = 0, null, rand(seq + 3) * 100), if(seq % 9 = 0, 0, if(seq % 13 = 0, null, rand(seq + 4) * 1e6 - 5e5)),
  seq % 2 = 0,
  concat('name ', seq, ' ü€'), concat('c', seq % 10), elt(1 + seq % 3, 'red', 'green', 'blue'),
  json_object('i', seq, 'nested', json_array(1, 'two', null)),
  date '2020-01-01' + interval seq day, timestamp '2024-02-29 12:34:56.123456' + interval seq * 3600000001 microsecond,
  timestamp '2024-06-01 00:00:00.5' + interval seq * 37 minute, sec_to_time(seq * 17.000003), 1901 + seq % 200,
  unhex(md5(seq)), if(seq % 3 = 0, repeat(md5(seq), 200), concat('short ', seq)), seq % 8
from (select cast(seq as signed) as seq from seq_1_to_1500) s
"""
CHANGES = [
    f"update {TABLE} set amount = amount + 1, name = 'changed' where id % 10 = 0",
    f"delete from {TABLE} where id % 25 = 0",
    f"update {TABLE} set part = 'moved' where id % 40 = 1",  # a primary-key change
]


def _execute(*statements: str) -> None:
    with connect() as conn, conn.cursor() as cur:
        for sql in statements:
            cur.execute(sql)


@pytest.fixture(scope="module")
def tables(spark, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:  # noqa: ANN001
    base = tmp_path_factory.mktemp("verify_mysql")
    paths = {t: str(base / f"{TABLE}_{t}") for t in ("cow", "mor")}
    _execute(DDL)
    try:
        for statements in ([FILL], CHANGES):
            before = end_offsets(BOOTSTRAP, [TOPIC]) if statements is CHANGES else {(TOPIC, 0): 0}
            _execute(*statements)
            with connect() as conn:
                wait_for_stream(conn, BOOTSTRAP, [TOPIC], since=before)
            for table_type, path in paths.items():
                result = run_cli(
                    "--source", "kafka", "--topic", TOPIC, "--bootstrap-servers", BOOTSTRAP,
                    "--schema-registry-url", REGISTRY, "--flavor", "mysql", "--target-base-path", path,
                    "--target-table", f"{TABLE}_{table_type}", "--table-type", table_type,
                )  # fmt: skip
                assert result.exit_code == 0, result.output
        yield paths
    finally:
        _execute(f"drop table if exists {TABLE}")


@pytest.fixture(autouse=True)
def _password(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VERIFY_MYSQL_PASSWORD", "dbz")


def _count() -> int:
    with connect() as conn, conn.cursor() as cur:
        cur.execute(f"select count(*) from {TABLE}")  # noqa: S608
        return cur.fetchone()[0]


@pytest.mark.parametrize("table_type", ["cow", "mor"])
def test_a_replicated_table_is_equal(spark, tables: dict[str, str], table_type: str) -> None:  # noqa: ANN001
    result = verify(spark, tables[table_type], DATABASE, f"inventory.{TABLE}")
    assert result.equal, result.describe()
    assert result.source_rows == result.target_rows == _count() > 1000
    assert result.key_fields == KEYS
    # Every column is compared exactly except BIT(n), which Debezium sends as bytes of its own bit order.
    assert set(result.skipped_columns) == {"bits"}, result.skipped_columns
    assert len(result.compared_columns) == 23
    assert result.differences == [] and result.exit_code == 0


def _corrupt(spark: Any, path: str, table_type: str) -> dict[tuple, tuple]:  # noqa: ANN401
    """Five faults written straight into the Hudi table, and a row deleted in MariaDB; the expected kind per key."""
    frame = spark.read.format("hudi").load(path)
    data = [c for c in frame.columns if is_data_column(c)]
    rows = {(r["id"], r["part"]): r.asDict() for r in frame.select(*data).where("id between 100 and 160").collect()}
    changed, doubled_value, missing, duplicated = sorted(rows)[:4]
    top = "9" * 60  # above every stored _source_order (a string): the upserts win
    upserts = [
        {**rows[changed], "amount": rows[changed]["amount"] + 7, ORDER_COLUMN: top},
        # the last bit of a double: only an exact comparison sees it
        {**rows[doubled_value], "weight": math.nextafter(rows[doubled_value]["weight"], math.inf), ORDER_COLUMN: top},
        {**rows[changed], "id": 999_999, "part": "ghost", ORDER_COLUMN: top},  # a row the source never had
    ]  # fmt: skip
    tamper(spark, path, table_name=f"{TABLE}_{table_type}", table_type=table_type, keys=KEYS, upserts=upserts,
           deletes=[rows[missing]], duplicates=[rows[duplicated]])  # fmt: skip
    with connect() as conn, conn.cursor() as cur:  # deleted in the source, never ingested: the table still has it
        cur.execute(f"select id, part from {TABLE} where id between 161 and 200 order by id limit 1")  # noqa: S608
        deleted = cur.fetchone()
        cur.execute(f"delete from {TABLE} where id = %s and part = %s", deleted)  # noqa: S608
    DELETED_IN_SOURCE.append(tuple(deleted))
    return {
        **{key: ("extra", (), None) for key in DELETED_IN_SOURCE},
        changed: ("changed", ("amount",), None),
        doubled_value: ("changed", ("weight",), None),
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
    assert result.target_rows == result.source_rows + 1 + len(DELETED_IN_SOURCE)
    narrow = verify(spark, path, DATABASE, f"inventory.{TABLE}", fetch_limit=3)  # buckets split, few rows fetched
    assert _found(narrow.differences) == expected
    partial = verify(spark, path, DATABASE, f"inventory.{TABLE}", columns=["weight"], where="id < 150")
    assert set(partial.compared_columns) == {"id", "part", "weight"}
    assert all(k[0] < 150 for k in _found(partial.differences))
    assert all(kind != "changed" or cols == ("weight",) for kind, cols, _ in _found(partial.differences).values())


def test_cli_exit_codes_and_json(spark, tables: dict[str, str]) -> None:  # noqa: ANN001
    args = ["verify", "--target-base-path", tables["cow"], "--source-url", STACK_URL,
            "--password-env", "VERIFY_MYSQL_PASSWORD", "--table", f"inventory.{TABLE}", "--no-recheck"]  # fmt: skip
    result = CliRunner().invoke(main, [*args, "--json"], catch_exceptions=False)
    report = json.loads(result.output)
    assert result.exit_code == (0 if report["equal"] else 1)
    assert report["source_rows"] == _count()
    missing = CliRunner().invoke(main, [*args[:-3], "--table", "inventory.no_such_table"], catch_exceptions=False)
    assert missing.exit_code == 2 and "inventory.no_such_table does not exist" in missing.output
    wrong_url = "mysql://debezium:hunter2@127.0.0.1:53306/inventory"  # a password in the URL, and wrong
    wrong = CliRunner().invoke(main, [*args[:3], "--source-url", wrong_url, *args[7:]])
    assert wrong.exit_code == 2 and "Access denied" in wrong.output, wrong.output
    assert "hunter2" not in wrong.output
