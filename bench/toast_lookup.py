"""What filling TOAST placeholders from the table costs as the table grows.

    python -m bench.toast_lookup [--rows 50000,200000] [--table-type MERGE_ON_READ] [--width 4000]

For each size: a table of that many rows written by hudi-cdc from Debezium Avro
files (the files source, in process, ``local[2]``), each row with its own
random ``bio`` of ``--width`` characters, as a large ``text`` column that
Postgres keeps out of line. Then ``--rounds`` rounds of 1,000 updates to random
keys, alternating: updates that carry ``bio`` (nothing to look up) and updates
whose ``bio`` is Debezium's placeholder for an unchanged out-of-line value, which
hudi-cdc fills from the stored rows (``MergePolicy.plan``'s stored-row lookup).
The difference between the two kinds' medians is what the lookup costs. A
MERGE_ON_READ table compacts every 5th delta commit; those rounds, and the
first, are shown but left out of the medians. The table is read back at the end and must hold
every row, none with a placeholder.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import time
from pathlib import Path

from bench import results
from bench.run import REPO, machine, versions

PLACEHOLDER = "__debezium_unavailable_value"
UPDATES = 1_000


def measure(spark, rows: int, table_type: str, width: int, rounds: int, work: Path) -> dict[str, list]:  # noqa: ANN001
    from hudi_cdc.config import load_config
    from hudi_cdc.pipeline import ingest_once
    from hudi_cdc.sink.hudi import HudiTable
    from hudi_cdc.testing import envelope_schema, pg_event, write_events

    schema = envelope_schema("customers", [("id", "long"), ("name", ["null", "string"]), ("bio", ["null", "string"])])
    root = work / f"{table_type.lower()}-{rows}"
    shutil.rmtree(root, ignore_errors=True)
    source = root / "events"
    rng = random.Random(7)
    lsn = 1_000
    for start in range(0, rows, 20_000):
        events = []
        for key in range(start, min(rows, start + 20_000)):
            lsn += 1
            events.append(pg_event("c", lsn=lsn, after={"id": key, "name": "a", "bio": os.urandom(width // 2).hex()}))
        write_events(source / f"0-{start:09d}.avro", schema, events)
    config = load_config(
        source="files",
        source_path=str(source),
        target_base_path=str(root / "table"),
        target_table="customers",
        table_type=table_type,
        record_key_fields=("id",),
        flavor="postgres",
    )
    started = time.monotonic()
    ingest_once(config, spark=spark)
    print(f"{rows:,} rows written in {time.monotonic() - started:.1f} s", flush=True)
    times: dict[str, list] = {"value": [], "placeholder": [], "all": []}
    table = HudiTable(spark, str(root / "table"))

    def compactions() -> int:
        return sum(1 for c in table.commits() if c.operation == "compact")

    for i in range(rounds):
        kind = "placeholder" if i % 2 else "value"
        events = []
        for key in rng.sample(range(rows), UPDATES):
            lsn += 1
            bio = PLACEHOLDER if kind == "placeholder" else os.urandom(width // 2).hex()
            events.append(pg_event("u", lsn=lsn, after={"id": key, "name": f"n{i}", "bio": bio}))
        write_events(source / f"1-{i:04d}.avro", schema, events)
        done, started = compactions(), time.monotonic()
        result = ingest_once(config, spark=spark)
        seconds = round(time.monotonic() - started, 2)
        # Apart: the first round warms the JVM up; a compaction rewrites the table whatever the round carries.
        apart = " (warm-up)" if i == 0 else " (compaction)" if compactions() > done else ""
        if not apart:
            times[kind].append(seconds)
        times["all"].append({"rows": rows, "round": i, "kind": kind, "seconds": seconds, "apart": apart.strip(" ()")})
        print(f"  round {i}: {kind}, {result.toast_filled} filled, {seconds} s{apart}", flush=True)
    read = spark.read.format("hudi").load(str(root / "table"))
    left = read.filter(f"bio = '{PLACEHOLDER}' or bio is null").count()
    if read.count() != rows or left:
        raise SystemExit(f"{table_type} {rows}: {read.count()} rows, {left} without their value")
    shutil.rmtree(root, ignore_errors=True)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="50000,200000", help="table sizes, comma-separated")
    parser.add_argument("--table-type", default="MERGE_ON_READ", choices=["COPY_ON_WRITE", "MERGE_ON_READ"])
    parser.add_argument("--width", type=int, default=4_000, help="characters of each row's out-of-line value")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--work", default=str(REPO / ".bench" / "toast-lookup"))
    parser.add_argument(
        "--results", type=Path, help="write the result file under this folder (default: .bench/results)"
    )
    args = parser.parse_args()
    started_utc = results.now_utc()

    from hudi_cdc.spark import spark_session

    spark = spark_session()
    print(f"{machine()}; {', '.join(f'{k} {v}' for k, v in versions().items())}")
    print(f"{args.table_type}, {UPDATES:,} updates a round, {args.width:,}-character values; round seconds:")
    lookups, rounds = [], []
    for rows in (int(r) for r in args.rows.split(",")):
        times = measure(spark, rows, args.table_type, args.width, args.rounds, Path(args.work))
        value, placeholder = (statistics.median(times[k]) for k in ("value", "placeholder"))
        lookups.append({"rows": rows, "value_mb": round(rows * args.width / 1e6), "value_median_s": round(value, 2),
                        "placeholder_median_s": round(placeholder, 2), "lookup_s": round(placeholder - value, 2)})  # fmt: skip
        rounds += times["all"]
        print(
            f"{rows:,} rows, rounds without a compaction: with the value {times['value']} (median {value:.2f}), "
            f"with the placeholder {times['placeholder']} (median {placeholder:.2f}): the lookup "
            f"{placeholder - value:.2f} s",
            flush=True,
        )
    results.write(
        "toast",
        series=args.table_type,
        parameters={
            "table_type": args.table_type,
            "rows": args.rows,
            "width": args.width,
            "rounds": args.rounds,
            "updates": UPDATES,
        },  # fmt: skip
        tables={"lookup": results.table(LOOKUP_COLUMNS, lookups), "round_times": results.table(ROUND_COLUMNS, rounds)},
        directory=args.results or results.LOCAL,
        started_utc=started_utc,
    )


LOOKUP_COLUMNS = [
    results.column("rows", "table", "rows"), results.column("value_mb", "out-of-line values", "MB"),
    results.column("value_median_s", "a round with the value (median)", "s"),
    results.column("placeholder_median_s", "a round with the placeholder (median)", "s"),
    results.column("lookup_s", "the lookup", "s"),
]  # fmt: skip
ROUND_COLUMNS = [
    results.column("rows", "table", "rows"), results.column("round", unit="#"), results.column("kind"),
    results.column("seconds", unit="s"), results.column("apart", "left out as"),
]  # fmt: skip


if __name__ == "__main__":
    main()
