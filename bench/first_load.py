"""The first load of a big table: ``python -m bench.first_load --rows 10000000``.

A table of ``bench.verify``'s column mix in the stack's Postgres, then:

- the limit: the same rows streamed out by ``COPY ... TO STDOUT`` and thrown
  away (one connection; nothing parsed or written);
- ``hudi-cdc bootstrap`` as a user runs it (a new process: JVM start, slot with
  exported snapshot, parallel range reads, Hudi bulk insert),
  timed end to end with the peak resident memory of its process tree.

The table is not in the stack's publication, so Debezium publishes nothing; the
slot the bootstrap makes is dropped afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from bench import results
from bench.procs import run_measured
from bench.verify import COLUMNS
from hudi_cdc.testing.postgres import connect

SCHEMA, TABLE, SLOT = "bench", "first_load", "bench_first_load"
SOURCE_URL = "postgresql://debezium:dbz@127.0.0.1:55432/inventory"


def build(rows: int) -> float:
    started = time.monotonic()
    with connect() as conn:
        conn.execute(f"create schema if not exists {SCHEMA}")
        conn.execute(f"drop table if exists {SCHEMA}.{TABLE}")
        conn.execute(f"create table {SCHEMA}.{TABLE} ({', '.join(f'{c} {t}' for c, t, _, _ in COLUMNS)})")
        conn.execute(
            f"insert into {SCHEMA}.{TABLE} select {', '.join(pg for _, _, pg, _ in COLUMNS)}"  # noqa: S608
            f" from generate_series(1, {rows}) n"
        )
        conn.execute(f"alter table {SCHEMA}.{TABLE} add primary key (id)")
        conn.execute(f"vacuum analyze {SCHEMA}.{TABLE}")
    return time.monotonic() - started


def copy_out() -> tuple[float, int]:
    """Seconds and bytes of ``COPY ... TO STDOUT`` of the table, read and discarded."""
    started, size = time.monotonic(), 0
    with connect() as conn, conn.cursor() as cur, cur.copy(f"copy {SCHEMA}.{TABLE} to stdout") as copy:
        for block in copy:
            size += len(block)
    return time.monotonic() - started, size


def drop_slot() -> None:
    with connect() as conn:
        if conn.execute("select 1 from pg_replication_slots where slot_name = %s", (SLOT,)).fetchone():
            conn.execute("select pg_drop_replication_slot(%s)", (SLOT,))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--work", type=Path, default=Path("/tmp/hudi-cdc-bench-first-load"))
    parser.add_argument("--table-type", default="cow", choices=["cow", "mor"])
    parser.add_argument(
        "--results", type=Path, help="write the result file under this folder (default: .bench/results)"
    )
    parser.add_argument("--keep", action="store_true", help="Keep the Postgres table (a rerun skips building it).")
    args = parser.parse_args()
    started_utc = results.now_utc()
    with connect() as conn:
        found = conn.execute(f"select to_regclass('{SCHEMA}.{TABLE}') is not null").fetchone()[0]
        existing = conn.execute(f"select count(*) from {SCHEMA}.{TABLE}").fetchone()[0] if found else 0
    build_s = build(args.rows) if existing != args.rows else 0.0
    copy_s, copy_bytes = copy_out()
    drop_slot()
    base = args.work / f"{TABLE}_{args.table_type}"
    os.system(f"rm -rf {args.work}")  # noqa: S605 - our own scratch folder
    command = [
        str(Path(sys.executable).parent / "hudi-cdc"), "bootstrap", "--source", "kafka",
        "--topic", f"benchfirstload.{SCHEMA}.{TABLE}", "--bootstrap-servers", "127.0.0.1:59092",
        "--schema-registry-url", "http://127.0.0.1:58080/apis/ccompat/v7", "--target-base-path", str(base),
        "--target-table", TABLE, "--table-type", args.table_type, "--source-url", SOURCE_URL,
        "--source-table", f"{SCHEMA}.{TABLE}", "--slot", SLOT, "--json",
    ]  # fmt: skip
    log = args.work.parent / "hudi-cdc-bench-first-load.log"
    try:
        measured = run_measured(command, log)
    finally:
        drop_slot()
    lines = [line for line in log.read_text().splitlines() if line.startswith("{")]
    if measured.returncode != 0 or not lines:
        raise SystemExit(f"bootstrap failed (exit {measured.returncode}); see {log}")
    result = json.loads(lines[-1])
    assert result["rows"] == args.rows, result
    if not args.keep:
        with connect() as conn:
            conn.execute(f"drop table {SCHEMA}.{TABLE}")
    row = {
        "rows": args.rows, "columns": len(COLUMNS), "table_type": args.table_type.upper(), "ranges": result["ranges"],
        "seconds": round(measured.seconds), "rows_per_s": round(args.rows / measured.seconds),
        "load_s": round(result["duration_s"]), "load_rows_per_s": round(args.rows / result["duration_s"]),
        "peak_rss_mib": round(measured.peak_rss_mib), "copy_s": round(copy_s, 1),
        "copy_rows_per_s": round(args.rows / copy_s), "copy_mib": round(copy_bytes / 2**20),
        "build_s": round(build_s),
    }  # fmt: skip
    print(json.dumps(row))
    results.write(
        "first-load",
        parameters={"rows": args.rows, "table_type": args.table_type, "postgres_table_reused": build_s == 0.0},
        tables={"load": results.table(COLUMNS_OUT, [row])},
        directory=args.results or results.LOCAL,
        started_utc=started_utc,
    )


COLUMNS_OUT = [
    results.column("rows", "table", "rows"), results.column("columns", unit="columns"),
    results.column("table_type", "type"), results.column("ranges", unit="ranges"),
    results.column("seconds", "`hudi-cdc bootstrap`, end to end", "s"), results.column("rows_per_s", "rate", "rows/s"),
    results.column("load_s", "of which the load (no JVM start)", "s"),
    results.column("load_rows_per_s", "its rate", "rows/s"),
    results.column("peak_rss_mib", "peak RSS (process tree)", "MiB"),
    results.column("copy_s", "`COPY ... TO STDOUT`, the limit", "s"), results.column("copy_rows_per_s", "its rate", "rows/s"),
    results.column("copy_mib", "bytes copied", "MiB"), results.column("build_s", "Postgres table built (0: reused)", "s"),
]  # fmt: skip


if __name__ == "__main__":
    main()
