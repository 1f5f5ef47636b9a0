"""The second anchor of `make bench`: what a Hudi 1.2 user writes by hand, without hudi-cdc.

    spark-submit <the same jars as hudi-cdc> bench/anchor.py --topic T --target-base-path P \
        --target-table N --table-type MERGE_ON_READ [--hoodie-conf k=v ...]

One batch job, the way Hudi's quick start and its Debezium blog post would have
a user write it: Spark's Kafka source reads the topic from the earliest to the
latest offset; the 5-byte Confluent header is cut off and ``from_avro`` decodes
the rest with the subject's newest schema (so, like HoodieStreamer 0.14, only a
one-version stream decodes right); the envelope is flattened the way Hudi's
``PostgresDebeziumSource`` does (``after``, or ``before`` for a delete, plus
``_change_operation_type`` and ``_event_lsn``); Hudi 1.2 upserts it with its own
``PostgresDebeziumAvroPayload`` ordered on ``_event_lsn``, which Hudi 1.2 turns
into event-time ordering with the Debezium placeholder filled from the stored
row. No checkpoint, no error handling: the cost of the merge and the write
alone. It imports nothing from hudi-cdc.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.request

PAYLOAD = "org.apache.hudi.common.model.debezium.PostgresDebeziumAvroPayload"
# Hudi's quick start settings for a Spark session, and hudi-cdc's small-machine shuffle width.
SESSION = {
    "spark.serializer": "org.apache.spark.serializer.KryoSerializer",
    "spark.sql.extensions": "org.apache.spark.sql.hudi.HoodieSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.hudi.catalog.HoodieCatalog",
    "spark.kryo.registrator": "org.apache.spark.HoodieSparkKryoRegistrar",
    "spark.sql.shuffle.partitions": "8",
    "spark.default.parallelism": "8",
    "spark.sql.session.timeZone": "UTC",
}


def newest_schema(registry: str, subject: str) -> str:
    with urllib.request.urlopen(f"{registry}/subjects/{subject}/versions/latest", timeout=30) as response:
        return json.load(response)["schema"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--bootstrap-servers", required=True)
    parser.add_argument("--schema-registry-url", required=True)
    parser.add_argument("--target-base-path", required=True)
    parser.add_argument("--target-table", required=True)
    parser.add_argument("--table-type", required=True, choices=("COPY_ON_WRITE", "MERGE_ON_READ"))
    parser.add_argument("--record-key-field", default="id")
    parser.add_argument("--hoodie-conf", action="append", default=[], help="k=v, passed to the Hudi write")
    args = parser.parse_args(argv)

    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F
    from pyspark.sql.avro.functions import from_avro

    started = time.perf_counter()
    builder = SparkSession.builder.appName("hudi-1.2-by-hand")
    for key, value in SESSION.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()

    schema = newest_schema(args.schema_registry_url, f"{args.topic}-value")
    raw = (
        spark.read.format("kafka").option("kafka.bootstrap.servers", args.bootstrap_servers)
        .option("subscribe", args.topic).option("startingOffsets", "earliest").option("endingOffsets", "latest")
        .load().where("value IS NOT NULL")  # Debezium's delete tombstones
    )  # fmt: skip
    envelope = raw.select(from_avro(F.expr("substring(value, 6, length(value) - 5)"), schema).alias("e"))
    columns = envelope.schema["e"].dataType["after"].dataType.fieldNames()
    deleted = F.col("e.op") == "d"
    rows = envelope.select(
        *[F.when(deleted, F.col(f"e.before.{c}")).otherwise(F.col(f"e.after.{c}")).alias(c) for c in columns],
        F.col("e.op").alias("_change_operation_type"),
        F.col("e.source.lsn").alias("_event_lsn"),
        F.col("e.source.txId").alias("_event_tx_id"),
        F.col("e.source.ts_ms").alias("_event_origin_ts_ms"),
        F.col("e.ts_ms").alias("_upstream_event_processed_ts_ms"),
    )
    options = {
        "hoodie.table.name": args.target_table,
        "hoodie.datasource.write.table.type": args.table_type,
        "hoodie.datasource.write.operation": "upsert",
        "hoodie.datasource.write.recordkey.field": args.record_key_field,
        "hoodie.datasource.write.partitionpath.field": "",
        "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.NonpartitionedKeyGenerator",
        "hoodie.datasource.write.precombine.field": "_event_lsn",
        "hoodie.datasource.write.payload.class": PAYLOAD,
    }
    for pair in args.hoodie_conf:
        key, _, value = pair.partition("=")
        options[key] = value
    rows.write.format("hudi").options(**options).mode("append").save(args.target_base_path)
    spark.stop()
    print(f"wall={time.perf_counter() - started:.1f}s (from the session's start)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
