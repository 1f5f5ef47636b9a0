"""A warm round of 1,000 random updates into a table of 1,000,000 rows, through the public Python API.

    python -m bench.small_round [--table-rows 1000000] [--rows 1000] [--rounds 6] [--variants ...]

Issue 42's first goal, measured as a user meets it: one warm Spark session (``local[2]``, 4 GiB),
the round ``hudi_cdc.ingest(...)`` runs (``pipeline.ingest_once``: without the compaction a one-shot call
runs after it, as a continuous process's round) over the embedded files source, one round per new file of Debezium
envelopes. Every variant's table is built by hudi-cdc's own first round from the same snapshot
file (1M ``op = r`` events); then each round writes one file of ``--rows`` updates to random keys
(``--delete-share`` of them deletes, ``--placeholder-share`` of the updates leaving ``notes``
unchanged: a TOAST placeholder, which the round fills from the stored row), and every variant's
table ingests it, the variants taking turns so that JIT and load favour none. The round's wall
time, its steps (``IngestResult.steps_s``) and who wrote it (``details["writer"]``) are kept; the
first round is left out; a MERGE_ON_READ round whose commit compacted (``compaction = "inline"``, every
fifth delta commit) or only scheduled a compaction (``"async"``, the default) is shown apart, with the
driver JVM's CPU seconds and the load average beside each round; the plans the rounds left pending run
at the end as ``hudi-cdc compact`` runs them, timed apart.

Variants (``--variants``, each ``label`` or ``label:key=value,...`` of settings): the default is
hudi-cdc's defaults (the Java write client for small MOR rounds), the same with
``java_writer_max_rows = 0`` (Spark's datasource), and both with the metadata table off. A variant's
``lake=URI`` puts its table under that folder instead of ``--work`` (an ``s3a://`` one: its endpoint from
``s3_endpoint=URL``, the credentials from the environment).

At the end every table is read back by Spark and must equal the source's rows, column for column.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from bench import results as result_files
from bench.procs import process_cpu_s
from bench.run import REPO

PLACEHOLDER = "__debezium_unavailable_value"
COLUMNS = [("id", "long"), ("name", ["null", "string"]), ("balance", ["null", "long"]), ("notes", ["null", "string"])]
NAMES = [name for name, _ in COLUMNS]
DEFAULT_VARIANTS = [
    "mor java",
    "mor spark:java_writer_max_rows=0",
    "mor java, metadata off:hoodie.metadata.enable=false",
    "mor spark, metadata off:java_writer_max_rows=0,hoodie.metadata.enable=false",
]


class Source:
    """The source table and its Debezium files: a snapshot, then rounds of random updates and deletes."""

    def __init__(self, folder: Path, rows: int, placeholders: float, deletes: float, seed: int = 42) -> None:
        from hudi_cdc.testing import envelope_schema

        self.folder, self.rows, self.placeholders, self.deletes = folder, rows, placeholders, deletes
        self.schema = envelope_schema("accounts", COLUMNS)
        self.state: dict[int, dict[str, Any]] = {}
        self.lsn, self.files = 1000, 0
        self.rng = random.Random(seed)

    def _write(self, events: list[dict[str, Any]]) -> None:
        from hudi_cdc.testing import write_events

        write_events(self.file(self.files), self.schema, events)
        self.files += 1

    def file(self, number: int) -> Path:
        """The ``number``-th file written: 0 the snapshot, then one per ``changes``."""
        return self.folder / f"accounts+0+{number:010d}.avro"

    def snapshot(self) -> None:
        from hudi_cdc.testing import pg_event

        events = []
        for key in range(self.rows):
            row = {"id": key, "name": f"account {key}", "balance": key % 977, "notes": f"notes of {key} " * 8}
            self.state[key] = row
            events.append(pg_event("r", lsn=self.lsn, after=row))
        self._write(events)

    def changes(self, count: int) -> None:
        """``count`` changes to distinct random keys: deletes, re-inserts and updates (some keep ``notes``: a placeholder)."""
        from hudi_cdc.testing import pg_event

        events = []
        for key in self.rng.sample(range(self.rows), count):
            self.lsn += 1
            if key not in self.state:
                row = {"id": key, "name": f"again {key}", "balance": self.lsn % 977, "notes": f"new {self.lsn}"}
                self.state[key] = row
                events.append(pg_event("c", lsn=self.lsn, after=row, txid=self.lsn))
            elif self.rng.random() < self.deletes:
                events.append(
                    pg_event("d", lsn=self.lsn, before={"id": key, "name": None, "balance": None, "notes": None})
                )
                del self.state[key]
            else:
                keep = self.rng.random() < self.placeholders
                row = {**self.state[key], "name": f"updated {self.lsn}", "balance": self.lsn % 977}
                if not keep:
                    row["notes"] = f"changed {self.lsn}"
                self.state[key] = row
                events.append(
                    pg_event("u", lsn=self.lsn, after={**row, "notes": PLACEHOLDER} if keep else row, txid=self.lsn)
                )
        self.rng.shuffle(events)
        self._write(events)


class ParquetFloor:
    """What a COPY_ON_WRITE round cannot do with less: the same table as plain Parquet (zstd, one file per
    bucket), each round's Debezium file read by Spark and merged into every row of it (placeholders
    filled from the stored row, deletes dropped) and the whole table written again, as the COW round must
    when 1,000 random keys touch every bucket. No index, no timeline, no metadata: the rewrite floor the
    COW goal is stated against (at most 1.3x)."""

    LABEL = "parquet floor (a COW round's rewrite)"

    def __init__(self, spark: Any, folder: Path, files: int) -> None:  # noqa: ANN401
        self.spark, self.folder, self.files, self.version = spark, folder, files, 0

    def _path(self) -> str:
        return str(self.folder / f"v{self.version}")

    def build(self, snapshot: Path) -> float:
        began = time.perf_counter()
        rows = self.spark.read.format("avro").load(str(snapshot)).select("after.*")
        self._write(rows)
        return time.perf_counter() - began

    def _write(self, rows: Any) -> None:  # noqa: ANN401
        self.version += 1
        rows.repartition(self.files, "id").write.option("compression", "zstd").parquet(self._path())

    def round(self, changes: Path) -> dict[str, Any]:
        from pyspark.sql import functions as F

        cpu = _jvm_cpu_s(self.spark)
        began = time.perf_counter()
        stored = self.spark.read.parquet(self._path()).alias("s")
        events = self.spark.read.format("avro").load(str(changes))
        new = events.select(F.col("op"), F.coalesce("after.id", "before.id").alias("id"), "after.name",
                            "after.balance", "after.notes").alias("c")  # fmt: skip
        merged = stored.join(new, "id", "full_outer").where(F.col("c.op").isNull() | (F.col("c.op") != "d"))
        changed = F.col("c.op").isNotNull()
        notes = F.when(changed & (F.col("c.notes") != PLACEHOLDER), F.col("c.notes")).when(
            changed & F.col("c.notes").isNull(), F.lit(None)).otherwise(F.col("s.notes"))  # fmt: skip
        self._write(merged.select("id", *(F.when(changed, F.col(f"c.{n}")).otherwise(F.col(f"s.{n}")).alias(n)
                                          for n in ("name", "balance")), notes.alias("notes")))  # fmt: skip
        shutil.rmtree(self.folder / f"v{self.version - 1}")
        return {"variant": self.LABEL, "seconds": time.perf_counter() - began, "writer": "parquet", "planned_by": "-",
                "cpu_s": round(_jvm_cpu_s(self.spark) - cpu, 2), "load": round(os.getloadavg()[0], 1),
                "compacted_now": False, "scheduled_now": False}  # fmt: skip

    def equal(self, source: Source) -> bool:
        return _equal_rows(self.spark, source, self.spark.read.parquet(self._path()), self._path())


def _config(label: str, settings: dict[str, str], source: Source, work: Path) -> Any:  # noqa: ANN401
    from hudi_cdc import load_config

    ours = {k: v for k, v in settings.items() if not k.startswith("hoodie.") and k != "lake"}
    hoodie = {k: v for k, v in settings.items() if k.startswith("hoodie.")}
    table = "t_" + "".join(c if c.isalnum() else "_" for c in label)
    base = f"{settings['lake'].rstrip('/')}/{table}" if settings.get("lake") else str(work / table)
    return load_config(
        env={}, source="files", source_path=str(source.folder), flavor="postgres", target_base_path=base,
        target_table=table, table_type=label.split()[0].upper(), record_key_fields="id",
        toast_placeholder=PLACEHOLDER, hoodie_conf=hoodie, **ours,
    )  # fmt: skip


def _jvm_cpu_s(spark: Any) -> float:  # noqa: ANN401
    """The driver JVM's CPU seconds so far (every thread of it): a round's is the difference, less swayed by a
    shared machine's load than its wall time."""
    return process_cpu_s(int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()))


def _round(spark: Any, config: Any, spark_plan: bool) -> dict[str, Any]:  # noqa: ANN401
    """One round; ``spark_plan``: with the driver's plan switched off (``small_plan.TEST_HOOK``), as before it."""
    from hudi_cdc.pipeline import ingest_once
    from hudi_cdc.sink.hudi import HudiTable
    from hudi_cdc.small_plan import TEST_HOOK

    cpu = _jvm_cpu_s(spark)
    began = time.perf_counter()
    os.environ[TEST_HOOK] = "off" if spark_plan else ""
    try:
        result = ingest_once(config, spark=spark)
    finally:
        os.environ.pop(TEST_HOOK, None)
    wall = time.perf_counter() - began
    assert result.committed, result
    return {
        "seconds": wall, "round_s": result.duration_s, "writer": result.details.get("writer", "?"),
        "planned_by": result.details.get("plan", "?"),
        "cpu_s": round(_jvm_cpu_s(spark) - cpu, 2), "load": round(os.getloadavg()[0], 1),
        "buckets": result.details.get("buckets", {}).get("to"),  # the round grew the table into this many
        "compacted": _compactions(spark, config.target_base_path),
        "pending": len(HudiTable(spark, config.target_base_path).pending_compactions()),
        **{f"{k}_s": v for k, v in result.steps_s.items()},
    }  # fmt: skip


def _compact(spark: Any, config: Any) -> dict[str, Any]:  # noqa: ANN401
    """The plans the rounds left pending (compaction = "async"), run as ``hudi-cdc compact`` runs them."""
    from hudi_cdc.pipeline import compact

    cpu = _jvm_cpu_s(spark)
    result = compact(config, spark=spark)
    return {"compact_s": round(result.duration_s, 2), "compact_cpu_s": round(_jvm_cpu_s(spark) - cpu, 2),
            "compact_load": round(os.getloadavg()[0], 1), "compacted_plans": len(result.compacted)}  # fmt: skip


def _compactions(spark: Any, base: str) -> int:  # noqa: ANN401
    from hudi_cdc.sink.hudi import HudiTable

    return sum(1 for c in HudiTable(spark, base).commits() if c.operation == "compact")


def _equal(spark: Any, source: Source, base: str) -> bool:  # noqa: ANN401
    from payloads.history import current_rows

    return _equal_rows(spark, source, current_rows(spark.read.format("hudi").load(base)), base)


def _equal_rows(spark: Any, source: Source, rows: Any, where: str) -> bool:  # noqa: ANN401
    expected = spark.createDataFrame(
        [tuple(r[n] for n in NAMES) for r in source.state.values()], "id long, name string, balance long, notes string"
    )
    table = rows.select(*NAMES)
    missing, extra = expected.exceptAll(table).count(), table.exceptAll(expected).count()
    print(f"{where}: {missing} rows missing, {extra} rows not expected", flush=True)
    return missing == extra == 0


def _summary(
    label: str, rounds: list[dict[str, Any]], build_s: float, equal: bool, compacted: dict[str, Any]
) -> dict[str, Any]:
    measured = rounds[1:]
    plain = [r for r in measured if not r["compacted_now"] and not r["scheduled_now"]]
    compacting = [r["seconds"] for r in measured if r["compacted_now"]]
    scheduling = [r for r in measured if r["scheduled_now"] and not r["compacted_now"]]

    def median(key: str) -> float | None:
        values = [r[key] for r in plain if key in r]
        return round(statistics.median(values), 3) if values else None

    return {
        "variant": label, "median_s": median("seconds"), "min_s": round(min(r["seconds"] for r in plain), 3) if plain else None,
        "max_s": round(max(r["seconds"] for r in plain), 3) if plain else None, "rounds": len(plain),
        "writer": ",".join(sorted({r["writer"] for r in plain})),
        "planned_by": ",".join(sorted({r.get("planned_by", "?") for r in plain})), **{f"{s}_s": median(f"{s}_s") for s in ("open", "read", "plan", "tombstones", "commit")},
        "compacting_s": round(statistics.median(compacting), 2) if compacting else None,
        "compacting_cpu_s": _median_of([r["cpu_s"] for r in measured if r["compacted_now"]]),
        "scheduling_s": _median_of([r["seconds"] for r in scheduling]),
        "scheduling_cpu_s": _median_of([r["cpu_s"] for r in scheduling]),
        "plain_cpu_s": _median_of([r["cpu_s"] for r in plain]),
        **compacted, "build_s": round(build_s, 1), "equal": equal,
    }  # fmt: skip


def _median_of(values: list[float]) -> float | None:
    return round(statistics.median(values), 2) if values else None


COLUMNS_OUT = [
    result_files.column("variant"), result_files.column("median_s", "median round", "s"),
    result_files.column("min_s", "min", "s"), result_files.column("max_s", "max", "s"),
    result_files.column("rounds", unit="#"), result_files.column("writer", "written by"),
    result_files.column("planned_by", "planned by"), result_files.column("open_s", "open", "s"), result_files.column("read_s", "read", "s"),
    result_files.column("x_floor", "x the Parquet floor"), result_files.column("plan_s", "plan", "s"), result_files.column("tombstones_s", "tombstones", "s"),
    result_files.column("commit_s", "commit", "s"), result_files.column("plain_cpu_s", "round's JVM CPU", "s"),
    result_files.column("compacting_s", "a round that compacted", "s"),
    result_files.column("compacting_cpu_s", "its JVM CPU", "s"),
    result_files.column("scheduling_s", "a round that scheduled a compaction", "s"),
    result_files.column("scheduling_cpu_s", "its JVM CPU", "s"),
    result_files.column("compact_s", "the compaction after (hudi-cdc compact)", "s"),
    result_files.column("compact_cpu_s", "its JVM CPU", "s"),
    result_files.column("build_s", "first round (1M rows)", "s"), result_files.column("equal", "table equals the source"),
]  # fmt: skip
ROUND_COLUMNS = [
    result_files.column("variant"), result_files.column("round", unit="#"), result_files.column("seconds", unit="s"),
    result_files.column("round_s", "round (its own clock)", "s"), result_files.column("writer"),
    result_files.column("planned_by", "planned by"),
    result_files.column("compacted_now", "compacted"), result_files.column("scheduled_now", "scheduled a compaction"),
    result_files.column("commit_s", unit="s"), result_files.column("cpu_s", "JVM CPU", "s"),
    result_files.column("load", "load average (1 min)"), result_files.column("buckets", "grew into buckets"),
]  # fmt: skip


def _floor(spark: Any, args: argparse.Namespace, configs: dict[str, Any], source: Source,  # noqa: ANN401
           builds: dict[str, float]) -> ParquetFloor | None:  # fmt: skip
    """The plain-Parquet floor (``--floor``), built from the snapshot file into as many files as the first
    COPY_ON_WRITE variant's table has base files."""
    from hudi_cdc.sink.hudi import HudiTable

    if not args.floor:
        return None
    cow = [config for config in configs.values() if config.table_type == "COPY_ON_WRITE"]
    if not cow:
        raise SystemExit("--floor is measured against a COW variant: name one in --variants (e.g. 'cow java')")
    files = len(HudiTable(spark, cow[0].target_base_path).base_file_bytes())
    floor = ParquetFloor(spark, args.work / "parquet_floor", files)
    builds[floor.LABEL] = floor.build(source.file(0))
    print(f"{floor.LABEL}: {files} files written in {builds[floor.LABEL]:.1f} s", flush=True)
    return floor


def _against_floor(summary: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each variant's median round over the floor's, where a floor was measured."""
    floor = next((row["median_s"] for row in summary if row["variant"] == ParquetFloor.LABEL), None)
    return [{**row, "x_floor": round(row["median_s"] / floor, 2) if floor and row["median_s"] else None}
            for row in summary]  # fmt: skip


def _installed() -> dict[str, Any]:
    """Where this run's hudi_cdc came from (a checkout, or a pip-installed wheel: ``make
    bench-small-round-wheel``), where its jars came from, and which of hudi-cdc's own jars it had."""
    import hudi_cdc
    from hudi_cdc.jars import own_jars, resolve_jars

    source = resolve_jars()
    return {
        "hudi_cdc_from": "wheel" if "site-packages" in hudi_cdc.__file__ else "checkout",
        "jars_from": source.kind,
        "own_jars": sorted(name for name, path in own_jars(source).items() if path),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--table-rows", type=int, default=1_000_000)
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=6, help="rounds per variant; the first is left out")
    parser.add_argument("--variants", nargs="+", default=DEFAULT_VARIANTS)
    parser.add_argument("--delete-share", type=float, default=0.2, help="of the changes to stored keys")
    parser.add_argument(
        "--placeholder-share", type=float, default=0.5, help="of the updates: notes unchanged, a TOAST placeholder"
    )
    parser.add_argument(
        "--floor",
        action="store_true",
        help="also the plain-Parquet rewrite floor, as many files as the first COW table",
    )
    parser.add_argument("--work", type=Path, default=REPO / ".bench" / "small_round")
    parser.add_argument("--results", type=Path, help="default: .bench/results")
    parser.add_argument("--name", default="small-round", help="the result's name (history-cost: the history modes)")
    args = parser.parse_args(argv)
    import hudi_cdc
    from bench.run import variant
    from hudi_cdc.pipeline import ingest_once

    started_utc = result_files.now_utc()
    shutil.rmtree(args.work, ignore_errors=True)
    conf = {"spark.master": "local[2]", "spark.driver.memory": "4g"}
    spark = hudi_cdc.spark_session(app_name="small-round", conf=conf)
    spark.sparkContext.setLogLevel("ERROR")
    source = Source(args.work / "events", args.table_rows, args.placeholder_share, args.delete_share)
    source.snapshot()
    variants = [variant(v) for v in args.variants]
    # ``spark_plan=true``: the variant's rounds planned by Spark, the driver's plan switched off (a before).
    spark_plans = {label: settings.pop("spark_plan", "false") == "true" for label, settings in variants}
    configs = {label: _config(label, settings, source, args.work) for label, settings in variants}
    builds, first_grew = {}, {}
    for label, config in configs.items():
        began = time.perf_counter()
        grown = first_grew[label] = ingest_once(config, spark=spark).details.get("buckets")
        builds[label] = time.perf_counter() - began
        print(f"{label}: first round in {builds[label]:.1f} s{f' (grew: {grown})' if grown else ''}", flush=True)
    floor = _floor(spark, args, configs, source, builds)
    rounds: dict[str, list[dict[str, Any]]] = {label: [] for label in configs}
    if floor:
        rounds[floor.LABEL] = []
    for number in range(1, args.rounds + 1):
        source.changes(args.rows)
        order = list(configs) if number % 2 else list(reversed(configs))
        for label in order:
            before = (
                rounds[label][-1]["compacted"]
                if rounds[label]
                else _compactions(spark, configs[label].target_base_path)
            )
            pending = rounds[label][-1]["pending"] if rounds[label] else 0
            outcome = _round(spark, configs[label], spark_plans[label])
            outcome.update(variant=label, round=number, compacted_now=outcome["compacted"] > before,
                           scheduled_now=outcome["pending"] > pending)  # fmt: skip
            rounds[label].append(outcome)
            grew = f" (grew into {outcome['buckets']} buckets)" if outcome["buckets"] else ""
            print(f"round {number} {label}: {outcome['seconds']:.2f} s ({outcome['cpu_s']} CPU s, load "
                  f"{outcome['load']}) by {outcome['writer']}{' (compacted)' if outcome['compacted_now'] else ''}"
                  f"{' (scheduled a compaction)' if outcome['scheduled_now'] else ''}{grew}", flush=True)  # fmt: skip
        if floor:
            rounds[floor.LABEL].append({**floor.round(source.file(source.files - 1)), "round": number})
            print(f"round {number} {floor.LABEL}: {rounds[floor.LABEL][-1]['seconds']:.2f} s", flush=True)
    compactions = {
        label: _compact(spark, config) if rounds[label][-1]["pending"] else {} for label, config in configs.items()
    }
    for label, done in compactions.items():
        print(f"{label}: compaction after the rounds: {done or 'none pending'}", flush=True)
    equal = {label: _equal(spark, source, config.target_base_path) for label, config in configs.items()}
    if floor:
        equal[floor.LABEL], compactions[floor.LABEL] = floor.equal(source), {}
    summary = _against_floor(
        [_summary(label, rounds[label], builds[label], equal[label], compactions[label]) for label in rounds]
    )
    path = result_files.write(
        args.name,
        series=f"{args.table_rows:,} rows, {args.rows:,} changes a round, {args.placeholder_share:.0%} of updates "
        f"placeholders, {args.delete_share:.0%} deletes",
        parameters={
            "table_rows": args.table_rows,
            "rows": args.rows,
            "rounds": args.rounds,
            "variants": args.variants,
            "measured_from_round": 2,
            "first_round_grew_buckets": {label: grew for label, grew in first_grew.items() if grew},
            "shared_machine": True,
            **_installed(),
        },  # fmt: skip
        tables={
            "rounds": result_files.table(COLUMNS_OUT, summary),
            "each": result_files.table(ROUND_COLUMNS, [r for label in rounds for r in rounds[label]]),
        },
        directory=args.results or result_files.LOCAL,
        started_utc=started_utc,
    )
    for row in summary:
        print(row, flush=True)
    shutil.rmtree(args.work, ignore_errors=True)
    return 0 if all(equal.values()) and path else 1


if __name__ == "__main__":
    sys.exit(main())
