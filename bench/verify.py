"""How long `hudi-cdc verify` takes on a big table: ``python -m bench.verify --rows 10000000``.

Builds the same rows twice, from the row number alone: a Postgres table in the
local stack's database (``generate_series``) and a Hudi COW table written by
Spark's bulk insert (not through Debezium: this measures the comparison, not
the ingest). Then times ``verify`` on the equal tables, and again after
changing, deleting and adding a few rows in Hudi, which must all be named.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from bench import results
from hudi_cdc.ops.verify import verify
from hudi_cdc.sink import options as opt
from hudi_cdc.testing.postgres import connect
from hudi_cdc.upstream.database import SourceDatabase

TABLE = "bench_verify"
SCHEMA = "bench"  # not in the stack's publication: Debezium must not publish 10M inserts
SOURCE_URL = "postgresql://debezium@127.0.0.1:55432/inventory"
# One definition per column, in Postgres and in Spark SQL, from the row number n.
COLUMNS = [
    ("id", "bigint", "n", "n"),
    ("name", "text", "'name ' || n", "concat('name ', n)"),
    ("amount", "numeric(12,2)", "((n % 1000003) - 500000)::numeric / 100", "cast(((n % 1000003) - 500000) / 100 as decimal(12,2))"),
    # IEEE division in both (numeric n / 7.0 cast to double rounds differently in the last bit: verify saw it).
    ("ratio", "double precision", "n::float8 / 7", "cast(n as double) / 7"),
    ("flag", "boolean", "n % 3 = 0", "n % 3 = 0"),
    ("born", "date", "date '2000-01-01' + (n % 9000)::int", "date_add(date'2000-01-01', cast(n % 9000 as int))"),
    ("seen", "timestamptz", "timestamptz '2024-01-01 00:00:00+00' + n * interval '1 second'",
     "timestamp_seconds(1704067200 + n)"),
    ("note", "text", "case when n % 10 = 0 then null else md5(n::text) end",
     "case when n % 10 = 0 then null else md5(cast(n as string)) end"),
]  # fmt: skip


def build(spark, rows: int, base: str) -> dict[str, float]:  # noqa: ANN001
    timings = {}
    started = time.monotonic()
    with connect() as conn:
        conn.execute(f"create schema if not exists {SCHEMA}")
        conn.execute(f"drop table if exists {SCHEMA}.{TABLE}")
        conn.execute(f"create table {SCHEMA}.{TABLE} ({', '.join(f'{c} {t}' for c, t, _, _ in COLUMNS)})")
        conn.execute(
            f"insert into {SCHEMA}.{TABLE} select {', '.join(pg for _, _, pg, _ in COLUMNS)}"  # noqa: S608
            f" from generate_series(1, {rows}) n"
        )
        conn.execute(f"alter table {SCHEMA}.{TABLE} add primary key (id)")
        conn.execute(f"analyze {SCHEMA}.{TABLE}")
    timings["postgres_load_s"] = time.monotonic() - started
    started = time.monotonic()
    frame = spark.range(1, rows + 1).withColumnRenamed("id", "n")
    frame = frame.selectExpr(*[f"{sp} as {c}" for c, _, _, sp in COLUMNS]).selectExpr("*", "'0' as _source_order")
    frame.write.format("hudi").options(
        **{
            opt.TABLE_NAME: TABLE,
            opt.TABLE_TYPE: "COPY_ON_WRITE",
            opt.OPERATION: "bulk_insert",
            opt.RECORD_KEY: "id",
            opt.PARTITION_PATH: "",
            opt.KEYGEN_CLASS: "org.apache.hudi.keygen.NonpartitionedKeyGenerator",
            opt.PRECOMBINE_FIELD: "_source_order",
            opt.COLUMN_STATS: "false",
        }
    ).mode("overwrite").save(base)
    timings["hudi_load_s"] = time.monotonic() - started
    return timings


def corrupt(spark, base: str) -> None:  # noqa: ANN001
    """A changed value, a deleted row and an extra row, written into the Hudi table."""
    frame = spark.read.format("hudi").load(base)
    data = [c for c in frame.columns if not c.startswith("_hoodie_")]
    some = frame.select(*data).where("id in (17, 4242)").collect()
    changed = {**some[0].asDict(), "name": "tampered", "_source_order": "9"}
    extra = {**some[0].asDict(), "id": -1, "_source_order": "9"}
    options = {
        opt.TABLE_NAME: TABLE,
        opt.RECORD_KEY: "id",
        opt.PARTITION_PATH: "",
        opt.KEYGEN_CLASS: "org.apache.hudi.keygen.NonpartitionedKeyGenerator",
        opt.PRECOMBINE_FIELD: "_source_order",
    }
    schema = frame.select(*data).schema
    spark.createDataFrame([changed, extra], schema).write.format("hudi").options(
        **options, **{opt.OPERATION: "upsert"}
    ).mode("append").save(base)
    spark.createDataFrame([some[1].asDict()], schema).write.format("hudi").options(
        **options, **{opt.OPERATION: "delete"}
    ).mode("append").save(base)


def main() -> None:
    from hudi_cdc.spark import spark_session

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--work", type=Path, default=Path("/tmp/hudi-cdc-bench-verify"))
    parser.add_argument(
        "--results", type=Path, help="write the result file under this folder (default: .bench/results)"
    )
    args = parser.parse_args()
    started_utc = results.now_utc()
    spark = spark_session(app_name="hudi-cdc-bench-verify", conf={"spark.driver.memory": "4g"})
    base = str(args.work / TABLE)
    timings = build(spark, args.rows, base)
    os.environ.setdefault("BENCH_PGPASSWORD", "dbz")
    database = SourceDatabase(SOURCE_URL, password_env="BENCH_PGPASSWORD")
    started = time.monotonic()
    equal = verify(spark, base, database, f"{SCHEMA}.{TABLE}")
    timings["verify_equal_s"] = time.monotonic() - started
    assert equal.equal, equal.describe()
    corrupt(spark, base)
    started = time.monotonic()
    different = verify(spark, base, database, f"{SCHEMA}.{TABLE}")
    timings["verify_different_s"] = time.monotonic() - started
    found = {(d.key["id"], d.kind) for d in different.differences}
    assert found == {("17", "changed"), ("4242", "missing"), ("-1", "extra")}, different.describe()
    with connect() as conn:
        conn.execute(f"drop table {SCHEMA}.{TABLE}")
    row = {"rows": args.rows, "columns": len(COLUMNS), **{k: round(v, 1) for k, v in timings.items()}}
    print(row)
    results.write(
        "verify",
        parameters={"rows": args.rows, "columns": len(COLUMNS), "driver_memory": "4g"},
        tables={"verify": results.table(RESULT_COLUMNS, [row])},
        directory=args.results or results.LOCAL,
        started_utc=started_utc,
    )


RESULT_COLUMNS = [
    results.column("rows", "table", "rows"), results.column("columns", unit="columns"),
    results.column("verify_equal_s", "verify, equal tables", "s"),
    results.column("verify_different_s", "verify, a changed, a deleted and an added row (all named)", "s"),
    results.column("postgres_load_s", "building them: Postgres load", "s"),
    results.column("hudi_load_s", "building them: Hudi bulk insert", "s"),
]  # fmt: skip


if __name__ == "__main__":
    main()
