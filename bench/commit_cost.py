"""What one small Hudi commit costs under each setting, step by step: the floor of a round.

    python -m bench.commit_cost [--table-rows 1000000] [--rows 1000] [--rounds 5] [--patterns random,recent]
    python -m bench.commit_cost --table-rows 20000 --rounds 3        # the quick form

One Spark session (``local[2]``, 4 GiB). For each table type, one table per variant of the
settings, filled once with ``--table-rows`` rows the way hudi-cdc's first round fills it (a bulk
insert where ``first_commit_bulk_insert`` allows it, an upsert for the bucket and record-level
indexes) and reused by every round. Then ``--rounds`` times, every variant in turn upserts
``--rows`` updates of existing keys, once per key pattern: ``random`` (any key) and ``recent``
(the newest ``--recent-share`` of the keys, as when recent orders change). The writes use
hudi-cdc's write options (``hudi_cdc.sink.options.write_options``, ordering field
``_source_order``) plus the variant's settings. Variants alternate in one warm JVM, so JIT and
class loading do not favour the ones that run later. The first round is left out.

Only the Hudi write is timed. Each write runs in a Spark job group of its own, and Spark's status
store says which jobs and stages it ran, and how long each job took: the jobs are grouped into
steps by the description Hudi gives them (index lookup, data write, metadata table, markers,
clean/archive, compaction), and the time outside any Spark job (timeline, commit, driver-side
work) is a step of its own. On MERGE_ON_READ, hudi-cdc compacts inline every 5th delta commit:
a write that compacted is kept out of the medians and shown on its own.

Every table is read back at the end and must hold each key once, at its newest version.
"""

from __future__ import annotations

import argparse
import math
import shutil
import statistics
import sys
import time
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from bench import results as result_files
from bench.run import REPO, variant

ORDERING = "_source_order"
PATTERNS = ("random", "recent")
DEFAULTS = "hudi-cdc defaults (simple index)"
SHORT = {"COPY_ON_WRITE": "COW", "MERGE_ON_READ": "MOR"}


def default_variants(buckets: int) -> dict[str, dict[str, str]]:
    """One change from hudi-cdc's defaults each, then the cheapest combinations of them.

    hudi-cdc's metadata table is already lean: with column stats off (its default) Hudi 1.2
    keeps only the ``files`` partition, so "lean" is the default and "off" is the variant.
    """
    bucket = {"hoodie.index.type": "BUCKET", "hoodie.bucket.index.num.buckets": str(buckets)}
    cheap = {**bucket, "hoodie.write.markers.type": "DIRECT", "hoodie.embed.timeline.server.reuse.enabled": "true"}
    return {
        DEFAULTS: {},
        f"bucket index ({buckets} buckets)": bucket,
        "record-level index": {"hoodie.index.type": "RECORD_INDEX", "hoodie.metadata.record.index.enable": "true"},
        "metadata table off": {"hoodie.metadata.enable": "false"},
        "markers written directly": {"hoodie.write.markers.type": "DIRECT"},
        "timeline server kept between writes": {"hoodie.embed.timeline.server.reuse.enabled": "true"},
        "small files not topped up": {"hoodie.parquet.small.file.limit": "0"},
        "smaller files (16 MiB)": {
            "hoodie.parquet.max.file.size": str(16 << 20),
            "hoodie.parquet.small.file.limit": str(8 << 20),
        },
        "bucket + direct markers + timeline server kept": cheap,
        "the same, metadata table off": {**cheap, "hoodie.metadata.enable": "false"},
    }


class Workload:
    """Deterministic batches of updates: exactly ``rows`` distinct existing keys per write."""

    def __init__(self, spark: Any, table_rows: int, rows: int, recent_share: float) -> None:
        self.spark, self.table_rows, self.rows = spark, table_rows, min(rows, table_rows)
        self.recent = max(self.rows, int(table_rows * recent_share))
        self.written: dict[int, int] = {}  # key -> its newest _source_order, over every batch so far

    def _rows(self, ids: Any, order: int) -> Any:
        from pyspark.sql import functions as F

        return ids.select(
            F.col("id").cast("bigint").alias("id"),
            F.concat(F.lit("customer "), F.col("id")).alias("name"),
            F.sha2(F.concat(F.col("id").cast("string"), F.lit(f"/{order}")), 256).alias("notes"),
            (F.col("id") % 1000 * 1.5).alias("balance"),
            F.lit(order).cast("bigint").alias(ORDERING),
        )

    def initial(self) -> Any:
        return self._rows(self.spark.range(0, self.table_rows), 0)

    def keys(self, order: int, pattern: str) -> list[int]:
        """``rows`` distinct keys: a step through the range coprime with its size, from a seeded start."""
        span = self.table_rows if pattern == "random" else self.recent
        low = self.table_rows - span
        step = 7_919 + 2 * order
        while math.gcd(step, span) != 1:
            step += 1
        start = (order * 104_729) % span
        return [low + (start + i * step) % span for i in range(self.rows)]

    def batch(self, order: int, pattern: str) -> Any:
        keys = self.keys(order, pattern)
        self.written.update(dict.fromkeys(keys, order))
        ids = self.spark.createDataFrame([(k,) for k in keys], "id bigint")
        return self._rows(ids, order)


# A Spark job's step, from the description Hudi gives it (first match wins); a job without one
# belongs to the step of the job before it (Hudi runs the next stage of the same work).
STEPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("metadata", ("_metadata", "/.hoodie/metadata", "metadata table", "metadatatable")),
    ("compaction", ("compact",)),
    ("clean_archive", ("clean", "archiv")),
    ("markers", ("marker",)),
    ("index", ("tagging", "index", "key ranges", "looking up", "bucket", "record key")),
    ("write", ("workload profile", "small files", "writing data", "committing stats", "upsert", "insert")),
)
STEP_NAMES = ("index", "write", "metadata", "markers", "clean_archive", "compaction", "other", "outside_jobs")


def step_of(description: str | None, previous: str) -> str:
    if not description:
        return previous
    text = description.lower()
    return next((step for step, words in STEPS if any(w in text for w in words)), "other")


def jobs_of(spark: Any, group: str, wall: float) -> dict[str, Any]:
    """The Spark jobs a write ran (its job group): how many, their stages, and seconds per step."""
    sc = spark.sparkContext
    ids = sorted(sc.statusTracker().getJobIdsForGroup(group))
    store = sc._jsc.sc().statusStore()
    jobs = []
    for job_id in ids:
        for _ in range(50):  # the status store is filled by a listener, a moment after the job ends
            data = store.job(job_id)
            if data.completionTime().isDefined():
                break
            time.sleep(0.02)
        described = data.description()
        jobs.append({
            "description": described.get() if described.isDefined() else None,
            "start": data.submissionTime().get().getTime() / 1000,
            "end": data.completionTime().get().getTime() / 1000 if data.completionTime().isDefined() else None,
            "stages": data.stageIds().length() - data.numSkippedStages(),
        })  # fmt: skip
    steps = dict.fromkeys(STEP_NAMES, 0.0)
    step, busy, reach = "other", 0.0, 0.0
    for job in jobs:
        step = step_of(job["description"], step)
        end = job["end"] or job["start"]
        steps[step] += end - job["start"]
        busy += max(0.0, end - max(job["start"], reach))  # jobs that overlap count once
        reach = max(reach, end)
    steps["outside_jobs"] = max(0.0, wall - busy)
    return {"jobs": len(jobs), "stages": sum(j["stages"] for j in jobs), "steps": steps,
            "descriptions": [j["description"] for j in jobs]}  # fmt: skip


def _completed_compactions(table: Path) -> int:
    """Completed ``commit`` instants in a MERGE_ON_READ timeline: compactions (its writes are delta commits)."""
    timeline = table / ".hoodie" / "timeline"
    return sum(1 for p in timeline.glob("*.commit")) if timeline.is_dir() else 0


def _files(table: Path) -> tuple[int, int]:
    """The data files (base and log, every version a clean has not removed yet) and their size."""
    files = [p for p in table.rglob("*") if p.is_file() and ".hoodie" not in p.parts and not p.name.startswith(".")]
    return len(files), sum(p.stat().st_size for p in files)


def measure(
    spark: Any,
    table_type: str,
    variants: Mapping[str, dict[str, str]],
    work: Workload,
    rounds: int,
    patterns: Sequence[str],
    root: Path,
) -> dict[str, dict[str, Any]]:
    from hudi_cdc.sink.options import OPERATION, first_commit_bulk_insert, write_options

    def options(i: int, conf: dict[str, str]) -> dict[str, str]:
        return write_options(
            table_name=f"t{i}", table_type=table_type, record_key_fields=["id"],
            partition_path_field=None, ordering_field=ORDERING, user_conf=conf,
        )  # fmt: skip

    root = root / table_type
    shutil.rmtree(root, ignore_errors=True)
    work.written.clear()
    # A throw-away write first, so that the first variant's build does not pay the JVM's warm-up alone.
    work.initial().limit(1000).write.format("hudi").options(**options(0, {})).mode("append").save(str(root / "warm"))
    shutil.rmtree(root / "warm")
    results: dict[str, dict[str, Any]] = {}
    for i, (name, conf) in enumerate(variants.items()):
        opts = options(i, conf)
        if first_commit_bulk_insert(conf):
            opts[OPERATION] = "bulk_insert"
        began = time.perf_counter()
        work.initial().write.format("hudi").options(**opts).mode("append").save(str(root / f"t{i}"))
        results[name] = {"build": time.perf_counter() - began, "first": opts[OPERATION], "writes": []}
        print(f"{table_type} {name}: built in {results[name]['build']:.1f} s ({opts[OPERATION]})", flush=True)
    sc = spark.sparkContext
    order = 0
    for number in range(1, rounds + 1):
        for pattern in patterns:
            order += 1
            batch = work.batch(order, pattern).cache()
            batch.count()  # the batch is ready before the clock starts, as the merge policy's output is
            for i, (name, conf) in enumerate(variants.items()):
                table = root / f"t{i}"
                group = f"commit-cost-{table_type}-{i}-{order}"
                compactions = _completed_compactions(table) if table_type == "MERGE_ON_READ" else 0
                sc.setJobGroup(group, group)
                began = time.perf_counter()
                batch.write.format("hudi").options(**options(i, conf)).mode("append").save(str(table))
                wall = time.perf_counter() - began
                sc.setLocalProperty("spark.jobGroup.id", None)
                sc.setLocalProperty("spark.job.description", None)
                write = {"round": number, "pattern": pattern, "seconds": wall, **jobs_of(spark, group, wall),
                         "compacted": table_type == "MERGE_ON_READ" and _completed_compactions(table) > compactions}  # fmt: skip
                results[name]["writes"].append(write)
            batch.unpersist()
            print(
                f"{table_type} round {number} {pattern}: "
                + ", ".join(f"{r['writes'][-1]['seconds']:.2f}" for r in results.values()),
                flush=True,
            )
    check(spark, table_type, variants, work, root)
    for i, name in enumerate(variants):
        results[name]["files"], results[name]["bytes"] = _files(root / f"t{i}")
    return results


def check(spark: Any, table_type: str, variants: Mapping[str, Any], work: Workload, root: Path) -> None:
    """Each table holds every key once, at the newest version it was given."""
    for i, name in enumerate(variants):
        table = spark.read.format("hudi").load(str(root / f"t{i}"))
        rows, keys = table.count(), table.select("id").distinct().count()
        changed = {r["id"]: r[ORDERING] for r in table.where(f"{ORDERING} > 0").select("id", ORDERING).collect()}
        if not rows == keys == work.table_rows or changed != work.written:
            raise RuntimeError(
                f"{table_type} {name}: {rows} rows, {keys} keys ({work.table_rows} expected); "
                f"{len(changed)} keys updated, {len(work.written)} expected, "
                f"{sum(changed.get(k) == v for k, v in work.written.items())} at their newest version"
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--table-rows", type=int, default=1_000_000)
    parser.add_argument("--rows", type=int, default=1000, help="updates per write")
    parser.add_argument(
        "--rounds", type=int, default=5, help="rounds (one write per pattern each); the first is left out"
    )
    parser.add_argument("--patterns", default=",".join(PATTERNS))
    parser.add_argument("--recent-share", type=float, default=0.01, help="the newest share of keys `recent` updates")
    parser.add_argument("--buckets", type=int, help="for the bucket index (default: 1 per 250,000 rows, at least 4)")
    parser.add_argument("--types", default="MERGE_ON_READ,COPY_ON_WRITE")
    parser.add_argument("--variant", action="append", type=variant, help="label:key=value,... (default: all)")
    parser.add_argument("--work", type=Path, default=REPO / ".bench" / "commit_cost")
    parser.add_argument(
        "--results", type=Path, help="write the result file under this folder (default: .bench/results)"
    )
    args = parser.parse_args(argv)
    import hudi_cdc

    buckets = args.buckets or max(4, args.table_rows // 250_000)
    variants = dict(args.variant) if args.variant else default_variants(buckets)
    if DEFAULTS not in variants:
        variants = {DEFAULTS: {}, **variants}
    patterns = [p for p in args.patterns.split(",") if p]
    started = f"{datetime.now():%Y-%m-%d %H:%M}"
    started_utc = result_files.now_utc()
    spark = hudi_cdc.spark_session(
        app_name="commit-cost", conf={"spark.master": "local[2]", "spark.driver.memory": "4g"}
    )
    spark.sparkContext.setLogLevel("ERROR")
    work = Workload(spark, args.table_rows, args.rows, args.recent_share)
    results: dict[str, dict[str, dict[str, Any]]] = {}
    written: Path | None = None
    for table_type in args.types.split(","):
        results[table_type] = measure(spark, table_type, variants, work, args.rounds, patterns, args.work)
        # Written after each table type (replacing the last), so a long run's first half is kept.
        parameters = {
            "table_rows": args.table_rows, "rows": args.rows, "rounds": args.rounds, "measured_from_round": 2,
            "patterns": patterns, "recent_keys": work.recent, "buckets": buckets, "types": list(results),
            "variants": variants, "shared_machine": True,
        }  # fmt: skip
        path = result_files.write(
            "commit-cost", series=f"{args.table_rows:,} rows, {'/'.join(SHORT[t] for t in results)}", parameters=parameters,
            tables=result_tables(results), directory=args.results or result_files.LOCAL, started_utc=started_utc,
        )  # fmt: skip
        if written:
            written.unlink()
        written = path
    shutil.rmtree(args.work, ignore_errors=True)
    print(render(results, started, args))
    return 0


def _median(values: Sequence[float]) -> float | None:
    return round(statistics.median(values), 2) if values else None


COLUMNS = [
    result_files.column("table_type", "table"), result_files.column("pattern", "keys"),
    result_files.column("settings"),
    result_files.column("median_s", "median write", "s"), result_files.column("change_pct", "vs defaults", "%"),
    result_files.column("min_s", "min", "s"), result_files.column("max_s", "max", "s"),
    result_files.column("writes", "writes", "#"),
    result_files.column("jobs", "Spark jobs", "#"), result_files.column("stages", "stages", "#"),
    result_files.column("index_s", "index lookup", "s"), result_files.column("write_s", "data write", "s"),
    result_files.column("metadata_s", "metadata table", "s"), result_files.column("markers_s", "markers", "s"),
    result_files.column("clean_archive_s", "clean, archive", "s"), result_files.column("other_s", "other jobs", "s"),
    result_files.column("outside_jobs_s", "outside Spark jobs", "s"),
    result_files.column("compaction_write_s", "a write that compacted", "s"),
]  # fmt: skip
BUILD_COLUMNS = [
    result_files.column("table_type", "table"), result_files.column("settings"),
    result_files.column("build_s", "first commit", "s"), result_files.column("operation", "as"),
    result_files.column("data_files", "data files at the end", "#"), result_files.column("data_mib", "their size", "MiB"),
]  # fmt: skip
WRITE_COLUMNS = [
    result_files.column("table_type", "table"), result_files.column("settings"), result_files.column("round", unit="#"),
    result_files.column("pattern", "keys"), result_files.column("seconds", unit="s"),
    result_files.column("jobs", unit="#"), result_files.column("stages", unit="#"),
    result_files.column("compacted"), result_files.column("steps"),
]  # fmt: skip


def result_rows(results: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """Per table type, key pattern and variant: medians of the writes after the first round that did not compact."""
    rows = []
    for table_type, per in results.items():
        patterns = list(dict.fromkeys(w["pattern"] for r in per.values() for w in r["writes"]))
        for pattern in patterns:
            base = None
            for name, r in per.items():
                writes = [w for w in r["writes"] if w["pattern"] == pattern and w["round"] > 1]
                plain = [w for w in writes if not w["compacted"]]
                median = _median([w["seconds"] for w in plain])
                if name == DEFAULTS or base is None:
                    base = median
                row: dict[str, Any] = {
                    "table_type": table_type, "pattern": pattern, "settings": name, "median_s": median,
                    "change_pct": round((median / base - 1) * 100) if median and base else None,
                    "min_s": round(min(w["seconds"] for w in plain), 2) if plain else None,
                    "max_s": round(max(w["seconds"] for w in plain), 2) if plain else None,
                    "writes": len(plain), "jobs": _median([w["jobs"] for w in plain]),
                    "stages": _median([w["stages"] for w in plain]),
                    "compaction_write_s": _median([w["seconds"] for w in writes if w["compacted"]]),
                }  # fmt: skip
                for step in STEP_NAMES:
                    if step != "compaction":
                        row[f"{step}_s"] = _median([w["steps"][step] for w in plain])
                rows.append(row)
    return rows


def result_tables(results: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> dict[str, Any]:
    builds = [
        {"table_type": t, "settings": name, "build_s": round(r["build"], 1), "operation": r["first"].replace("_", " "),
         "data_files": r.get("files"), "data_mib": round(r["bytes"] / 2**20) if r.get("bytes") is not None else None}
        for t, per in results.items() for name, r in per.items()
    ]  # fmt: skip
    writes = [
        {"table_type": t, "settings": name, "round": w["round"], "pattern": w["pattern"],
         "seconds": round(w["seconds"], 3), "jobs": w["jobs"], "stages": w["stages"], "compacted": w["compacted"],
         "steps": {k: round(v, 3) for k, v in w["steps"].items() if v}}
        for t, per in results.items() for name, r in per.items() for w in r["writes"]
    ]  # fmt: skip
    return {
        "commits": result_files.table(COLUMNS, result_rows(results)),
        "builds": result_files.table(BUILD_COLUMNS, builds),
        "writes": result_files.table(WRITE_COLUMNS, writes),
    }


def render(results: Mapping[str, Mapping[str, Mapping[str, Any]]], started: str, args: argparse.Namespace) -> str:
    from bench.run import machine, versions

    lines = [
        f"Run of {started} on {machine()} (shared); {', '.join(f'{k} {v}' for k, v in versions().items())}. "
        f"Writes of {args.rows:,} updates into tables of {args.table_rows:,} rows, `local[2]`, 4 GiB, one JVM, "
        f"variants alternating; rounds 2-{args.rounds}, writes that compacted left out.",
        "",
        "| table | keys | settings | median write | jobs | stages | index | data write | metadata | outside jobs |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in result_rows(results):
        lines.append(
            f"| {r['table_type']} | {r['pattern']} | {r['settings']} | {r['median_s']} s ({r['change_pct']:+}%) | "
            f"{r['jobs']} | {r['stages']} | {r['index_s']} | {r['write_s']} | {r['metadata_s']} | "
            f"{r['outside_jobs_s']} |"
            if r["median_s"] is not None
            else f"| {r['table_type']} | {r['pattern']} | {r['settings']} | - | | | | | | |"
        )
    return "\n".join([*lines, ""])


if __name__ == "__main__":
    sys.exit(main())
