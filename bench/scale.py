"""Scale: cost per event as the backlog grows, as the table grows, and memory against ``--source-limit``.

    python -m bench.scale --backlogs 100000 1000000 5000000 --source-limit 500000

For each backlog size N: produce N change events over N/10 keys (the same
generator as ``make bench``, one schema version) into a fresh topic, then
replicate it with one ``hudi-cdc ingest --continuous --source-limit L``
process (``spark-submit --master local[2]``, ``--table-type``: COPY_ON_WRITE by
default; MERGE_ON_READ compacts inline every 5th delta commit) that stops after
the rounds the backlog needs. Per round: events, seconds, and the table's
row count at that commit (a time-travel query, after the timing). Per run:
wall seconds, events/s and the peak memory of the whole process tree. The
largest backlog also runs once without ``--source-limit`` (one batch), to show
what bounds memory. Every final table is checked against the generator.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

from bench import results
from bench.procs import run_measured
from bench.run import (
    BOOTSTRAP,
    CORES,
    DRIVER_MEMORY,
    LAUNCHER,
    REGISTRY,
    REPO,
    Run,
    hudi_cdc_jars,
    spark_submit,
    verify,
)
from bench.workload import Workload


def ingest(
    work: Path,
    topic: str,
    name: str,
    *,
    table_type: str,
    source_limit: int | None,
    rounds: int,
    hoodie_conf: dict[str, str],
    java_options: str | None = None,
) -> dict[str, Any]:
    base = work / "tables" / name
    command = [
        spark_submit(), "--master", f"local[{CORES}]", "--driver-memory", DRIVER_MEMORY,
        "--conf", "spark.ui.enabled=false", *hudi_cdc_jars(),
        *(["--driver-java-options", java_options] if java_options else []),
        str(LAUNCHER), "ingest", "--source", "kafka", "--topic", topic,
        "--bootstrap-servers", BOOTSTRAP, "--schema-registry-url", REGISTRY, "--target-base-path", str(base),
        "--target-table", name, "--table-type", table_type, "--json",
        "--continuous", "--max-rounds", str(rounds), "--min-sync-interval-seconds", "0",
        *(["--source-limit", str(source_limit)] if source_limit else []),
        *[arg for k, v in {**KEEP_HISTORY, **hoodie_conf}.items() for arg in ("--hoodie-conf", f"{k}={v}")],
    ]  # fmt: skip
    measured = run_measured(command, work / "logs" / f"{name}.log", env={"PYSPARK_PYTHON": sys.executable})
    rounds_out = [json.loads(line) for line in measured.log.read_text().splitlines() if line.startswith("{")]
    return {"base": str(base), "measured": measured, "rounds": rounds_out}


# Enough history for a time-travel query at every round's commit (Hudi cleans after 10 by default).
KEEP_HISTORY = {"hoodie.clean.commits.retained": "40", "hoodie.keep.min.commits": "50", "hoodie.keep.max.commits": "60"}


def table_rows_at(spark: Any, base: str, commit: str) -> int | None:
    try:
        return spark.read.format("hudi").option("as.of.instant", commit).load(base).count()
    except Exception as exc:  # noqa: BLE001 - a cleaned instant is a gap in the table, not a failed run
        print(f"no row count at {commit}: {str(exc).splitlines()[0][:200]}", flush=True)
        return None


def produce(events: int, topic: str | None = None) -> tuple[str, Workload, int]:
    """A fresh topic of ``events`` changes; or, given ``topic``, the one an earlier run produced (same seed)."""
    workload = Workload(topic or f"bench.t{uuid.uuid4().hex[:8]}.customers", events, max(1, events // 10), 4, 1)
    if topic:
        for _ in workload.changes():  # fills the expected table and the counts
            pass
    else:
        workload.produce(BOOTSTRAP, REGISTRY)
    messages = events + workload.counts["d"]  # each delete is followed by a Kafka tombstone
    print(f"{events:,} events ({messages:,} messages) in {workload.topic}", flush=True)
    return workload.topic, workload, messages


def run_backlog(
    spark: Any,
    work: Path,
    stream: tuple[str, Workload, int],
    source_limit: int | None,
    label: str,
    table_type: str,
    hoodie_conf: dict[str, str],
    java_options: str | None,
) -> dict[str, Any]:
    topic, workload, messages = stream
    events = workload.events
    rounds = math.ceil(messages / source_limit) if source_limit else 1
    out = ingest(
        work,
        topic,
        f"{label}_{events}",
        table_type=table_type,
        source_limit=source_limit,
        rounds=rounds,
        hoodie_conf=hoodie_conf,
        java_options=java_options,
    )
    m = out["measured"]
    run = Run("hudi-cdc", table_type, label, measured=m, extra={"base": out["base"]})
    if m.returncode != 0:
        log = m.log.read_text()
        cause = "out of memory (java.lang.OutOfMemoryError)" if "OutOfMemoryError" in log else f"exit {m.returncode}"
        run.rows_ok, run.note = False, f"{cause} after {len(out['rounds'])} of {rounds} round(s), see {m.log}"
    else:
        verify(spark, run, workload.expected_rows())
    per_round = [
        {
            "events": r["events"], "seconds": round(r["duration_s"], 1),
            "events_per_s": round(r["events"] / r["duration_s"]) if r["duration_s"] else None,
            "table_rows_after": table_rows_at(spark, out["base"], r["commit_time"]) if r["commit_time"] else None,
        }
        for r in out["rounds"]
    ]  # fmt: skip
    result = {
        "label": label, "events": events, "keys": workload.keys, "messages": messages,
        "source_limit": source_limit, "rounds_planned": rounds, "rounds": per_round, "seconds": round(m.seconds, 1),
        "events_per_s": round(events / m.seconds), "us_per_event": round(m.seconds / events * 1e6, 1),
        "peak_rss_mib": round(m.peak_rss_mib), "rows_ok": run.rows_ok, "note": run.note,
    }  # fmt: skip
    print(json.dumps(result), flush=True)
    return result


RUN_COLUMNS = [
    results.column("run"), results.column("events", "backlog", "events"), results.column("keys", unit="keys"),
    results.column("source_limit", "--source-limit", "messages"), results.column("rounds", unit="rounds"),
    results.column("rounds_planned", "of", "rounds"), results.column("seconds", "wall", "s"),
    results.column("events_per_s", "rate", "events/s"), results.column("us_per_event", "cost", "µs/event"),
    results.column("peak_rss_mib", "peak RSS", "MiB"), results.column("rows_ok", "table correct"),
    results.column("note"),
]  # fmt: skip
ROUND_COLUMNS = [
    results.column("backlog", unit="events"), results.column("round", unit="#"),
    results.column("events", unit="events"), results.column("seconds", unit="s"),
    results.column("events_per_s", "rate", "events/s"), results.column("table_rows_after", "table rows after", "rows"),
]  # fmt: skip


def result_tables(runs: list[dict[str, Any]]) -> dict[str, Any]:
    label = {"bounded": "rounds of --source-limit", "unbounded": "one batch"}
    return {
        "runs": results.table(
            RUN_COLUMNS, [{**r, "run": label.get(r["label"], r["label"]), "rounds": len(r["rounds"])} for r in runs]
        ),
        "rounds": results.table(
            ROUND_COLUMNS,
            [
                {"backlog": r["events"], "round": i, **rnd}
                for r in runs
                if r["source_limit"]
                for i, rnd in enumerate(r["rounds"], 1)
            ],  # fmt: skip
            title="Per round, as the table grows (the bounded runs)",
        ),
    }


def render(report: dict[str, Any]) -> str:
    lines = [
        f"Scale run of {report['started']} on {report['machine']}; "
        f"{', '.join(f'{k} {v}' for k, v in report['versions'].items())}. "
        f"{report['table_type']}, `local[{CORES}]`, driver memory {DRIVER_MEMORY}; wall time includes JVM start."
        + "".join(f" `--hoodie-conf {k}={v}`." for k, v in report.get("hoodie_conf", {}).items()),
        "",
        "| backlog (events) | keys | --source-limit (messages) | rounds | wall s | events/s | µs/event "
        "| peak RSS MiB | table correct |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in report["runs"]:
        limit = f"{r['source_limit']:,}" if r["source_limit"] else "none (one batch)"
        lines.append(
            f"| {r['events']:,} | {r['keys']:,} | {limit} | {len(r['rounds'])} of {r['rounds_planned']} | {r['seconds']} | "
            f"{r['events_per_s']:,} | {r['us_per_event']} | {r['peak_rss_mib']:,} | "
            f"{'yes' if r['rows_ok'] else 'NO: ' + r['note']} |"
        )
    lines += ["", "Per round, as the table grows (rounds of the bounded runs):", ""]
    lines += ["| backlog | round | events | seconds | events/s | table rows after |", "|---:|---:|---:|---:|---:|---:|"]
    for r in report["runs"]:
        if not r["source_limit"]:
            continue
        for i, rnd in enumerate(r["rounds"], 1):
            lines.append(
                f"| {r['events']:,} | {i} | {rnd['events']:,} | {rnd['seconds']} | "
                f"{(rnd['events_per_s'] or 0):,} | "
                f"{'-' if rnd['table_rows_after'] is None else format(rnd['table_rows_after'], ',')} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backlogs", type=int, nargs="+", default=[100_000, 1_000_000, 5_000_000])
    parser.add_argument("--source-limit", type=int, default=500_000)
    parser.add_argument("--skip-unbounded", action="store_true", help="skip the one-batch run of the largest backlog")
    parser.add_argument("--table-type", choices=("COPY_ON_WRITE", "MERGE_ON_READ"), default="COPY_ON_WRITE")
    parser.add_argument("--hoodie-conf", action="append", default=[], metavar="K=V", help="passed to every ingest")
    parser.add_argument("--driver-java-options", help="spark-submit's --driver-java-options for every ingest")
    parser.add_argument("--topic", help="reuse the topic an earlier run of one backlog produced (same generator)")
    parser.add_argument("--work", type=Path, default=REPO / ".bench" / "scale")
    parser.add_argument(
        "--results", type=Path, help="write the result file under this folder (default: .bench/results)"
    )
    args = parser.parse_args(argv)
    if args.topic and len(args.backlogs) != 1:
        parser.error("--topic needs exactly one backlog size, the one it was produced with")
    hoodie_conf = dict(kv.split("=", 1) for kv in args.hoodie_conf)

    import hudi_cdc
    from bench.run import machine, versions

    started = f"{datetime.now():%Y-%m-%d %H:%M}"
    started_utc = results.now_utc()
    work = args.work / datetime.now().strftime("%Y%m%dT%H%M%S")
    # The checks collect whole tables (450k rows of 3 kB notes at 5M events) into the driver.
    spark = hudi_cdc.spark_session(
        app_name="hudi-cdc-scale",
        conf={"spark.master": f"local[{CORES}]", "spark.driver.memory": "8g", "spark.driver.maxResultSize": "0"},
    )
    runs = []
    for n in sorted(args.backlogs):
        stream = produce(n, args.topic)
        runs.append(
            run_backlog(
                spark,
                work,
                stream,
                args.source_limit,
                "bounded",
                args.table_type,
                hoodie_conf,
                args.driver_java_options,
            )
        )
        if n == max(args.backlogs) and not args.skip_unbounded:
            runs.append(
                run_backlog(
                    spark, work, stream, None, "unbounded", args.table_type, hoodie_conf, args.driver_java_options
                )
            )
    report = {
        "table_type": args.table_type,
        "hoodie_conf": hoodie_conf,
        "driver_java_options": args.driver_java_options,
        "started": started,
        "machine": machine(),
        "versions": versions(),
        "runs": runs,
    }
    (work / "scale.json").write_text(json.dumps(report, indent=2))
    print(render(report))
    results.write(
        "scale",
        series=args.table_type,
        parameters={
            "table_type": args.table_type, "source_limit": args.source_limit, "backlogs": sorted(args.backlogs),
            "unbounded_run": not args.skip_unbounded, "cores": CORES, "driver_memory": DRIVER_MEMORY,
            "hoodie_conf": hoodie_conf, "driver_java_options": args.driver_java_options, "topic_reused": bool(args.topic),
        },
        tables=result_tables(runs),
        directory=args.results or results.LOCAL,
        started_utc=started_utc,
    )  # fmt: skip
    # The one-batch run may fail (that is what it shows); a bounded run may not.
    return 0 if all(r["rows_ok"] for r in runs if r["label"] == "bounded") else 1


if __name__ == "__main__":
    sys.exit(main())
