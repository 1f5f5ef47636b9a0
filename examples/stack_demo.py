"""The real pipeline end to end: PostgreSQL and MariaDB -> Debezium -> Kafka + Apicurio (Avro) -> hudi-cdc -> Hudi.

Needs the local stack (`make stack-up`; `make demo` starts it). Runs a random
workload on the stack's sample database (three tables: a FULL replica-identity
table, a composite-key table with primary-key updates, and a table of TOASTed
text and bytea under REPLICA IDENTITY DEFAULT), replicates every table into a
COPY_ON_WRITE and a MERGE_ON_READ Hudi table, and compares each Hudi table with
Postgres row for row, value for value and type for type. Then more changes,
another round, another comparison. Then the same for the same three tables in
MariaDB (binlog, `--flavor mysql`), across a binlog rotation, each table
compared with MariaDB by `hudi-cdc verify`. Exits 1 if any table differs.
"""

from __future__ import annotations

import random
import shutil
import sys
import time
import uuid
from pathlib import Path

import hudi_cdc
from hudi_cdc.testing.kafka import end_offsets, wait_until_quiet
from hudi_cdc.testing.postgres import SAMPLE_KEYS, compare_table, connect, run_workload

OUT = Path(__file__).resolve().parent.parent / "demo-output" / "stack"
BOOTSTRAP = "127.0.0.1:59092"
REGISTRY = "http://127.0.0.1:58080/apis/ccompat/v7"
TOPICS = {table: f"dbserver1.inventory.{table}" for table in SAMPLE_KEYS}


def replicate_and_compare(spark, conn, title: str) -> bool:  # noqa: ANN001
    print(f"\n== {title}")
    ok = True
    for table, topic in TOPICS.items():
        for table_type in ("COPY_ON_WRITE", "MERGE_ON_READ"):
            base = OUT / f"{table}_{table_type.lower()}"
            r = hudi_cdc.ingest(
                spark=spark,
                source="kafka",
                topic=topic,
                bootstrap_servers=BOOTSTRAP,
                schema_registry_url=REGISTRY,
                target_base_path=str(base),
                target_table=base.name,
                table_type=table_type,
            )
            done = (
                f"{r.details.get('messages', 0):>5} msgs -> {r.upserts:>4} upserts {r.deletes:>3} deletes "
                f"{r.toast_filled:>3} TOAST kept ({r.duration_s:4.1f}s)"
                if r.committed
                else "nothing new"
            )
            comparison = compare_table(spark, str(base), conn, table)
            ok &= comparison.equal
            verdict = "MATCH" if comparison.equal else "MISMATCH"
            print(
                f"   {table:<10} {table_type:<14} {done} | {comparison.hudi_count:>4} rows vs Postgres "
                f"{comparison.source_count:>4}: {verdict}"
            )
            if not comparison.equal:
                print(comparison.describe())
    return ok


def replicate_mariadb(spark) -> bool:  # noqa: ANN001
    from hudi_cdc.ops.verify import verify
    from hudi_cdc.testing import mariadb
    from hudi_cdc.upstream.database import SourceDatabase

    topics = {table: mariadb.TOPIC_PREFIX + table for table in mariadb.SAMPLE_KEYS}
    database = SourceDatabase(mariadb.STACK_URL.replace("debezium@", "debezium:dbz@"))
    rng, run, ok = random.Random(), uuid.uuid4().hex[:8], True
    with mariadb.connect() as conn:
        for round_no, transactions in ((1, 150), (2, 100)):
            before = end_offsets(BOOTSTRAP, list(topics.values()))
            changes = mariadb.run_workload(conn, rng, transactions=transactions, tag=f"{run}m{round_no}")
            with conn.cursor() as cur:
                cur.execute("flush binary logs")  # the next round's events come from a new binlog file
            wait_until_quiet(BOOTSTRAP, list(topics.values()), since=before)
            print(f"\n== MariaDB round {round_no}: {changes} changes in {transactions} transactions")
            for table, topic in topics.items():
                for table_type in ("COPY_ON_WRITE", "MERGE_ON_READ"):
                    base = OUT / f"mariadb_{table}_{table_type.lower()}"
                    r = hudi_cdc.ingest(
                        spark=spark, source="kafka", topic=topic, flavor="mysql", bootstrap_servers=BOOTSTRAP,
                        schema_registry_url=REGISTRY, target_base_path=str(base), target_table=base.name,
                        table_type=table_type,
                    )  # fmt: skip
                    result = verify(spark, str(base), database, f"inventory.{table}")
                    ok &= result.equal
                    print(
                        f"   {table:<10} {table_type:<14} {r.upserts:>4} upserts {r.deletes:>3} deletes "
                        f"| {result.target_rows:>4} rows vs MariaDB {result.source_rows:>4}: "
                        + ("MATCH" if result.equal else "MISMATCH\n" + result.describe())
                    )
    return ok


def main() -> int:
    shutil.rmtree(OUT, ignore_errors=True)
    spark = hudi_cdc.spark_session(app_name="hudi-cdc-stack-demo", jvm_log=OUT / "spark.log")
    rng, run = random.Random(), uuid.uuid4().hex[:8]
    ok = True
    with connect() as conn:
        for round_no, transactions in ((1, 150), (2, 100)):
            before = end_offsets(BOOTSTRAP, list(TOPICS.values()))
            t0 = time.monotonic()
            changes = run_workload(conn, rng, transactions=transactions, tag=f"{run}r{round_no}")
            wait_until_quiet(BOOTSTRAP, list(TOPICS.values()), since=before)
            ok &= replicate_and_compare(
                spark,
                conn,
                f"round {round_no}: {changes} changes in {transactions} transactions, "
                f"published by Debezium in {time.monotonic() - t0:.1f}s",
            )
    ok &= replicate_mariadb(spark)
    print("\nEvery Hudi table equals its source table." if ok else "\nSOME TABLES DIFFER")
    print(f"(Spark's log: {OUT / 'spark.log'})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
