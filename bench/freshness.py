"""Freshness: from a Postgres commit to the change being visible in a Hudi snapshot query.

    python -m bench.freshness --rates 2000 10000 --table-types mor cow --seconds 120

For each rate, a load thread commits about ``rate`` row changes a second into
``inventory.bench_fresh`` (transactions every 100 ms), and each transaction also
sets the probe row (id 0) to its sequence number. ``hudi-cdc ingest
--continuous`` replicates the topic into a MERGE_ON_READ table (a compaction
every 5 delta commits, inside the round, or with ``--compaction async`` on a
thread of its own), then, in a second run, a COPY_ON_WRITE one. An observer
watches the table's timeline; when a commit completes it runs a snapshot
query for the probe row: every transaction up to the sequence seen there
became visible when that commit completed. Latency = commit completion time -
Postgres commit time, over all transactions of the measured window (the first
``warmup`` seconds are left out).

Each latency is also split in three (``profile``), from the probe row's Kafka
timestamps, the ingest's per-round results and the timeline:

- **capture**: Postgres commit -> the probe's message in Kafka (Debezium and Connect);
- **queue**: in Kafka -> the start of the round that read it (the round under way);
- **round**: that round's start -> the commit that made it visible (inline
  compaction included).

A round's start is the completion of its last Hudi instant minus its
``duration_s``; the three add up to the latency. A round asks Kafka for its end
offsets a moment after it starts (0.2-1 s here), so a change that arrived in
that moment has a negative queue and a round that includes the moment.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import threading
import time
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

from bench import results as result_files
from bench.run import BOOTSTRAP, LAUNCHER, REGISTRY, REPO, hudi_cdc_jars, spark_submit, variant


def _prepare(conn: Any, table: str, rows: int) -> None:
    """A fresh table (so a fresh topic) with ``rows`` rows and the probe row 0."""
    with conn.cursor() as cur:
        cur.execute(
            f"create table inventory.{table} (id bigint primary key, v bigint not null, "
            "note text, changed_at timestamptz not null default now())"
        )
        cur.execute(
            f"insert into inventory.{table} (id, v, note) select g, 0, md5(g::text) from generate_series(0, %s) g",
            (rows,),
        )


class Load(threading.Thread):
    """Commits ``rate`` changes a second in 10 transactions; remembers each transaction's commit time."""

    def __init__(self, dsn: str, table: str, rate: int, rows: int, seconds: float) -> None:
        super().__init__(daemon=True)
        self.dsn, self.table, self.rate, self.rows, self.seconds = dsn, table, rate, rows, seconds
        self.committed: dict[int, float] = {}
        self.behind_s = 0.0

    def run(self) -> None:
        from hudi_cdc.testing.postgres import connect

        rng = random.Random(self.rate)
        per_tx = max(1, self.rate // 10)
        with connect(self.dsn) as conn, conn.cursor() as cur:
            start = time.time()
            seq = 0
            while time.time() - start < self.seconds:
                seq += 1
                due = start + seq * 0.1
                ids = [rng.randint(1, self.rows) for _ in range(per_tx - 1)]
                with conn.transaction():
                    cur.executemany(f"update inventory.{self.table} set v = v + 1, changed_at = now() where id = %s",
                                    [(i,) for i in ids])  # fmt: skip
                    cur.execute(f"update inventory.{self.table} set v = %s, changed_at = now() where id = 0", (seq,))
                self.committed[seq] = time.time()
                pause = due - time.time()
                if pause > 0:
                    time.sleep(pause)
                else:
                    self.behind_s = max(self.behind_s, -pause)


def _completed_instants(base: Path, stamped: dict[str, float] | None = None) -> set[str]:
    """The completed commits and delta commits; ``stamped`` also gets each completed instant's (clean
    included) completion time as first seen, before Hudi archives it out of the timeline."""
    timeline = base / ".hoodie" / "timeline"
    if not timeline.exists():
        return set()
    names = [p.name for p in timeline.iterdir() if p.name.endswith((".commit", ".deltacommit", ".clean"))]
    if stamped is not None:
        for name in names:
            if name not in stamped and "_" in name:
                try:
                    stamped[name] = (timeline / name).stat().st_mtime
                except FileNotFoundError:  # archived meanwhile
                    pass
    return {n for n in names if not n.endswith(".clean")}


def _p99_rank(n: int) -> int:
    """The index of the p99 among ``n`` sorted values (the run's p99, and where its slowest 1% begin)."""
    return max(0, int(n * 0.99) - 1)


def _probe_sent(topic: str, start: int, probes: int) -> list[float]:
    """The Kafka timestamps (s) of the probe row's messages from offset ``start``: ``[k]`` is transaction k + 1."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": f"freshness-{uuid.uuid4().hex}",
                         "enable.auto.commit": False})  # fmt: skip
    try:
        _, end = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)
        consumer.assign([TopicPartition(topic, 0, start)])
        sent: list[float] = []
        offset = start
        while offset < end - 1 and len(sent) < probes:
            batch = consumer.consume(10_000, timeout=10)
            if not batch:
                break
            for message in batch:
                offset = message.offset() or offset
                key = message.key() or b""
                if key[5:] == b"\x00":  # the Debezium key {id: 0}, after the 5-byte Confluent header
                    sent.append(message.timestamp()[1] / 1000)
        return sent
    finally:
        consumer.close()


def _rounds(log: Path, stamped: dict[str, float]) -> list[dict[str, Any]]:
    """Each committed round: its instant, start, end and whether it compacted (from the log and the
    completion times the observer saw).

    A round ends with the last instant completed before the next round's commit (its own commit, then
    an inline compaction or a clean); it started ``duration_s`` before that.
    """
    results = []
    for line in log.read_text(errors="replace").splitlines():
        if line.startswith('{"base_path"'):
            result = json.loads(line)
            if result.get("commit_time"):
                results.append(result)
    done = sorted((name.split("_")[0], mtime, name.rsplit(".", 1)[-1]) for name, mtime in stamped.items())
    rounds = []
    for i, result in enumerate(results):
        upto = results[i + 1]["commit_time"] if i + 1 < len(results) else "9"
        own = [(mtime, kind) for instant, mtime, kind in done if result["commit_time"] <= instant < upto]
        if not own:
            continue
        end = max(mtime for mtime, _ in own)
        compacted = any(kind == "commit" for _, kind in own) and any(kind == "deltacommit" for _, kind in own)
        rounds.append({"instant": result["commit_time"], "start": end - result["duration_s"], "end": end,
                       "duration_s": result["duration_s"], "events": result["events"], "compacted": compacted})  # fmt: skip
    return rounds


def profile(
    committed: dict[int, float],
    visible: dict[int, tuple[float, list[str]]],
    sent: list[float],
    rounds: list[dict[str, Any]],
    start: float,
) -> dict[str, Any]:
    """Split each measured transaction's latency into capture, queue and round; the medians and the slowest 1%."""
    by_instant = {r["instant"]: r for r in rounds}
    parts: list[tuple[float, float, float, float]] = []
    for seq, t in committed.items():
        if t < start or seq not in visible or seq > len(sent):
            continue
        at, instants = visible[seq]
        own = [by_instant[i] for i in instants if i in by_instant]
        if not own:
            continue
        r = max(own, key=lambda x: x["instant"])
        kafka = sent[seq - 1]
        parts.append((at - t, kafka - t, r["start"] - kafka, at - r["start"]))
    if not parts:
        return {}
    parts.sort()
    tail = parts[_p99_rank(len(parts)) :]
    measured = [r for r in rounds if r["end"] >= start]
    normal = [r["duration_s"] for r in measured if not r["compacted"]]
    compacting = [r["duration_s"] for r in measured if r["compacted"]]

    def med(i: int) -> float:
        return round(statistics.median(p[i] for p in parts), 2)

    def tail_mean(i: int) -> float:
        return round(statistics.fmean(p[i] for p in tail), 2)

    return {
        "split": len(parts),
        "capture_p50_s": med(1), "queue_p50_s": med(2), "round_p50_s": med(3),
        "tail": len(tail), "tail_capture_s": tail_mean(1), "tail_queue_s": tail_mean(2), "tail_round_s": tail_mean(3),
        "capture_p99_s": round(sorted(p[1] for p in parts)[_p99_rank(len(parts))], 2),
        "rounds": len(measured), "round_median_s": round(statistics.median(normal), 2) if normal else None,
        "compactions": len(compacting),
        "compaction_round_median_s": round(statistics.median(compacting), 2) if compacting else None,
    }  # fmt: skip


def measure(
    rate: int,
    seconds: float,
    warmup: float,
    work: Path,
    rows: int,
    table_type: str = "mor",
    compaction: str = "inline",
    hoodie_conf: dict[str, str] | None = None,
) -> dict[str, Any]:
    import hudi_cdc
    from hudi_cdc.testing.kafka import end_offsets
    from hudi_cdc.testing.postgres import STACK_DSN, connect

    table = f"bench_fresh_{rate}_{uuid.uuid4().hex[:6]}"
    topic = f"dbserver1.inventory.{table}"
    with connect() as conn:
        _prepare(conn, table, rows)
    deadline = time.time() + 120
    while sum(end_offsets(BOOTSTRAP, [topic]).values() or [0]) <= rows and time.time() < deadline:
        time.sleep(1)  # Debezium publishes the initial rows (and creates the topic)
    base = work / table
    log = open(work / f"{table}.log", "w")  # noqa: SIM115 - the child writes it until terminated
    ingest = subprocess.Popen(
        [spark_submit(), "--master", "local[2]", "--driver-memory", "4g", "--conf", "spark.ui.enabled=false",
         *hudi_cdc_jars(), str(LAUNCHER), "ingest",
         "--source", "kafka", "--topic", topic, "--bootstrap-servers", BOOTSTRAP, "--schema-registry-url", REGISTRY,
         "--target-base-path", str(base), "--target-table", table, "--table-type", table_type,
         "--continuous", "--min-sync-interval-seconds", "0", "--compaction", compaction, "--json",
         *(a for k, v in (hoodie_conf or {}).items() for a in ("--hoodie-conf", f"{k}={v}"))],
        stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYSPARK_PYTHON": sys.executable},
    )  # fmt: skip
    spark = hudi_cdc.spark_session(app_name="freshness-observer", conf={"spark.master": "local[1]"})
    load = Load(STACK_DSN, table, rate, rows, seconds + warmup)
    visible: dict[int, tuple[float, list[str]]] = {}
    stamped: dict[str, float] = {}
    try:
        deadline = time.time() + 300
        while not _completed_instants(base) and time.time() < deadline:
            time.sleep(0.5)  # the first round loads the initial rows
        load.start()
        seen, last_seq, quiet_until = _completed_instants(base, stamped), 0, None
        while True:
            new = _completed_instants(base, stamped) - seen
            if new:
                completed = max(stamped.get(n, 0.0) for n in new)
                seen |= new
                probe = spark.read.format("hudi").load(str(base)).where("id = 0").select("v").collect()
                seq = probe[0]["v"] if probe else 0
                instants = sorted(n.split("_")[0] for n in new)
                for s in range(last_seq + 1, seq + 1):
                    visible[s] = (completed, instants)
                last_seq = max(last_seq, seq)
            elif not load.is_alive():
                quiet_until = quiet_until or time.time() + 90
                if last_seq >= max(load.committed, default=0) or time.time() > quiet_until:
                    break
            time.sleep(0.1)
    finally:
        ingest.terminate()
        ingest.wait(60)
        log.close()
    start = min(load.committed.values(), default=0) + warmup
    latencies = sorted(visible[s][0] - t for s, t in load.committed.items() if s in visible and t >= start)
    missing = [s for s, t in load.committed.items() if t >= start and s not in visible]
    result = {
        "table_type": table_type, "compaction": compaction, "rate": rate, "seconds": seconds, "transactions": len(latencies), "not_visible": len(missing),
        "p50_s": round(statistics.median(latencies), 2) if latencies else None,
        "p90_s": round(latencies[max(0, int(len(latencies) * 0.9) - 1)], 2) if latencies else None,
        "p99_s": round(latencies[_p99_rank(len(latencies))], 2) if latencies else None,
        "max_s": round(latencies[-1], 2) if latencies else None, "load_behind_s": round(load.behind_s, 2),
        "commits": len(seen),
    }  # fmt: skip
    sent = _probe_sent(topic, rows + 1, len(load.committed))
    rounds = _rounds(work / f"{table}.log", stamped)
    result["profile"] = profile(load.committed, visible, sent, rounds, start)
    # What the profile was computed from, to look again without running again.
    (work / f"{table}.profile.json").write_text(
        json.dumps(
            {
                "committed": load.committed,
                "visible": visible,
                "sent": sent,
                "stamped": stamped,
                "rounds": rounds,
                "start": start,
            }
        )
    )
    print(json.dumps(result), flush=True)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rates", type=int, nargs="+", default=[2000, 10000])
    parser.add_argument("--table-types", nargs="+", default=["mor", "cow"], choices=["mor", "cow"])
    parser.add_argument("--seconds", type=float, default=120)
    parser.add_argument("--warmup", type=float, default=30)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument(
        "--compaction", nargs="+", default=["inline"], choices=["inline", "async"],
        help="MERGE_ON_READ: hudi-cdc's --compaction (async: on a thread of its own)",
    )  # fmt: skip
    parser.add_argument(
        "--variant", action="append", type=variant,
        help="label or label:key=value,...: runs with these Hudi settings (repeatable; hudi-cdc's defaults when not given)",
    )  # fmt: skip
    parser.add_argument("--work", type=Path, default=REPO / ".bench" / "freshness")
    parser.add_argument(
        "--results", type=Path, help="write the result file under this folder (default: .bench/results)"
    )
    args = parser.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    started = f"{datetime.now():%Y-%m-%d %H:%M}"
    started_utc = result_files.now_utc()
    results = [
        {
            "settings": label,
            **measure(rate, args.seconds, args.warmup, args.work, args.rows, table_type, compaction, conf),
        }
        for label, conf in args.variant or [("hudi-cdc defaults", {})]
        for table_type in args.table_types
        for rate in args.rates
        for compaction in (args.compaction if table_type == "mor" else ["inline"])
    ]
    (args.work / "freshness.json").write_text(json.dumps(results, indent=2))
    print(render(results, started, args.rows, args.variant or []))
    result_files.write(
        "freshness",
        parameters={
            "seconds": args.seconds, "warmup": args.warmup, "rows": args.rows, "rates": args.rates,
            "table_types": args.table_types, "compaction": args.compaction,
            "variants": {label: conf for label, conf in args.variant or [("hudi-cdc defaults", {})]},
        },
        tables=result_tables(results),
        directory=args.results or result_files.LOCAL,
        started_utc=started_utc,
    )  # fmt: skip
    return 0 if all(r["not_visible"] == 0 for r in results) else 1


_KEYS = [
    result_files.column("settings"), result_files.column("table_type", "table"), result_files.column("compaction"),
    result_files.column("rate", "changes/s", "changes/s"),
]  # fmt: skip
LATENCY_COLUMNS = [
    *_KEYS, result_files.column("seconds", "measured window", "s"), result_files.column("transactions", unit="#"),
    result_files.column("commits", unit="#"), result_files.column("p50_s", "p50", "s"),
    result_files.column("p90_s", "p90", "s"), result_files.column("p99_s", "p99", "s"),
    result_files.column("max_s", "max", "s"), result_files.column("not_visible", "not visible", "#"),
    result_files.column("load_behind_s", "load behind", "s"),
]  # fmt: skip
PROFILE_COLUMNS = [
    *_KEYS, result_files.column("capture_p50_s", "capture p50", "s"),
    result_files.column("queue_p50_s", "queue p50", "s"), result_files.column("round_p50_s", "round p50", "s"),
    result_files.column("tail_capture_s", "slowest 1%: capture", "s"),
    result_files.column("tail_queue_s", "+ queue", "s"), result_files.column("tail_round_s", "+ round", "s"),
    result_files.column("capture_p99_s", "capture p99", "s"), result_files.column("rounds", unit="#"),
    result_files.column("round_median_s", "round median", "s"),
    result_files.column("compactions", "compaction rounds", "#"),
    result_files.column("compaction_round_median_s", "their median", "s"),
]  # fmt: skip
NAMES = {"mor": "MERGE_ON_READ", "cow": "COPY_ON_WRITE"}


def result_tables(results: list[dict[str, Any]]) -> dict[str, Any]:
    rows = [{**r, "table_type": NAMES[r["table_type"]],
             "compaction": r["compaction"] if r["table_type"] == "mor" else None} for r in results]  # fmt: skip
    return {
        "latency": result_files.table(LATENCY_COLUMNS, rows),
        "profile": result_files.table(
            PROFILE_COLUMNS,
            [{**r, **r["profile"]} for r in rows if r.get("profile")],
            title="Where the time goes: capture = Postgres commit -> in Kafka; queue = in Kafka -> the start of "
            "the round that read it; round = that round's start -> visible (medians, then the mean of each part "
            "over the slowest 1%)",
        ),
    }


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value} s"


def render(results: list[dict[str, Any]], started: str, rows: int, variants: list[tuple[str, dict[str, str]]]) -> str:
    from bench.run import machine, versions

    labelled = bool(variants)

    lines = [
        f"Run of {started} on {machine()}; {', '.join(f'{k} {v}' for k, v in versions().items())}. "
        f"A {rows:,}-row table, `local[2]`, hudi-cdc's defaults"
        + (" and the settings below" if labelled else "")
        + " (MERGE_ON_READ: a compaction every 5 delta commits unless the settings say otherwise, `inline` (the default): inside the round; "
        "`async`: on a thread of its own).",
        *(
            f"- {label}: " + (", ".join(f"`{k}={v}`" for k, v in conf.items()) or "no `--hoodie-conf`")
            for label, conf in variants
        ),
        "",
        ("| settings " if labelled else "")
        + "| table | compaction | changes/s | measured window | transactions | commits | p50 | p99 | max | not visible "
        "| load behind |",
        ("| --- " if labelled else "") + "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    names = {"mor": "MERGE_ON_READ", "cow": "COPY_ON_WRITE"}
    for r in results:
        lines.append(
            (f"| {r['settings']} " if labelled else "")
            + f"| {names[r['table_type']]} | {r['compaction'] if r['table_type'] == 'mor' else '-'} | {r['rate']:,} | {r['seconds']:.0f} s | {r['transactions']:,} | {r['commits']} | {r['p50_s']} s | "
            f"{r['p99_s']} s | {r['max_s']} s | {r['not_visible']} | {r['load_behind_s']} s |"
        )
    profiled = [r for r in results if r.get("profile")]
    if profiled:
        lines += [
            "",
            "Where the time goes (bench/freshness.py `profile`): capture = Postgres commit -> the change in Kafka; "
            "queue = in Kafka -> the start of the round that read it; round = that round's start -> visible. "
            "Medians over the measured transactions, then the mean of each part over the slowest 1%; the rounds' "
            "median `duration_s`, without and with an inline compaction.",
            "",
            ("| settings " if labelled else "")
            + "| table | compaction | changes/s | capture p50 | queue p50 | round p50 | slowest 1%: capture + queue + "
            "round | capture p99 | rounds | round median | compaction rounds | their median |",
            ("| --- " if labelled else "")
            + "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
            "| ---: |",
        ]
        for r in profiled:
            p = r["profile"]
            lines.append(
                (f"| {r['settings']} " if labelled else "")
                + f"| {names[r['table_type']]} | {r['compaction'] if r['table_type'] == 'mor' else '-'} | {r['rate']:,} "
                f"| {p['capture_p50_s']} s | {p['queue_p50_s']} s | {p['round_p50_s']} s "
                f"| {p['tail_capture_s']} + {p['tail_queue_s']} + {p['tail_round_s']} s | {p['capture_p99_s']} s "
                f"| {p['rounds']} | {_seconds(p['round_median_s'])} | {p['compactions']} "
                f"| {_seconds(p['compaction_round_median_s'])} |"
            )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
