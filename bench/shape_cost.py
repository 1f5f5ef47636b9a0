"""What shaping the data costs on the main benchmark's stream: transforms and masks against none.

    python -m bench.shape_cost [--events 1000000] [--keys 100000] [--results bench/results]

The stream is `make bench`'s (``bench.workload``: 1M Debezium events over 100k keys, inserts,
updates, TOAST placeholders in ``notes`` and deletes, in one fresh topic of the local stack). Each
variant is one ``hudi-cdc ingest`` of the whole topic by ``spark-submit --master local[2]`` into a
fresh table, as ``make bench`` runs it, with the shaping settings on the command line:

- ``none``: no shaping;
- ``transforms``: a renamed column, a dropped one, a computed date and a row filter;
- ``masks``: an HMAC-SHA256 ``hash`` (a salt in the environment), ``keep_last:4`` and ``redact``;
- ``all``: both.

Every table is read back and compared with the stream's final rows shaped in plain Python here
(``hmac`` with the same salt, the filter and the date computed row by row): a variant whose table
differs fails the run. The variants take turns per table type so that load favours none.
"""

from __future__ import annotations

import argparse
import hmac
import os
import sys
import uuid
from collections.abc import Callable
from datetime import datetime
from hashlib import sha256
from pathlib import Path
from typing import Any

from bench import results
from bench.run import BOOTSTRAP, REGISTRY, REPO, run_hudi_cdc
from bench.workload import COLUMNS, Workload

SALT_ENV = "BENCH_SHAPE_SALT"
SALT = "bench-salt-" + uuid.uuid4().hex  # a fresh one per run: never a real secret
TRANSFORMS = [
    "--column-renames", "name=full_name", "--columns-drop", "notes",
    "--computed-columns", "updated_day=to_date(updated_at)", "--row-filter", "status <> 'closed'",
]  # fmt: skip
MASKS = ["--masks", "email=hash", "--masks", "name=keep_last:4", "--masks", "notes=redact", "--mask-salt-env", SALT_ENV]
VARIANTS = {"none": [], "transforms": TRANSFORMS, "masks": MASKS, "all": TRANSFORMS + MASKS}


def shaped(row: dict[str, Any], variant: str) -> dict[str, Any] | None:
    """One final source row as the variant's table holds it; None when the filter drops it."""
    row = dict(row)
    if variant in ("masks", "all"):
        if row["email"] is not None:
            row["email"] = hmac.new(SALT.encode(), row["email"].encode(), sha256).hexdigest()
        if row["name"] is not None:
            row["name"] = "*" * max(len(row["name"]) - 4, 0) + row["name"][-4:]
        if row["notes"] is not None:
            row["notes"] = "[redacted]"
    if variant in ("transforms", "all"):
        if row["status"] is None or row["status"] == "closed":
            return None
        row["full_name"] = row.pop("name")
        del row["notes"]
        stamp: datetime | None = row["updated_at"]
        row["updated_day"] = stamp.date() if stamp is not None else None
    return row


def expected(workload: Workload, variant: str) -> list[tuple]:
    names = COLUMNS
    rows = [shaped(dict(zip(names, r, strict=True)), variant) for r in workload.expected_rows()]
    return sorted((tuple(sorted(r.items())) for r in rows if r is not None), key=_by_id)


def table_rows(spark: Any, base: str, columns: list[str]) -> list[tuple]:  # noqa: ANN401
    """The table's rows in ``columns`` (the shaped source's), as :func:`expected` lays them out."""
    frame = spark.read.format("hudi").load(base).select(*columns)
    return sorted((tuple(sorted(r.asDict().items())) for r in frame.collect()), key=_by_id)


def _by_id(row: tuple) -> int:
    return dict(row)["id"]


def arguments(doc: str | None, variants: list[str], argv: list[str] | None) -> argparse.Namespace:
    """The options every run of the main benchmark's stream shares, and ``--variants`` of ``variants``."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--table-types", default="COPY_ON_WRITE,MERGE_ON_READ")
    parser.add_argument("--variants", nargs="+", default=variants, choices=variants)
    parser.add_argument("--results", help="write the result file under this folder (default: .bench/results)")
    return parser.parse_args(argv)


def checking_session(app_name: str) -> Any:  # noqa: ANN401
    """The session that reads every table back. It collects every row (100k with 2-4 kB notes): 6 GiB hold them."""
    import hudi_cdc

    return hudi_cdc.spark_session(app_name=app_name, conf={"spark.master": "local[2]", "spark.driver.memory": "6g"})


def run_variants(
    args: argparse.Namespace, name: str, topic: str, variants: dict[str, list[str]], check: Callable[[str, str], bool]
) -> tuple[list[dict[str, Any]], list[str]]:
    """Each of ``args.variants`` per table type, by one ``hudi-cdc ingest`` of ``topic`` into a fresh table
    (``variants[label]`` on its command line), and ``check(label, base)`` of the table: the result rows (with
    ``vs_none``, and the table's ``base`` path, which no result column shows) and the variants whose table is
    wrong or whose run failed."""
    work = REPO / ".bench" / name / datetime.now().strftime("%Y%m%dT%H%M%S")
    rows, wrong = [], []
    for table_type in args.table_types.split(","):
        short = "cow" if table_type == "COPY_ON_WRITE" else "mor"
        for label in args.variants:
            run = run_hudi_cdc(work, topic, table_type, {}, f"{label}_{short}", extra=variants[label])
            assert run.measured is not None
            ok = run.measured.returncode == 0 and check(label, run.extra["base"])
            if not ok:
                wrong.append(f"{label} {short} (exit {run.measured.returncode}, log {run.measured.log})")
            rows.append({
                "variant": label, "table_type": table_type, "seconds": round(run.measured.seconds, 1),
                "events_per_s": round(args.events / run.measured.seconds), "peak_rss_mib": round(run.measured.peak_rss_mib),
                "rows_ok": ok, "base": run.extra["base"], "load_1m": round(os.getloadavg()[0], 2),
            })  # fmt: skip
            print(f"{label:<11} {short} {run.measured.seconds:6.1f}s ok={ok}", flush=True)
    for table_type in args.table_types.split(","):
        base = next((r["seconds"] for r in rows if r["table_type"] == table_type and r["variant"] == "none"), None)
        for r in rows:
            if r["table_type"] == table_type and base:
                r["vs_none"] = round(r["seconds"] / base, 2)
    return rows, wrong


def run_columns(checked: str) -> list[dict[str, Any]]:
    """The result table's columns of :func:`run_variants`' rows; ``checked`` titles the check's column."""
    return [
        results.column("variant"), results.column("table_type", "table"), results.column("seconds", "wall", "s"),
        results.column("events_per_s", "rate", "events/s"), results.column("vs_none", "vs none", "x"),
        results.column("peak_rss_mib", "peak RSS", "MiB"), results.column("load_1m", "load (1 min)"),
        results.column("rows_ok", checked),
    ]  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    args = arguments(__doc__, list(VARIANTS), argv)
    started_utc = results.now_utc()
    topic = f"bench.s{uuid.uuid4().hex[:8]}.customers"
    workload = Workload(topic, args.events, args.keys, args.partitions, 1)
    workload.produce(BOOTSTRAP, REGISTRY)
    os.environ[SALT_ENV] = SALT
    spark = checking_session("hudi-cdc-bench-shape")

    def check(label: str, base: str) -> bool:
        want = expected(workload, label)
        columns = [name for name, _ in want[0]] if want else []
        return table_rows(spark, base, columns) == want

    rows, wrong = run_variants(args, "shape_cost", topic, VARIANTS, check)
    results.write(
        "shape-cost",
        parameters={"events": args.events, "keys": args.keys, "partitions": args.partitions, "cores": 2,
                    "variants": {k: " ".join(VARIANTS[k]).replace(SALT_ENV, "$SALT") for k in args.variants},
                    "mix": workload.counts},
        tables={"runs": results.table(run_columns("table equals the shaped source"), rows)},
        directory=Path(args.results) if args.results else results.LOCAL,
        started_utc=started_utc,
    )  # fmt: skip
    if wrong:
        print("WRONG TABLES: " + "; ".join(wrong), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
