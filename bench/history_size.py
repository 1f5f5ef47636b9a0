"""What a history mode costs the write of the main benchmark's stream: soft_delete and scd2 against none.

    python -m bench.history_size [--events 1000000] [--keys 100000] [--results bench/results]

The stream is `make bench`'s (``bench.workload``: 1M Debezium events over 100k keys, inserts, updates,
TOAST placeholders in ``notes`` and deletes, in one fresh topic of the local stack). Each variant is one
``hudi-cdc ingest --history <mode>`` of the whole topic by ``spark-submit --master local[2]`` into a fresh
table, as ``bench.shape_cost`` runs its variants (the variants take turns per table type).

Every table is read back and compared with what the stream, replayed in order in plain Python, implies:

- ``none``: the table's rows are the stream's final rows;
- ``soft_delete``: the rows not marked ``_source_deleted`` are the final rows, and the marked ones are
  the keys deleted at the end, each with the values it had before its delete;
- ``scd2``: the current rows (``_is_current``) are the final rows; per key, the number of versions is the
  number of its changes (every change is a version, a delete a marker row) and the number of markers its
  deletes; the open versions (``_valid_to`` NULL) are the current ones.

A variant whose table differs fails the run.
"""

from __future__ import annotations

import sys
import uuid
from pathlib import Path
from typing import Any

from bench import results
from bench.run import BOOTSTRAP, REGISTRY
from bench.shape_cost import arguments, checking_session, run_columns, run_variants
from bench.workload import COLUMNS, Workload

VARIANTS = {mode: ["--history", mode] for mode in ("none", "soft_delete", "scd2")}


def _rows(frame: Any) -> list[tuple]:  # noqa: ANN401
    return sorted(tuple(r) for r in frame.select(*COLUMNS).collect())


def problems(spark: Any, workload: Workload, mode: str, base: str) -> list[str]:  # noqa: ANN401
    """What the ``mode`` table at ``base`` holds that the stream does not imply (nothing: it is right)."""
    from pyspark.sql import functions as F

    table = spark.read.format("hudi").load(base)
    found = []
    if mode == "none":
        if _rows(table) != workload.expected_rows():
            found.append("rows differ from the stream's final rows")
        return found
    deleted = F.coalesce(F.col("_source_deleted"), F.lit(False))
    current = table.where(F.col("_is_current")) if mode == "scd2" else table.where(~deleted)
    if _rows(current) != workload.expected_rows():
        found.append("current rows differ from the stream's final rows")
    if mode == "soft_delete":
        if _rows(table.where(deleted)) != workload.gone_rows():
            found.append("marked rows differ from the deleted keys' last rows")
        return found
    per_key = table.groupBy("id").agg(F.count(F.lit(1)).alias("n"), F.sum(deleted.cast("int")).alias("d"))
    counts = {r["id"]: (r["n"], r["d"]) for r in per_key.collect()}
    want = {k: (n, workload.deletes_per_key.get(k, 0)) for k, n in workload.changes_per_key.items()}
    if counts != want:
        off = sorted(k for k in want.keys() | counts.keys() if counts.get(k) != want.get(k))
        found.append(f"versions or markers per key differ for {len(off)} keys (first: {off[:5]})")
    open_ids = sorted(r["id"] for r in table.where(F.col("_valid_to").isNull()).select("id").collect())
    if open_ids != sorted(workload.final):
        found.append("open versions (_valid_to NULL) are not the live keys'")
    return found


def main(argv: list[str] | None = None) -> int:
    args = arguments(__doc__, list(VARIANTS), argv)
    started_utc = results.now_utc()
    topic = f"bench.h{uuid.uuid4().hex[:8]}.customers"
    workload = Workload(topic, args.events, args.keys, args.partitions)  # 3 schema versions, as `make bench`
    workload.produce(BOOTSTRAP, REGISTRY)
    spark = checking_session("hudi-cdc-bench-history-size")
    wrong_tables: list[str] = []

    def check(mode: str, base: str) -> bool:
        found = problems(spark, workload, mode, base)
        wrong_tables.extend(f"{mode} {base}: {p}" for p in found)
        return not found

    rows, wrong = run_variants(args, "history_size", topic, VARIANTS, check)
    for r in rows:
        r["table_rows"] = spark.read.format("hudi").load(r["base"]).count()
        r["table_mib"] = round(sum(f.stat().st_size for f in Path(r["base"]).rglob("*") if f.is_file()) / 2**20)
    columns = run_columns("table as the stream implies")
    columns[-1:-1] = [results.column("table_rows", "rows", "rows"), results.column("table_mib", "on disk", "MiB")]
    results.write(
        "history-size",
        parameters={"events": args.events, "keys": args.keys, "partitions": args.partitions, "cores": 2,
                    "schema_versions": workload.schema_versions,
                    "variants": {k: " ".join(VARIANTS[k]) for k in args.variants}, "mix": workload.counts,
                    "final_rows": len(workload.final), "deleted_at_end": len(workload.gone)},
        tables={"runs": results.table(columns, rows)},
        directory=Path(args.results) if args.results else results.LOCAL,
        started_utc=started_utc,
    )  # fmt: skip
    for line in wrong_tables:
        print(line, file=sys.stderr)
    if wrong:
        print("WRONG TABLES: " + "; ".join(wrong), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
