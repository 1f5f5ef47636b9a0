"""Experiment: a small MERGE_ON_READ round through Hudi's Java write client, in the Spark driver's JVM.

    python -m bench.java_client [--table-rows 1000000] [--rows 1000] [--rounds 6] [--hoodie-conf k=v ...]

Issue 42 asks whether a round that runs no Spark job gets under ~0.5 s where the Spark write path
does not. One Spark session (``local[2]``, 4 GiB) with ``org.apache.hudi:hudi-java-client`` on top
of the Spark bundle (fetched by ``bench/java_client/pom.xml`` into ``.jars/bench-java-client/``;
``bench/java_client/JavaClientRound.java`` is compiled here so that py4j is crossed a few times per
round, not per row). Two MERGE_ON_READ tables of ``--table-rows`` rows with the bucket index, built
by Spark with hudi-cdc's write options (HoodieAvroPayload-style event-time ordering on
``_source_order``): one gets its rounds from Spark's datasource, the other from one
``HoodieJavaWriteClient`` kept for the run, rounds alternating, ``--rows`` updates each
(random keys, then keys among the newest 1%). Only the write is timed; turning the rows into
Hudi records is timed apart. The first round is left out; a write that compacted is shown apart.

At the end Spark reads both tables back: each must equal the expected rows, column for column.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench import results as result_files
from bench.commit_cost import ORDERING, Workload, _completed_compactions, jobs_of
from bench.run import REPO

HERE = Path(__file__).resolve().parent / "java_client"
JARS = REPO / ".jars" / "bench-java-client"
HELPER = "io.hudicdc.bench.JavaClientRound"


def java_client_jars(build: Path) -> list[str]:
    """The Java client's jar (fetched once by Maven) and the helper's, compiled against the bundle."""
    if not list(JARS.glob("hudi-java-client-*.jar")):
        subprocess.run(
            ["mvn", "-q", "-f", str(HERE / "pom.xml"), "dependency:copy-dependencies", f"-DoutputDirectory={JARS}"],
            check=True,
        )
    client = [str(p) for p in JARS.glob("hudi-java-client-*.jar")]
    pyspark_jars = Path(__import__("pyspark").__file__).parent / "jars"
    classpath = [*map(str, (REPO / ".jars" / "hudi").glob("*.jar")), *client, *map(str, pyspark_jars.glob("*.jar"))]
    classes = build / "classes"
    shutil.rmtree(classes, ignore_errors=True)
    classes.mkdir(parents=True)
    subprocess.run(
        ["javac", "-nowarn", "-d", str(classes), "-cp", ":".join(classpath), str(HERE / "JavaClientRound.java")],
        check=True,
    )
    helper = build / "java-client-round.jar"
    subprocess.run(["jar", "cf", str(helper), "-C", str(classes), "."], check=True)
    return [*client, str(helper)]


def avro_json(schema: dict[str, Any], row: dict[str, Any]) -> str:
    """A row in Avro's JSON encoding: a nullable field's value is wrapped in its branch's name."""
    out = {}
    for field in schema["fields"]:
        value, kind = row[field["name"]], field["type"]
        if isinstance(kind, list):
            branch = next(k for k in kind if k != "null")
            out[field["name"]] = (
                None if value is None else {branch if isinstance(branch, str) else branch["type"]: value}
            )
        else:
            out[field["name"]] = value
    return json.dumps(out)


def python_rows(keys: list[int], order: int) -> list[dict[str, Any]]:
    """The rows ``Workload._rows`` makes in Spark, made in Python."""
    return [
        {"id": k, "name": f"customer {k}", "notes": hashlib.sha256(f"{k}/{order}".encode()).hexdigest(),
         "balance": k % 1000 * 1.5, ORDERING: order}
        for k in keys
    ]  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--table-rows", type=int, default=1_000_000)
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument(
        "--rounds", type=int, default=6, help="rounds (one write per pattern each); the first is left out"
    )
    parser.add_argument("--buckets", type=int, help="default: 1 per 250,000 rows, at least 4")
    parser.add_argument(
        "--hoodie-conf", action="append", default=[], help="k=v for both tables, e.g. hoodie.metadata.enable=false"
    )
    parser.add_argument("--work", type=Path, default=REPO / ".bench" / "java_client")
    parser.add_argument("--results", type=Path, help="default: .bench/results")
    args = parser.parse_args(argv)
    import hudi_cdc
    from hudi_cdc.jars import folder_jars
    from hudi_cdc.sink.options import AVRO_RECORD_MERGER, RECORD_MERGER_CLASSES, write_options

    started_utc = result_files.now_utc()
    shutil.rmtree(args.work, ignore_errors=True)
    extra = java_client_jars(args.work / "build")
    spark = hudi_cdc.spark_session(
        app_name="java-client",
        conf={
            "spark.master": "local[2]",
            "spark.driver.memory": "4g",
            "spark.sql.pyspark.jvmStacktrace.enabled": "true",
        },
        jars=[*folder_jars(REPO / ".jars" / "hudi"), *extra],
    )
    spark.sparkContext.setLogLevel("ERROR")
    jvm, sc = spark._jvm, spark.sparkContext
    buckets = args.buckets or max(4, args.table_rows // 250_000)
    conf = {"hoodie.index.type": "BUCKET", "hoodie.bucket.index.num.buckets": str(buckets)}
    conf.update(dict(kv.split("=", 1) for kv in args.hoodie_conf))
    paths = {w: args.work / w for w in ("spark", "java")}
    options = {
        w: write_options(
            table_name=f"t_{w}",
            table_type="MERGE_ON_READ",
            record_key_fields=["id"],
            partition_path_field=None,
            ordering_field=ORDERING,
            user_conf=conf,
        )  # fmt: skip
        for w in paths
    }
    # The Java client has no Spark rows to merge: Avro records, merged by Hudi's Avro merger. Its index
    # factory has no bucket index: the helper tags the records by bucket itself and writes them prepped,
    # past the index; the client is still given an index it can build.
    java_options = {**options["java"], RECORD_MERGER_CLASSES: AVRO_RECORD_MERGER, "hoodie.index.type": "SIMPLE"}
    work = Workload(spark, args.table_rows, args.rows, 0.01)
    builds = {}
    for w, path in paths.items():
        began = time.perf_counter()
        work.initial().write.format("hudi").options(**options[w]).mode("append").save(str(path))
        builds[w] = time.perf_counter() - began
        print(f"{w}: built in {builds[w]:.1f} s", flush=True)
    helper = getattr(jvm, HELPER)
    schema_json = helper.tableSchema(str(paths["java"]))
    schema = json.loads(schema_json)
    began = time.perf_counter()
    client = helper.client(str(paths["java"]), schema_json, java_options)
    client_s = time.perf_counter() - began
    writes: list[dict[str, Any]] = []
    order = 0
    try:
        for number in range(1, args.rounds + 1):
            for pattern in ("random", "recent"):
                order += 1
                keys = work.keys(order, pattern)
                work.written.update(dict.fromkeys(keys, order))
                batch = work.batch(order, pattern).cache()
                batch.count()
                for w, path in paths.items():
                    compactions = _completed_compactions(path)
                    group = f"java-client-{w}-{order}"
                    sc.setJobGroup(group, group)
                    prepare, steps = 0.0, {}
                    if w == "java":
                        began = time.perf_counter()
                        lines = "\n".join(avro_json(schema, r) for r in python_rows(keys, order))
                        records = helper.records(schema_json, lines, "id", ORDERING)
                        prepare = time.perf_counter() - began
                        began = time.perf_counter()
                        steps = dict(p.split("=") for p in helper.upsert(client, records, "id", buckets).split(","))
                    else:
                        began = time.perf_counter()
                        batch.write.format("hudi").options(**options[w]).mode("append").save(str(path))
                    wall = time.perf_counter() - began
                    sc.setLocalProperty("spark.jobGroup.id", None)
                    spark_jobs = jobs_of(spark, group, wall)
                    writes.append({
                        "writer": w, "round": number, "pattern": pattern, "seconds": wall, "prepare_s": prepare,
                        "spark_jobs": spark_jobs["jobs"], "compacted": _completed_compactions(path) > compactions,
                        **{f"{k}_s": int(v) / 1000 for k, v in steps.items()},
                    })  # fmt: skip
                batch.unpersist()
                print(
                    f"round {number} {pattern}: "
                    + ", ".join(f"{x['writer']} {x['seconds']:.2f} s" for x in writes[-2:]),
                    flush=True,
                )
    finally:
        client.close()
    same = check(spark, paths, work)
    rows = summary(writes, builds, client_s, same)
    extra_conf = ", ".join(kv for kv in args.hoodie_conf)
    path = result_files.write(
        "java-client",
        series=f"bucket index{', ' + extra_conf if extra_conf else ''}",
        parameters={
            "table_rows": args.table_rows,
            "rows": args.rows,
            "rounds": args.rounds,
            "buckets": buckets,
            "hoodie_conf": conf,
            "measured_from_round": 2,
            "shared_machine": True,
        },  # fmt: skip
        tables={
            "rounds": result_files.table(COLUMNS, rows),
            "writes": result_files.table(
                WRITE_COLUMNS,
                [{**x, "seconds": round(x["seconds"], 3), "prepare_s": round(x["prepare_s"], 3)} for x in writes],
            ),
        },  # fmt: skip
        directory=args.results or result_files.LOCAL,
        started_utc=started_utc,
    )
    for r in rows:
        print(r)
    shutil.rmtree(args.work, ignore_errors=True)
    return 0 if all(same.values()) and path else 1


def check(spark: Any, paths: dict[str, Path], work: Workload) -> dict[str, bool]:
    """Whether each table, read back by Spark, equals the expected rows column for column."""
    from functools import reduce

    updated = [work._rows(spark.createDataFrame([(k,) for k, o in work.written.items() if o == order], "id bigint"),
                          order) for order in sorted(set(work.written.values()))]  # fmt: skip
    changed = reduce(lambda a, b: a.unionByName(b), updated)
    expected = work.initial().join(changed.select("id"), "id", "left_anti").unionByName(changed).cache()
    same = {}
    for w, path in paths.items():
        table = spark.read.format("hudi").load(str(path)).select(*expected.columns)
        missing, extra = expected.exceptAll(table).count(), table.exceptAll(expected).count()
        same[w] = missing == extra == 0
        print(f"{w}: {missing} expected rows missing, {extra} rows not expected", flush=True)
    expected.unpersist()
    return same


COLUMNS = [
    result_files.column("writer"), result_files.column("pattern", "keys"),
    result_files.column("median_s", "median write", "s"), result_files.column("min_s", "min", "s"),
    result_files.column("max_s", "max", "s"), result_files.column("writes", unit="#"),
    result_files.column("prepare_s", "rows to records", "s"), result_files.column("spark_jobs", "Spark jobs", "#"),
    result_files.column("start_tag_s", "start, tag", "s"), result_files.column("write_s", "write", "s"),
    result_files.column("commit_s", "commit", "s"),
    result_files.column("compaction_write_s", "a write that compacted", "s"),
    result_files.column("build_s", "first commit (Spark)", "s"), result_files.column("client_s", "client start", "s"),
    result_files.column("read_back_equal", "Spark reads it back equal"),
]  # fmt: skip
WRITE_COLUMNS = [
    result_files.column("writer"), result_files.column("round", unit="#"), result_files.column("pattern", "keys"),
    result_files.column("seconds", unit="s"), result_files.column("prepare_s", "rows to records", "s"),
    result_files.column("spark_jobs", unit="#"), result_files.column("compacted"),
    result_files.column("start_tag_s", unit="s"), result_files.column("write_s", unit="s"),
    result_files.column("commit_s", unit="s"),
]  # fmt: skip


def summary(
    writes: list[dict[str, Any]], builds: dict[str, float], client_s: float, same: dict[str, bool]
) -> list[dict[str, Any]]:
    rows = []
    for w in builds:
        for pattern in ("random", "recent"):
            mine = [x for x in writes if x["writer"] == w and x["pattern"] == pattern and x["round"] > 1]
            plain = [x for x in mine if not x["compacted"]]
            seconds = [x["seconds"] for x in plain]
            rows.append({
                "writer": "Java write client" if w == "java" else "Spark datasource", "pattern": pattern,
                "median_s": round(statistics.median(seconds), 2) if seconds else None,
                "min_s": round(min(seconds), 2) if seconds else None,
                "max_s": round(max(seconds), 2) if seconds else None, "writes": len(plain),
                "prepare_s": round(statistics.median(x["prepare_s"] for x in plain), 3) if plain and w == "java" else None,
                "spark_jobs": statistics.median(x["spark_jobs"] for x in plain) if plain else None,
                **{k: round(statistics.median(x[k] for x in plain), 3) if plain and w == "java" else None
                   for k in ("start_tag_s", "write_s", "commit_s")},
                "compaction_write_s": round(statistics.median(c), 2)
                if (c := [x["seconds"] for x in mine if x["compacted"]]) else None,
                "build_s": round(builds[w], 1), "client_s": round(client_s, 2) if w == "java" else None,
                "read_back_equal": same[w],
            })  # fmt: skip
    return rows


if __name__ == "__main__":
    sys.exit(main())
