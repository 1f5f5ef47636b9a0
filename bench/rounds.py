"""Small rounds: what a round costs when there is little to do.

    python -m bench.rounds [--table-types cow,mor] [--keys 100000]

For each table type, a topic of the bench workload (``bench/workload.py``) and
a table built from its first ``2 * keys`` events. Then:

1. **Continuous.** One ``hudi-cdc ingest --continuous
   --min-sync-interval-seconds 3 --json`` process (``spark-submit``,
   ``local[2]``). The harness produces batches of 1, 100 and 10,000 messages,
   ``--repeats`` of each, one at a time, each just after a round ended (so
   that it lands whole in the next round, 3 s later at most), and waits for
   the commit that holds it. A round's cost is its own ``duration_s`` (from the table's checkpoint
   to the completed commit); rounds that found nothing new are the idle cost.
2. **One-shot** (a scheduler's run: Airflow, cron). ``hudi-cdc ingest`` in a
   fresh ``spark-submit`` with nothing new, then with one new message,
   ``--repeats`` times each: the wall time, the round inside it, and the
   difference, which is the fixed cost of starting (JVM, Spark, Python, Hudi's
   classes).

Every table is checked against the workload's final state at the end.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from bench import results as result_files
from bench.run import BOOTSTRAP, LAUNCHER, REGISTRY, REPO, Run, hudi_cdc_jars, run_hudi_cdc, spark_submit

SIZES = (1, 100, 10_000)
INTERVAL_S = 3  # rounds start at most this often: a batch sent just after a round lands whole in the next
PARTITIONS = 4


def _json_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.startswith("{")]


class Stream:
    """The workload's messages, produced a slice at a time."""

    def __init__(self, topic: str, keys: int, events: int) -> None:
        from bench.workload import Workload

        self.workload = Workload(topic, events=events, keys=keys, partitions=PARTITIONS, schema_versions=1)
        self._messages: Iterator[tuple[bytes | None, bytes | None, int]] = self.workload.messages(BOOTSTRAP, REGISTRY)
        self.sent = 0

    def send(self, count: int) -> int:
        from hudi_cdc.testing.kafka import produce

        sent = produce(BOOTSTRAP, self.workload.topic, itertools.islice(self._messages, count))
        self.sent += sent
        return sent

    def rest(self) -> int:
        from hudi_cdc.testing.kafka import produce

        sent = produce(BOOTSTRAP, self.workload.topic, self._messages)
        self.sent += sent
        return sent


def _wait_for(
    out: Path, seen: int, messages: int, process: subprocess.Popen[bytes], timeout: float = 600
) -> list[dict]:
    """The rounds after the first ``seen``, up to the one by which ``messages`` more were read."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        rounds = _json_lines(out)[seen:]
        read = 0
        for i, r in enumerate(rounds):
            read += r.get("details", {}).get("messages", 0)
            if r.get("commit_time") and read >= messages:
                return rounds[: i + 1]
        if process.poll() is not None:
            raise RuntimeError(f"the continuous ingest exited ({process.returncode}); see {out}")
        time.sleep(0.1)
    raise RuntimeError(f"{messages} message(s) not committed within {timeout:.0f} s; see {out}")


def measure(table_type: str, keys: int, repeats: int, work: Path) -> dict[str, Any]:
    name = f"rounds_{table_type}_{uuid.uuid4().hex[:6]}"
    topic = f"bench.{name}"
    base = work / "tables" / name
    events = 2 * keys + repeats * sum(SIZES) + 3 * repeats + 100
    stream = Stream(topic, keys, events)
    stream.send(2 * keys)
    out, err = work / f"{name}.jsonl", work / f"{name}.log"
    command = [
        spark_submit(), "--master", "local[2]", "--driver-memory", "4g", "--conf", "spark.ui.enabled=false",
        *hudi_cdc_jars(), str(LAUNCHER), "ingest", "--source", "kafka", "--topic", topic,
        "--bootstrap-servers", BOOTSTRAP, "--schema-registry-url", REGISTRY, "--target-base-path", str(base),
        "--target-table", name, "--table-type", table_type, "--continuous",
        "--min-sync-interval-seconds", str(INTERVAL_S), "--json",
    ]  # fmt: skip
    with open(out, "w") as stdout, open(err, "w") as stderr:
        process = subprocess.Popen(
            command, stdout=stdout, stderr=stderr, env={**os.environ, "PYSPARK_PYTHON": sys.executable}
        )
        continuous: dict[int, list[float]] = {size: [] for size in SIZES}
        idle: list[float] = []
        split = dict.fromkeys(SIZES, 0)
        try:
            seen = len(_wait_for(out, 0, 2 * keys, process, timeout=900))  # the first load
            for size in SIZES:
                for _ in range(repeats):
                    time.sleep(2)  # a few idle rounds between batches
                    ended = len(_json_lines(out))
                    while len(_json_lines(out)) == ended:  # just after a round: the next is INTERVAL_S away
                        time.sleep(0.02)
                    sent = stream.send(size)
                    rounds = _wait_for(out, seen, sent, process)
                    seen += len(rounds)
                    committed = [r for r in rounds if r.get("commit_time")]
                    if len(committed) == 1:
                        continuous[size].append(committed[0]["duration_s"])
                    else:  # the round began while the batch was being produced
                        split[size] += 1
                    idle += [r["duration_s"] for r in rounds if not r.get("details", {}).get("messages")]
        finally:
            process.terminate()
            process.wait(120)
    one_shot: dict[str, list[tuple[float, float]]] = {"nothing new": [], "1 message": []}
    failed: list[str] = []
    for case, count in (("nothing new", 0), ("1 message", 1)):
        for i in range(repeats):
            if count:
                stream.send(count)
            run = run_hudi_cdc(work, topic, table_type, {}, name, extra=())
            assert run.measured is not None
            if run.measured.returncode != 0:  # reported, and the next run must finish the job
                kept = run.measured.log.with_name(f"{name}_failed_{case.replace(' ', '_')}_{i}.log")
                run.measured.log.rename(kept)
                failed.append(f"{case} #{i + 1}: exit {run.measured.returncode}, see {kept}")
                continue
            result = _json_lines(run.measured.log)[-1]
            if bool(result.get("commit_time")) != bool(count):
                raise RuntimeError(f"one-shot run {i} of {case!r}: unexpected result {result}")
            one_shot[case].append((run.measured.seconds, result["duration_s"]))
    stream.rest()
    final = run_hudi_cdc(work, topic, table_type, {}, name)
    assert final.measured is not None and final.measured.returncode == 0, f"see {final.measured and final.measured.log}"
    correct = _check(final, stream)
    return {
        "table_type": table_type, "keys": keys, "rows": len(stream.workload.final), "repeats": repeats,
        "continuous": {str(k): v for k, v in continuous.items()}, "idle": idle,
        "split": {str(k): v for k, v in split.items()},
        "one_shot": one_shot, "failed": failed, "correct": correct,
    }  # fmt: skip


def _check(final: Run, stream: Stream) -> bool:
    import hudi_cdc
    from bench.run import verify

    spark = hudi_cdc.spark_session(app_name="rounds-check", conf={"spark.master": "local[2]"})
    verify(spark, final, stream.workload.expected_rows())
    return bool(final.rows_ok)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--table-types", default="cow,mor")
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--work", type=Path, default=REPO / ".bench" / "rounds")
    parser.add_argument(
        "--results", type=Path, help="write the result file under this folder (default: .bench/results)"
    )
    args = parser.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    started = f"{datetime.now():%Y-%m-%d %H:%M}"
    started_utc = result_files.now_utc()
    results = [measure(t.strip(), args.keys, args.repeats, args.work) for t in args.table_types.split(",")]
    for r in results:
        print(json.dumps(r), flush=True)
    print(render(results, started))
    result_files.write(
        "rounds",
        parameters={
            "keys": args.keys,
            "table_rows": results[0]["rows"] if results else None,
            "repeats": args.repeats,
            "interval_s": INTERVAL_S,
            "partitions": PARTITIONS,
        },  # fmt: skip
        tables=result_tables(results),
        directory=args.results or result_files.LOCAL,
        started_utc=started_utc,
    )
    return 0 if all(r["correct"] for r in results) else 1


ROUND_COLUMNS = [
    result_files.column("table_type", "table"), result_files.column("case"),
    result_files.column("median_s", "median", "s"), result_files.column("min_s", "min", "s"),
    result_files.column("max_s", "max", "s"), result_files.column("round_s", "of which the round (median)", "s"),
    result_files.column("start_stop_s", "starting and stopping (median)", "s"),
]  # fmt: skip
OUTCOME_COLUMNS = [
    result_files.column("table_type", "table"), result_files.column("split", "batches split over two rounds", "#"),
    result_files.column("one_shot_failed", "one-shot runs that failed", "#"),
    result_files.column("correct", "table equals the stream's final state"),
]  # fmt: skip
TYPES = {"cow": "COPY_ON_WRITE", "mor": "MERGE_ON_READ"}


def result_tables(results: list[dict[str, Any]]) -> dict[str, Any]:
    def stats(values: list[float]) -> dict[str, float | None]:
        if not values:
            return {"median_s": None, "min_s": None, "max_s": None}
        return {"median_s": round(statistics.median(values), 2), "min_s": round(min(values), 2),
                "max_s": round(max(values), 2)}  # fmt: skip

    rows = []
    for r in results:
        table_type = TYPES.get(r["table_type"], r["table_type"])
        for size in map(str, SIZES):
            rows.append({"table_type": table_type, "case": f"continuous, {int(size):,} message(s)",
                         **stats(r["continuous"][size])})  # fmt: skip
        rows.append({"table_type": table_type, "case": "continuous, nothing new", **stats(r["idle"])})
        for case in ("nothing new", "1 message"):
            runs = r["one_shot"][case]
            rows.append({
                "table_type": table_type, "case": f"one-shot, {case} (wall)",
                **stats([w for w, _ in runs]),
                "round_s": round(statistics.median([d for _, d in runs]), 2) if runs else None,
                "start_stop_s": round(statistics.median([w - d for w, d in runs]), 2) if runs else None,
            })  # fmt: skip
    outcome = [
        {"table_type": TYPES.get(r["table_type"], r["table_type"]), "split": sum(r["split"].values()),
         "one_shot_failed": len(r["failed"]), "correct": r["correct"]}
        for r in results
    ]  # fmt: skip
    return {"rounds": result_files.table(ROUND_COLUMNS, rows), "outcome": result_files.table(OUTCOME_COLUMNS, outcome)}


def _med(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} s" if values else "-"


def render(results: list[dict[str, Any]], started: str) -> str:
    from bench.run import machine, versions

    types = {"cow": "COPY_ON_WRITE", "mor": "MERGE_ON_READ"}
    head = "| | " + " | ".join(types.get(r["table_type"], r["table_type"]) for r in results) + " |"
    rule = "| --- |" + " ---: |" * len(results)

    def sized(r: dict[str, Any], size: str) -> str:
        took = r["continuous"][size]
        split = f"; {r['split'][size]} split over two rounds" if r["split"][size] else ""
        return f"{_med(took)} ({min(took):.2f}-{max(took):.2f}){split}" if took else f"-{split}"

    rows = [
        f"| continuous, a round of {int(size):,} message(s): median (min-max) | "
        + " | ".join(sized(r, size) for r in results)
        + " |"
        for size in map(str, SIZES)
    ]
    rows.append(
        "| continuous, a round with nothing new (median) | " + " | ".join(_med(r["idle"]) for r in results) + " |"
    )
    for case in ("nothing new", "1 message"):
        rows.append(
            f"| one-shot `hudi-cdc ingest`, {case}: wall (median) | "
            + " | ".join(_med([w for w, _ in r["one_shot"][case]]) for r in results)
            + " |"
        )
        rows.append(
            "| ... of which the round itself / starting and stopping | "
            + " | ".join(
                f"{_med([d for _, d in r['one_shot'][case]])} / {_med([w - d for w, d in r['one_shot'][case]])}"
                for r in results
            )
            + " |"
        )
    rows.append(
        "| one-shot runs that failed (the next run finished the job) | "
        + " | ".join(str(len(r["failed"])) for r in results)
        + " |"
    )
    rows.append(
        "| table equals the stream's final state | "
        + " | ".join("yes" if r["correct"] else "NO" for r in results)
        + " |"
    )
    first = results[0]
    return "\n".join(
        [
            f"Run of {started} on {machine()}; {', '.join(f'{k} {v}' for k, v in versions().items())}. "
            f"A table of {first['rows']:,} rows (the bench workload's first {2 * first['keys']:,} events), "
            f"`local[2]`, 4 GiB driver; {first['repeats']} rounds per size, one run each.",
            "",
            head,
            rule,
            *rows,
            "",
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
