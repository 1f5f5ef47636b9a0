"""`make bench-formats`: the same change stream as Avro and as JsonConverter JSON, ingested side by side.

    python -m bench.formats --events 500000 --keys 50000 [--results bench/results]

One workload (bench/workload.py: inserts, updates, deletes, TOAST placeholders,
three schema versions) is produced three times: Avro in the Confluent wire
format with the registry, JSON with the Connect schema embedded in every
message (``schemas.enable=true``, JsonConverter's default), and JSON without
schemas (the schema from a file). Each topic is ingested by hudi-cdc into COW
and MOR, every run a ``spark-submit --master local[2]``, and every table is
checked against the stream's final state.
"""

from __future__ import annotations

import argparse
import base64
import json
import time
import uuid
from collections.abc import Iterator
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from bench import results as result_files
from bench.run import BOOTSTRAP, DRIVER_MEMORY, REGISTRY, REPO, Run, machine, run_hudi_cdc, verify, versions
from bench.workload import VERSIONS, Workload
from hudi_cdc.testing import envelope_schema
from hudi_cdc.testing.kafka import create_topic, produce

_CONNECT = {"long": "int64", "int": "int32", "string": "string", "boolean": "boolean", "double": "double",
            "float": "float", "bytes": "bytes"}  # fmt: skip


def connect_schema(avro: Any, named: dict[str, Any], field: str | None = None) -> dict[str, Any]:  # noqa: ANN401
    """The Connect schema JsonConverter embeds for a value Debezium's Avro converter writes as ``avro``."""
    optional = isinstance(avro, list) and "null" in avro
    if isinstance(avro, list):
        avro = next(t for t in avro if t != "null")
    if isinstance(avro, str) and avro not in _CONNECT:
        avro = named[avro.rsplit(".", 1)[-1]]
    if isinstance(avro, str):
        out: dict[str, Any] = {"type": _CONNECT[avro]}
    elif avro["type"] == "record":
        named[avro["name"]] = avro
        out = {"type": "struct", "name": avro["name"],
               "fields": [connect_schema(f["type"], named, f["name"]) for f in avro["fields"]]}  # fmt: skip
    else:
        out = {"type": _CONNECT[avro["type"]]}
        if "connect.name" in avro:
            out["name"] = avro["connect.name"]
        if "connect.parameters" in avro:
            out["parameters"] = avro["connect.parameters"]
    out["optional"] = optional
    if field:
        out["field"] = field
    return out


def _plain(value: Any) -> Any:  # noqa: ANN401
    """A decoded Avro value as JsonConverter writes it (decimals and bytes in base64)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, Decimal):
        unscaled = int(value.scaleb(2))  # the workload's one decimal has scale 2
        raw = unscaled.to_bytes((unscaled.bit_length() + 8) // 8 or 1, "big", signed=True)
        return base64.b64encode(raw).decode()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    return value


def produce_json(workload: Workload, *, embedded: bool) -> dict[str, Any]:
    """Produce the workload as JSON; returns the newest Connect schema (what a schema file would hold)."""
    create_topic(BOOTSTRAP, workload.topic, partitions=workload.partitions)
    schemas = {}
    for version in range(len(VERSIONS) - workload.schema_versions, len(VERSIONS)):
        avro = envelope_schema("customers", VERSIONS[version], server="bench", schema="inventory")
        schemas[version] = connect_schema(avro, {})
    key_schema = json.dumps({"type": "struct", "name": "Key", "optional": False,
                             "fields": [{"type": "int64", "optional": False, "field": "id"}]})  # fmt: skip
    texts = {v: json.dumps(s) for v, s in schemas.items()}

    def messages() -> Iterator[tuple[bytes | None, bytes | None, int]]:
        for version, event, key in workload.changes():
            payload = json.dumps(_plain(event))
            if embedded:
                k = f'{{"schema":{key_schema},"payload":{{"id":{key}}}}}'.encode()
                v = f'{{"schema":{texts[version]},"payload":{payload}}}'.encode()
            else:
                k, v = f'{{"id":{key}}}'.encode(), payload.encode()
            yield k, v, key % workload.partitions
            if event["op"] == "d":
                yield k, None, key % workload.partitions

    produce(BOOTSTRAP, workload.topic, messages())
    return schemas[max(schemas)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=500_000)
    parser.add_argument("--keys", type=int, default=50_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--work", type=Path, default=REPO / ".bench")
    parser.add_argument(
        "--results", type=Path, help="write the result file under this folder (default: .bench/results)"
    )
    args = parser.parse_args(argv)

    import hudi_cdc

    started_at = f"{datetime.now():%Y-%m-%d %H:%M}"
    started_utc = result_files.now_utc()
    work = args.work / ("formats-" + datetime.now().strftime("%Y%m%dT%H%M%S"))
    work.mkdir(parents=True, exist_ok=True)
    run_id = uuid.uuid4().hex[:8]
    streams: list[tuple[str, str, list[str]]] = []
    produce_s: dict[str, float] = {}
    expected: list[tuple] = []
    for label in ("avro", "json-embedded", "json-schemaless"):
        workload = Workload(f"bench.f{run_id}.{label.replace('-', '_')}", args.events, args.keys, args.partitions)
        started = time.perf_counter()
        extra: list[str] = []
        if label == "avro":
            workload.produce(BOOTSTRAP, REGISTRY)
        else:
            newest = produce_json(workload, embedded=label == "json-embedded")
            extra = ["--kafka-value-format", "json"]
            if label == "json-schemaless":
                schema_file = work / "schema.json"
                schema_file.write_text(json.dumps(newest))
                extra += ["--kafka-value-schema-file", str(schema_file)]
        produce_s[label] = time.perf_counter() - started
        expected = workload.expected_rows()
        streams.append((label, workload.topic, extra))
        print(f"produced {args.events} events as {label} in {produce_s[label]:.1f}s", flush=True)

    spark = hudi_cdc.spark_session(
        app_name="hudi-cdc-bench-formats", conf={"spark.master": "local[2]", "spark.driver.memory": DRIVER_MEMORY}
    )
    sizes = _topic_bytes(spark, [topic for _, topic, _ in streams])
    results = []
    for table_type in ("COPY_ON_WRITE", "MERGE_ON_READ"):
        for label, topic, extra in streams:
            short = "cow" if table_type == "COPY_ON_WRITE" else "mor"
            run = run_hudi_cdc(work, topic, table_type, {}, f"{label.replace('-', '_')}_{short}", extra=extra)
            assert run.measured is not None
            if run.measured.returncode != 0:
                run.rows_ok, run.note = False, f"exit {run.measured.returncode}, see {run.measured.log}"
            else:
                verify(spark, run, expected)
            results.append(_row(label, run, args.events, sizes[topic]))
            print(results[-1], flush=True)
    report = {"started": started_at, "machine": machine(), "versions": versions(), "events": args.events,
              "keys": args.keys, "partitions": args.partitions, "produce_s": produce_s, "runs": results}  # fmt: skip
    (work / "report.json").write_text(json.dumps(report, indent=2, default=str))
    print(render(report))
    result_files.write(
        "formats",
        parameters={
            "events": args.events,
            "keys": args.keys,
            "partitions": args.partitions,
            "schema_versions": len(VERSIONS),
            "driver_memory": DRIVER_MEMORY,
        },  # fmt: skip
        tables={"runs": result_files.table(COLUMNS, result_rows(results))},
        directory=args.results or result_files.LOCAL,
        started_utc=started_utc,
    )
    return 0 if all(r["rows_ok"] for r in results) else 1


def _topic_bytes(spark: Any, topics: list[str]) -> dict[str, int]:  # noqa: ANN401
    """Bytes of message values per topic (what a round reads from Kafka)."""
    from pyspark.sql import functions as F

    out = {}
    for topic in topics:
        frame = (
            spark.read.format("kafka").option("kafka.bootstrap.servers", BOOTSTRAP).option("subscribe", topic).load()
        )
        out[topic] = int(frame.select(F.sum(F.length("value"))).first()[0] or 0)
    return out


def _row(label: str, run: Run, events: int, size: int) -> dict[str, Any]:
    assert run.measured is not None
    return {"format": label, "table_type": run.table_type, "seconds": run.measured.seconds,
            "events_per_s": events / run.measured.seconds, "peak_rss_mib": run.measured.peak_rss_mib,
            "topic_mib": size / 2**20, "rows_ok": run.rows_ok, "note": run.note}  # fmt: skip


COLUMNS = [
    result_files.column("format"), result_files.column("table_type", "table"),
    result_files.column("topic_mib", "topic", "MiB"), result_files.column("seconds", "wall", "s"),
    result_files.column("events_per_s", "rate", "events/s"), result_files.column("vs_avro", "time vs Avro", "x"),
    result_files.column("peak_rss_mib", "peak RSS", "MiB"), result_files.column("rows_ok", "table right"),
    result_files.column("note"),
]  # fmt: skip


def result_rows(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    avro = {r["table_type"]: r["seconds"] for r in runs if r["format"] == "avro"}
    return [
        {**r, "topic_mib": round(r["topic_mib"]), "seconds": round(r["seconds"], 1),
         "events_per_s": round(r["events_per_s"]), "peak_rss_mib": round(r["peak_rss_mib"]),
         "vs_avro": round(r["seconds"] / avro[r["table_type"]], 2) if r["table_type"] in avro else None}
        for r in runs
    ]  # fmt: skip


def render(report: dict[str, Any]) -> str:
    runs = report["runs"]
    avro = {r["table_type"]: r["seconds"] for r in runs if r["format"] == "avro"}
    lines = [
        f"Run {report['started']} on {report['machine']}; "
        + ", ".join(f"{k} {v}" for k, v in report["versions"].items())
        + ". "
        f"{report['events']:,} events over {report['keys']:,} keys in {report['partitions']} partitions "
        "(bench/workload.py: three schema versions, TOAST placeholders, deletes with tombstones), produced "
        "once per format; one `hudi-cdc ingest` round per table (`spark-submit --master local[2]`), each table "
        "checked against the stream's final state. Time relative to the Avro run of the same table type.",
        "",
        "| format | table | topic MiB | seconds | events/s | vs Avro | peak RSS MiB | table right |",
        "|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in runs:
        ratio = r["seconds"] / avro[r["table_type"]] if r["table_type"] in avro else float("nan")
        lines.append(
            f"| {r['format']} | {r['table_type']} | {r['topic_mib']:,.0f} | {r['seconds']:.1f} | "
            f"{r['events_per_s']:,.0f} | {ratio:.2f}x time | {r['peak_rss_mib']:,.0f} | "
            f"{'yes' if r['rows_ok'] else 'NO: ' + r['note']} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
