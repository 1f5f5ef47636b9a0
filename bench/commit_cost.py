"""What one small Hudi commit costs under each setting: the fixed part of a round.

    python -m bench.commit_cost [--rounds 16] [--rows 1000] [--table-rows 20000]

One Spark session (``local[2]``); for each table type, one table per variant
of the settings, each filled with ``--table-rows`` rows first. Then
``--rounds`` times, every variant in turn upserts ``--rows`` new rows with
hudi-cdc's write options (``hudi_cdc.sink.options.write_options``) plus the
variant's settings. Variants alternate in one warm JVM, so JIT and class
loading do not favour the ones that run later. The first two rounds are left
out. Only the Hudi write is timed; the rest of a round is ``make bench-rounds``.
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
from bench.run import REPO

VARIANTS: dict[str, dict[str, str]] = {
    "hudi-cdc defaults": {},
    "clean planned after every commit (Hudi's default)": {"hoodie.clean.trigger.max.commits": "1"},
    "metadata table off": {"hoodie.metadata.enable": "false"},
    "markers written directly": {"hoodie.write.markers.type": "DIRECT"},
    "timeline server kept between writes": {"hoodie.embed.timeline.server.reuse.enabled": "true"},
    "timeline server off": {"hoodie.embed.timeline.server": "false"},
}


def measure(spark: Any, table_type: str, rounds: int, rows: int, table_rows: int, work: Path) -> dict[str, list[float]]:
    from hudi_cdc.sink.options import write_options

    def frame(start: int, count: int) -> Any:
        return spark.range(start, start + count).selectExpr(
            "id",
            "concat('customer ', id) as name",
            "repeat('x', 200) as notes",
            "lpad(cast(id as string), 20, '0') as _order",
        )

    def options(i: int, conf: dict[str, str]) -> dict[str, str]:
        return write_options(
            table_name=f"t{i}", table_type=table_type, record_key_fields=["id"], partition_path_field=None,
            ordering_field="_order", user_conf=conf,
        )  # fmt: skip

    root = work / table_type
    shutil.rmtree(root, ignore_errors=True)
    for i, conf in enumerate(VARIANTS.values()):
        frame(0, table_rows).write.format("hudi").options(**options(i, conf)).mode("append").save(str(root / f"t{i}"))
    took: dict[str, list[float]] = {name: [] for name in VARIANTS}
    start = table_rows
    for _ in range(rounds):
        for i, (name, conf) in enumerate(VARIANTS.items()):
            batch = frame(start, rows)
            began = time.perf_counter()
            batch.write.format("hudi").options(**options(i, conf)).mode("append").save(str(root / f"t{i}"))
            took[name].append(time.perf_counter() - began)
        start += rows
    for i in range(len(VARIANTS)):  # every table holds every row it was given
        count = spark.read.format("hudi").load(str(root / f"t{i}")).count()
        if count != start:
            raise RuntimeError(f"{table_type} table t{i} has {count} rows, {start} written")
    return {name: values[2:] for name, values in took.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=16)
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--table-rows", type=int, default=20_000)
    parser.add_argument("--work", type=Path, default=REPO / ".bench" / "commit_cost")
    parser.add_argument(
        "--results", type=Path, help="write the result file under this folder (default: .bench/results)"
    )
    args = parser.parse_args(argv)
    import hudi_cdc

    started = f"{datetime.now():%Y-%m-%d %H:%M}"
    started_utc = result_files.now_utc()
    spark = hudi_cdc.spark_session(
        app_name="commit-cost", conf={"spark.master": "local[2]", "spark.driver.memory": "4g"}
    )
    spark.sparkContext.setLogLevel("ERROR")
    results = {
        t: measure(spark, t, args.rounds, args.rows, args.table_rows, args.work)
        for t in ("COPY_ON_WRITE", "MERGE_ON_READ")
    }
    print(render(results, started, args))
    result_files.write(
        "commit-cost",
        parameters={
            "rows": args.rows,
            "table_rows": args.table_rows,
            "rounds": args.rounds,
            "measured_rounds": args.rounds - 2,
        },
        tables={"commits": result_files.table(COLUMNS, result_rows(results))},
        directory=args.results or result_files.LOCAL,
        started_utc=started_utc,
    )
    return 0


COLUMNS = [
    result_files.column("settings"), result_files.column("hoodie_conf", "--hoodie-conf"),
    result_files.column("cow_median_s", "COW: median commit", "s"),
    result_files.column("cow_change_pct", "vs hudi-cdc defaults", "%"),
    result_files.column("mor_median_s", "MOR: median commit", "s"),
    result_files.column("mor_change_pct", "vs hudi-cdc defaults", "%"),
]  # fmt: skip


def result_rows(results: dict[str, dict[str, list[float]]]) -> list[dict[str, Any]]:
    rows = []
    for name, conf in VARIANTS.items():
        row: dict[str, Any] = {"settings": name, "hoodie_conf": ",".join(f"{k}={v}" for k, v in conf.items()) or None}
        for table_type, short in (("COPY_ON_WRITE", "cow"), ("MERGE_ON_READ", "mor")):
            if table_type in results:
                med, base = (statistics.median(results[table_type][n]) for n in (name, "hudi-cdc defaults"))
                row[f"{short}_median_s"], row[f"{short}_change_pct"] = round(med, 2), round((med / base - 1) * 100)
        rows.append(row)
    return rows


def render(results: dict[str, dict[str, list[float]]], started: str, args: argparse.Namespace) -> str:
    from bench.run import machine, versions

    def cell(values: list[float], base: list[float]) -> str:
        med = statistics.median(values)
        return f"{med:.2f} s ({(med / statistics.median(base) - 1) * 100:+.0f}%)"

    lines = [
        f"Run of {started} on {machine()}; {', '.join(f'{k} {v}' for k, v in versions().items())}. "
        f"Upserts of {args.rows:,} new rows into tables of {args.table_rows:,}+ rows, `local[2]`, one JVM, "
        f"variants alternating; median of {args.rounds - 2} commits each (change against hudi-cdc's defaults).",
        "",
        "| settings | " + " | ".join(results) + " |",
        "| --- |" + " ---: |" * len(results),
    ]
    for name, conf in VARIANTS.items():
        shown = ", ".join(f"`{k}={v}`" for k, v in conf.items())
        label = f"{name} ({shown})" if shown else name
        lines.append(
            f"| {label} | " + " | ".join(cell(r[name], r["hudi-cdc defaults"]) for r in results.values()) + " |"
        )
    return "\n".join([*lines, ""])


if __name__ == "__main__":
    sys.exit(main())
