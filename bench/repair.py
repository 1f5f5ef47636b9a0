"""How long `hudi-cdc verify --repair` takes per 1,000 keys: ``python -m bench.repair --rows 200000 --keys 100,1000``.

A Postgres table of the stack's database (in the ``bench`` schema, which
Debezium does not publish) is loaded into a Hudi table by the first-load path
``bootstrap`` uses (``load_first`` over a ``SnapshotSource``), so the table has
every column hudi-cdc writes. Then, for each number of keys, that many keys are
corrupted straight in Hudi (80% changed values, 10% deleted, 10% added rows),
and ``repair`` is timed: verify (one pass, no stream to wait for), the read of
the keys at a WAL position, the ranked write, the read-back. The table must be
equal afterwards.

``--source mariadb``: the table is the stack's MariaDB's (``inventory``, a new
table per run, which Debezium publishes), loaded into Hudi by ingesting its
topic with ``--flavor mysql``; the repair reads the keys in a consistent
snapshot at its binlog position.
"""

from __future__ import annotations

import argparse
import os
import shutil
import time
import uuid
from decimal import Decimal
from pathlib import Path

from bench import results
from hudi_cdc.ops.repair import repair, table_config
from hudi_cdc.ops.verify import verify
from hudi_cdc.sink import options as opt
from hudi_cdc.testing.postgres import connect
from hudi_cdc.upstream.database import SourceDatabase
from payloads.base import is_data_column

TABLE = "bench_repair"
SCHEMA = "bench"  # not in the stack's publication
SOURCE_URL = "postgresql://debezium@127.0.0.1:55432/inventory"


def build(spark, rows: int, base: str, database: SourceDatabase) -> float:  # noqa: ANN001
    from hudi_cdc.config import IngestConfig
    from hudi_cdc.pipeline import load_first
    from hudi_cdc.sources.snapshot import SnapshotSource

    with connect() as conn:
        conn.execute(f"create schema if not exists {SCHEMA}")
        conn.execute(f"drop table if exists {SCHEMA}.{TABLE}")
        conn.execute(
            f"create table {SCHEMA}.{TABLE} (id bigint primary key, name text, amount numeric(12,2), note text)"
        )
        conn.execute(
            f"insert into {SCHEMA}.{TABLE} select n, 'name ' || n, (n % 100003) / 100.0, md5(n::text)"  # noqa: S608
            f" from generate_series(1, {rows}) n"
        )
        conn.execute(f"analyze {SCHEMA}.{TABLE}")
    shutil.rmtree(base, ignore_errors=True)  # a new table each run (and its tombstones beside it)
    shutil.rmtree(base + "_hudi_cdc_tombstones", ignore_errors=True)
    started = time.monotonic()
    config = IngestConfig(
        target_base_path=base, target_table=TABLE, record_key_fields=("id",), source="files", source_path=base
    )
    source = SnapshotSource(spark, database, f"{SCHEMA}.{TABLE}", key_fields=("id",), next_checkpoint={})
    load_first(config, source, spark=spark)
    return time.monotonic() - started


MARIADB_URL = "mysql://debezium@127.0.0.1:53306/inventory"
BOOTSTRAP, REGISTRY = "127.0.0.1:59092", "http://127.0.0.1:58080/apis/ccompat/v7"  # the stack's


def build_mariadb(spark, rows: int, base: str, table: str) -> float:  # noqa: ANN001
    """A MariaDB table of ``rows`` rows, published by Debezium, ingested into a new COW table; the load's seconds."""
    import hashlib

    from hudi_cdc.config import IngestConfig
    from hudi_cdc.pipeline import ingest_once
    from hudi_cdc.testing import mariadb

    topic = mariadb.TOPIC_PREFIX + table
    with mariadb.connect() as conn, conn.cursor() as cur:
        cur.execute(f"create table {table} (id bigint primary key, name text, amount decimal(12,2), note text)")
        for start in range(1, rows + 1, 10_000):
            batch = [(n, f"name {n}", Decimal(n % 100003) / 100, hashlib.md5(str(n).encode()).hexdigest())  # noqa: S324
                     for n in range(start, min(start + 10_000, rows + 1))]  # fmt: skip
            cur.executemany(f"insert into {table} values (%s, %s, %s, %s)", batch)  # noqa: S608
        mariadb.wait_for_stream(conn, BOOTSTRAP, [topic], since={(topic, 0): 0}, timeout_s=900)
    shutil.rmtree(base, ignore_errors=True)
    shutil.rmtree(base + "_hudi_cdc_tombstones", ignore_errors=True)
    started = time.monotonic()
    config = IngestConfig(
        target_base_path=base, target_table=TABLE, source="kafka", topic=topic, flavor="mysql",
        bootstrap_servers=BOOTSTRAP, schema_registry_url=REGISTRY,
    )  # fmt: skip
    while ingest_once(config, spark=spark).committed:
        pass
    return time.monotonic() - started


def corrupt(spark, base: str, keys: int, offset: int) -> None:  # noqa: ANN001
    """``keys`` keys from ``offset`` on: 80% changed, 10% deleted, 10% added (ids the source never had)."""
    from hudi_cdc.sink.hudi import HudiTable, index_conf

    frame = spark.read.format("hudi").load(base)
    data = frame.select(*[c for c in frame.columns if is_data_column(c)])
    picked = data.where(f"id > {offset} and id <= {offset + keys}")
    changed = picked.where(f"id <= {offset + keys * 8 // 10}").selectExpr("*", "'tampered' as name2")
    changed = changed.drop("name").withColumnRenamed("name2", "name").select(*data.columns)
    deleted = picked.where(f"id > {offset + keys * 8 // 10} and id <= {offset + keys * 9 // 10}")
    added = picked.where(f"id > {offset + keys * 9 // 10}").selectExpr(
        "-id as id", *[c for c in data.columns if c != "id"]
    )
    options = opt.write_options(
        table_name=TABLE, table_type="COPY_ON_WRITE", record_key_fields=("id",), partition_path_field=None,
        ordering_field="_source_order", user_conf=index_conf(HudiTable(spark, base), {}, partitioned=False),
    )  # fmt: skip
    for rows, operation in ((changed.unionByName(added), "upsert"), (deleted, "delete")):
        rows.write.format("hudi").options(**{**options, opt.OPERATION: operation}).mode("append").save(base)


def main() -> None:
    from hudi_cdc.spark import spark_session

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--keys", default="100,1000", help="numbers of corrupted keys, comma separated")
    parser.add_argument("--work", type=Path, default=Path("/tmp/hudi-cdc-bench-repair"))
    parser.add_argument("--results", type=Path, help="write the result file under this folder")
    parser.add_argument("--source", choices=["postgres", "mariadb"], default="postgres")
    args = parser.parse_args()
    started_utc = results.now_utc()
    spark = spark_session(app_name="hudi-cdc-bench-repair", conf={"spark.driver.memory": "4g"})
    base = str(args.work / TABLE)
    os.environ.setdefault("BENCH_PGPASSWORD", "dbz")
    if args.source == "mariadb":
        source = f"inventory.{TABLE}_{uuid.uuid4().hex[:8]}"
        database = SourceDatabase(MARIADB_URL, password_env="BENCH_PGPASSWORD")
        load_s = build_mariadb(spark, args.rows, base, source.split(".")[1])
    else:
        source = f"{SCHEMA}.{TABLE}"
        database = SourceDatabase(SOURCE_URL, password_env="BENCH_PGPASSWORD")
        load_s = build(spark, args.rows, base, database)
    rows = measure(spark, base, database, source, args)
    drop(database, source)
    results.write(
        "repair",
        parameters={"rows": args.rows, "keys": args.keys, "table_type": "COPY_ON_WRITE", "load_s": round(load_s, 1),
                    "source": args.source},
        tables={"repair": results.table(RESULT_COLUMNS, rows)},
        series="repair" if args.source == "postgres" else f"repair-{args.source}",
        directory=args.results or results.LOCAL,
        started_utc=started_utc,
    )  # fmt: skip


def drop(database: SourceDatabase, source: str) -> None:
    if database.kind == "postgres":
        with connect() as conn:
            conn.execute(f"drop table {source}")
        return
    from hudi_cdc.testing import mariadb

    with mariadb.connect() as conn, conn.cursor() as cur:
        cur.execute(f"drop table {source}")


def measure(spark, base: str, database: SourceDatabase, source: str, args: argparse.Namespace) -> list[dict]:  # noqa: ANN001
    """Corrupt, repair and verify for each number of keys; a result row each."""
    rows, offset = [], 0
    for keys in (int(k) for k in args.keys.split(",")):
        corrupt(spark, base, keys, offset)
        offset += keys
        started = time.monotonic()
        done = repair(spark, table_config(spark, base), database, source, max_repair=keys)
        total = time.monotonic() - started
        assert len(done.keys) == keys and all(k.outcome == "repaired" for k in done.keys), done.describe()
        assert verify(spark, base, database, source).equal
        row = {
            "rows": args.rows, "keys": keys, "repair_s": round(total, 1),
            "verify_s": round(done.verify.duration_s, 1), "read_and_write_s": round(total - done.verify.duration_s, 1),
            "per_1000_keys_s": round(total * 1000 / keys, 1),
        }  # fmt: skip
        print(row, flush=True)
        rows.append(row)
    return rows


RESULT_COLUMNS = [
    results.column("rows", "table", "rows"), results.column("keys", "keys repaired", "keys"),
    results.column("repair_s", "repair, in all", "s"), results.column("verify_s", "of which verify", "s"),
    results.column("read_and_write_s", "of which the read at a position and the writes", "s"),
    results.column("per_1000_keys_s", "per 1,000 keys", "s"),
]  # fmt: skip


if __name__ == "__main__":
    main()
