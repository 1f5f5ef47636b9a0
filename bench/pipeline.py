"""Many tables in one process: freshness per table under load, and what an idle table costs.

    python -m bench.pipeline --tables 50 --rate 5000 --seconds 120
    python -m bench.pipeline --tables 200 --hot-tables 10 --rate 5000 --seconds 300   # skewed

``--tables`` new Postgres tables in ``inventory``, published by the stack's
Debezium connector, a topic each. ``hudi-cdc run --pipeline --continuous``
(``spark-submit``, ``local[2]``, ``--max-concurrent-tables``) replicates every
topic into a MERGE_ON_READ table. A load thread commits 10 transactions a second,
each inserting ``rate / 10 / tables`` rows into every table (inserts: every change
is its own key, so each commit's stats say exactly which transactions it holds).

Skewed load (``--hot-tables N``, the series ``skewed``): each transaction inserts
into the N hot tables, which share ``--hot-share`` of ``rate``, and into the cold
tables whose turn it is: each cold table gets a transaction every 20 s (the turns
spread evenly over the 20 s), sized so the cold tables carry the rest of ``rate``.

Freshness of transaction *k* in table *X* (only the transactions that inserted
into *X* count): the completion time of the first commit of *X* whose newest
source commit time (``source_ts_ms_max`` in its stats) is at or after *k*'s
start, minus the time *k*'s commit returned to the client. Commit completion
times come from the Hudi timeline's file names. Transactions of the first
``warmup`` seconds are left out. A skewed run also reports the per-table p99 over
the hot and over the cold tables and how many tables meet their goal (p99 <= 10 s
on a hot table, <= 30 s on every table).

Then the load stops, and the runner goes on over idle tables for
``idle_seconds``: the mean duration of a round that found nothing is the cost
of an idle table per round. Last, with the runner stopped, one Spark session
here reads every table (MOR snapshot) and compares its row count, sum(v) and
max(id) with its Postgres table's: ``mismatched_tables``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import results
from bench.procs import group_cpu_s, machine_cpu_s
from bench.run import BOOTSTRAP, LAUNCHER, REGISTRY, REPO, hudi_cdc_jars, spark_submit, variant

TICK_S = 0.1  # the load commits a transaction every tick
COLD_EVERY_S = 20.0  # a cold table's transactions come this far apart: a few a minute
HOT_GOAL_S, ALL_GOAL_S = 10.0, 30.0  # the skewed scenario's p99 goals: on a hot table, on every table
RUN_KEYS = ("consistent_cut_interval_seconds",)  # a variant's settings that belong in the pipeline's [run]


@dataclass(frozen=True)
class Scenario:
    """One run's load and the runner's concurrency."""

    tables: int
    rate: int
    seconds: float
    warmup: float
    idle_seconds: float
    hot_tables: int = 0  # 0: the even load
    hot_share: float = 0.9
    max_concurrent_tables: int = 4

    @property
    def skewed(self) -> bool:
        return self.hot_tables > 0


class Plan:
    """Which tables transaction *seq* inserts into, and how many rows into each.

    Even: every table, ``rate / 10 / tables`` rows. Skewed: every hot table (the first ``hot_tables``) and
    each cold table once every ``COLD_EVERY_S``, at its own offset in that cycle.
    """

    def __init__(self, s: Scenario) -> None:
        self.cold, self.per_cold, self.period = 0, 0, 1
        if not s.skewed:
            self.hot, self.per_hot = s.tables, max(1, s.rate // 10 // s.tables)
            return
        self.hot = s.hot_tables
        self.per_hot = max(1, round(s.rate * s.hot_share * TICK_S / s.hot_tables))
        self.cold = s.tables - s.hot_tables
        self.period = round(COLD_EVERY_S / TICK_S)
        self.per_cold = max(1, round(s.rate * (1 - s.hot_share) * COLD_EVERY_S / self.cold))
        self.turns: dict[int, list[int]] = {}  # seq % period -> the cold tables (indexes) it inserts into
        for i in range(self.cold):
            self.turns.setdefault(i * self.period // self.cold, []).append(self.hot + i)

    def touches(self, seq: int) -> list[tuple[int, int]]:
        """``(table index, rows)`` for transaction ``seq``."""
        hot = [(i, self.per_hot) for i in range(self.hot)]
        return hot + [(i, self.per_cold) for i in self.turns.get(seq % self.period, ())] if self.cold else hot


class Load(threading.Thread):
    """Commits 10 transactions a second, each inserting into the tables its plan names."""

    def __init__(self, dsn: str, tables: list[str], plan: Plan, seconds: float) -> None:
        super().__init__(daemon=True)
        self.dsn, self.tables, self.plan, self.seconds = dsn, tables, plan, seconds
        self.started: dict[int, float] = {}  # seq -> the transaction's start on the server (now()), s
        self.committed: dict[int, float] = {}  # seq -> when its commit returned, s
        self.seqs: dict[str, list[int]] = {t: [] for t in tables}  # table -> the committed seqs that touched it
        self.changes = 0
        self.behind_s = 0.0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self._load()
        except BaseException as exc:  # the measurement must not wait for a load that died
            self.error = exc

    def _load(self) -> None:
        from hudi_cdc.testing.postgres import connect

        with connect(self.dsn) as conn, conn.cursor() as cur:
            start = time.time()
            seq = 0
            while time.time() - start < self.seconds:
                seq += 1
                due = start + seq * TICK_S
                touches = [(self.tables[i], rows) for i, rows in self.plan.touches(seq)]
                with conn.transaction():
                    cur.execute("select extract(epoch from now())")
                    row = cur.fetchone()
                    assert row is not None
                    self.started[seq] = float(row[0])
                    for table, rows in touches:
                        first = seq * rows  # a table gets the same number of rows each time: keys never repeat
                        cur.execute(
                            f"insert into inventory.{table} (id, v) select g, %s from generate_series(%s::bigint, %s::bigint) g",
                            (seq, first, first + rows - 1),
                        )
                self.committed[seq] = time.time()
                for table, rows in touches:
                    self.seqs[table].append(seq)
                    self.changes += rows
                pause = due - time.time()
                if pause > 0:
                    time.sleep(pause)
                else:
                    self.behind_s = max(self.behind_s, -pause)


def _completions(base: Path) -> dict[str, float]:
    """Requested instant -> completion time (s) of the table's completed (delta) commits.

    A table's first commit is a bulk insert, a ``.commit`` on MOR too; compactions are
    ``.commit``s as well, but no round's ``commit_time`` names them.
    """
    timeline = base / ".hoodie" / "timeline"
    out = {}
    for p in timeline.iterdir() if timeline.exists() else ():
        if p.name.endswith((".commit", ".deltacommit")) and "_" in p.name:
            requested, completed = p.name.split(".")[0].split("_")
            moment = datetime.strptime(completed[:17], "%Y%m%d%H%M%S%f").replace(tzinfo=UTC)
            out[requested] = moment.timestamp()
    return out


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, int(len(ordered) * q + 0.999999) - 1)]


def measure(scenario: Scenario, work: Path, hoodie_conf: dict[str, str] | None = None) -> dict[str, Any]:
    from hudi_cdc.testing.postgres import STACK_DSN, connect

    run_id = uuid.uuid4().hex[:6]
    names = [f"bench_many_{run_id}_{i:02d}" for i in range(scenario.tables)]
    _create_tables(names)
    hot = names[: scenario.hot_tables]
    pipeline = _write_pipeline(work, run_id, scenario.max_concurrent_tables, hoodie_conf or {}, hot)
    out_path = work / f"many_{run_id}.jsonl"
    out = open(out_path, "w")  # noqa: SIM115 - the child writes it until terminated
    runner = subprocess.Popen(
        [spark_submit(), "--master", "local[2]", "--driver-memory", "6g", "--conf", "spark.ui.enabled=false",
         *hudi_cdc_jars(), str(LAUNCHER), "run", "--pipeline", str(pipeline), "--continuous", "--json"],
        stdout=out, stderr=open(work / f"many_{run_id}.log", "w"),  # noqa: SIM115
        env={**os.environ, "PYSPARK_PYTHON": sys.executable},
        start_new_session=True,  # spark-submit's Python driver is its JVM's child: stopped with it, below
    )  # fmt: skip
    bases = {n: work / n for n in names}
    started_s = time.time()
    load = Load(STACK_DSN, names, Plan(scenario), scenario.seconds + scenario.warmup)
    try:
        deadline = time.time() + 900
        while not all(_completions(b) for b in bases.values()) and time.time() < deadline:
            time.sleep(1)  # every table has its first commit
        created_s = time.time()
        cpu_from = _cpu(runner.pid)
        lines_at_load = len(out_path.read_text().splitlines())
        load_started_s = time.time()
        load.start()
        load.join()
        loadavg = os.getloadavg()  # the machine is shared: how busy it was while the load ran
        if load.error is not None:
            raise RuntimeError(f"the load failed: {load.error}") from load.error
        # Caught up: every table's newest commit holds the last transaction that touched it.
        newest = {n: load.started[seqs[-1]] * 1000 for n, seqs in load.seqs.items() if seqs}
        deadline = time.time() + 600
        while time.time() < deadline and not _caught_up(out_path, newest):
            time.sleep(2)
        caught_up_s = time.time()
        cpu = {k: v - cpu_from[k] for k, v in _cpu(runner.pid).items()}
        busy_lines = len(out_path.read_text().splitlines())
        busy_cores = cpu["machine"] / max(caught_up_s - load_started_s, 1e-9)
        time.sleep(scenario.idle_seconds)
        expected = _postgres_sums(names)  # the load has stopped: the source no longer changes
    finally:
        os.killpg(runner.pid, signal.SIGTERM)
        runner.wait(120)
        out.close()
        with connect() as conn:  # the topics stay; the tables go
            for name in names:
                conn.execute(f"drop table if exists inventory.{name}")
    lines = out_path.read_text().splitlines()
    rounds = [json.loads(line) for line in lines if line.startswith("{")]
    per_table, missing = _freshness(load, bases, rounds, min(load.committed.values()) + scenario.warmup)
    busy_rounds = [json.loads(line) for line in lines[lines_at_load:busy_lines] if line.startswith("{")]
    # Rounds once every table had caught up: nothing new anywhere.
    idle_lines = lines[busy_lines:]
    idle_rounds = [json.loads(line) for line in idle_lines if line.startswith("{")]  # a round's line, not the log
    idle = [r["duration_s"] for r in idle_rounds if "duration_s" in r]
    spark = _check_session(work)
    mismatched = _mismatched(expected, _hudi_sums(spark, bases))
    measured_from = min(load.committed.values()) + scenario.warmup
    cuts = _cut_summary(spark, work / f"state_{run_id}", load, rounds, measured_from, Plan(scenario))
    result = {
        "tables": scenario.tables, "rate": scenario.rate, "seconds": scenario.seconds, "warmup": scenario.warmup,
        "changes": load.changes,
        "first_commits_s": round(created_s - started_s, 1),
        "caught_up_after_load_s": round(caught_up_s - max(load.committed.values()), 1),
        "not_visible": missing,
        "mismatched_tables": len(mismatched),
        **_summary(per_table),
        **(_skew_summary(scenario, per_table, names[: scenario.hot_tables]) if scenario.skewed else {}),
        "committed_rounds": sum(1 for r in rounds if r.get("commit_time")),
        "idle_rounds": len(idle),
        "idle_round_mean_s": round(statistics.mean(idle), 3) if idle else None,
        "idle_round_p50_s": round(statistics.median(idle), 3) if idle else None,
        "idle_rounds_per_table_s": round(len(idle) / scenario.tables / scenario.idle_seconds, 2),
        **_cpu_per_changes(cpu, load.changes),
        "machine_busy_cores": round(busy_cores, 2),
        **_round_profile(busy_rounds),
        "load_behind_s": round(load.behind_s, 2),
        "load_1m": round(loadavg[0], 2), "load_5m": round(loadavg[1], 2),
        "cuts_expected": float((hoodie_conf or {}).get("consistent_cut_interval_seconds", 0)) > 0,
        **cuts,
    }  # fmt: skip
    print(json.dumps(result), flush=True)
    return result


def _cpu(runner: int) -> dict[str, float]:
    """CPU seconds so far: the runner's (its process group), the whole machine's, and this process's (the load)."""
    return {"runner": group_cpu_s(runner), "machine": machine_cpu_s(), "load": time.process_time()}


def _cpu_per_changes(cpu: dict[str, float], changes: int) -> dict[str, float]:
    """CPU seconds per 1,000 changes from the load's start until caught up: the runner's, and the stack's (the
    machine's less the runner's and the load generator's: Postgres, Kafka, Connect, the registry)."""
    stack = cpu["machine"] - cpu["runner"] - cpu["load"]
    per = 1000 / max(changes, 1)
    return {
        "runner_cpu_s": round(cpu["runner"], 1),
        "stack_cpu_s": round(stack, 1),
        "runner_cpu_per_1k_changes_s": round(cpu["runner"] * per, 3),
        "stack_cpu_per_1k_changes_s": round(stack * per, 3),
    }


def _round_profile(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Where the committed rounds from the load's start until caught up spent their time: seconds summed per
    step (rounds overlap, up to the runner's slots), and how many each writer committed at what median commit."""
    committed = [r for r in rounds if r.get("commit_time")]
    steps: dict[str, float] = {}
    for r in committed:
        for step, seconds in (r.get("steps_s") or {}).items():
            steps[step] = steps.get(step, 0.0) + seconds
    profile: dict[str, Any] = {f"rounds_{step}_s": round(steps.get(step, 0.0), 1) for step in ROUND_STEPS}
    profile["rounds_s"] = round(sum(r.get("duration_s") or 0.0 for r in committed), 1)
    profile["round_events_p50"] = statistics.median(r["events"] for r in committed) if committed else None
    for writer in ("java", "spark"):
        commits = [
            r["steps_s"].get("commit", 0.0) for r in committed if (r.get("details") or {}).get("writer") == writer
        ]
        profile[f"{writer}_rounds"] = len(commits)
        profile[f"{writer}_commit_p50_s"] = round(statistics.median(commits), 2) if commits else None
    return profile


ROUND_STEPS = ("open", "read", "plan", "tombstones", "commit")


def _create_tables(names: list[str]) -> None:
    from hudi_cdc.testing.kafka import end_offsets
    from hudi_cdc.testing.postgres import connect

    with connect() as conn, conn.cursor() as cur:
        for name in names:
            cur.execute(
                f"create table inventory.{name} (id bigint primary key, v bigint not null, at timestamptz default now())"
            )
            cur.execute(f"insert into inventory.{name} (id, v) values (0, 0)")  # the topic exists before the run
    topics = [f"dbserver1.inventory.{n}" for n in names]
    deadline = time.time() + 300
    while len(end_offsets(BOOTSTRAP, topics)) < len(names) and time.time() < deadline:
        time.sleep(2)


def _write_pipeline(
    work: Path, run_id: str, max_concurrent_tables: int, hoodie_conf: dict[str, str], hot: list[str]
) -> Path:
    """The pipeline file; in the skewed scenario each table's goal is its ``max_freshness_seconds``, which the
    runner schedules by (the hot tables' 10 s in a section each). A variant's ``RUN_KEYS`` go to ``[run]``."""
    pipeline = work / f"many_{run_id}.toml"
    run = "".join(f"{k} = {v}\n" for k, v in hoodie_conf.items() if k in RUN_KEYS)
    hoodie_conf = {k: v for k, v in hoodie_conf.items() if k not in RUN_KEYS}
    targets = f"max_freshness_seconds = {ALL_GOAL_S}\n" if hot else ""
    sections = "".join(f'\n[tables."inventory.{n}"]\nmax_freshness_seconds = {HOT_GOAL_S}\n' for n in hot)
    pipeline.write_text(
        f"""
[source]
source = "kafka"
bootstrap_servers = "{BOOTSTRAP}"
schema_registry_url = "{REGISTRY}"
tables = "dbserver1.inventory.bench_many_{run_id}_*"

[defaults]
target_base_path = "{work}/{{table}}"
target_table = "{{table}}"
table_type = "mor"
min_sync_interval_seconds = 0
{targets}{_conf_table(hoodie_conf)}{sections}
[run]
max_concurrent_tables = {max_concurrent_tables}
discovery_interval_seconds = 60
state_dir = "{work}/state_{run_id}"
{run}"""
    )
    return pipeline


def _freshness(
    load: Load, bases: dict[str, Path], rounds: list[dict[str, Any]], measured_from: float
) -> tuple[dict[str, list[float]], int]:
    """Per table, the latencies of the measured transactions that touched it; and how many were never visible."""
    per_table: dict[str, list[float]] = {}
    missing = 0
    for name, base in bases.items():
        done = _completions(base)
        commits = sorted(
            (done[r["commit_time"]], r["source_ts_ms_max"])
            for r in rounds
            if r.get("table") == f"inventory.{name}" and r.get("commit_time") in done and r.get("source_ts_ms_max")
        )
        latencies = []
        for seq in load.seqs[name]:
            committed = load.committed[seq]
            if committed < measured_from:
                continue
            visible = next((at for at, newest in commits if newest >= load.started[seq] * 1000), None)
            if visible is None:
                missing += 1
            else:
                latencies.append(visible - committed)
        per_table[name] = latencies
    return per_table, missing


def _summary(per_table: dict[str, list[float]]) -> dict[str, Any]:
    p99s = sorted(_percentile(v, 0.99) for v in per_table.values() if v)
    everything = [x for v in per_table.values() for x in v]
    return {
        "p50_s": round(statistics.median(everything), 2) if everything else None,
        "p99_s": round(_percentile(everything, 0.99), 2) if everything else None,
        "table_p99_median_s": round(statistics.median(p99s), 2) if p99s else None,
        "table_p99_max_s": round(p99s[-1], 2) if p99s else None,
        "tables_p99_within_15s": sum(1 for p in p99s if p <= 15),
    }


def _skew_summary(scenario: Scenario, per_table: dict[str, list[float]], hot: list[str]) -> dict[str, Any]:
    """The per-table p99 over the hot and over the cold tables, and the tables that meet their goal.

    A table without a measured transaction meets no goal (``tables_without_samples`` counts them).
    """
    p99 = {name: _percentile(v, 0.99) if v else None for name, v in per_table.items()}
    hot_p99s = sorted(p for n, p in p99.items() if n in hot and p is not None)
    cold_p99s = sorted(p for n, p in p99.items() if n not in hot and p is not None)

    def goal(name: str) -> float:
        return HOT_GOAL_S if name in hot else ALL_GOAL_S

    return {
        "hot_tables": scenario.hot_tables,
        "hot_share_pct": round(scenario.hot_share * 100, 1),
        "cold_every_s": COLD_EVERY_S,
        "hot_table_p99_median_s": round(statistics.median(hot_p99s), 2) if hot_p99s else None,
        "hot_table_p99_max_s": round(hot_p99s[-1], 2) if hot_p99s else None,
        "cold_table_p99_median_s": round(statistics.median(cold_p99s), 2) if cold_p99s else None,
        "cold_table_p99_max_s": round(cold_p99s[-1], 2) if cold_p99s else None,
        "hot_tables_within_10s": sum(1 for n in hot if p99[n] is not None and p99[n] <= HOT_GOAL_S),
        "tables_within_30s": sum(1 for p in p99.values() if p is not None and p <= ALL_GOAL_S),
        "tables_meeting_goal": sum(1 for n, p in p99.items() if p is not None and p <= goal(n)),
        "tables_without_samples": sum(1 for p in p99.values() if p is None),
    }


def _postgres_sums(names: list[str]) -> dict[str, tuple[int, int, int]]:
    """Per table: row count, sum(v), max(id) in Postgres."""
    from hudi_cdc.testing.postgres import connect

    out = {}
    with connect() as conn, conn.cursor() as cur:
        for name in names:
            cur.execute(f"select count(*), coalesce(sum(v), 0), coalesce(max(id), -1) from inventory.{name}")
            row = cur.fetchone()
            assert row is not None
            out[name] = (int(row[0]), int(row[1]), int(row[2]))
    return out


def _check_session(work: Path) -> Any:  # noqa: ANN401
    """The one Spark session here that reads the tables back (the runner stopped)."""
    import hudi_cdc

    return hudi_cdc.spark_session(
        app_name="pipeline-check", conf={"spark.master": "local[2]", "spark.driver.memory": "2g"},
        jvm_log=work / "check_jvm.log",
    )  # fmt: skip


def _hudi_sums(spark: Any, bases: dict[str, Path]) -> dict[str, tuple[int, int, int] | None]:  # noqa: ANN401
    """Per table: row count, sum(v), max(id) of its MOR snapshot (None: unreadable)."""
    from pyspark.sql import functions as F

    out: dict[str, tuple[int, int, int] | None] = {}
    for name, base in bases.items():
        try:
            frame = spark.read.format("hudi").option("hoodie.datasource.query.type", "snapshot").load(str(base))
            row = frame.agg(
                F.count(F.lit(1)), F.coalesce(F.sum("v"), F.lit(0)), F.coalesce(F.max("id"), F.lit(-1))
            ).first()
            out[name] = (int(row[0]), int(row[1]), int(row[2]))
        except Exception as exc:  # a table that cannot be read differs from its source
            print(f"{name}: not readable: {exc}", file=sys.stderr, flush=True)
            out[name] = None
    return out


def _cut_summary(
    spark: Any,
    state_dir: Path,
    load: Load,
    rounds: list[dict[str, Any]],
    measured_from: float,
    plan: Plan,  # noqa: ANN401
) -> dict[str, Any]:
    """The consistent cuts the run recorded (nothing without ``cuts.json``): how many cut the measured load
    (their transaction committed after warm-up, before the load stopped), how far apart they were recorded,
    how old each one's transaction was when it was recorded; per measured transaction and table, when the
    first cut holding it was recorded (the freshness of ``read_consistent``); and whether the last cut of the
    load is consistent (:func:`_cut_unlike`)."""
    try:
        cuts = json.loads((state_dir / "cuts.json").read_text())["cuts"]
    except FileNotFoundError:
        return {}
    loaded_until = max(load.committed.values())
    stamps = [datetime.fromisoformat(c["at"]).timestamp() for c in cuts]
    under_load = [
        (t, c) for t, c in zip(stamps, cuts, strict=True)
        if measured_from <= (c.get("source_ts_ms") or t * 1000) / 1000 <= loaded_until
    ]  # fmt: skip
    gaps = [b[0] - a[0] for a, b in zip(under_load, under_load[1:], strict=False)]
    lags = [t - c["source_ts_ms"] / 1000 for t, c in under_load if c.get("source_ts_ms")]
    held = {(r.get("table"), r.get("commit_time")): r.get("source_ts_ms_max") or 0 for r in rounds}
    latencies, never = [], 0
    for name, seqs in load.seqs.items():
        table = f"inventory.{name}"
        in_cut = [(t, held.get((table, c["tables"][table]["commit"]), 0)) for t, c in zip(stamps, cuts, strict=True)
                  if table in c["tables"]]  # fmt: skip
        for seq in seqs:
            if load.committed[seq] < measured_from:
                continue
            at = next((t for t, newest in in_cut if newest >= load.started[seq] * 1000), None)
            if at is None:
                never += 1
            else:
                latencies.append(at - load.committed[seq])
    last = under_load[-1][1] if under_load else None
    return {
        **_cut_costs(cuts, rounds),
        "cuts_under_load": len(under_load), "cuts_recorded": len(cuts),
        "cut_every_mean_s": round(statistics.mean(gaps), 1) if gaps else None,
        "cut_every_p90_s": round(_percentile(gaps, 0.90), 1) if gaps else None,
        "cut_every_max_s": round(max(gaps), 1) if gaps else None,
        "cut_lag_p50_s": round(statistics.median(lags), 1) if lags else None,
        "cut_lag_max_s": round(max(lags), 1) if lags else None,
        "cut_freshness_p50_s": round(statistics.median(latencies), 2) if latencies else None,
        "cut_freshness_p99_s": round(_percentile(latencies, 0.99), 2) if latencies else None,
        "cut_never": never,
        "cut_tables_unlike": _cut_unlike(spark, last, plan) if last is not None and not plan.cold else None,
    }  # fmt: skip


def _cut_costs(cuts: list[dict[str, Any]], rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Where a cut's cost goes: the runner's loop planning it (``plan_s`` of each recorded cut), and the rounds
    bound at a cut's offsets, each of which started ``cut_wait_s`` after the plan and read no further."""
    plans = [float(c["plan_s"]) for c in cuts if "plan_s" in c]
    waits = [float(r["details"]["cut_wait_s"]) for r in rounds if "cut_wait_s" in (r.get("details") or {})]
    return {
        "cut_plan_p50_s": round(statistics.median(plans), 2) if plans else None,
        "cut_plan_max_s": round(max(plans), 2) if plans else None,
        "cut_plan_total_s": round(sum(plans), 1) if plans else None,
        "bound_rounds": len(waits),
        "cut_wait_p50_s": round(statistics.median(waits), 1) if waits else None,
        "cut_wait_p90_s": round(_percentile(waits, 0.90), 1) if waits else None,
    }


def _cut_unlike(spark: Any, cut: dict[str, Any], plan: Plan) -> int:  # noqa: ANN401
    """How many of the cut's tables do not hold exactly transactions 1..S, S the same in every table (the
    even load: each transaction inserts ``plan.per_hot`` rows with v = its number into every table, after a
    first row (0, 0)), each read as of its commit in the cut; an unreadable table counts as unlike."""
    from pyspark.sql import functions as F

    found: dict[str, tuple[int, int, int] | None] = {}
    for name, table in cut["tables"].items():
        try:
            frame = spark.read.format("hudi").option("as.of.instant", table["commit"]).load(table["path"])
            row = frame.agg(
                F.count(F.lit(1)), F.coalesce(F.sum("v"), F.lit(0)), F.coalesce(F.max("v"), F.lit(0))
            ).first()
            found[name] = (int(row[0]), int(row[1]), int(row[2]))
        except Exception as exc:  # a cut that cannot be read is no consistent cut
            print(f"cut {cut['id']}: {name} not readable as of {table['commit']}: {exc}", file=sys.stderr, flush=True)
            found[name] = None
    newest = max((f[2] for f in found.values() if f is not None), default=0)
    per = plan.per_hot
    want = (1 + per * newest, per * newest * (newest + 1) // 2, newest)
    unlike = [n for n, f in found.items() if f != want]
    for name in unlike:
        print(f"cut {cut['id']}: {name} (rows, sum v, max v) {found[name]}, expected {want}", file=sys.stderr)
    print(f"cut {cut['id']} at transaction {cut['transaction']}: {len(found)} tables, each {want}", flush=True)
    return len(unlike)


def _mismatched(expected: dict[str, tuple[int, int, int]], found: dict[str, tuple[int, int, int] | None]) -> list[str]:
    names = [n for n in expected if found.get(n) != expected[n]]
    for name in names:
        print(f"{name}: Hudi (rows, sum v, max id) {found.get(name)}, Postgres {expected[name]}", file=sys.stderr)
    return names


def _conf_table(conf: dict[str, str]) -> str:
    """A variant's settings: hudi-cdc's own (``java_writer_max_rows=0``) in ``[defaults]``, Hudi's below it."""
    ours = "".join(f"{k} = {v if v.isdigit() else repr(v)}\n" for k, v in conf.items() if not k.startswith("hoodie."))
    hoodie = {k: v for k, v in conf.items() if k.startswith("hoodie.")}
    if not hoodie:
        return ours
    return ours + "\n[defaults.hoodie_conf]\n" + "".join(f'"{k}" = "{v}"\n' for k, v in hoodie.items())


def _caught_up(out_path: Path, newest_ms: dict[str, float]) -> bool:
    held: dict[str, int] = {}
    for line in out_path.read_text().splitlines():
        if line.startswith("{"):
            r = json.loads(line)
            if r.get("source_ts_ms_max"):
                held[r["table"]] = max(held.get(r["table"], 0), r["source_ts_ms_max"])
    return all(held.get(f"inventory.{n}", 0) >= ms for n, ms in newest_ms.items())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tables", type=int, default=50)
    parser.add_argument("--rate", type=int, default=5000, help="changes a second over all tables")
    parser.add_argument("--hot-tables", type=int, default=0, help="tables that carry --hot-share of the load (0: even)")
    parser.add_argument("--hot-share", type=float, default=0.9, help="the hot tables' share of --rate")
    parser.add_argument("--max-concurrent-tables", type=int, default=4, help="the runner's [run] setting")
    parser.add_argument("--seconds", type=float, default=120)
    parser.add_argument("--warmup", type=float, default=60)
    parser.add_argument("--idle-seconds", type=float, default=60)
    parser.add_argument("--work", type=Path, default=REPO / ".bench" / "pipeline")
    parser.add_argument(
        "--variant",
        action="append",
        type=variant,
        help="label or label:key=value,...: a run with these settings on every table, Hudi's (hoodie.*) or "
        "hudi-cdc's (repeatable; one run with hudi-cdc's defaults when not given)",
    )
    parser.add_argument("--series", help="the result's series (default: the load's: pipeline or skewed)")
    parser.add_argument(
        "--repeat", type=int, default=1, help="run the variants this many times, taking turns (a shared machine)"
    )
    parser.add_argument(
        "--results", type=Path, help="write the result file under this folder (default: .bench/results)"
    )
    parser.add_argument("--notes", help="kept with the result: how this run differs (reduced, a shared machine)")
    args = parser.parse_args(argv)
    if not 0 <= args.hot_tables < args.tables or not 0 < args.hot_share < 1:
        parser.error("--hot-tables must be 0 or fewer than --tables, and --hot-share between 0 and 1")
    scenario = Scenario(
        args.tables, args.rate, args.seconds, args.warmup, args.idle_seconds, args.hot_tables, args.hot_share,
        args.max_concurrent_tables,
    )  # fmt: skip
    args.work.mkdir(parents=True, exist_ok=True)
    started = f"{datetime.now():%Y-%m-%d %H:%M}"
    started_utc = results.now_utc()
    runs = []
    for turn in range(1, args.repeat + 1):
        for label, conf in args.variant or [("hudi-cdc defaults", {})]:
            runs.append((label, conf, {"turn": turn, **measure(scenario, args.work, conf)}))
            with open(
                args.work / f"runs-{started_utc.replace(':', '')}.jsonl", "a"
            ) as done:  # a run cut short keeps these
                done.write(json.dumps({"settings": label, **runs[-1][2]}) + "\n")
    print(render(runs, started, scenario))
    skew = {"hot_tables": args.hot_tables, "hot_share": args.hot_share, "cold_every_s": COLD_EVERY_S}
    results.write(
        "pipeline",
        series=args.series or ("skewed" if scenario.skewed else None),  # the even load's newest run stays on the page
        parameters={
            "tables": args.tables, "rate": args.rate, "seconds": args.seconds, "warmup": args.warmup,
            "idle_seconds": args.idle_seconds, **(skew if scenario.skewed else {}),
            "max_concurrent_tables": args.max_concurrent_tables, "driver_memory": "6g", "repeat": args.repeat,
            "variants": {label: conf for label, conf, _ in runs},
        },
        tables={"runs": results.table(RUN_COLUMNS, [{"settings": label, **r} for label, _, r in runs])},
        directory=args.results or results.LOCAL,
        started_utc=started_utc,
        notes=args.notes,
    )  # fmt: skip
    return 0 if all(_whole(r) for _, _, r in runs) else 1


def _whole(r: dict[str, Any]) -> bool:
    """Every transaction visible, every table equal to its source; with cuts, every transaction in a cut and
    the last cut under load consistent."""
    cut = not r.get("cuts_expected") or (r.get("cuts_under_load") and r.get("cut_tables_unlike") == 0)
    return not r["not_visible"] and not r["mismatched_tables"] and not r.get("cut_never") and bool(cut)


# The skewed load's columns are None in an even run (the report leaves out a column no row fills).
RUN_COLUMNS = [
    results.column("settings", "Hudi settings"), results.column("turn", "turn (--repeat)"),
    results.column("tables", unit="tables"),
    results.column("hot_tables", "hot tables", "tables"),
    results.column("hot_share_pct", "hot tables' share of the load", "%"),
    results.column("cold_every_s", "a cold table's transactions every", "s"),
    results.column("rate", "load", "changes/s"), results.column("seconds", "measured", "s"),
    results.column("changes", unit="changes"), results.column("load_behind_s", "load behind at most", "s"),
    results.column("p50_s", "freshness p50, all tables", "s"), results.column("p99_s", "freshness p99, all tables", "s"),
    results.column("table_p99_median_s", "per-table p99: median", "s"),
    results.column("table_p99_max_s", "per-table p99: worst", "s"),
    results.column("tables_p99_within_15s", "tables with p99 <= 15 s", "#"),
    results.column("hot_table_p99_median_s", "hot tables' p99: median", "s"),
    results.column("hot_table_p99_max_s", "hot tables' p99: worst", "s"),
    results.column("cold_table_p99_median_s", "cold tables' p99: median", "s"),
    results.column("cold_table_p99_max_s", "cold tables' p99: worst", "s"),
    results.column("hot_tables_within_10s", "hot tables with p99 <= 10 s", "#"),
    results.column("tables_within_30s", "tables with p99 <= 30 s", "#"),
    results.column("tables_meeting_goal", "tables meeting their goal (hot <= 10 s, all <= 30 s)", "#"),
    results.column("tables_without_samples", "tables without a measured transaction", "#"),
    results.column("not_visible", "transactions never visible", "#"),
    results.column("mismatched_tables", "tables unlike their Postgres table", "#"),
    results.column("caught_up_after_load_s", "caught up after the load stopped", "s"),
    results.column("first_commits_s", "first commit of every table", "s"),
    results.column("committed_rounds", "committed rounds", "#"),
    results.column("idle_round_mean_s", "an idle table's round: mean", "s"),
    results.column("idle_round_p50_s", "an idle table's round: median", "s"),
    results.column("idle_rounds", "idle rounds", "#"),
    results.column("idle_rounds_per_table_s", "idle rounds per table a second", "1/s"),
    results.column("cuts_under_load", "consistent cuts at a measured transaction", "#"),
    results.column("cut_every_mean_s", "a cut every: mean", "s"),
    results.column("cut_every_p90_s", "a cut every: p90", "s"), results.column("cut_every_max_s", "a cut every: worst", "s"),
    results.column("cut_lag_p50_s", "a cut's transaction, when recorded: age p50", "s"),
    results.column("cut_lag_max_s", "a cut's transaction, when recorded: oldest", "s"),
    results.column("cut_freshness_p50_s", "commit -> in a recorded cut: p50", "s"),
    results.column("cut_freshness_p99_s", "commit -> in a recorded cut: p99", "s"),
    results.column("cut_never", "transactions in no cut", "#"),
    results.column("cut_plan_p50_s", "a cut's plan on the runner's loop: p50", "s"),
    results.column("cut_plan_max_s", "a cut's plan on the runner's loop: longest", "s"),
    results.column("cut_plan_total_s", "cuts' plans on the runner's loop: all", "s"),
    results.column("bound_rounds", "rounds bound at a cut's offsets", "#"),
    results.column("cut_wait_p50_s", "a bound round's start after its cut's plan: p50", "s"),
    results.column("cut_wait_p90_s", "a bound round's start after its cut's plan: p90", "s"),
    results.column("cut_tables_unlike", "the last of those cuts: tables not at its transaction", "#"),
    results.column("runner_cpu_per_1k_changes_s", "runner's CPU per 1,000 changes", "CPU-s"),
    results.column("stack_cpu_per_1k_changes_s", "stack's CPU per 1,000 changes", "CPU-s"),
    results.column("runner_cpu_s", "runner's CPU, load start to caught up", "CPU-s"),
    results.column("stack_cpu_s", "stack's CPU, load start to caught up", "CPU-s"),
    results.column("machine_busy_cores", "machine's CPU, load start to caught up", "cores"),
    results.column("rounds_s", "committed rounds, load start to caught up: seconds summed", "s"),
    *(results.column(f"rounds_{step}_s", f"... of which {step}", "s") for step in ROUND_STEPS),
    results.column("round_events_p50", "a committed round's changes: median", "#"),
    results.column("java_rounds", "rounds written by Hudi's Java client", "#"),
    results.column("java_commit_p50_s", "their commit: median", "s"),
    results.column("spark_rounds", "rounds written by Spark's datasource", "#"),
    results.column("spark_commit_p50_s", "their commit: median", "s"),
    results.column("load_1m", "load average at the load's end: 1 min"),
    results.column("load_5m", "load average at the load's end: 5 min"),
]  # fmt: skip


def render(runs: list[tuple[str, dict[str, str], dict[str, Any]]], started: str, scenario: Scenario) -> str:
    from bench.run import machine, versions

    first = runs[0][2]

    def row(name: str, cell: Callable[[dict[str, Any]], str]) -> str:
        return f"| {name} | " + " | ".join(cell(r) for _, _, r in runs) + " |"

    def idle(r: dict[str, Any]) -> str:
        every = 1 / r["idle_rounds_per_table_s"] if r["idle_rounds_per_table_s"] else float("nan")
        return f"{r['idle_round_mean_s']} s / {r['idle_round_p50_s']} s ({r['idle_rounds']:,} rounds; each table every {every:.1f} s)"

    settings = [
        f"- {label}: " + (", ".join(f"`{k}={v}`" for k, v in conf.items()) or "no `hoodie_conf`")
        for label, conf, _ in runs
    ]
    skewed = [
        row("hot tables' p99: median / worst", lambda r: f"{r['hot_table_p99_median_s']} s / {r['hot_table_p99_max_s']} s"),
        row("cold tables' p99: median / worst", lambda r: f"{r['cold_table_p99_median_s']} s / {r['cold_table_p99_max_s']} s"),
        row("hot tables with p99 <= 10 s", lambda r: f"{r['hot_tables_within_10s']} of {r['hot_tables']}"),
        row("tables with p99 <= 30 s", lambda r: f"{r['tables_within_30s']} of {r['tables']}"),
        row("tables meeting their goal", lambda r: f"{r['tables_meeting_goal']} of {r['tables']}"),
        row("tables without a measured transaction", lambda r: str(r["tables_without_samples"])),
    ] if scenario.skewed else []  # fmt: skip
    load = ""
    if scenario.skewed:
        load = f"; {scenario.hot_tables} hot tables carry {scenario.hot_share:.0%}, a cold table a transaction every {COLD_EVERY_S:.0f} s"
    return "\n".join(
        [
            f"Run of {started} on {machine()}; {', '.join(f'{k} {v}' for k, v in versions().items())}. "
            f"{first['tables']} MERGE_ON_READ tables, one `hudi-cdc run --continuous` (`local[2]`, 6 GiB driver, "
            f"{scenario.max_concurrent_tables} concurrent tables), the stack on the same 2 cores; one run per column, "
            "one after the other.",
            "",
            *settings,
            "",
            "| | " + " | ".join(label for label, _, _ in runs) + " |",
            "| --- |" + " ---: |" * len(runs),
            row(
                "load",
                lambda r: (
                    f"{r['rate']:,} changes/s over {r['tables']} tables{load}, {r['seconds']:.0f} s measured after "
                    f"{r['warmup']:.0f} s warm-up; {r['changes']:,} changes; load behind by at most {r['load_behind_s']} s"
                ),
            ),
            row("freshness p50, all tables", lambda r: f"{r['p50_s']} s"),
            row("freshness p99, all tables", lambda r: f"{r['p99_s']} s"),
            row("per-table p99: median / worst", lambda r: f"{r['table_p99_median_s']} s / {r['table_p99_max_s']} s"),
            row("tables with p99 <= 15 s", lambda r: f"{r['tables_p99_within_15s']} of {r['tables']}"),
            *skewed,
            row("transactions never visible", lambda r: str(r["not_visible"])),
            row("tables unlike their Postgres table", lambda r: str(r["mismatched_tables"])),
            row("caught up after the load stopped", lambda r: f"{r['caught_up_after_load_s']} s"),
            row("first commit of every table", lambda r: f"{r['first_commits_s']} s"),
            row("committed rounds", lambda r: f"{r['committed_rounds']:,}"),
            row(
                "CPU per 1,000 changes: runner / stack",
                lambda r: f"{r['runner_cpu_per_1k_changes_s']} / {r['stack_cpu_per_1k_changes_s']} CPU-s",
            ),
            row("an idle table's round (nothing new): mean / median", idle),
            "",
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
