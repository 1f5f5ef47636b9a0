"""An analyst's Spark session, by table name through a Hive metastore: queries in, rows out as JSON.

A separate application that knows nothing of hudi-cdc (it must not import it): Spark with Hive
support, the metastore's thrift URI, and Hudi's bundle, session extension and catalog, as Hudi's
docs set up a session that reads Hudi tables by name. Every query of one call runs in one session,
so the JVM starts once.

    python spark_sql.py --metastore-uri thrift://127.0.0.1:59083 --hudi-bundle /path/hudi-spark3.5-bundle.jar \
        --warehouse /tmp/wh "SELECT * FROM db.t ORDER BY id" "DESCRIBE db.t"

prints the results as one line of JSON on stdout, after the prefix ``RESULT ``:
``[{"sql": ..., "columns": [...], "rows": [[...], ...]} | {"sql": ..., "error": ...}, ...]``. With ``--serve``
and no SQL, it reads one JSON list of statements per line of stdin and answers each with such a line, until
stdin ends: a caller starts the JVM once and queries between its own steps, as an analyst's long-lived
session would (``REFRESH TABLE`` after a table changed, as there). Decimals, dates and timestamps are
printed as their text, bytes as hex.
"""

from __future__ import annotations

import argparse
import datetime
import decimal
import json
import sys
from typing import Any


def _session(metastore_uri: str, bundle: str, warehouse: str) -> Any:  # noqa: ANN401
    from pyspark.sql import SparkSession

    jars = {"spark.jars": bundle} if bundle.endswith(".jar") else {"spark.jars.packages": bundle}
    builder = (
        SparkSession.builder.master("local[1]")
        .appName("analyst-by-name")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.hadoop.hive.metastore.uris", metastore_uri)
        .config("spark.sql.warehouse.dir", warehouse)
        .config("spark.serializer", "org.apache.spark.serializer.KryoSerializer")
        .config("spark.sql.extensions", "org.apache.spark.sql.hudi.HoodieSparkSessionExtension")
        .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.hudi.catalog.HoodieCatalog")
        .config("spark.sql.shuffle.partitions", "2")
    )
    for key, value in jars.items():
        builder = builder.config(key, value)
    return builder.enableHiveSupport().getOrCreate()


def _plain(value: Any) -> Any:  # noqa: ANN401
    if isinstance(value, (decimal.Decimal, datetime.date, datetime.datetime)):
        return str(value)
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _run(spark: Any, statements: list[str]) -> list[dict[str, Any]]:  # noqa: ANN401
    results: list[dict[str, Any]] = []
    for sql in statements:
        try:
            frame = spark.sql(sql)
            rows = [[_plain(v) for v in row] for row in frame.collect()]
            results.append({"sql": sql, "columns": frame.columns, "rows": rows})
        except Exception as exc:  # noqa: BLE001 - reported per statement, the others still run
            results.append({"sql": sql, "error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:2000]}"})
    return results


def _answer(results: list[dict[str, Any]]) -> None:
    # A prefix of its own: Spark and its libraries may print lines of their own on stdout.
    print("RESULT " + json.dumps(results), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--metastore-uri", required=True)
    parser.add_argument("--hudi-bundle", required=True, help="the Hudi Spark bundle: a jar file or Maven coordinates")
    parser.add_argument("--warehouse", required=True, help="Spark's warehouse folder (nothing is created in it)")
    parser.add_argument("--serve", action="store_true", help="statements from stdin, one JSON list per line")
    parser.add_argument("sql", nargs="*")
    args = parser.parse_args()
    if bool(args.sql) == args.serve:
        parser.error("give SQL statements, or --serve (and none)")
    spark = _session(args.metastore_uri, args.hudi_bundle, args.warehouse)
    spark.sparkContext.setLogLevel("ERROR")
    try:
        if not args.serve:
            _answer(_run(spark, args.sql))
            return
        print("READY", flush=True)
        for line in sys.stdin:
            if line.strip():
                _answer(_run(spark, json.loads(line)))
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
