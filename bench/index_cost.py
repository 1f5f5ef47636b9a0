"""What an upsert costs in a table that already holds millions of rows, per index and merger.

    python -m bench.index_cost [--table-rows 1000000] [--rows 10000] [--rounds 8] [--pattern uniform]

One Spark session (``local[2]``, 4 GiB); for each table type, one table per variant,
first filled with ``--table-rows`` rows the way hudi-cdc's first round writes them (a
bulk insert where ``first_commit_bulk_insert`` allows it, an upsert for the bucket and
record-level indexes), timed. Then ``--rounds`` times, every variant in turn upserts a
batch of ``--rows`` changes with hudi-cdc's write options plus the variant's settings:
90% updates of existing keys (``uniform``: any key; ``recent``: the newest 10% of the
keys, as when recent orders change) and 10% new keys. Variants alternate in one warm
JVM. The first round is left out. On MERGE_ON_READ every 5th delta commit also compacts
inline (hudi-cdc's default), so the slowest round is a compaction round.

Every table is read back at the end and must hold each key once at its newest version.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from bench import results as result_files
from bench.run import REPO, variant

AVRO_MERGER = {
    "hoodie.write.record.merge.custom.implementation.classes": "org.apache.hudi.common.model.HoodieAvroRecordMerger",
    "hoodie.logfile.data.block.format": "avro",
}


def default_variants(buckets: int) -> dict[str, dict[str, str]]:
    return {
        "hudi-cdc's defaults (simple index, Spark record merger)": {},
        "simple index, Avro record merger (Hudi's default)": AVRO_MERGER,
        "bloom index": {"hoodie.index.type": "BLOOM"},
        f"bucket index ({buckets} buckets)": {
            "hoodie.index.type": "BUCKET",
            "hoodie.bucket.index.num.buckets": str(buckets),
        },
        "record-level index": {"hoodie.index.type": "RECORD_INDEX", "hoodie.metadata.record.index.enable": "true"},
    }


class Workload:
    """Deterministic batches, so that the expected table can be rebuilt from them."""

    def __init__(self, spark: Any, table_rows: int, rows: int, pattern: str) -> None:
        self.spark, self.table_rows, self.pattern = spark, table_rows, pattern
        self.inserts = rows // 10
        self.updates = rows - self.inserts

    def _rows(self, ids: Any, version: int) -> Any:
        from pyspark.sql import functions as F

        return ids.select(
            F.col("id").cast("bigint").alias("id"),
            F.concat(F.lit("customer "), F.col("id")).alias("name"),
            F.sha2(F.concat(F.col("id").cast("string"), F.lit(f"/{version}")), 256).alias("notes"),
            (F.col("id") % 1000 * 1.5).alias("balance"),
            F.lit(version).cast("bigint").alias("version"),
        )

    def initial(self) -> Any:
        return self._rows(self.spark.range(0, self.table_rows), 0)

    def batch(self, version: int) -> Any:
        from pyspark.sql import functions as F

        keys = self.table_rows + (version - 1) * self.inserts  # the keys that exist before this batch
        low = keys - keys // 10 if self.pattern == "recent" else 0
        updated = (
            self.spark.range(self.updates)
            .select((F.lit(low) + F.pmod(F.xxhash64("id", F.lit(version)), F.lit(keys - low))).alias("id"))
            .distinct()  # hudi-cdc hands Hudi one change per key
        )
        new = self.spark.range(keys, keys + self.inserts)
        return self._rows(updated.unionByName(new), version)

    def expected(self, versions: int) -> Any:
        from functools import reduce

        frames = [self.initial(), *(self.batch(v) for v in range(1, versions + 1))]
        everything = reduce(lambda a, b: a.unionByName(b), (f.select("id", "version") for f in frames))
        return everything.groupBy("id").max("version").withColumnRenamed("max(version)", "version")


def measure(
    spark: Any, table_type: str, variants: dict[str, dict[str, str]], work: Workload, rounds: int, root: Path
) -> dict[str, dict[str, Any]]:
    from hudi_cdc.sink.options import OPERATION, first_commit_bulk_insert, write_options

    def options(i: int, conf: dict[str, str]) -> dict[str, str]:
        return write_options(
            table_name=f"t{i}", table_type=table_type, record_key_fields=["id"],
            partition_path_field=None, ordering_field="version", user_conf=conf,
        )  # fmt: skip

    root = root / table_type
    shutil.rmtree(root, ignore_errors=True)
    # A throw-away write first, so that the first variant's build does not pay the JVM's warm-up alone.
    warm = options(0, {})
    work.batch(1).write.format("hudi").options(**warm).mode("append").save(str(root / "warm-up"))
    shutil.rmtree(root / "warm-up")
    results: dict[str, dict[str, Any]] = {}
    for i, (name, conf) in enumerate(variants.items()):
        opts = options(i, conf)
        if first_commit_bulk_insert(conf):
            opts[OPERATION] = "bulk_insert"
        began = time.perf_counter()
        work.initial().write.format("hudi").options(**opts).mode("append").save(str(root / f"t{i}"))
        results[name] = {"build": time.perf_counter() - began, "first": opts[OPERATION], "rounds": []}
        print(f"{table_type} {name}: built in {results[name]['build']:.1f} s ({opts[OPERATION]})", flush=True)
    for version in range(1, rounds + 1):
        batch = work.batch(version)
        for i, (name, conf) in enumerate(variants.items()):
            began = time.perf_counter()
            batch.write.format("hudi").options(**options(i, conf)).mode("append").save(str(root / f"t{i}"))
            results[name]["rounds"].append(time.perf_counter() - began)
        print(
            f"{table_type} round {version}: " + ", ".join(f"{r['rounds'][-1]:.1f}" for r in results.values()),
            flush=True,
        )
    expected = work.expected(rounds).cache()
    want = expected.count()
    for i, name in enumerate(variants):
        table = spark.read.format("hudi").load(str(root / f"t{i}")).select("id", "version")
        rows, keys = table.count(), table.select("id").distinct().count()
        right = table.join(expected, ["id", "version"]).count()
        if not rows == keys == right == want:
            raise RuntimeError(
                f"{table_type} {name}: {rows} rows, {keys} keys, {right} at their newest version; {want} expected"
            )
        results[name]["files"], results[name]["bytes"] = _files(root / f"t{i}")
    expected.unpersist()
    return results


def _files(table: Path) -> tuple[int, int]:
    """The data files (base and log, every version a clean has not removed yet) and their size."""
    files = [
        p
        for p in table.rglob("*")
        if p.is_file() and ".hoodie" not in p.parts and not p.name.startswith(".")  # .crc and partition metadata
    ]
    return len(files), sum(p.stat().st_size for p in files)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--table-rows", type=int, default=1_000_000)
    parser.add_argument("--rows", type=int, default=10_000, help="changes per round")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--pattern", choices=("uniform", "recent"), default="uniform")
    parser.add_argument("--buckets", type=int, help="for the bucket index (default: 1 per 250,000 rows, at least 4)")
    parser.add_argument("--types", default="COPY_ON_WRITE,MERGE_ON_READ")
    parser.add_argument("--variant", action="append", type=variant, help="label:key=value,... (default: all five)")
    parser.add_argument("--work", type=Path, default=REPO / ".bench" / "index_cost")
    parser.add_argument(
        "--results", type=Path, help="write the result file under this folder (default: .bench/results)"
    )
    args = parser.parse_args(argv)
    import hudi_cdc

    buckets = args.buckets or max(4, args.table_rows // 250_000)
    variants = dict(args.variant) if args.variant else default_variants(buckets)
    started = f"{datetime.now():%Y-%m-%d %H:%M}"
    started_utc = result_files.now_utc()
    spark = hudi_cdc.spark_session(
        app_name="index-cost", conf={"spark.master": "local[2]", "spark.driver.memory": "4g"}
    )
    spark.sparkContext.setLogLevel("ERROR")
    work = Workload(spark, args.table_rows, args.rows, args.pattern)
    results = {t: measure(spark, t, variants, work, args.rounds, args.work) for t in args.types.split(",")}
    shutil.rmtree(args.work, ignore_errors=True)
    print(render(results, started, args))
    result_files.write(
        "index",
        series=f"{args.table_rows:,} rows, {args.pattern} updates",
        parameters={
            "table_rows": args.table_rows,
            "rows": args.rows,
            "rounds": args.rounds,
            "pattern": args.pattern,
            "buckets": buckets,
            "types": args.types,
            "variants": variants,
        },  # fmt: skip
        tables=result_tables(results),
        directory=args.results or result_files.LOCAL,
        started_utc=started_utc,
    )
    return 0


UPSERT_COLUMNS = [
    result_files.column("table_type", "table"), result_files.column("settings"),
    result_files.column("first_commit_s", "first commit", "s"), result_files.column("first_operation", "as"),
    result_files.column("round_median_s", "upsert round: median", "s"), result_files.column("round_min_s", "min", "s"),
    result_files.column("round_max_s", "max", "s"), result_files.column("round_mean_s", "mean", "s"),
    result_files.column("data_files", "data files", "#"), result_files.column("data_mib", "data files' size", "MiB"),
]  # fmt: skip
ROUND_COLUMNS = [
    result_files.column("table_type", "table"), result_files.column("settings"),
    result_files.column("round", unit="#"), result_files.column("seconds", unit="s"),
]  # fmt: skip


def result_tables(results: dict[str, dict[str, dict[str, Any]]]) -> dict[str, Any]:
    """The first round is left out of the statistics (as in the printed table); every round is in ``round_times``."""
    upserts, times = [], []
    for table_type, per in results.items():
        for name, r in per.items():
            rounds = r["rounds"][1:]
            upserts.append({
                "table_type": table_type, "settings": name, "first_commit_s": round(r["build"], 1),
                "first_operation": r["first"].replace("_", " "), "round_median_s": round(statistics.median(rounds), 2),
                "round_min_s": round(min(rounds), 2), "round_max_s": round(max(rounds), 2),
                "round_mean_s": round(statistics.fmean(rounds), 2), "data_files": r["files"],
                "data_mib": round(r["bytes"] / 2**20),
            })  # fmt: skip
            times += [{"table_type": table_type, "settings": name, "round": i, "seconds": round(t, 2)}
                      for i, t in enumerate(r["rounds"], 1)]  # fmt: skip
    return {"upserts": result_files.table(UPSERT_COLUMNS, upserts),
            "round_times": result_files.table(ROUND_COLUMNS, times)}  # fmt: skip


def render(results: dict[str, dict[str, dict[str, Any]]], started: str, args: argparse.Namespace) -> str:
    from bench.run import machine, versions

    lines = [
        f"Run of {started} on {machine()}; {', '.join(f'{k} {v}' for k, v in versions().items())}. "
        f"Tables of {args.table_rows:,} rows (a bigint key, a name, a 64-character hash, a double, the version); rounds of "
        f"{args.rows:,} changes ({args.pattern} updates 90%, new keys 10%), `local[2]`, 4 GiB, one JVM, variants "
        f"alternating; {args.rounds - 1} rounds each after the first. Every table read back: each key once, at its "
        "newest version.",
        "",
        "| table | settings | first commit | upsert round: median (min-max) | data files on storage, MiB |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    for table_type, per in results.items():
        for name, r in per.items():
            rounds = r["rounds"][1:]
            lines.append(
                f"| {table_type} | {name} | {r['build']:.1f} s ({r['first'].replace('_', ' ')}) | "
                f"{statistics.median(rounds):.2f} s ({min(rounds):.2f}-{max(rounds):.2f}) | "
                f"{r['files']}, {r['bytes'] / 2**20:,.0f} |"
            )
    return "\n".join([*lines, ""])


if __name__ == "__main__":
    sys.exit(main())
