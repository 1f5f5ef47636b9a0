"""A small round's plan in the driver against Spark's: plan time and CPU, same table, same changes.

    python -m bench.small_plan [--table-rows 100000] [--rows 1000] [--rounds 6] [--source kafka] [--types logical]

Two MERGE_ON_READ tables are built by hudi-cdc from the same snapshot (``bench.small_round``'s source:
``--table-rows`` Postgres rows, Debezium Avro files); then each round writes one file of ``--rows``
changes to random keys (20% deletes, no TOAST placeholder: the driver's slice) and both tables ingest
it, taking turns first: one planned in the driver (the default, ``hudi_cdc.small_plan``), one by Spark
(``HUDI_CDC_TEST_SMALL_PLAN=off``); both written by Hudi's Java client. Per round: wall time, the plan
and commit steps, and the CPU seconds of the whole process (Python and the JVM, from /proc), and the
load average when it started (the machine is shared). The first round is left out of the medians. At
the end both tables must equal the source.

``--source kafka`` (the local stack up: ``make stack-up``): the same events Confluent-framed into a topic of
its own and ingested from there; the snapshot's round is read by the executors, each round of changes by the
source's own consumer, its plan made in the driver from those messages (``sources.kafka_driver``). Its
changes carry no Kafka tombstone (Debezium's after a delete sends such a round to the Spark plan).

``--types logical``: the table has four more columns of Debezium's logical types (``LOGICAL``: a
MicroTimestamp, a Date, a Connect decimal(12,2), a MicroTime), which the driver converts as the Spark plan
does (``envelope.types``); at the end the two tables must also be equal in every column.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from bench import results as result_files
from bench.procs import process_cpu_s
from bench.run import REPO

VARIANTS = {"driver": None, "spark": "off"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--table-rows", type=int, default=100_000)
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--work", type=Path, default=REPO / ".bench" / "small_plan")
    parser.add_argument("--results", type=Path, help="default: .bench/results")
    parser.add_argument("--source", choices=("files", "kafka"), default="files")
    parser.add_argument("--types", choices=("plain", "logical"), default="plain", help=LOGICAL_HELP)
    args = parser.parse_args(argv)
    import hudi_cdc
    from bench.small_round import COLUMNS, Source, _config, _equal
    from hudi_cdc.pipeline import ingest_once  # the round alone: hudi_cdc.ingest runs a due compaction after it
    from hudi_cdc.small_plan import TEST_HOOK
    from hudi_cdc.testing import envelope_schema

    started_utc = result_files.now_utc()
    shutil.rmtree(args.work, ignore_errors=True)
    spark = hudi_cdc.spark_session(
        app_name="small-plan", conf={"spark.master": "local[2]", "spark.driver.memory": "4g"}
    )
    spark.sparkContext.setLogLevel("ERROR")
    jvm = int(spark.sparkContext._jvm.ProcessHandle.current().pid())  # type: ignore[union-attr]
    source = Source(args.work / "events", args.table_rows, placeholders=0.0, deletes=0.2)
    if args.types == "logical":
        source.schema = envelope_schema("accounts", [*COLUMNS, *LOGICAL])
    write = source._write
    if args.source == "kafka":
        topic = _Topic(source.schema)
        write = topic.write  # the events go to the topic, not to files
        configs = {label: topic.config(f"mor {label}", args.work) for label in VARIANTS}
    else:
        configs = {label: _config(f"mor {label}", {}, source, args.work) for label in VARIANTS}
    typed = args.types == "logical"
    source._write = lambda events: write([_with_logical(e) for e in events] if typed else events)  # type: ignore[method-assign]
    source.snapshot()
    for config in configs.values():
        ingest_once(config, spark=spark)
    rounds: list[dict[str, Any]] = []
    for number in range(1, args.rounds + 1):
        source.changes(args.rows)
        for label in list(VARIANTS) if number % 2 else list(reversed(VARIANTS)):
            hook = VARIANTS[label]
            if hook is not None:
                os.environ[TEST_HOOK] = hook
            load = os.getloadavg()[0]
            cpu, began = process_cpu_s(os.getpid()) + process_cpu_s(jvm), time.perf_counter()
            result = ingest_once(configs[label], spark=spark)
            wall, used = time.perf_counter() - began, process_cpu_s(os.getpid()) + process_cpu_s(jvm) - cpu
            os.environ.pop(TEST_HOOK, None)
            row = {
                "variant": label, "round": number, "seconds": round(wall, 3), "cpu_s": round(used, 3),
                "plan_s": result.steps_s.get("plan"), "commit_s": result.steps_s.get("commit"),
                "planned_by": result.details.get("plan"), "writer": result.details.get("writer"), "load": round(load, 1),
            }  # fmt: skip
            rounds.append(row)
            print(row, flush=True)
    equal = {label: _equal(spark, source, config.target_base_path) for label, config in configs.items()}
    if typed:  # the logical columns, which the source's state does not hold: the two tables alike
        same = _same(spark, [c.target_base_path for c in configs.values()], [n for n, _ in COLUMNS + LOGICAL])
        equal = {label: ok and same for label, ok in equal.items()}

    def median(label: str, key: str) -> float:
        return round(statistics.median(r[key] for r in rounds if r["variant"] == label and r["round"] > 1), 3)

    summary = [
        {"variant": label, **{k: median(label, k) for k in ("seconds", "cpu_s", "plan_s", "commit_s")},
         "load": median(label, "load"), "equal": equal[label]}
        for label in VARIANTS
    ]  # fmt: skip
    columns = [
        result_files.column("variant", "planned by"), result_files.column("seconds", "median round", "s"),
        result_files.column("cpu_s", "CPU (Python + JVM)", "s"), result_files.column("plan_s", "plan", "s"),
        result_files.column("commit_s", "commit", "s"), result_files.column("load", "load average"),
        result_files.column("equal", "table equals the source"),
    ]  # fmt: skip
    each = [
        result_files.column(k, unit=u)
        for k, u in (("variant", None), ("round", "#"), ("seconds", "s"), ("cpu_s", "s"), ("plan_s", "s"),
                     ("commit_s", "s"), ("planned_by", None), ("writer", None), ("load", None))
    ]  # fmt: skip
    path = result_files.write(
        "small-plan",
        series=f"{args.table_rows:,} rows, {args.rows:,} changes a round"
        + (", from Kafka" if args.source == "kafka" else "")
        + (", timestamp/date/decimal/time columns" if typed else ""),
        parameters={
            "table_rows": args.table_rows,
            "rows": args.rows,
            "rounds": args.rounds,
            "measured_from_round": 2,
            "shared_machine": True,
            "source": args.source,
            "types": args.types,
        },  # fmt: skip
        tables={"rounds": result_files.table(columns, summary), "each": result_files.table(each, rounds)},
        directory=args.results or result_files.LOCAL,
        started_utc=started_utc,
    )
    for row in summary:
        print(row, flush=True)
    shutil.rmtree(args.work, ignore_errors=True)
    return 0 if all(equal.values()) and path else 1


LOGICAL_HELP = "logical: four more columns, a MicroTimestamp, a Date, a decimal(12,2) and a MicroTime (Debezium's)"
_AMOUNT = {"type": "bytes", "connect.name": "org.apache.kafka.connect.data.Decimal", "scale": 2,
                 "logicalType": "decimal", "precision": 12,
                 "connect.parameters": {"scale": "2", "connect.decimal.precision": "12"}}  # fmt: skip
LOGICAL = [
    ("updated_at", ["null", {"type": "long", "connect.name": "io.debezium.time.MicroTimestamp"}]),
    ("opened_on", ["null", {"type": "int", "connect.name": "io.debezium.time.Date"}]),
    ("amount", ["null", _AMOUNT]),
    ("opens_at", ["null", {"type": "long", "connect.name": "io.debezium.time.MicroTime"}]),
]


def _with_logical(event: dict[str, Any]) -> dict[str, Any]:
    """The event with the logical columns' values in its image (NULL in a delete's), from its key and position."""
    side = "before" if event["op"] == "d" else "after"
    image = event[side]
    key, lsn = image["id"], event["source"]["lsn"]
    values = {
        "updated_at": 1_700_000_000_000_000 + lsn * 1_000_003,
        "opened_on": 10_000 + key % 9_000,
        "amount": ((key * 7_919 + lsn) % 10**11 - 5 * 10**10).to_bytes(6, "big", signed=True),
        "opens_at": key * 1_000_007 % 86_400_000_000,
    }
    return {**event, side: {**image, **(dict.fromkeys(values) if side == "before" else values)}}


def _same(spark: Any, bases: list[str], columns: list[str]) -> bool:  # noqa: ANN401
    from payloads.history import current_rows

    ours, theirs = (current_rows(spark.read.format("hudi").load(b)).select(*columns) for b in bases)
    differ = ours.exceptAll(theirs).count() + theirs.exceptAll(ours).count()
    print(f"the two tables, every column: {differ} rows differ", flush=True)
    return differ == 0


class _Topic:
    """A topic of its own on the local stack, its value schema registered: the source's events, Confluent-framed."""

    BOOTSTRAP = "127.0.0.1:59092"
    REGISTRY = "http://127.0.0.1:58080/apis/ccompat/v7"

    def __init__(self, schema: dict[str, Any]) -> None:
        import uuid

        from hudi_cdc.testing.kafka import Framer, create_topic, register_schema

        self.name = f"bench.small_plan_{uuid.uuid4().hex[:8]}.accounts"
        create_topic(self.BOOTSTRAP, self.name)
        self._frame = Framer(register_schema(self.REGISTRY, f"{self.name}-value", schema), schema)

    def write(self, events: list[dict[str, Any]]) -> None:
        from hudi_cdc.testing.kafka import produce

        produce(self.BOOTSTRAP, self.name, ((None, self._frame(e), 0) for e in events))

    def config(self, label: str, work: Path) -> Any:  # noqa: ANN401
        from bench.small_round import PLACEHOLDER
        from hudi_cdc import load_config

        table = "t_" + "".join(c if c.isalnum() else "_" for c in label)
        return load_config(
            env={}, source="kafka", topic=self.name, bootstrap_servers=self.BOOTSTRAP,
            schema_registry_url=self.REGISTRY, flavor="postgres", target_base_path=str(work / table),
            target_table=table, table_type="MERGE_ON_READ", record_key_fields="id", toast_placeholder=PLACEHOLDER,
        )  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
