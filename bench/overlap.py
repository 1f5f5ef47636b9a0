"""Overlapping rounds: does reading and planning round N+1 during round N's Hudi write pay?

    python -m bench.overlap --table-type MERGE_ON_READ --seconds 60 \
        --modes sequential overlapped late sequential overlapped late

An experiment on a design hudi-cdc does not have (it uses the pipeline's internals), in
one process (`local[2]`), without Postgres or Connect: a thread produces ``--rate``
updates a second into a one-partition topic (a batch every 100 ms, recording each
batch's last offset and send time) of a 100,001-row table with the low-latency settings
(bucket index of 4, no metadata table, a compaction of one file group every 2nd delta
commit). The modes run one after the other on the same table, ``--seconds`` each:

- ``sequential``: read, decode, plan, write, then the next round (what ``ingest``
  does, without its per-round bookkeeping: purge, index check, schema read);
- ``overlapped``: the next round's read, decode and plan start as soon as this
  round's write starts, on the main thread while the write runs on another;
- ``late``: the same, but the next read starts so that its plan should end when the
  write under way ends (both estimated from the previous rounds).

Sequential rounds warm the JVM up first (``--warmup-seconds``, not measured). A mode
``name:key=value,...`` writes with those Hudi settings as well. Latency of a
producer batch = the end of the first commit whose checkpoint is past its last offset
minus its send time; batches sent in a mode's first 5 s are left out, and so are the
last ones, which the next mode's first commit makes visible.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import threading
import time
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import results as result_files
from bench.run import BOOTSTRAP, REGISTRY, machine, variant, versions

ROWS = 100_000
MODES = ("sequential", "overlapped", "late")
LOW_LATENCY = {
    "hoodie.index.type": "BUCKET",
    "hoodie.bucket.index.num.buckets": "4",
    "hoodie.metadata.enable": "false",
    "hoodie.compact.inline.max.delta.commits": "2",
    "hoodie.compaction.target.io": "1",
}


@dataclass
class Commit:
    end_offset: int
    done: float  # wall clock
    mode: str
    round_s: float  # read start -> commit end


class Stream:
    """A Debezium-shaped Postgres stream of one table, keyed by id, into partition 0."""

    def __init__(self, topic: str) -> None:
        from hudi_cdc.testing import envelope_schema
        from hudi_cdc.testing.kafka import Framer, create_topic, register_schema

        self.topic = topic
        create_topic(BOOTSTRAP, topic)
        cols = [
            ("id", "long"),
            ("v", "long"),
            ("note", ["null", "string"]),
            ("changed_at", {"type": "long", "connect.name": "io.debezium.time.MicroTimestamp"}),
        ]
        key = {
            "type": "record",
            "name": "Key",
            "namespace": "f.inventory.t",
            "fields": [{"name": "id", "type": "long"}],
        }
        value = envelope_schema("t", cols, server="f", schema="inventory")
        self._key = Framer(register_schema(REGISTRY, f"{topic}-key", key), key)
        self._value = Framer(register_schema(REGISTRY, f"{topic}-value", value), value)
        self._lock = threading.Lock()
        self._lsn, self._ts = 1000, 1_790_000_000_000
        self.sent: list[tuple[int, float]] = []  # (last offset of a batch, its send time)
        self.stop = threading.Event()

    def event(self, op: str, i: int, v: int) -> tuple[bytes, bytes]:
        from hudi_cdc.testing import pg_event

        with self._lock:
            self._lsn += 100
            self._ts += 1
            lsn, ts = self._lsn, self._ts
        row = {"id": i, "v": v, "note": f"n{i:032d}", "changed_at": ts * 1000}
        return self._key({"id": i}), self._value(pg_event(op, lsn=lsn, after=row, ts_ms=ts, table="t"))

    def load(self) -> None:
        from hudi_cdc.testing.kafka import produce

        produce(BOOTSTRAP, self.topic, ((*self.event("r", i, 0), 0) for i in range(ROWS + 1)))

    def produce(self, rate: int) -> None:
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": BOOTSTRAP, "linger.ms": 5, "compression.type": "lz4"})
        rng = random.Random(7)
        n, due = 0, time.monotonic()
        while not self.stop.is_set():
            last = {"offset": -1}

            def delivered(err: Any, msg: Any, last: dict[str, int] = last) -> None:  # noqa: ANN401
                last["offset"] = max(last["offset"], msg.offset())

            sent_at = time.time()
            for _ in range(rate // 10):
                key, value = self.event("u", rng.randint(1, ROWS), n)
                producer.produce(self.topic, key=key, value=value, partition=0, on_delivery=delivered)
            producer.flush()
            self.sent.append((last["offset"], sent_at))
            n += 1
            due += 0.1
            time.sleep(max(0.0, due - time.monotonic()))


def run(
    table_type: str, modes: list[str], seconds: float, rate: int, work: Path, warmup: float = 30.0
) -> list[dict[str, Any]]:
    import hudi_cdc.pipeline as P
    from hudi_cdc.config import load_config
    from hudi_cdc.envelope.batch import change_rows
    from hudi_cdc.sink.hudi import HudiTable
    from hudi_cdc.spark import release, spark_session
    from payloads import StoredState

    unknown = [m for m in modes if variant(m)[0] not in MODES]
    if unknown:
        raise SystemExit(f"unknown mode(s) {', '.join(unknown)}: the modes are {', '.join(MODES)}")
    stream = Stream(f"overlap-{uuid.uuid4().hex[:6]}")
    stream.load()
    spark = spark_session(master="local[2]")
    config = load_config(
        source="kafka",
        topic=stream.topic,
        bootstrap_servers=BOOTSTRAP,
        schema_registry_url=REGISTRY,
        target_base_path=str(work / f"table-{stream.topic}"),
        target_table="t",
        table_type=table_type,
        hoodie_conf=LOW_LATENCY,
    )
    P.ingest_once(config, spark=spark)
    threading.Thread(target=stream.produce, args=(rate,), daemon=True).start()

    table = HudiTable(spark, config.target_base_path)
    source = P._make_source(spark, config)
    policy = P.merge_policy(config)
    keys = ("id",)
    schema = table.read().schema  # the stream's schema never changes
    nothing_stored = StoredState(tombstones=lambda: None, stored_rows=lambda columns: None)  # updates only

    def prepare(checkpoint: dict[str, Any]) -> tuple[Any, Any] | None:
        batch = source.next_batch(checkpoint)
        if batch is None or not batch.parts:
            return None
        flat = change_rows(
            batch,
            policy,
            key_fields=keys,
            ingested_at=datetime.now(UTC),
            behavior=config.schema_change_behavior,
            table_schema=schema,
            truncates=config.truncate_behavior,
        )
        return batch, policy.plan(flat, key_fields=keys, stored=nothing_stored)

    def commit(batch: Any, plan: Any, settings: Any) -> float:  # noqa: ANN401
        P._commit(table, settings, keys, plan.upserts, batch, asdict(plan.counts), None)
        release(*plan.materialised, *(part.envelopes for part in batch.parts))
        return time.time()

    commits: list[Commit] = []
    results = []
    for mode_text in ["warm-up", *modes] if warmup else modes:
        mode, extra = variant("sequential" if mode_text == "warm-up" else mode_text)
        settings = replace(config, hoodie_conf={**LOW_LATENCY, **extra})
        started, until = time.time(), time.monotonic() + (warmup if mode_text == "warm-up" else seconds)
        checkpoint = P._starting_checkpoint(table.checkpoint_commit(), source, config)
        if mode == "sequential":
            while time.monotonic() < until:
                began = time.time()
                prepared = prepare(checkpoint)
                if prepared is None:
                    continue
                batch, plan = prepared
                done = commit(batch, plan, settings)
                checkpoint = batch.next_checkpoint
                commits.append(Commit(checkpoint["offsets"]["0"], done, mode_text, done - began))
        else:
            writer = ThreadPoolExecutor(1)
            # The write under way: its future, end offset, read start and write start.
            pending: tuple[Future[float], int, float, float] | None = None
            commit_s, prepare_s = 1.2, 0.8
            while time.monotonic() < until or pending is not None:
                if mode == "late" and pending is not None:
                    time.sleep(max(0.0, pending[3] + commit_s - (time.time() + prepare_s)))
                began = time.time()
                prepared = prepare(checkpoint) if time.monotonic() < until else None
                if prepared is not None:
                    prepare_s = 0.7 * prepare_s + 0.3 * (time.time() - began)
                if pending is not None:
                    done = pending[0].result()
                    commits.append(Commit(pending[1], done, mode_text, done - pending[2]))
                    commit_s = 0.7 * commit_s + 0.3 * (done - pending[3])
                    pending = None
                if prepared is None:
                    continue
                batch, plan = prepared
                checkpoint = batch.next_checkpoint
                pending = (writer.submit(commit, batch, plan, settings), checkpoint["offsets"]["0"], began, time.time())
            writer.shutdown()
        if mode_text == "warm-up":
            continue
        ours = [c for c in commits if c.mode == mode_text and c.done >= started]  # a mode may come back
        results.append(_summary(mode_text, table_type, ours, stream, started))
        print(json.dumps(results[-1]), flush=True)
    stream.stop.set()
    return results


def _summary(mode: str, table_type: str, commits: list[Commit], stream: Stream, started: float) -> dict[str, Any]:
    latencies = sorted(
        done - sent_at
        for offset, sent_at in list(stream.sent)
        if sent_at >= started + 5
        for done in [next((c.done for c in commits if c.end_offset > offset), None)]
        if done is not None
    )
    if not latencies:
        raise SystemExit(f"{mode}: no batch of the producer became visible")
    cycles = [b.done - a.done for a, b in zip(commits, commits[1:], strict=False)]
    return {
        "mode": mode,
        "table": table_type,
        "commits": len(commits),
        "batches": len(latencies),
        "p50_s": round(statistics.median(latencies), 2),
        "p99_s": round(latencies[int(0.99 * (len(latencies) - 1))], 2),
        "max_s": round(latencies[-1], 2),
        "commit_interval_median_s": round(statistics.median(cycles), 2) if cycles else None,
        "round_median_s": round(statistics.median(c.round_s for c in commits), 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--table-type", default="MERGE_ON_READ", choices=["MERGE_ON_READ", "COPY_ON_WRITE"])
    parser.add_argument("--modes", nargs="+", default=[*MODES, *MODES])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--rate", type=int, default=2000)
    parser.add_argument("--warmup-seconds", type=float, default=30.0, help="sequential rounds first, not measured")
    parser.add_argument("--work", default="/tmp/hudi-cdc-bench-overlap")
    parser.add_argument(
        "--results", type=Path, help="write the result file under this folder (default: .bench/results)"
    )
    args = parser.parse_args(argv)
    started_utc = result_files.now_utc()
    print(json.dumps({"machine": machine(), **versions()}), flush=True)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    summaries = run(args.table_type, args.modes, args.seconds, args.rate, work, args.warmup_seconds)
    passes: dict[str, int] = {}
    for s in summaries:
        passes[s["mode"]] = s["pass"] = passes.get(s["mode"], 0) + 1
    result_files.write(
        "overlap",
        series=args.table_type,
        parameters={
            "table_type": args.table_type,
            "modes": args.modes,
            "seconds": args.seconds,
            "rate": args.rate,
            "warmup_seconds": args.warmup_seconds,
            "hoodie_conf": LOW_LATENCY,
        },  # fmt: skip
        tables={"modes": result_files.table(COLUMNS, summaries)},
        directory=args.results or result_files.LOCAL,
        started_utc=started_utc,
    )
    return 0


COLUMNS = [
    result_files.column("mode"), result_files.column("pass", unit="#"), result_files.column("p50_s", "p50", "s"),
    result_files.column("p99_s", "p99", "s"), result_files.column("max_s", "max", "s"),
    result_files.column("commit_interval_median_s", "commit interval (median)", "s"),
    result_files.column("round_median_s", "read to commit (median)", "s"), result_files.column("commits", unit="#"),
    result_files.column("batches", "producer batches", "#"),
]  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
