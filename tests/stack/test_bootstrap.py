"""``hudi-cdc bootstrap``: a parallel first load inside an exported snapshot, then Debezium from the slot made with it.

Two things must hold. The copy reads every value as Debezium sends it, so the
stream writes into the same columns (checked against the same rows sent again by
Debezium). And the hand-over has no gap and no double: under concurrent writes,
killed once mid-load, the table ends equal to Postgres after the stream.
"""

from __future__ import annotations

import dataclasses
import json
import random
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from hudi_cdc.cli import main
from hudi_cdc.config import load_config
from hudi_cdc.ops.bootstrap import bootstrap
from hudi_cdc.ops.verify import verify
from hudi_cdc.sink.hudi import HudiTable
from hudi_cdc.testing.kafka import end_offsets, wait_until_quiet
from hudi_cdc.testing.postgres import connect
from hudi_cdc.upstream.database import SourceDatabase
from payloads.base import is_data_column
from tests.stack.conftest import BOOTSTRAP, REGISTRY
from tests.stack.connectors import postgres_connector
from tests.support import kill_when_pending, run_cli

pytestmark = [pytest.mark.kafka, pytest.mark.postgres, pytest.mark.hudi]

PG = SourceDatabase("postgresql://debezium:dbz@127.0.0.1:55432/inventory")

_TYPES_TABLE = """
create table {t} (
    id bigint primary key, small smallint, num_fixed numeric(12,3), num_free numeric, num_wide numeric(45,5),
    r real, d double precision, flag boolean, c5 char(5), v varchar(20), note text, born date,
    at_local timestamp, at_ms timestamp(3), at_zoned timestamptz, t_of_day time, t_ms time(3), span interval,
    doc jsonb, u uuid, raw bytea, tags text[], nums int4[]
)"""
_TYPES_ROWS = """
insert into {t}
select i, (i % 30000)::smallint, i * 1.125,
       case when i % 11 = 0 then null when i % 3 = 0 then 1.50 when i % 3 = 1 then i::numeric / 7 else 100.0 end,
       12345678901234567890123456789012345678.12300 + i, i / 3.0, i * 0.1, i % 2 = 0,
       case when i % 4 = 0 then 'ab' else 'abcde' end, 'v' || i, case when i % 5 = 0 then null else md5(i::text) end,
       date '2000-01-01' + i, timestamp '2026-01-01 00:00:00' + i * interval '1.000001 second',
       timestamp '2026-01-01 00:00:00' + i * interval '1.5 second',
       timestamptz '2026-01-01 00:00:00+02' + i * interval '1 minute 0.5 second',
       time '00:00:00' + i * interval '1.25 second', time '00:00:00' + i * interval '0.5 second',
       interval '1 month 2 days' * (i % 5) + i * interval '1 second',
       jsonb_build_object('i', i, 'tags', jsonb_build_array('a', 'b')), md5(i::text)::uuid,
       decode(md5(i::text), 'hex'), array['x' || i, null, 'y'], array[i, i + 1]
from generate_series(1, {n}) i
"""


def _config(topic: str, base: Path, table_type: str = "cow"):  # noqa: ANN202
    return load_config(
        env={},
        source="kafka",
        topic=topic,
        bootstrap_servers=BOOTSTRAP,
        schema_registry_url=REGISTRY,
        target_base_path=str(base),
        target_table=base.name,
        table_type=table_type,
    )


def _ingest(topic: str, base: Path, table_type: str = "cow") -> None:
    result = run_cli(
        "--source", "kafka", "--topic", topic, "--bootstrap-servers", BOOTSTRAP, "--schema-registry-url", REGISTRY,
        "--target-base-path", str(base), "--target-table", base.name, "--table-type", table_type,
    )  # fmt: skip
    assert result.exit_code == 0, result.output


def _bootstrap_here(command: list[str]) -> dict:
    """``hudi-cdc bootstrap ...`` (``command`` without its program) in this process, on the test's session."""
    result = CliRunner().invoke(main, command[1:], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout.strip().splitlines()[-1])


def _wait_for_messages(topic: str, count: int, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while sum(end_offsets(BOOTSTRAP, [topic]).values()) < count:
        assert time.monotonic() < deadline, f"{topic}: fewer than {count} messages after {timeout_s}s"
        time.sleep(0.5)


def _data(spark, base: Path):  # noqa: ANN001, ANN202
    """The source's columns (not the _source_* and other columns of our own, which differ by design)."""
    rows = HudiTable(spark, str(base)).read()
    return rows.select(*[c for c in rows.columns if is_data_column(c) and not c.startswith("_")])


def test_the_copy_reads_every_value_as_debezium_sends_it(spark, tmp_path: Path) -> None:  # noqa: ANN001
    run = uuid.uuid4().hex[:8]
    table, slot, prefix = f"inventory.boot_types_{run}", f"boot_types_{run}", f"boot{run}"
    topic = f"{prefix}.{table}"
    rows = 3000
    with connect() as conn:
        conn.execute(_TYPES_TABLE.format(t=table))
        conn.execute(_TYPES_ROWS.format(t=table, n=rows))
        conn.execute(f"analyze {table}")
    copied = tmp_path / "copied"
    result = bootstrap(_config(topic, copied), PG, table, slot=slot, ranges=4, spark=spark)
    assert (result.rows, result.ranges, result.already_loaded) == (rows, 4, False)
    assert result.checkpoint["start"] == "earliest"  # the new connector's topic does not exist yet
    snapshot = _data(spark, copied).localCheckpoint(eager=True)
    assert snapshot.select("id").distinct().count() == snapshot.count() == rows  # the ranges do not overlap

    with postgres_connector(
        f"boot-types-{run}", slot=slot, topic_prefix=prefix, table=table, **{"snapshot.mode": "no_data"}
    ):
        with connect() as conn:
            conn.execute(f"update {table} set id = id")  # every row once more, as Debezium sends it
        _wait_for_messages(topic, rows)
    streamed = tmp_path / "streamed"
    _ingest(topic, streamed)
    debezium = _data(spark, streamed)

    assert {f.name: f.dataType for f in snapshot.schema} == {f.name: f.dataType for f in debezium.schema}
    only_copy, only_stream = snapshot.exceptAll(debezium), debezium.exceptAll(snapshot)
    assert only_copy.count() == 0 and only_stream.count() == 0, (only_copy.take(3), only_stream.take(3))
    # The stream goes on into the copied table: the same rows, nothing stale, equal to Postgres.
    _ingest(topic, copied)
    assert _data(spark, copied).exceptAll(debezium).count() == 0
    assert verify(spark, str(copied), PG, table).equal


class _Writer(threading.Thread):
    """Inserts, updates and deletes in small transactions, and now and then a slow one, until stopped."""

    def __init__(self, table: str, seed: int) -> None:
        super().__init__(daemon=True)
        self.table, self.rng, self.stop, self.changes, self.error = (
            table,
            random.Random(seed),
            threading.Event(),
            0,
            None,
        )

    def run(self) -> None:
        try:
            with connect() as conn:
                while not self.stop.is_set():
                    with conn.transaction():
                        for _ in range(self.rng.randint(1, 5)):
                            self._change(conn)
                        if self.rng.random() < 0.05:
                            time.sleep(0.5)  # a slow transaction, open across whatever happens meanwhile
        except Exception as exc:  # noqa: BLE001 - reported by the test
            self.error = exc

    def _change(self, conn) -> None:  # noqa: ANN001
        key = self.rng.randint(1, 60_000)
        kind = self.rng.random()
        if kind < 0.4:
            conn.execute(
                f"update {self.table} set amount = amount + 1, note = %s where id = %s", (f"u{self.changes}", key)
            )
        elif kind < 0.6:
            conn.execute(f"delete from {self.table} where id = %s", (key,))
        else:
            conn.execute(f"insert into {self.table} (name, amount) values (%s, %s)", (f"new{self.changes}", kind))
        self.changes += 1


@pytest.mark.parametrize("table_type", ["cow", "mor"])
def test_killed_under_writes_the_rerun_hands_over_with_no_gap(spark, tmp_path: Path, table_type: str) -> None:  # noqa: ANN001
    run = uuid.uuid4().hex[:8]
    table, slot, prefix = f"inventory.boot_live_{run}", f"boot_live_{run}", f"bootlive{run}"
    topic = f"{prefix}.{table}"
    with connect() as conn:
        conn.execute(
            f"create table {table} (id bigserial primary key, name text not null, amount numeric(14,2), note text)"
        )
        conn.execute(f"insert into {table} (name, amount) select 'n' || i, i / 4.0 from generate_series(1, 50000) i")
        conn.execute(f"analyze {table}")
    base = tmp_path / f"live_{table_type}"
    command = [
        str(Path(sys.executable).parent / "hudi-cdc"), "bootstrap", "--source", "kafka", "--topic", topic,
        "--bootstrap-servers", BOOTSTRAP, "--schema-registry-url", REGISTRY, "--target-base-path", str(base),
        "--target-table", base.name, "--table-type", table_type, "--source-url", PG.url, "--source-table", table,
        "--slot", slot, "--ranges", "3", "--json",
    ]  # fmt: skip
    writer = _Writer(table, seed=len(table_type))
    writer.start()
    try:
        # Killed while it writes (the copy is read by that very job): the table has no commit, the slot is left.
        # A bulk insert writes base files only: a commit on MERGE_ON_READ too.
        assert kill_when_pending(command, base / ".hoodie" / "timeline", "commit")
        assert not HudiTable(spark, str(base)).has_commits()
        # The reruns in this process: only the killed run needs one of its own.
        loaded = _bootstrap_here(command)
        assert loaded["replaced_slot"] and not loaded["already_loaded"] and loaded["rows"] > 40_000
        # No index set: the bucket default, sized by Postgres's estimate of the rows (options.bucket_count).
        assert HudiTable(spark, str(base)).checkpoint_commit().extra["hudi_cdc.index"] == "BUCKET(SIMPLE, 4, id)"
        assert _bootstrap_here(command)["already_loaded"]

        with postgres_connector(
            f"boot-live-{run}", slot=slot, topic_prefix=prefix, table=table, **{"snapshot.mode": "no_data"}
        ):
            time.sleep(5)  # the writer goes on while the stream starts
            writer.stop.set()
            writer.join(30)
            assert writer.error is None, writer.error
            _wait_for_messages(topic, 1)
            wait_until_quiet(BOOTSTRAP, [topic])
        _ingest(topic, base, table_type)
    finally:
        writer.stop.set()
    assert writer.changes > 100
    comparison = verify(spark, str(base), PG, table)
    assert comparison.equal, comparison
    with connect() as conn:
        assert comparison.source_rows == conn.execute(f"select count(*) from {table}").fetchone()[0]


def test_an_empty_table_is_loaded_synced_to_the_catalog_and_a_rerun_changes_nothing(
    spark,  # noqa: ANN001
    tmp_path: Path,
    metastore_uri: str,
) -> None:
    run = uuid.uuid4().hex[:8]
    table, slot = f"inventory.boot_empty_{run}", f"boot_empty_{run}"
    with connect() as conn:
        conn.execute(f"create table {table} (id bigint primary key, v text)")
    base = tmp_path / "empty"
    catalog = {"catalog": "hms", "catalog_uri": metastore_uri, "catalog_database": f"boot_{run}"}
    config = dataclasses.replace(_config(f"bootempty{run}.{table}", base), **catalog)
    conf = spark.sparkContext._jvm.org.apache.hadoop.hive.conf.HiveConf()
    conf.set("hive.metastore.uris", metastore_uri)
    metastore = spark.sparkContext._jvm.org.apache.hadoop.hive.metastore.HiveMetaStoreClient(conf)
    try:
        first = bootstrap(config, PG, table, slot=slot, spark=spark)
        assert first.commit_time is not None and first.rows == 0
        assert HudiTable(spark, str(base)).read().count() == 0
        registered = metastore.getTable(f"boot_{run}", f"boot_empty_{run}")  # the first load is in the catalog
        assert str(registered.getParameters().get("last_commit_time_sync")) == first.commit_time
        again = bootstrap(config, PG, table, slot=slot, spark=spark)
        assert again.already_loaded and again.consistent_point == first.consistent_point
    finally:
        if f"boot_{run}" in [str(d) for d in metastore.getAllDatabases()]:
            metastore.dropDatabase(f"boot_{run}", False, True, True)
        metastore.close()
        with connect() as conn:
            conn.execute("select pg_drop_replication_slot(%s)", (slot,))
