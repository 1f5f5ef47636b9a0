"""Tables read by name, as an analyst would: Postgres -> Debezium -> Kafka -> ``hudi-cdc ingest --catalog hms``
-> the stack's Hive metastore -> a separate Spark application with Hive support (tests/stack/readers/spark_sql.py,
no hudi-cdc in it), compared with Postgres.

One source table, partitioned by region, replicated into a COW and a MOR table, each registered in the
metastore by the ingest's catalog sync. Round 1 (inserts): the COW table, the MOR snapshot views (the bare
name and ``_rt``) and a partition filter (pruned: the plan says so) equal the source; ``_ro`` equals what
Hudi reads as read-optimized by path. Round 2 (updates, a delete, a column added and ``qty`` widened from int
to bigint at the source): the catalog shows the new schema in every view, the snapshot queries see the new
values, and ``_ro`` still shows the base files only (not the source). The reader's JVM starts once, in the
background while the stack works, and answers every query of both rounds.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from hudi_cdc.jars import resolve_jars
from hudi_cdc.testing.kafka import end_offsets
from hudi_cdc.testing.postgres import connect, wait_for_stream
from tests.stack.conftest import BOOTSTRAP, REGISTRY
from tests.support import run_cli

pytestmark = [pytest.mark.stack, pytest.mark.kafka, pytest.mark.postgres, pytest.mark.hudi]

READER = Path(__file__).parent / "readers" / "spark_sql.py"
BUNDLE = "hudi-spark3.5-bundle"


class Reader:
    """The analyst's session: ``readers/spark_sql.py --serve`` in a process of its own."""

    def __init__(self, uri: str, folder: Path) -> None:
        jars = resolve_jars()
        bundle = next((j for j in jars.jars if BUNDLE in Path(j).name), None)
        bundle = bundle or next(p for p in jars.packages if BUNDLE in p)
        folder.mkdir(parents=True)
        self.log = folder / "reader.log"
        self._stderr = self.log.open("w")
        args = ["--metastore-uri", uri, "--hudi-bundle", bundle, "--warehouse", str(folder / "warehouse"), "--serve"]
        self.proc = subprocess.Popen(  # noqa: S603 - our own script
            [sys.executable, str(READER), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            cwd=folder,
        )

    def ask(self, *statements: str) -> list[dict[str, Any]]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(list(statements)) + "\n")
        self.proc.stdin.flush()
        for line in self.proc.stdout:
            if line.startswith("RESULT "):
                results: list[dict[str, Any]] = json.loads(line.removeprefix("RESULT "))
                failed = [r for r in results if "error" in r]
                assert not failed, failed
                return results
        raise AssertionError(f"the reader ended ({self.proc.wait()}): {self.log.read_text()[-3000:]}")

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._stderr.close()


def _ingest(topic: str, base: Path, table_type: str, uri: str, database: str) -> None:
    done = run_cli(
        "--source", "kafka", "--topic", topic, "--bootstrap-servers", BOOTSTRAP, "--schema-registry-url", REGISTRY,
        "--target-base-path", str(base), "--target-table", base.name, "--table-type", table_type,
        "--partition-path-field", "region",
        "--catalog", "hms", "--catalog-uri", uri, "--catalog-database", database, "--catalog-table", base.name,
    )  # fmt: skip
    assert done.exit_code == 0, done.output


def _rows(result: dict[str, Any]) -> list[list[Any]]:
    return [list(r) for r in result["rows"]]


def _types(result: dict[str, Any]) -> dict[str, str]:
    """DESCRIBE's columns and types (its partition section repeats region: the first one stays)."""
    types: dict[str, str] = {}
    for name, kind, _ in result["rows"]:
        if name and not name.startswith("#"):
            types.setdefault(name, kind)
    return types


def _source(conn: Any, columns: str, name: str) -> list[list[Any]]:  # noqa: ANN401
    return [list(r) for r in conn.execute(f"select {columns} from inventory.{name} order by id").fetchall()]  # noqa: S608


def _read_optimized(spark: Any, base: Path, columns: str) -> list[list[Any]]:  # noqa: ANN401
    """The MOR table's base files only, read by path: what its ``_ro`` view must show."""
    frame = spark.read.format("hudi").option("hoodie.datasource.query.type", "read_optimized").load(str(base))
    return sorted(list(r) for r in frame.selectExpr(*columns.split(", ")).collect())


def _drop_database(spark: Any, uri: str, database: str) -> None:  # noqa: ANN401
    gateway = spark.sparkContext._jvm
    conf = gateway.org.apache.hadoop.hive.conf.HiveConf()
    conf.set("hive.metastore.uris", uri)
    client = gateway.org.apache.hadoop.hive.metastore.HiveMetaStoreClient(conf)
    try:
        client.dropDatabase(database, False, True, True)  # the tables' data is the Hudi tables': kept
    finally:
        client.close()


def test_cow_and_mor_read_by_name_equal_the_source_before_and_after_a_schema_change(
    spark,
    tmp_path: Path,
    metastore_uri: str,
) -> None:
    name = f"cr_{uuid.uuid4().hex[:8]}"
    topic, database = f"dbserver1.inventory.{name}", name
    cow, mor = tmp_path / f"{name}_cow", tmp_path / f"{name}_mor"
    reader = Reader(metastore_uri, tmp_path / "reader")  # its JVM starts while the stack works
    columns = "id, name, region, qty"
    conn = connect()
    try:
        conn.execute(f"create table inventory.{name} (id int primary key, name text, region text not null, qty int)")
        conn.execute(
            f"insert into inventory.{name} select id, 'n' || id, case when id % 3 = 0 then 'eu' else 'us' end, id "  # noqa: S608
            "from generate_series(1, 8) id"
        )
        wait_for_stream(conn, BOOTSTRAP, [topic], since={})
        for base, kind in ((cow, "cow"), (mor, "mor")):
            _ingest(topic, base, kind, metastore_uri, database)

        source = _source(conn, columns, name)
        eu = [r for r in source if r[2] == "eu"]
        views = [cow.name, mor.name, f"{mor.name}_rt", f"{mor.name}_ro"]
        results = reader.ask(
            f"SHOW TABLES IN {database}",
            *[f"SELECT {columns} FROM {database}.{v} ORDER BY id" for v in views],
            f"SELECT {columns} FROM {database}.{cow.name} WHERE region = 'eu' ORDER BY id",
            f"EXPLAIN SELECT {columns} FROM {database}.{cow.name} WHERE region = 'eu'",
            f"SELECT {columns} FROM {database}.{mor.name}_rt WHERE region = 'eu' ORDER BY id",
            f"DESCRIBE {database}.{cow.name}",
        )
        assert sorted(r[1] for r in results[0]["rows"]) == sorted(views)
        for selected in results[1:4]:
            assert _rows(selected) == source, selected["sql"]
        assert _rows(results[4]) == _read_optimized(spark, mor, columns)
        assert _rows(results[5]) == eu and _rows(results[7]) == eu and eu
        plan = results[6]["rows"][0][0]
        assert re.search(r"PartitionFilters: \[isnotnull\(region#\d+\), \(region#\d+ = eu\)\]", plan), plan
        assert _types(results[8])["qty"] == "int" and "email" not in _types(results[8])

        # Round 2: updates and a delete, a column added and qty widened at the source; the catalog follows.
        since = end_offsets(BOOTSTRAP, [topic])
        conn.execute(f"update inventory.{name} set qty = qty + 100, name = name || '!' where id in (2, 3)")  # noqa: S608
        conn.execute(f"delete from inventory.{name} where id = 8")  # noqa: S608
        conn.execute(f"alter table inventory.{name} add column email text")
        conn.execute(f"alter table inventory.{name} alter column qty type bigint")
        conn.execute(f"insert into inventory.{name} values (9, 'n9', 'eu', {2**40}, 'n9@x')")  # noqa: S608
        conn.execute(f"update inventory.{name} set email = 'n1@x', qty = {2**33} where id = 1")  # noqa: S608
        wait_for_stream(conn, BOOTSTRAP, [topic], since=since)
        for base, kind in ((cow, "cow"), (mor, "mor")):
            _ingest(topic, base, kind, metastore_uri, database)

        columns += ", email"
        source = _source(conn, columns, name)
        results = reader.ask(
            *[f"REFRESH TABLE {database}.{v}" for v in views],  # a long-lived session's cached relations
            *[f"DESCRIBE {database}.{v}" for v in views],
            *[f"SELECT {columns} FROM {database}.{v} ORDER BY id" for v in views],
            f"SELECT {columns} FROM {database}.{cow.name} WHERE region = 'eu' ORDER BY id",
        )
        for described in results[4:8]:
            types = _types(described)
            assert (types["qty"], types["email"]) == ("bigint", "string"), described
        for selected in results[8:11]:
            assert _rows(selected) == source, selected["sql"]
        read_optimized = _read_optimized(spark, mor, columns)
        assert _rows(results[11]) == read_optimized and read_optimized != source  # the updates are in log files
        assert _rows(results[12]) == [r for r in source if r[2] == "eu"]
        assert source[0][3:] == [2**33, "n1@x"] and source[-1][3:] == [2**40, "n9@x"] and len(source) == 8
    finally:
        conn.execute(f"drop table if exists inventory.{name}")
        conn.close()
        reader.close()
        _drop_database(spark, metastore_uri, database)
