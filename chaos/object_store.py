"""Kills mid-commit on an s3a:// table: ``hudi-cdc ingest`` SIGKILLed (its process group: Python and its Spark
driver JVM) while Hudi has an instant pending on the object store, then run again; the table must equal the
source, nothing lost, nothing doubled, nothing left pending.

The short form (one kill, inside the table's very first commit) runs in CI as ``tests/sink/test_chaos_s3a.py``;
``make chaos-s3a`` (``python -m chaos.object_store``) kills more rounds of COW and MOR tables.

The source is files (``hudi_cdc.testing.samples``): no Kafka or Postgres needed, only the stack's S3 server.
Each killed ingest is a process of its own (it is what gets killed); the run after each kill is the same
ingest through the harness's own Spark session (a JVM start saved each time). The timeline is watched through
that session's s3a file system: a pending instant is a ``.requested`` or ``.inflight`` file under
``.hoodie/timeline`` with no completed file of its time.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hudi_cdc.testing.faults import kill_group
from hudi_cdc.testing.samples import SampleCustomers

__all__ = ["S3ChaosReport", "run_s3a_chaos"]

ENDPOINT = "http://127.0.0.1:58333"  # the stack's SeaweedFS
BUCKET = "hudi-cdc"
COLUMNS = ("id", "name", "email", "notes")
HUDI_CDC = str(Path(sys.executable).parent / "hudi-cdc")


@dataclass
class S3ChaosReport:
    base_path: str
    table_type: str
    kills: list[str] = field(default_factory=list)  # the pending instant each kill left
    rows: int = 0
    equal: bool = False
    doubled: int = 0  # rows read back beyond one per key
    pending_after: list[str] = field(default_factory=list)  # instants a kill left that no run finished
    plans_pending: list[str] = field(default_factory=list)  # compaction plans waiting for their run
    lease_generation: int = 0
    duration_s: float = 0.0
    kill_s: list[float] = field(default_factory=list)  # each killed process's life, start to kill
    restart_s: list[float] = field(default_factory=list)  # each run after a kill, to its commit

    @property
    def ok(self) -> bool:
        return self.equal and not self.doubled and not self.pending_after and len(self.kills) > 0


def _timeline_names(spark: Any, base: str) -> list[str]:  # noqa: ANN401
    jvm = spark.sparkContext._jvm
    path = jvm.org.apache.hadoop.fs.Path(base + "/.hoodie/timeline")
    fs = path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    try:
        return [status.getPath().getName() for status in fs.listStatus(path)]
    except Exception as exc:  # noqa: BLE001 - py4j's FileNotFoundException: no timeline yet
        if "FileNotFoundException" in str(exc):
            return []
        raise


def pending(names: list[str], action: str = "") -> list[str]:
    completed = {n.split("_")[0] for n in names if "_" in n}
    return [
        n for n in names if n.endswith((".requested", ".inflight")) and action in n and n.split(".")[0] not in completed
    ]


def _settings(sample: SampleCustomers, base: str, table_type: str, endpoint: str) -> dict[str, Any]:
    return {
        "source_path": sample.source_path, "flavor": "postgres", "target_base_path": base,
        "target_table": "customers", "table_type": table_type, "record_key_fields": ["id"],
        "s3_endpoint": endpoint, "hoodie_conf": {"hoodie.compact.inline.max.delta.commits": "2"},
    }  # fmt: skip


def _command(settings: dict[str, Any]) -> list[str]:
    return [
        HUDI_CDC, "ingest", "--source", "files", "--source-path", settings["source_path"], "--flavor", "postgres",
        "--target-base-path", settings["target_base_path"], "--target-table", settings["target_table"],
        "--table-type", settings["table_type"], "--record-key-fields", "id", "--s3-endpoint", settings["s3_endpoint"],
        *[x for k, v in settings["hoodie_conf"].items() for x in ("--hoodie-conf", f"{k}={v}")],
    ]  # fmt: skip


def _kill_when_pending(
    spark: Any,  # noqa: ANN401
    command: list[str],
    base: str,
    env: dict[str, str],
    log: Path,
    action: str,
    delay_s: float,
) -> tuple[list[str], float]:
    """Start ``command``; SIGKILL its group ``delay_s`` after a ``action`` instant is pending; the instants
    pending at the kill and the process's life."""
    started = time.monotonic()
    with log.open("ab") as out:
        process = subprocess.Popen(command, stdout=out, stderr=out, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and process.poll() is None:
            if pending(_timeline_names(spark, base), action):
                time.sleep(delay_s)
                kill_group(process)
                left = pending(_timeline_names(spark, base), action)
                if left:
                    return left, time.monotonic() - started
                break  # it committed within the delay: no kill inside a commit
            time.sleep(0.05)
    finally:
        kill_group(process)
    raise RuntimeError(
        f"{base}: no pending {action or 'instant'} to kill in (exit {process.returncode}); its log: {log}"
    )


def run_s3a_chaos(
    spark: Any,  # noqa: ANN401 - a SparkSession able to read the bucket
    work: Path,
    *,
    kills: int = 1,
    table_type: str = "cow",
    endpoint: str = ENDPOINT,
    bucket: str = BUCKET,
    env: dict[str, str] | None = None,
    seed: int = 20261129,
) -> S3ChaosReport:
    """``kills`` rounds of changes, each ingested by a process killed inside its commit (the first inside the
    table's very first commit) and then run again to completion; the table read back against the source."""
    from hudi_cdc import ingest

    began = time.monotonic()
    rng = random.Random(seed)
    work.mkdir(parents=True, exist_ok=True)
    base = f"s3a://{bucket}/chaos-s3a/{uuid.uuid4().hex[:12]}/customers_{table_type}"
    report = S3ChaosReport(base, table_type)
    sample = SampleCustomers(work / "events", keys=300)
    sample.snapshot(rows=200)
    settings = _settings(sample, base, table_type, endpoint)
    env = {**os.environ, **(env or {})}
    for round_ in range(kills):
        sample.changes(seed=seed + round_)
        # "commit" matches a MOR table's deltacommits too: the round's write, whatever its action.
        left, life = _kill_when_pending(
            spark, _command(settings), base, env, work / "killed.log", "commit", rng.uniform(0.0, 1.5)
        )
        report.kills.append(left[0])
        report.kill_s.append(round(life, 1))
        started = time.monotonic()
        result = ingest(spark=spark, **settings)
        if not result.committed:
            raise RuntimeError(f"{base}: the run after the kill committed nothing: {result}")
        report.restart_s.append(round(time.monotonic() - started, 1))
    frame = spark.read.format("hudi").load(base).select(*COLUMNS)
    rows = frame.collect()
    table = {r["id"]: r.asDict() for r in rows}
    report.rows = len(table)
    report.doubled = len(rows) - len(table)
    report.equal = table == sample.state
    left = pending(_timeline_names(spark, base))
    # A compaction plan a MOR round scheduled, and its one-shot process was killed before it ran it (the next
    # ingest or `hudi-cdc compact` runs it), is no leftover of a kill: its execution never started.
    report.plans_pending = [n for n in left if n.endswith(".compaction.requested")]
    report.pending_after = [n for n in left if n not in report.plans_pending]
    from hudi_cdc.sink.lease import lease_holder

    holder = lease_holder(base, spark=spark)
    report.lease_generation = holder.generation if holder is not None else 0
    report.duration_s = round(time.monotonic() - began, 1)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m chaos.object_store", description=__doc__)
    parser.add_argument("--kills", type=int, default=5, help="kills per table type (default 5)")
    parser.add_argument("--table-types", default="cow,mor")
    parser.add_argument("--endpoint", default=os.environ.get("HUDI_CDC_TEST_S3_ENDPOINT", ENDPOINT))
    parser.add_argument("--work", default=".chaos-s3a")
    args = parser.parse_args(argv)
    # The stack's test identity (stack/conf/seaweedfs-s3.json), for s3a's provider chain in every JVM here.
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "hudicdc-test")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "hudicdc-test-secret")
    from hudi_cdc.sink.object_store import configure
    from hudi_cdc.spark import spark_session

    spark = spark_session(app_name="chaos-s3a")
    configure(spark, [f"s3a://{BUCKET}/"], endpoint=args.endpoint, path_style=True)
    ok = True
    for table_type in args.table_types.split(","):
        report = run_s3a_chaos(spark, Path(args.work) / table_type, kills=args.kills, table_type=table_type,
                               endpoint=args.endpoint)  # fmt: skip
        print(report, flush=True)
        ok = ok and report.ok
    spark.stop()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
