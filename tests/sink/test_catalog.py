"""Catalog sync against a real Hive Metastore (issue 45; docs/catalog.md): real Spark, real Hudi, the stack's
metastore (HUDI_CDC_TEST_METASTORE_URI points at another one). What the catalog holds is read back from the
metastore itself, through a Hive metastore client on the test's JVM.

Folder sources: each round is a file of Debezium envelopes written here; a column added at the source is a
new envelope schema.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import hudi_cdc
from hudi_cdc.cli import main
from hudi_cdc.config import load_config
from hudi_cdc.errors import ConfigError, TerminalSinkError
from hudi_cdc.sink import catalog
from hudi_cdc.testing.envelopes import envelope_schema, pg_event, write_events
from hudi_cdc.testing.faults import kill_group
from tests.stack.conftest import METASTORE_URI  # the stack's, or HUDI_CDC_TEST_METASTORE_URI

pytestmark = [pytest.mark.spark, pytest.mark.hudi, pytest.mark.stack]

HUDI_CDC = str(Path(sys.executable).parent / "hudi-cdc")
TOPIC = "dbserver1.public.orders"
COLUMNS = [("id", "long"), ("name", ["null", "string"]), ("region", ["null", "string"])]


class Orders:
    """A folder of ``dbserver1.public.orders`` change files; each :meth:`round` is one more file."""

    def __init__(self, root: Path, columns: list[tuple[str, Any]] = COLUMNS) -> None:
        self.folder = root / TOPIC / "partition=0"
        self.columns = list(columns)
        self.lsn = 100
        self.files = 0

    @property
    def path(self) -> str:
        return str(self.folder.parent)

    def round(self, rows: list[dict[str, Any]]) -> None:
        schema = envelope_schema("orders", self.columns)
        events = []
        for row in rows:
            self.lsn += 10
            events.append(pg_event("c", lsn=self.lsn, after=row, table="orders"))
        write_events(self.folder / f"{TOPIC}+0+{self.files:010d}.avro", schema, events)
        self.files += 1


class Metastore:
    """The metastore as a reader sees it (a Hive metastore client on the test's JVM)."""

    def __init__(self, spark: Any, uri: str = METASTORE_URI) -> None:  # noqa: ANN401
        gateway = spark.sparkContext._jvm
        conf = gateway.org.apache.hadoop.hive.conf.HiveConf()
        conf.set("hive.metastore.uris", uri)
        self.client = gateway.org.apache.hadoop.hive.metastore.HiveMetaStoreClient(conf)
        self.created: list[str] = []

    def database(self, tmp_path: Path) -> str:
        """A database name of the test's own, dropped (with its tables) when the module's tests end."""
        name = "t" + tmp_path.name.lower().replace("-", "_")[-20:] + f"_{os.getpid()}"
        self.created.append(name)
        return name

    def drop_created(self) -> None:
        for name in self.created:
            if name in [str(d) for d in self.client.getAllDatabases()]:
                self.client.dropDatabase(name, False, True, True)  # metadata only; the tables' files are tmp_path's

    def table(self, database: str, name: str) -> dict[str, Any] | None:
        if not self.client.tableExists(database, name):
            return None
        table = self.client.getTable(database, name)
        sd = table.getSd()
        return {
            "columns": {str(c.getName()): str(c.getType()) for c in sd.getCols()},
            "partition_keys": [str(c.getName()) for c in table.getPartitionKeys()],
            "location": str(sd.getLocation()),
            "input_format": str(sd.getInputFormat()).rsplit(".", 1)[-1],
            "synced": str(table.getParameters().get("last_commit_time_sync")),
            "partitions": sorted(str(p) for p in self.client.listPartitionNames(database, name, -1)),
        }


@pytest.fixture(scope="module")
def metastore(spark: Any) -> Iterator[Metastore]:  # noqa: ANN401
    host, port = METASTORE_URI.removeprefix("thrift://").split(":")
    with socket.socket() as probe:
        probe.settimeout(1)
        if probe.connect_ex((host, int(port))) != 0:  # as tests/stack's metastore_uri: skipped, but fails in CI
            why = f"the Hive metastore at {METASTORE_URI} is down: make stack-up (or HUDI_CDC_TEST_METASTORE_URI)"
            pytest.fail(f"CI=true but {why}") if os.environ.get("CI") == "true" else pytest.skip(why)
    store = Metastore(spark)
    yield store
    store.drop_created()
    store.client.close()


def _options(orders: Orders, base: Path, database: str, **kw: Any) -> dict[str, Any]:  # noqa: ANN401
    return {
        "source_path": orders.path,
        "target_base_path": str(base),
        "target_table": "orders",
        "record_key_fields": "id",
        "catalog": "hms",
        "catalog_uri": METASTORE_URI,
        "catalog_database": database,
        "schema_change_behavior": "evolve",
        "env": {},
        **kw,
    }


def test_partitioned_cow_syncs_only_when_schema_or_partitions_change(spark, metastore, tmp_path: Path) -> None:  # noqa: ANN001
    orders, base, db = Orders(tmp_path / "in"), tmp_path / "orders", metastore.database(tmp_path)
    options = _options(orders, base, db, partition_path_field="region")
    orders.round([{"id": 1, "name": "a", "region": "eu"}, {"id": 2, "name": "b", "region": "us"}])
    first = hudi_cdc.ingest(**options)
    assert first.details["catalog"]["synced"] is True
    table = metastore.table(db, "orders")
    assert table is not None
    assert table["synced"] == first.commit_time
    assert table["location"].rstrip("/").endswith(str(base))
    assert table["partition_keys"] == ["region"] and table["partitions"] == ["region=eu", "region=us"]
    assert {"id": "bigint", "name": "string", "_source_lsn": "bigint"}.items() <= table["columns"].items()
    assert table["input_format"] == "HoodieParquetInputFormat"

    orders.round([{"id": 1, "name": "a2", "region": "eu"}])  # no new column, no new partition: no sync
    second = hudi_cdc.ingest(**options)
    assert second.committed and second.details["catalog"]["synced"] is False
    assert metastore.table(db, "orders")["synced"] == first.commit_time  # type: ignore[index]

    catalog.forget()  # a new process (a scheduled run): the catalog is a commit behind, one that needs nothing
    orders.round([{"id": 2, "name": "b2", "region": "us"}])
    again = hudi_cdc.ingest(**options)
    assert again.committed and again.details["catalog"]["synced"] is False
    assert metastore.table(db, "orders")["synced"] == first.commit_time  # type: ignore[index]

    orders.round([{"id": 3, "name": "c", "region": "apac"}])  # a new partition: synced
    third = hudi_cdc.ingest(**options)
    assert third.details["catalog"]["reason"].startswith("new partition(s) apac")
    after = metastore.table(db, "orders")
    assert after is not None and after["synced"] == third.commit_time
    assert after["partitions"] == ["region=apac", "region=eu", "region=us"]

    catalog.forget()  # a new process again: behind by a commit that changed the schema
    orders.columns.append(("email", ["null", "string"]))  # a column added at the source: synced
    orders.round([{"id": 4, "name": "d", "region": "eu", "email": "d@x"}])
    fourth = hudi_cdc.ingest(**options)
    assert fourth.details["catalog"]["reason"] == "the schema changed"
    assert metastore.table(db, "orders")["columns"]["email"] == "string"  # type: ignore[index]
    status = catalog.catalog_status(spark, load_config(**options))
    assert status is not None and status["lagging"] is False and status["synced_to"] == fourth.commit_time


def test_a_catalog_name_the_source_cannot_render_fails_before_anything_is_written(spark, tmp_path: Path) -> None:  # noqa: ANN001
    orders, base = Orders(tmp_path / "in"), tmp_path / "orders"
    orders.round([{"id": 1, "name": "a", "region": "eu"}])
    with pytest.raises(ConfigError, match=r"catalog_database '\{database\}' renders ''.*\{database\} not known"):
        hudi_cdc.ingest(**_options(orders, base, "{database}"))  # a files source knows no database
    assert not (base / ".hoodie").exists()


def test_mor_registers_the_snapshot_ro_and_rt_tables(spark, metastore, tmp_path: Path) -> None:  # noqa: ANN001
    orders, base, db = Orders(tmp_path / "in"), tmp_path / "orders", metastore.database(tmp_path)
    orders.round([{"id": 1, "name": "a", "region": "eu"}])
    result = hudi_cdc.ingest(**_options(orders, base, db, table_type="mor"))
    views = {name: metastore.table(db, name) for name in ("orders", "orders_ro", "orders_rt")}
    assert all(v is not None and v["synced"] == result.commit_time for v in views.values()), views
    formats = {name: v["input_format"] for name, v in views.items() if v}
    assert formats == {
        "orders": "HoodieParquetRealtimeInputFormat",  # Hudi 1.2's bare name: the snapshot view, as _rt
        "orders_ro": "HoodieParquetInputFormat",
        "orders_rt": "HoodieParquetRealtimeInputFormat",
    }
    assert all(v["location"].rstrip("/").endswith(str(base)) for v in views.values() if v)


class Outage:
    """A TCP relay to the metastore that can be cut: a real outage for the client, the metastore itself untouched."""

    def __init__(self, target: str) -> None:
        host, port = target.removeprefix("thrift://").split(":")
        self.target = (host, int(port))
        self.server = socket.create_server(("127.0.0.1", 0))
        self.uri = f"thrift://127.0.0.1:{self.server.getsockname()[1]}"
        self.up = True
        self.links: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            if not self.up:
                client.close()
                continue
            upstream = socket.create_connection(self.target)
            self.links += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.close()
                except OSError:
                    pass

    def cut(self) -> None:
        self.up = False
        for link in self.links:
            try:
                link.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.links.clear()

    def close(self) -> None:
        self.cut()
        self.server.close()


def test_metastore_down_the_commit_stands_status_lags_and_the_next_round_catches_up(
    spark,  # noqa: ANN001
    metastore,  # noqa: ANN001
    tmp_path: Path,
) -> None:
    orders, base, db = Orders(tmp_path / "in"), tmp_path / "orders", metastore.database(tmp_path)
    relay = Outage(METASTORE_URI)
    try:
        options = _options(orders, base, db, catalog_uri=relay.uri)
        orders.round([{"id": 1, "name": "a", "region": "eu"}])
        first = hudi_cdc.ingest(**options)
        assert first.details["catalog"]["synced"] is True

        relay.cut()
        orders.columns.append(("email", ["null", "string"]))
        orders.round([{"id": 2, "name": "b", "region": "us", "email": "b@x"}])
        down = hudi_cdc.ingest(**options)  # the round succeeds: the commit stands
        assert down.committed and down.details["catalog"]["synced"] is False and down.details["catalog"]["error"]
        rows = spark.read.format("hudi").load(str(base)).where("id = 2").select("email").collect()
        assert [r.email for r in rows] == ["b@x"]
        assert "email" not in metastore.table(db, "orders")["columns"]  # type: ignore[index]

        relay.up = True
        status = catalog.catalog_status(spark, load_config(**options))
        assert status is not None and status["lagging"] is True
        assert (status["synced_to"], status["table_at"]) == (first.commit_time, down.commit_time)

        caught_up = hudi_cdc.ingest(**options)  # nothing new: the owed sync runs
        assert not caught_up.committed and caught_up.details["catalog"]["synced"] is True
        table = metastore.table(db, "orders")
        assert table is not None and table["columns"]["email"] == "string" and table["synced"] == down.commit_time
        assert catalog.catalog_status(spark, load_config(**options))["lagging"] is False  # type: ignore[index]
    finally:
        relay.close()


def test_killed_between_the_commit_and_the_sync_the_next_round_syncs(spark, metastore, tmp_path: Path) -> None:  # noqa: ANN001
    orders, base, db = Orders(tmp_path / "in"), tmp_path / "orders", metastore.database(tmp_path)
    orders.round([{"id": 1, "name": "a", "region": "eu"}])
    command = [
        "ingest", "--source", "files", "--source-path", orders.path, "--target-base-path", str(base),
        "--target-table", "orders", "--record-key-fields", "id", "--catalog", "hms", "--catalog-uri", METASTORE_URI,
        "--catalog-database", db,
    ]  # fmt: skip
    marker = tmp_path / "paused"
    env = {**os.environ, catalog.PAUSE_ENV: str(marker)}
    process = subprocess.Popen([HUDI_CDC, *command], env=env, start_new_session=True, stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 240
        while not marker.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert marker.exists(), f"the ingest never reached the sync (exit {process.poll()})"
    finally:
        kill_group(process)
    timeline = base / ".hoodie" / "timeline"
    completed = sorted(n.split("_")[0] for n in os.listdir(timeline) if n.endswith(".commit"))
    assert len(completed) == 1  # the data commit is complete...
    assert metastore.table(db, "orders") is None  # ...and the catalog never heard of it

    catalog.forget()  # this process starts fresh, as the next process would
    result = CliRunner().invoke(main, [*command, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    table = metastore.table(db, "orders")
    assert table is not None and table["synced"] == completed[0]
    assert {"id", "name", "region"} <= table["columns"].keys()


def test_a_type_change_the_metastore_refuses_is_terminal_and_names_column_types_and_fix(
    spark,  # noqa: ANN001
    metastore,  # noqa: ANN001
    tmp_path: Path,
) -> None:
    # The table is rebuilt at the same path with qty narrowed from text to int (a re-bootstrap after a type
    # change): HMS 3.1.3 refuses string -> int (hive.metastore.disallow.incompatible.col.type.changes).
    base, db = tmp_path / "orders", metastore.database(tmp_path)
    before = Orders(tmp_path / "in1", [("id", "long"), ("qty", ["null", "string"])])
    before.round([{"id": 1, "qty": "seven"}])
    hudi_cdc.ingest(**_options(before, base, db))
    shutil.rmtree(base)
    catalog.forget()
    after = Orders(tmp_path / "in2", [("id", "long"), ("qty", ["null", "int"])])
    after.round([{"id": 1, "qty": 7}])
    with pytest.raises(TerminalSinkError) as refused:
        hudi_cdc.ingest(**_options(after, base, db))
    message = str(refused.value)
    assert f"{db}.orders refused the schema change (column qty from string to int)" in message
    assert "stands" in message and "type_changed" in message and "disallow.incompatible.col.type.changes" in message
    assert [r.qty for r in spark.read.format("hudi").load(str(base)).collect()] == [7]  # the commit stands
    assert metastore.table(db, "orders")["columns"]["qty"] == "string"  # type: ignore[index]

    other = Orders(tmp_path / "in3")  # another Hudi table rendering the same catalog name is refused
    other.round([{"id": 1, "name": "a", "region": "eu"}])
    with pytest.raises(
        TerminalSinkError, match=rf"{db}\.orders in the hms catalog is the table at .*/orders, not this"
    ):
        hudi_cdc.ingest(**_options(other, tmp_path / "elsewhere", db))
    assert metastore.table(db, "orders")["location"].rstrip("/").endswith(str(base))  # type: ignore[index]
