"""What the per-key pick of a merge policy costs: one batch's pass over its events, per plan.

    python -m bench.pick [--events 1000000] [--keys 100000] [--toastable 3] [--repetitions 5]

One Spark session (``local[2]``, 4 GiB). A flattened Postgres batch (the columns ``flatten`` gives,
``_source_order`` from ``PostgresPolicy``, arrival as the files source sets it) of ``--events``
events over ``--keys`` keys, in random source order, with ``--toastable`` string columns of 100-200
characters that hold Debezium's placeholder in 30% of the updates, 5% snapshot reads and 5%
deletes, is made once and kept in memory. Then only ``payloads.base._per_key`` is timed, written to
Spark's ``noop`` sink: once per variant to warm up, then ``--repetitions`` times, the variants
alternating in the one JVM. The variants: the sort-based pick (``max`` over ``struct(position,
value)``) and the hash-based one (``jars/pick``), the latter with the object hash aggregate's
fallback to sorting at each of ``--fallbacks`` keys a task (default: the session's, Spark's 128). A
larger threshold keeps more keys in the hash map and was slower here (1M events: 131,072 1.5-1.9x
the time of 128; the map's objects cost the collector more than the sort they save). Each run's physical
plan names its aggregate operator; every variant's result must equal the sort-based one's.
"""

from __future__ import annotations

import argparse
import re
import statistics
import time
from pathlib import Path
from typing import Any

from bench import results
from bench.run import machine, versions

FALLBACK = "spark.sql.objectHashAggregate.sortBased.fallbackThreshold"
SPARK_DEFAULT_FALLBACK = "128"
SORT = "sort aggregate: max over struct(position, value)"


def variants(fallbacks: list[str], session: str) -> list[tuple[str, bool, str]]:
    """(name, hash-based, the object hash aggregate's fallback threshold) per variant, the sort-based first."""

    def name(threshold: str) -> str:
        said = " (Spark's default, which hudi-cdc keeps)" if threshold == SPARK_DEFAULT_FALLBACK else ""
        return f"jars/pick, sorts past {int(threshold):,} keys a task{said}"

    return [(SORT, False, session), *[(name(t), True, t) for t in dict.fromkeys(fallbacks)]]


PLACEHOLDER = "__debezium_unavailable_value"
COLUMNS = [
    results.column("variant"),
    results.column("operator", "aggregate operator"),
    results.column("median_s", "per-key pass (median)", "s"),
    results.column("min_s", "fastest", "s"),
    results.column("max_s", "slowest", "s"),
    results.column("vs_sort", "vs the sort aggregate", "x"),
]


def batch(spark: Any, events: int, keys: int, toastable: int) -> Any:  # noqa: ANN401
    """The flattened batch, materialised: realistic columns, random source order, placeholders, deletes."""
    from pyspark.sql import functions as F

    from payloads import PostgresPolicy
    from payloads.base import ARRIVAL_COLUMN, ERROR_COLUMN, ORIGIN_COLUMN

    i = F.col("id")
    u = F.rand(seed=3)
    op = F.when(u < 0.05, F.lit("r")).when(u < 0.10, F.lit("d")).otherwise(F.lit("u"))
    frame = spark.range(events).select(
        F.pmod(F.xxhash64(i), F.lit(keys)).alias("customer_id"),
        op.alias("_source_op"),
        (F.lit(1_000) + F.pmod(i * F.lit(104_729), F.lit(events))).alias("_source_lsn"),  # a permutation
        F.concat(F.lit("name-"), i.cast("string")).alias("name"),
        (F.rand(seed=5) * 1000).alias("amount"),
        i.alias("version"),
        *[
            F.when((F.col("id") % 10 < 3) & (op == F.lit("u")), F.lit(PLACEHOLDER))
            .otherwise(F.repeat(F.concat(F.lit(f"t{n}-"), F.sha1(i.cast("string"))), 3))
            .alias(f"text_{n}")
            for n in range(toastable)
        ],
        F.lit(None).cast("string").alias("_source_txid"),
        (F.lit(1_700_000_000_000) + i).alias("_source_ts_ms"),
        F.current_timestamp().alias("_ingested_at"),
        F.lit("events/part-0.avro").alias(ORIGIN_COLUMN),
        F.struct(F.lit("events/part-0.avro").alias("file"), F.lit(0).alias("block"), i.alias("row")).alias(
            ARRIVAL_COLUMN
        ),
        F.lit(None).cast("string").alias(ERROR_COLUMN),
    )
    frame = frame.withColumn("_hoodie_is_deleted", F.col("_source_op") == F.lit("d"))
    flat = PostgresPolicy().with_order(frame)
    return flat.localCheckpoint(eager=True)


def operator(frame: Any) -> str:  # noqa: ANN401
    """The aggregate operator(s) of ``frame``'s physical plan."""
    plan = frame._jdf.queryExecution().executedPlan().toString()
    found = re.findall(r"\b(ObjectHashAggregate|SortAggregate|HashAggregate)\b", plan)
    return ", ".join(sorted(set(found))) or "none"


def per_key(spark: Any, flat: Any, by_hash: bool, fallback: str) -> tuple[Any, str]:  # noqa: ANN401
    from payloads import PostgresPolicy
    from payloads.base import _Events, _per_key

    spark.conf.set(FALLBACK, fallback)
    events = _Events.of(PostgresPolicy(), flat, ["customer_id"], quarantine=False)
    frame = _per_key(events, by_hash=by_hash)
    return frame, operator(frame)


def timed(spark: Any, flat: Any, by_hash: bool, fallback: str) -> tuple[float, str]:  # noqa: ANN401
    frame, op = per_key(spark, flat, by_hash, fallback)
    started = time.perf_counter()
    frame.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - started, op


def same_results(spark: Any, flat: Any, chosen: list[tuple[str, bool, str]]) -> bool:  # noqa: ANN401
    """Every variant's per-key rows equal the sort-based ones (as multisets)."""
    reference, _ = per_key(spark, flat, False, chosen[0][2])
    for _, by_hash, fallback in chosen[1:]:
        other, _ = per_key(spark, flat, by_hash, fallback)
        if reference.exceptAll(other).count() or other.exceptAll(reference).count():
            return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--toastable", type=int, default=3, help="string columns that may hold the placeholder")
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument(
        "--fallbacks", help="the object hash aggregate's fallback thresholds to try, comma-separated (default: 128)"
    )
    parser.add_argument("--notes", help="what the result file should say about the run (the machine's load)")
    parser.add_argument(
        "--results", type=Path, help="write the result file under this folder (default: .bench/results)"
    )
    args = parser.parse_args()
    started_utc = results.now_utc()

    from hudi_cdc.spark import spark_session

    spark = spark_session(
        app_name="hudi-cdc-bench-pick", conf={"spark.master": "local[2]", "spark.driver.memory": "4g"}
    )
    default = spark.conf.get(FALLBACK)
    print(f"{machine()}; {', '.join(f'{k} {v}' for k, v in versions().items())}; {FALLBACK}={default}", flush=True)
    chosen = variants((args.fallbacks or default).split(","), default)
    flat = batch(spark, args.events, args.keys, args.toastable)
    times: dict[str, list[float]] = {name: [] for name, _, _ in chosen}
    operators: dict[str, str] = {}
    for repetition in range(args.repetitions + 1):  # the first is the warm-up
        for name, by_hash, fallback in chosen:
            took, operators[name] = timed(spark, flat, by_hash, fallback)
            if repetition:
                times[name].append(took)
            print(f"  {'warm-up' if not repetition else repetition}: {name}: {took:.2f} s ({operators[name]})")
    equal = same_results(spark, flat, chosen)
    print(f"every variant's result equals the sort aggregate's: {equal}", flush=True)
    sort_median = statistics.median(times[SORT])
    rows = [
        {
            "variant": name,
            "operator": operators[name],
            "median_s": round(statistics.median(t), 2),
            "min_s": round(min(t), 2),
            "max_s": round(max(t), 2),
            "vs_sort": round(sort_median / statistics.median(t), 2),
        }  # fmt: skip
        for name, t in times.items()
    ]
    for row in rows:
        print(row)
    results.write(
        "pick",
        parameters={
            "events": args.events,
            "keys": args.keys,
            "toastable": args.toastable,
            "repetitions": args.repetitions,
            "master": "local[2]",
            "fallback_threshold": default,
            "results_equal": equal,
        },  # fmt: skip
        tables={"pick": results.table(COLUMNS, rows), "times": _times_table(times)},
        directory=args.results or results.LOCAL,
        started_utc=started_utc,
        notes=args.notes,
    )
    if not equal:
        raise SystemExit("a variant's per-key rows differ from the sort aggregate's")


def _times_table(times: dict[str, list[float]]) -> dict:
    columns = [results.column("variant"), results.column("repetition"), results.column("seconds", "per-key pass", "s")]
    rows = [
        {"variant": n, "repetition": i + 1, "seconds": round(s, 3)} for n, t in times.items() for i, s in enumerate(t)
    ]
    return results.table(columns, rows)


if __name__ == "__main__":
    main()
