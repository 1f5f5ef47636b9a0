"""How long `hudi-cdc verify --repair` takes per 1,000 keys: ``python -m bench.repair --rows 200000 --keys 100,1000``.

A Postgres table of the stack's database (in the ``bench`` schema, which
Debezium does not publish) is loaded into a Hudi table by the first-load path
``bootstrap`` uses (``load_first`` over a ``SnapshotSource``), so the table has
every column hudi-cdc writes. Then, for each number of keys, that many keys are
corrupted straight in Hudi (80% changed values, 10% deleted, 10% added rows),
and ``repair`` is timed: verify (one pass, no stream to wait for), the read of
the keys at a WAL position, the ranked write, the read-back. The table must be
equal afterwards.
"""

from __future__ import annotations

import argparse
import os
import shutil
import time
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
    args = parser.parse_args()
    started_utc = results.now_utc()
    spark = spark_session(app_name="hudi-cdc-bench-repair", conf={"spark.driver.memory": "4g"})
    base = str(args.work / TABLE)
    os.environ.setdefault("BENCH_PGPASSWORD", "dbz")
    database = SourceDatabase(SOURCE_URL, password_env="BENCH_PGPASSWORD")
    load_s = build(spark, args.rows, base, database)
    rows, offset = [], 0
    for keys in (int(k) for k in args.keys.split(",")):
        corrupt(spark, base, keys, offset)
        offset += keys
        started = time.monotonic()
        done = repair(spark, table_config(spark, base), database, f"{SCHEMA}.{TABLE}", max_repair=keys)
        total = time.monotonic() - started
        assert len(done.keys) == keys and all(k.outcome == "repaired" for k in done.keys), done.describe()
        assert verify(spark, base, database, f"{SCHEMA}.{TABLE}").equal
        row = {
            "rows": args.rows, "keys": keys, "repair_s": round(total, 1),
            "verify_s": round(done.verify.duration_s, 1), "read_and_write_s": round(total - done.verify.duration_s, 1),
            "per_1000_keys_s": round(total * 1000 / keys, 1),
        }  # fmt: skip
        print(row, flush=True)
        rows.append(row)
    with connect() as conn:
        conn.execute(f"drop table {SCHEMA}.{TABLE}")
    results.write(
        "repair",
        parameters={"rows": args.rows, "keys": args.keys, "table_type": "COPY_ON_WRITE", "load_s": round(load_s, 1)},
        tables={"repair": results.table(RESULT_COLUMNS, rows)},
        directory=args.results or results.LOCAL,
        started_utc=started_utc,
    )


RESULT_COLUMNS = [
    results.column("rows", "table", "rows"), results.column("keys", "keys repaired", "keys"),
    results.column("repair_s", "repair, in all", "s"), results.column("verify_s", "of which verify", "s"),
    results.column("read_and_write_s", "of which the read at a position and the writes", "s"),
    results.column("per_1000_keys_s", "per 1,000 keys", "s"),
]  # fmt: skip


if __name__ == "__main__":
    main()
