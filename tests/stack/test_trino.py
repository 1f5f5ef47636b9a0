"""A reader hudi-cdc did not write: Trino 476's Hudi connector reads the replicated tables by name through the
stack's Hive metastore, and what it returns is compared with Postgres and with Hudi's own reads.

Postgres -> Debezium -> Kafka -> hudi-cdc (``--catalog hms``) -> a partitioned COW and a partitioned MOR table,
synced to the metastore by hudi-cdc, two rounds (inserts; then updates, a delete and an insert into a new partition). Trino must return:
- COW by name: the Postgres rows; a partition filter returns that partition's rows;
- MOR ``_ro``: what Hudi's read-optimized query returns (base files only);
- MOR ``_rt``: **also the read-optimized rows** -- Trino 476's connector does not merge log files, the
  known limit docs/catalog.md states -- until a compaction, after which ``_ro`` and ``_rt`` equal Postgres;
- without the marker file of ``hudi_cdc.sink.trino_compat`` in ``.hoodie/timeline/history/``, an error.

Needs Trino (`make test-trino` starts it and makes these tests required); skipped when it is not running.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from hudi_cdc.sink.trino_compat import MARKER_NAME, ensure_history_folder, history_folder
from hudi_cdc.testing import postgres
from hudi_cdc.testing.kafka import end_offsets
from tests.stack.conftest import BOOTSTRAP, REGISTRY
from tests.support import read_rows, run_cli

pytestmark = [pytest.mark.kafka, pytest.mark.postgres, pytest.mark.hudi]

TRINO_URL = os.environ.get("TRINO_URL", "http://127.0.0.1:58090")
HMS_URI = os.environ.get("TRINO_HMS_URI", "thrift://127.0.0.1:59083")  # stack/trino.sh's catalog uses the same
REQUIRED = os.environ.get("HUDI_CDC_TEST_TRINO") == "required"  # set by `make test-trino`
COLUMNS = ("id", "name", "qty", "dt")


class TrinoError(AssertionError):
    pass


def trino(sql: str, *, timeout_s: float = 120.0) -> list[tuple]:
    """Rows of one statement through Trino's HTTP protocol."""
    return trino_query(sql, timeout_s=timeout_s)[0]


def trino_query(sql: str, *, timeout_s: float = 120.0) -> tuple[list[tuple], dict[str, Any]]:
    """Rows and final stats of one statement: POST /v1/statement, then follow nextUri to the end."""
    request = urllib.request.Request(
        TRINO_URL + "/v1/statement", data=sql.encode(), method="POST",
        headers={"X-Trino-User": "hudi-cdc-tests", "X-Trino-Catalog": "hudi"},
    )  # fmt: skip
    deadline = time.monotonic() + timeout_s
    rows: list[tuple] = []
    while True:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            doc = json.load(response)
        if "error" in doc:
            error = doc["error"]
            raise TrinoError(f"{error.get('errorName')}: {error.get('message')} (query: {sql})")
        rows.extend(tuple(row) for row in doc.get("data", ()))
        if "nextUri" not in doc:
            return rows, doc.get("stats", {})
        if time.monotonic() > deadline:
            raise TrinoError(f"no answer in {timeout_s:.0f}s (query: {sql})")
        request = urllib.request.Request(doc["nextUri"], headers={"X-Trino-User": "hudi-cdc-tests"})


def _trino_problem() -> str | None:
    try:
        with urllib.request.urlopen(TRINO_URL + "/v1/info", timeout=5) as response:
            info = json.load(response)
    except (OSError, urllib.error.URLError) as exc:
        return f"Trino is not running at {TRINO_URL} ({exc})"
    if info.get("starting", True):
        return f"Trino at {TRINO_URL} is still starting"
    return None


@pytest.fixture(scope="module")
def trino_up() -> None:
    problem = _trino_problem()
    if problem is None:
        return
    if REQUIRED:
        pytest.fail(f"{problem}, and HUDI_CDC_TEST_TRINO=required: see stack/trino.sh and .stack/trino/trino.log")
    pytest.skip(f"{problem}: `make test-trino` starts it and runs these tests")


def drop_database(spark: Any, database: str) -> None:  # noqa: ANN401
    jvm = spark._jvm
    conf = jvm.org.apache.hadoop.hive.conf.HiveConf()
    conf.set("hive.metastore.uris", HMS_URI)
    client = jvm.org.apache.hadoop.hive.metastore.HiveMetaStoreClient(conf)
    try:
        # Keep the data (tmp_path goes anyway), ignore an unknown database, cascade to its tables.
        client.dropDatabase(database, False, True, True)
    finally:
        client.close()


@dataclass
class Replica:
    spark: Any
    conn: Any
    name: str
    database: str
    root: Path
    bases: dict[str, str] = field(default_factory=dict)

    @property
    def topic(self) -> str:
        return f"dbserver1.inventory.{self.name}"

    def change(self, *statements: str) -> None:
        since = end_offsets(BOOTSTRAP, [self.topic])
        for statement in statements:
            self.conn.execute(statement.format(t=f"inventory.{self.name}"))
        postgres.wait_for_stream(self.conn, BOOTSTRAP, [self.topic], since=since)

    def ingest(self, kind: str, *extra: str) -> None:
        base = self.bases.setdefault(kind, str(self.root / f"{self.name}_{kind}"))
        done = run_cli(
            "--source", "kafka", "--topic", self.topic, "--bootstrap-servers", BOOTSTRAP,
            "--schema-registry-url", REGISTRY, "--target-base-path", base, "--target-table", f"{self.name}_{kind}",
            "--table-type", kind, "--partition-path-field", "dt", "--catalog", "hms", "--catalog-uri", HMS_URI,
            "--catalog-database", self.database, "--catalog-table", f"{self.name}_{kind}", *extra,
        )  # fmt: skip
        assert done.exit_code == 0, done.output

    def source(self, where: str = "true") -> list[tuple]:
        query = f"select id, name, qty, dt from inventory.{self.name} where {where} order by id"  # noqa: S608
        return [tuple(row) for row in self.conn.execute(query).fetchall()]

    def hudi(self, kind: str, query_type: str) -> list[tuple]:
        return sorted(read_rows(self.spark, self.bases[kind], COLUMNS, query_type=query_type))

    def trino(self, table: str, where: str = "true") -> list[tuple]:
        return trino(f"select id, name, qty, dt from hudi.{self.database}.{table} where {where} order by id")  # noqa: S608


@pytest.fixture(scope="module")
def replica(trino_up: None, spark, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Replica]:  # noqa: ANN001
    name = f"trino_{uuid.uuid4().hex[:8]}"
    with postgres.connect() as conn:
        conn.execute(f"create table inventory.{name} (id int primary key, name text, qty int, dt text)")
        rep = Replica(spark, conn, name, f"hudicdc_{name}", tmp_path_factory.mktemp("trino"))
        try:
            rep.change(
                "insert into {t} values (1, 'alice', 10, 'd1'), (2, 'bob', 20, 'd1'), (3, 'carol', 30, 'd2')",
                "insert into {t} values (4, 'dave', 40, 'd2')",
            )
            rep.ingest("cow")
            rep.ingest("mor")
            rep.change(
                "update {t} set name = 'alice2', qty = 11 where id = 1",
                "delete from {t} where id = 4",
                "insert into {t} values (5, 'erin', 50, 'd3')",
            )
            rep.ingest("cow")
            rep.ingest("mor")
            yield rep
        finally:
            conn.execute(f"drop table if exists inventory.{name}")
            drop_database(spark, rep.database)


def test_cow_by_name_equals_postgres_and_filters_a_partition(replica: Replica) -> None:
    names = trino(f"show tables from hudi.{replica.database}")
    assert sorted(names) == [(f"{replica.name}_{suffix}",) for suffix in ("cow", "mor", "mor_ro", "mor_rt")]
    expected = replica.source()
    assert [r[0] for r in expected] == [1, 2, 3, 5]  # the update, delete and insert all happened
    assert replica.trino(f"{replica.name}_cow") == expected
    assert replica.trino(f"{replica.name}_cow", "dt = 'd1'") == replica.source("dt = 'd1'") == expected[:2]
    # The filter prunes partitions: two splits fewer (d2's and d3's file groups; the other splits are the
    # aggregation's), and only d1's 2 rows read.
    table = f"hudi.{replica.database}.{replica.name}_cow"
    everything, d1 = (trino_query(f"select count(*) from {table}{where}")[1] for where in ("", " where dt = 'd1'"))
    assert everything["processedRows"] == 4, everything
    assert (d1["totalSplits"], d1["processedRows"]) == (everything["totalSplits"] - 2, 2), d1


def test_an_empty_history_folder_fails_trino_476_and_the_marker_fixes_it(replica: Replica) -> None:
    marker = Path(history_folder(replica.bases["cow"])) / MARKER_NAME
    assert marker.is_file()
    # Never archived: nothing else there (the local file system's hidden .crc files aside).
    assert [p.name for p in marker.parent.iterdir() if not p.name.startswith(".")] == [MARKER_NAME]
    marker.unlink()
    try:
        with pytest.raises(TrinoError, match="history does not exist|archived commit timeline"):
            replica.trino(f"{replica.name}_cow")
    finally:
        assert ensure_history_folder(replica.spark, replica.bases["cow"]) is True
    assert ensure_history_folder(replica.spark, replica.bases["cow"]) is False  # once
    assert replica.trino(f"{replica.name}_cow") == replica.source()
    assert replica.hudi("cow", "snapshot") == replica.source()  # Hudi does not see it


def test_mor_ro_and_rt_read_base_files_until_a_compaction(replica: Replica) -> None:
    table = f"{replica.name}_mor"
    read_optimized = replica.hudi("mor", "read_optimized")
    snapshot = replica.hudi("mor", "snapshot")
    assert snapshot == replica.source()
    assert read_optimized != snapshot  # the update and the delete are still in log files
    assert (1, "alice", 10, "d1") in read_optimized and (4, "dave", 40, "d2") in read_optimized
    assert replica.trino(f"{table}_ro") == read_optimized
    # Trino 476's known limit (docs/catalog.md#reading-them-from-trino): _rt and the bare name (the snapshot view in Hive) return the
    # read-optimized rows, not the snapshot.
    assert replica.trino(f"{table}_rt") == read_optimized
    assert replica.trino(table) == read_optimized

    replica.change("update {t} set qty = 31 where id = 3")
    replica.ingest("mor", "--compaction", "inline", "--hoodie-conf", "hoodie.compact.inline.max.delta.commits=1")
    assert replica.hudi("mor", "read_optimized") == replica.source()  # compacted: the base files hold everything
    assert replica.trino(f"{table}_ro") == replica.source()
    assert replica.trino(f"{table}_rt") == replica.trino(table) == replica.source()
