"""`make bench`: hudi-cdc side by side with Hudi's HoodieStreamer on one Debezium change stream.

    python -m bench.run --events 1000000 --keys 100000 [--results bench/results]

One run: produce the stream into a fresh topic of the local stack; measure the
decode-only rate of each decoding design; ingest the topic with hudi-cdc, with
HoodieStreamer (PostgresDebeziumSource) and with a hand-written Hudi 1.2 PySpark
job (bench/anchor.py) into COW and MOR tables, once
with the same Hudi settings on both and once with each tool's defaults, every
run a `spark-submit --master local[2]` with the same driver memory; time a
plain Parquet write of the final rows; check every table equals the stream's
final state (a wrong table fails the run); print events/s, ratios and peak
memory, and write them as a result file (``bench/results.py``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from bench import results
from bench.procs import Measured, run_measured
from bench.workload import COLUMNS, PLACEHOLDER, Workload
from hudi_cdc.launcher import SCRIPT as LAUNCHER

REPO = Path(__file__).resolve().parent.parent
BOOTSTRAP = "127.0.0.1:59092"
REGISTRY = "http://127.0.0.1:58080/apis/ccompat/v7"
CORES = 2
DRIVER_MEMORY = "4g"
# The settings both tools get in the "same settings" runs: the index, the shuffle parallelism, the file sizing.
SAME_SETTINGS = {
    "hoodie.index.type": "SIMPLE",
    "hoodie.upsert.shuffle.parallelism": "4",
    "hoodie.insert.shuffle.parallelism": "4",
    "hoodie.delete.shuffle.parallelism": "4",
    "hoodie.simple.index.parallelism": "4",
    "hoodie.parquet.max.file.size": str(120 * 1024 * 1024),
    "hoodie.metadata.enable": "true",
    "hoodie.metadata.index.column.stats.enable": "false",
    # hudi-cdc's default; Hudi's (both versions) is gzip.
    "hoodie.parquet.compression.codec": "zstd",
}


@dataclass
class Run:
    tool: str
    table_type: str
    settings: str
    measured: Measured | None = None
    rows_ok: bool | None = None
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def spark_submit() -> str:
    return str(Path(sys.executable).parent / "spark-submit")


def hudi_cdc_jars() -> list[str]:
    """spark-submit's --jars or --packages arguments, chosen as a local hudi-cdc session would (every benchmark
    runs a local master: the s3a jars and jars/localfs on the driver's classpath, with its fs.file.impl), and
    the JVM options hudi-cdc's sessions run with (as Spark's defaultJavaOptions, which
    --driver-java-options adds to)."""
    from hudi_cdc._jvm import jvm_conf
    from hudi_cdc.jars import resolve_jars

    return [
        *resolve_jars().submit_args(local=True),
        *(a for k, v in jvm_conf().items() for a in ("--conf", f"{k}={v}")),
    ]


def jvm_archive_args() -> list[str]:
    """hudi-cdc's class-data archive (``hudi-cdc jvm-archive``, built by ``make bench``), if there is one."""
    from hudi_cdc import jvm_archive
    from hudi_cdc.jars import resolve_jars

    archive = jvm_archive.archive_for(resolve_jars())
    return ["--driver-java-options", jvm_archive.java_options(archive)] if archive else []


def run_hudi_cdc(
    work: Path, topic: str, table_type: str, settings: dict[str, str], name: str, extra: Sequence[str] = ()
) -> Run:
    base = work / "tables" / name
    conf = [arg for k, v in settings.items() for arg in ("--hoodie-conf", f"{k}={v}")]
    command = [
        spark_submit(), "--master", f"local[{CORES}]", "--driver-memory", DRIVER_MEMORY,
        "--conf", "spark.ui.enabled=false", *hudi_cdc_jars(), *jvm_archive_args(),
        str(LAUNCHER), "ingest", "--source", "kafka", "--topic", topic,
        "--bootstrap-servers", BOOTSTRAP, "--schema-registry-url", REGISTRY, "--target-base-path", str(base),
        "--target-table", name, "--table-type", table_type, "--json", *conf, *extra,
    ]  # fmt: skip
    run = Run("hudi-cdc", table_type, "same" if settings else "defaults")
    run.measured = run_measured(command, work / "logs" / f"{name}.log", env={"PYSPARK_PYTHON": sys.executable})
    run.extra["base"] = str(base)
    return run


ANCHOR = "Hudi 1.2 by hand"


def run_anchor(work: Path, topic: str, table_type: str, settings: dict[str, str], name: str) -> Run:
    """bench/anchor.py, Hudi 1.2 by hand, on the same Spark, jars and resources as hudi-cdc."""
    base = work / "tables" / name
    conf = [arg for k, v in settings.items() for arg in ("--hoodie-conf", f"{k}={v}")]
    command = [
        spark_submit(), "--master", f"local[{CORES}]", "--driver-memory", DRIVER_MEMORY,
        "--conf", "spark.ui.enabled=false", *hudi_cdc_jars(),
        str(REPO / "bench" / "anchor.py"), "--topic", topic, "--bootstrap-servers", BOOTSTRAP,
        "--schema-registry-url", REGISTRY, "--target-base-path", str(base), "--target-table", name,
        "--table-type", table_type, *conf,
    ]  # fmt: skip
    run = Run(ANCHOR, table_type, "same" if settings else "defaults")
    run.measured = run_measured(command, work / "logs" / f"{name}.log", env={"PYSPARK_PYTHON": sys.executable})
    run.extra["base"] = str(base)
    return run


HOODIESTREAMER_VERSION = "0.14.0"  # the only hudi-utilities on the reachable Maven mirror (see the Makefile)


def strip_tombstones(spark: Any, topic: str) -> str:
    """A copy of ``topic`` without Kafka tombstones, same partitions and bytes (schema ids stay valid).

    HoodieStreamer's DebeziumSource fails the whole round with a NullPointerException
    on a tombstone (Debezium's default after each delete) and has no setting to skip
    them; hudi-cdc reads the original topic.
    """
    from hudi_cdc.testing.kafka import create_topic, end_offsets

    copy = f"hoodiestreamer.{topic}"
    create_topic(BOOTSTRAP, copy, partitions=len(end_offsets(BOOTSTRAP, [topic])))
    frame = (
        spark.read.format("kafka").option("kafka.bootstrap.servers", BOOTSTRAP).option("subscribe", topic)
        .option("startingOffsets", "earliest").option("endingOffsets", "latest").load()
    )  # fmt: skip
    frame.where("value IS NOT NULL").select("key", "value", "partition").write.format("kafka").option(
        "kafka.bootstrap.servers", BOOTSTRAP
    ).option("topic", copy).save()
    return copy


def run_hoodiestreamer(work: Path, topic: str, table_type: str, settings: dict[str, str], name: str) -> Run:
    base = work / "tables" / name
    env = {
        "HUDI": HOODIESTREAMER_VERSION, "TOPIC": topic, "TABLE_TYPE": table_type, "TARGET": str(base),
        "TABLE_NAME": name, "RECORD_KEY": "id", "REGISTRY": REGISTRY, "BOOTSTRAP": BOOTSTRAP,
        "MASTER": f"local[{CORES}]", "DRIVER_MEMORY": DRIVER_MEMORY, "LOG": str(work / "logs" / f"{name}.spark.log"),
    }  # fmt: skip
    extra = [arg for k, v in settings.items() for arg in ("--hoodie-conf", f"{k}={v}")]
    command = ["bash", str(REPO / "bench" / "hoodiestreamer" / "run.sh"), *extra]
    run = Run(f"HoodieStreamer {HOODIESTREAMER_VERSION}", table_type, "same" if settings else "defaults")
    measured = run_measured(command, work / "logs" / f"{name}.log", env=env)
    # run.sh ends a JVM that Apicurio's deserializer keeps alive after Spark stopped: its own
    # wall time stops at Spark's stop, without that wait.
    wall = re.search(r"wall=([0-9.]+)s", measured.log.read_text())
    run.measured = dataclasses.replace(measured, seconds=float(wall.group(1))) if wall else measured
    run.extra["base"] = str(base)
    return run


def _normal(value: Any, column: str) -> Any:
    # HoodieStreamer keeps Debezium's MicroTimestamp as a long; hudi-cdc makes it a timestamp.
    if column == "updated_at" and isinstance(value, int):
        return datetime(1970, 1, 1) + timedelta(microseconds=value)
    return value


def verify(spark: Any, run: Run, expected: list[tuple]) -> None:
    frame = spark.read.format("hudi").load(run.extra["base"])
    missing = [c for c in COLUMNS if c not in frame.columns]
    if missing:
        run.rows_ok, run.note = False, f"columns missing: {missing}"
        return
    rows = sorted(
        tuple(_normal(v, c) for v, c in zip(r, COLUMNS, strict=True)) for r in frame.select(*COLUMNS).collect()
    )
    run.rows_ok = rows == expected
    if not run.rows_ok:
        got, want = set(rows), set(expected)
        run.note = f"{len(rows)} rows vs {len(expected)} expected; {len(got - want)} wrong, {len(want - got)} missing"
        placeholders = sum(1 for r in got - want if PLACEHOLDER in r)
        if placeholders:
            run.note += f"; {placeholders} rows hold the TOAST placeholder instead of the value"
        sample = [tuple(str(v)[:40] for v in r) for r in sorted(got - want)[:2]]
        print(f"   {run.tool} {run.table_type} {run.settings}: {run.note}; e.g. {sample}", flush=True)


def parquet_limit(spark: Any, source_base: str, work: Path) -> float:
    """Seconds for a plain Parquet write of the final rows (read first, outside the timing)."""
    frame = spark.read.format("hudi").load(source_base).select(*COLUMNS).localCheckpoint(eager=True)
    started = time.perf_counter()
    frame.write.mode("overwrite").parquet(str(work / "tables" / "plain_parquet"))
    return time.perf_counter() - started


def variant(text: str) -> tuple[str, dict[str, str]]:
    """``label`` or ``label:key=value,key=value``: a run with those Hudi settings (``--variant``)."""
    label, _, pairs = text.partition(":")
    conf = dict(p.split("=", 1) for p in pairs.split(",") if p)
    return label, conf


def versions() -> dict[str, str]:
    import pyspark

    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr.splitlines()[0]
    return {"python": platform.python_version(), "pyspark": pyspark.__version__, "java": java, "hudi": "1.2.0"}


def machine() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
    mem = next(int(line.split()[1]) for line in open("/proc/meminfo") if line.startswith("MemTotal"))
    return f"{os.cpu_count()} cores ({cpu}), {mem / 1024 / 1024:.0f} GiB RAM, {platform.platform()}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument(
        "--schema-versions", type=int, choices=(1, 2, 3), default=3,
        help="writer schema versions in the stream (HoodieStreamer 0.14 fails on more than one)",
    )  # fmt: skip
    parser.add_argument("--work", type=Path, default=REPO / ".bench")
    parser.add_argument("--results", type=Path, help="write the result file under this folder (default: WORK/results)")
    parser.add_argument("--skip-hoodiestreamer", action="store_true")
    parser.add_argument("--skip-anchor", action="store_true", help="skip the hand-written Hudi 1.2 job")
    parser.add_argument("--only-same-settings", action="store_true", help="skip the runs with each tool's defaults")
    parser.add_argument(
        "--table-types", default="COPY_ON_WRITE,MERGE_ON_READ",
        help="the table types to run, comma-separated (the CI smoke test runs one where one is enough)",
    )  # fmt: skip
    parser.add_argument("--render", type=Path, help="only print an earlier run's report.json as markdown")
    args = parser.parse_args(argv)
    if args.render:
        print(render(json.loads(args.render.read_text())))
        return 0

    import hudi_cdc
    from bench.decode import measure

    started_at = f"{datetime.now():%Y-%m-%d %H:%M}"
    started_utc = results.now_utc()
    work = args.work / datetime.now().strftime("%Y%m%dT%H%M%S")
    topic = f"bench.t{uuid.uuid4().hex[:8]}.customers"
    workload = Workload(topic, args.events, args.keys, args.partitions, args.schema_versions)
    started = time.perf_counter()
    workload.produce(BOOTSTRAP, REGISTRY)
    produce_s = time.perf_counter() - started
    expected = workload.expected_rows()
    print(
        f"produced {args.events} events ({workload.counts}) to {topic} in {produce_s:.1f}s; {len(expected)} final rows"
    )

    spark = hudi_cdc.spark_session(
        app_name="hudi-cdc-bench",
        conf={
            "spark.master": f"local[{CORES}]",
            "spark.driver.memory": DRIVER_MEMORY,
            "spark.sql.shuffle.partitions": "4",
        },
    )
    decode = measure(spark, BOOTSTRAP, REGISTRY, topic, args.events)
    archive = jvm_archive_args()
    print(f"hudi-cdc's JVM archive: {archive[-1] if archive else 'none (hudi-cdc jvm-archive builds it)'}")

    hs_topic = None if args.skip_hoodiestreamer else strip_tombstones(spark, topic)
    if args.schema_versions > 1 and not args.skip_anchor:
        # from_avro with one schema cannot read the older versions' bytes: it would only measure a failure.
        print(f"{ANCHOR}: skipped, it reads a one-version stream only (--schema-versions 1)")
        args.skip_anchor = True
    runs: list[Run] = []
    settings_sets = [("same", SAME_SETTINGS)] + ([] if args.only_same_settings else [("defaults", {})])
    for label, settings in settings_sets:
        for table_type in args.table_types.split(","):
            short = "cow" if table_type == "COPY_ON_WRITE" else "mor"
            group = [run_hudi_cdc(work, topic, table_type, settings, f"hudi_cdc_{short}_{label}")]
            if not args.skip_hoodiestreamer:
                group.append(
                    run_hoodiestreamer(work, hs_topic, table_type, settings, f"hoodiestreamer_{short}_{label}")
                )
            if not args.skip_anchor:
                group.append(run_anchor(work, topic, table_type, settings, f"anchor_{short}_{label}"))
            runs += group
            for run in group:
                if run.measured and run.measured.returncode != 0:
                    run.rows_ok, run.note = False, f"exit {run.measured.returncode}, see {run.measured.log}"
                elif run.rows_ok is None:
                    verify(spark, run, expected)
                m = run.measured
                print(f"{run.tool:<21} {run.table_type:<14} {run.settings:<8} {m.seconds:7.1f}s "
                      f"{args.events / m.seconds:>9,.0f} events/s peak {m.peak_rss_mib:,.0f} MiB "
                      f"{'OK' if run.rows_ok else 'WRONG: ' + run.note}", flush=True)  # fmt: skip

    first_ok = next((r for r in runs if r.tool == "hudi-cdc" and r.rows_ok), None)
    parquet_s = parquet_limit(spark, first_ok.extra["base"], work) if first_ok else float("nan")
    print(f"plain parquet write of {len(expected)} final rows: {parquet_s:.1f}s")
    report = {
        "started": started_at, "machine": machine(), "versions": versions(), "events": args.events, "keys": args.keys,
        "partitions": args.partitions, "schema_versions": args.schema_versions, "mix": workload.counts, "final_rows": len(expected), "produce_s": produce_s,
        "decode": decode, "parquet_write_s": parquet_s, "jvm_archive": bool(archive),
        "runs": [{"tool": r.tool, "table_type": r.table_type, "settings": r.settings, "seconds": r.measured.seconds,
                  "peak_rss_mib": r.measured.peak_rss_mib, "rows_ok": r.rows_ok, "note": r.note}
                 for r in runs if r.measured],
    }  # fmt: skip
    work.mkdir(parents=True, exist_ok=True)
    (work / "report.json").write_text(json.dumps(report, indent=2, default=str))
    print(render(report))
    results.write(
        "bench",
        parameters={
            "events": args.events, "keys": args.keys, "partitions": args.partitions,
            "schema_versions": args.schema_versions, "cores": CORES, "driver_memory": DRIVER_MEMORY,
            "jvm_archive": bool(archive), "final_rows": len(expected), "mix": workload.counts,
            "same_settings": SAME_SETTINGS, "table_types": args.table_types.split(","),
        },
        tables=result_tables(report),
        directory=args.results or args.work / "results",
        started_utc=started_utc,
    )  # fmt: skip
    # A wrong hudi-cdc table fails the run; a wrong table of an anchor is a finding, reported above.
    return 0 if all(r.rows_ok for r in runs if r.tool == "hudi-cdc") else 1


RUN_COLUMNS = [
    results.column("tool"), results.column("table_type", "table"), results.column("settings", "Hudi settings"),
    results.column("seconds", "wall", "s"), results.column("events_per_s", "rate", "events/s"),
    results.column("peak_rss_mib", "peak RSS", "MiB"), results.column("rows_ok", "table equals source"),
    results.column("note"),
]  # fmt: skip
RATIO_COLUMNS = [
    results.column("anchor", "hudi-cdc against"), results.column("table_type", "table"),
    results.column("settings", "Hudi settings"), results.column("ratio", "hudi-cdc events/s ÷ theirs", "x"),
]  # fmt: skip
LIMIT_COLUMNS = [
    results.column("limit"), results.column("seconds", "time", "s"),
    results.column("events_per_s", "stream events/s", "events/s"),
]  # fmt: skip
DECODE_LIMIT, PARQUET_LIMIT = "decode-only limit", "plain Parquet write limit"


def ratios(report: dict[str, Any]) -> list[dict[str, Any]]:
    """hudi-cdc's events/s over each anchor's (same table type and settings) and over the two limits."""
    events = report["events"]
    by = {(r["tool"], r["table_type"], r["settings"]): r["seconds"] for r in report["runs"]}
    out = []
    for anchor in (f"HoodieStreamer {HOODIESTREAMER_VERSION}", ANCHOR):
        for settings in ("same", "defaults"):
            for table_type in ("COPY_ON_WRITE", "MERGE_ON_READ"):
                ours, theirs = by.get(("hudi-cdc", table_type, settings)), by.get((anchor, table_type, settings))
                if ours and theirs:
                    out.append({"anchor": anchor, "table_type": table_type, "settings": settings,
                                "ratio": round(theirs / ours, 2)})  # fmt: skip
    decode = report["decode"]
    # The limit is the fastest design that builds rows (the count-only one builds none).
    best_decode = max(d["events_per_s"] for name, d in decode.items() if not name.endswith("_count"))
    for table_type in ("COPY_ON_WRITE", "MERGE_ON_READ"):
        ours = by.get(("hudi-cdc", table_type, "same"))
        if ours:
            out.append({"anchor": DECODE_LIMIT, "table_type": table_type, "settings": "same",
                        "ratio": round(events / ours / best_decode, 2)})  # fmt: skip
            if report["parquet_write_s"] == report["parquet_write_s"]:
                out.append({"anchor": PARQUET_LIMIT, "table_type": table_type, "settings": "same",
                            "ratio": round(report["parquet_write_s"] / ours, 2)})  # fmt: skip
    return out


def result_tables(report: dict[str, Any]) -> dict[str, Any]:
    events = report["events"]
    runs = [
        {**r, "seconds": round(r["seconds"], 1), "events_per_s": round(events / r["seconds"]),
         "peak_rss_mib": round(r["peak_rss_mib"])}
        for r in report["runs"]
    ]  # fmt: skip
    limits = [
        {"limit": f"decode only, {name}", "seconds": d["seconds"], "events_per_s": d["events_per_s"]}
        for name, d in report["decode"].items()
    ]
    parquet_s = report["parquet_write_s"]
    if parquet_s == parquet_s:
        limits.append({"limit": f"plain Parquet write of the final {report['final_rows']:,} rows",
                       "seconds": round(parquet_s, 1), "events_per_s": round(events / parquet_s)})  # fmt: skip
    return {
        "runs": results.table(RUN_COLUMNS, runs),
        "ratios": results.table(RATIO_COLUMNS, ratios(report)),
        "limits": results.table(LIMIT_COLUMNS, limits, title="Limits, same machine and Spark resources"),
    }


def render(report: dict[str, Any]) -> str:
    events = report["events"]
    lines = [
        f"Run of {report.get('started', '?')} UTC. Machine: {report['machine']}.",
        "Versions: " + ", ".join(f"{k} {v}" for k, v in report["versions"].items()) + ".",
        f"Stream: {events:,} events over {report['keys']:,} keys in {report['partitions']} partitions "
        f"(inserts {report['mix']['c']:,}, updates {report['mix']['u']:,} of which {report['mix']['toast']:,} "
        f"with a TOAST placeholder, deletes {report['mix']['d']:,}; {report['schema_versions']} schema version(s)); "
        f"{report['final_rows']:,} rows at the end.",
        "hudi-cdc's driver JVM "
        + (
            "mapped its class-data archive (`hudi-cdc jvm-archive`); the other tools' did not have one."
            if report.get("jvm_archive")
            else "had no class-data archive (`hudi-cdc jvm-archive` not run)."
        ),
        "",
        "| tool | table | Hudi settings | wall s | events/s | peak RSS MiB | table equals source |",
        "| --- | --- | --- | ---: | ---: | ---: | --- |",
    ]
    for r in report["runs"]:
        lines.append(
            f"| {r['tool']} | {r['table_type']} | {r['settings']} | {r['seconds']:.1f} | {events / r['seconds']:,.0f} "
            f"| {r['peak_rss_mib']:,.0f} | {'yes' if r['rows_ok'] else 'NO: ' + r['note']} |"
        )
    lines += ["", "| hudi-cdc events/s ÷ theirs | table | settings | ratio |", "| --- | --- | --- | ---: |"]
    for r in ratios(report):
        lines.append(f"| {r['anchor']} | {r['table_type']} | {r['settings']} | {r['ratio']:.2f}x |")
    decode = report["decode"]
    lines += ["", "Limits (same machine, same Spark resources):", ""]
    for name, d in decode.items():
        lines.append(f"- decode only, {name}: {d['events_per_s']:,} events/s ({d['seconds']} s)")
    lines.append(
        f"- plain Parquet write of the final {report['final_rows']:,} rows: {report['parquet_write_s']:.1f} s "
        f"({events / report['parquet_write_s']:,.0f} stream events/s equivalent)"
    )
    return "\n".join(lines) + "\n"  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
