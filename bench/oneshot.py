"""Where a one-shot round's wall time goes (a scheduler's run: Airflow, cron), JIT and class-data archive compared.

    python -m bench.oneshot [--keys 50000] [--events 5000] [--repeats 3] [--jdks JAVA_HOME[,SPARK_HOME] ...]
        [--settings NAME ...] [--lake s3a://bucket/folder --s3-endpoint URL]

A COW table of ``--keys`` rows is loaded from generated Debezium files (not timed). Then each
measured run adds one file of ``--events`` events (90% updates, 5% inserts, 5% deletes) and
runs ``hudi-cdc ingest --source files ... --json``, as a scheduler would, in a fresh
process under a probe (``python -m bench.oneshot probe ...``) that only notes the time at
points of the CLI's own path: the interpreter up, the CLI imported, ``spark_session`` called
and returned, and which archive the session got. The round's steps come from the result's
``steps_s`` (``RoundSteps``: ``plan`` is decoding and the per-key pick, one Spark job;
``commit`` the Hudi write); exit is from ``main`` returning to the process ending.

The settings (``HUDI_CDC_JIT`` full or quick; the archive ``hudi-cdc jvm-archive`` builds, with
its default training, on or off) alternate run by run, ``--repeats`` rounds of all of them after
one warm-up run, so that the load of a shared machine falls on each. Every run uses a copy of
the jars, so that jars rebuilt meanwhile do not make the archive stop fitting. ``--jdks`` adds
other JDKs (with another ``SPARK_HOME`` if given), each with JIT quick and its archive (on Java
25 an AOT cache) off and on; what building each archive and the first round did is recorded.
At the end the table is read back and must equal the rows the generated events leave.

``--lake`` runs each setting twice, alternated, against two tables fed the same way from two folders of
events: one on the local disk, one under the lake's URI (an ``s3a://`` folder: the credentials come
from the environment, the endpoint from ``--s3-endpoint``); ``--settings`` keeps the named settings only.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

REPO = Path(__file__).resolve().parent.parent
PROBE_ENV = "HUDI_CDC_BENCH_ONESHOT_PROBE"
SETTINGS = {  # name: environment
    "JIT full, no archive": {"HUDI_CDC_JIT": "full", "HUDI_CDC_JVM_ARCHIVE": "off"},
    "JIT quick, no archive": {"HUDI_CDC_JIT": "quick", "HUDI_CDC_JVM_ARCHIVE": "off"},
    "JIT full, archive": {"HUDI_CDC_JIT": "full"},
    "JIT quick, archive": {"HUDI_CDC_JIT": "quick"},
}
PHASES = (
    "python",
    "imports",
    "cli_to_session",
    "session",
    "open",
    "read",
    "plan",
    "tombstones",
    "commit",
    "other",
    "exit",
)


def probe(argv: list[str]) -> int:
    """The CLI's own main, with the time noted at its phases into the file ``PROBE_ENV`` names."""
    marks: dict[str, Any] = {"python": time.time()}
    from hudi_cdc import jvm_archive, spark
    from hudi_cdc.cli import main

    marks["cli_imported"] = time.time()
    build, archive_for = spark.spark_session, jvm_archive.archive_for

    def archive(*args: Any, **kwargs: Any) -> Any:  # noqa: ANN401
        found = archive_for(*args, **kwargs)
        marks["archive"] = found and str(found)
        return found

    def timed(*args: Any, **kwargs: Any) -> Any:  # noqa: ANN401
        marks["session_called"] = time.time()
        try:
            return build(*args, **kwargs)
        finally:
            marks["session_ready"] = time.time()

    spark.spark_session, jvm_archive.archive_for = timed, archive
    code: Any = 0
    try:
        main(args=argv, prog_name="hudi-cdc")
    except SystemExit as done:
        code = done.code
    marks["main_returned"] = time.time()
    Path(os.environ[PROBE_ENV]).write_text(json.dumps(marks))
    return int(code or 0)


class Events:
    """Generated Debezium files for one table and the rows they leave."""

    def __init__(self, folder: Path, keys: int, seed: int = 7) -> None:
        from hudi_cdc.testing import envelope_schema

        self.folder, self.keys, self.random = folder, keys, random.Random(seed)
        self.schema = envelope_schema(
            "customers", [("id", "long"), ("name", ["null", "string"]), ("notes", ["null", "string"])]
        )
        self.rows: dict[int, tuple[str, str]] = {}
        self.lsn, self.files, self.next_key = 100, 0, keys

    def load(self) -> None:
        self._write([("c", k) for k in range(self.keys)])

    def batch(self, events: int) -> None:
        live = list(self.rows)
        gone = self.random.sample(live, events * 5 // 100)
        kept = sorted(set(live) - set(gone))  # a deleted key is not updated in the same batch
        picks = [("d", k) for k in gone] + [("u", self.random.choice(kept)) for _ in range(events * 90 // 100)]
        fresh = events - len(picks)
        picks += [("c", self.next_key + i) for i in range(fresh)]
        self.next_key += fresh
        self.random.shuffle(picks)  # the file's order is the source's (LSN) order
        self._write(picks)

    def _write(self, picks: list[tuple[str, int]]) -> None:
        from hudi_cdc.testing import pg_event, write_events

        events = []
        for op, key in picks:
            self.lsn += 1
            if op == "d":
                events.append(pg_event("d", lsn=self.lsn, before={"id": key, "name": None, "notes": None}))
                self.rows.pop(key, None)
                continue
            row = (f"n{key}-{self.lsn}", "x" * self.random.randint(20, 200))
            events.append(pg_event(op, lsn=self.lsn, after={"id": key, "name": row[0], "notes": row[1]}))
            self.rows[key] = row
        self.files += 1
        write_events(self.folder / f"{self.files:05d}.avro", self.schema, events)


def ingest_args(events: Events, base: Path | str, s3_endpoint: str | None = None) -> list[str]:
    return [
        "ingest", "--source", "files", "--source-path", str(events.folder), "--target-base-path", str(base),
        "--target-table", "oneshot", "--record-key-fields", "id", "--table-type", "cow", "--json",
        *(["--s3-endpoint", s3_endpoint] if s3_endpoint and str(base).startswith("s3a://") else []),
    ]  # fmt: skip


def one_run(args: list[str], env: dict[str, str], work: Path) -> dict[str, Any]:
    """One round in a fresh process under the probe: the seconds of each phase, or the error it ended with."""
    marks_file = work / "probe.json"
    marks_file.unlink(missing_ok=True)
    command = [sys.executable, "-m", "bench.oneshot", "probe", *args]
    started = time.time()
    done = subprocess.run(
        command, capture_output=True, text=True, cwd=REPO, env={**os.environ, **env, PROBE_ENV: str(marks_file)}
    )
    ended = time.time()
    time.sleep(2)  # the JVM the CLI started ends after it: not into the next run
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines or not marks_file.exists():
        return {"error": failure(done.stderr) or f"exit {done.returncode}", "wall": ended - started}
    marks, result = json.loads(marks_file.read_text()), lines[-1]
    steps = result.get("steps_s", {})
    seconds = {
        "python": marks["python"] - started,
        "imports": marks["cli_imported"] - marks["python"],
        "cli_to_session": marks["session_called"] - marks["cli_imported"],
        "session": marks["session_ready"] - marks["session_called"],
        **{step: steps.get(step, 0.0) for step in ("open", "read", "plan", "tombstones", "commit")},
        "exit": ended - marks["main_returned"],
        "wall": ended - started,
    }
    inside = marks["main_returned"] - marks["session_ready"]
    seconds["other"] = inside - sum(steps.values())  # building the source, printing, quarantine if any
    seconds["round"] = result.get("duration_s")
    seconds["events"] = result.get("events")
    seconds["archive"] = marks.get("archive")
    return seconds


def failure(stderr: str) -> str:
    """The CLI's last line, and the JVM's exception and where it was thrown from the log that line names."""
    last = (stderr.strip().splitlines() or [""])[-1]
    named = re.search(r"\(Spark's log: ([^)]+)\)", last)
    if named is None or not Path(named.group(1)).exists():
        return last
    lines = Path(named.group(1)).read_text(errors="replace").splitlines()
    thrown = next((i for i, line in enumerate(lines) if re.search(r"(Exception|Error)\b.*:", line)), None)
    if thrown is None:
        return last
    return " ".join([last, "|", *(line.strip() for line in lines[thrown : thrown + 3])])


def private_jars(work: Path) -> None:
    """A copy of the jars for every run: an archive fits only the jars it was built with (their mtimes
    too), and a checkout's jars rebuilt by other work meanwhile would make the archive's runs go without."""
    import shutil

    from hudi_cdc.jars import resolve_jars

    source = resolve_jars()
    if source.kind == "folder":
        (work / "jars").mkdir()
        for jar in source.jars:
            shutil.copy2(jar, work / "jars")
        os.environ["HUDI_CDC_JARS_DIR"] = str(work / "jars")
    os.environ["HUDI_CDC_CACHE_DIR"] = str(work / "cache")


def build_archive(env: dict[str, str]) -> str:
    """``hudi-cdc jvm-archive`` (its default training) for the JDK and Spark of ``env``: the archive's
    path, or why it could not be built."""
    hudi_cdc = str(Path(sys.executable).parent / "hudi-cdc")
    done = subprocess.run([hudi_cdc, "jvm-archive"], capture_output=True, text=True, env={**os.environ, **env})
    if done.returncode != 0:
        return "error: " + (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[0][:600]
    return str(json.loads(done.stdout.strip().splitlines()[-1])["archive"])


def jdk_settings(entry: str) -> tuple[str, dict[str, str], dict[str, dict[str, str]]]:
    """``JAVA_HOME[,SPARK_HOME]``: its label, its environment and its two settings (JIT quick, archive off and on)."""
    home, _, spark_home = entry.partition(",")
    env = {"JAVA_HOME": home, **({"SPARK_HOME": spark_home} if spark_home else {})}
    label = java_of(home) + (f" (SPARK_HOME {spark_home})" if spark_home else "")
    return (
        label,
        env,
        {
            f"{label}, JIT quick, no archive": {**env, "HUDI_CDC_JIT": "quick", "HUDI_CDC_JVM_ARCHIVE": "off"},
            f"{label}, JIT quick, archive": {**env, "HUDI_CDC_JIT": "quick"},
        },
    )


def check_table(base: Path | str, rows: dict[int, tuple[str, str]], s3_endpoint: str | None = None) -> bool:
    from hudi_cdc.sink.object_store import bucket_settings, buckets
    from hudi_cdc.spark import spark_session

    conf = {"spark.master": "local[2]"}
    for bucket in buckets([str(base)]):
        settings = bucket_settings(bucket, endpoint=s3_endpoint, path_style=True)
        conf.update({f"spark.hadoop.{k}": v for k, v in settings.items()})
    spark = spark_session(app_name="hudi-cdc-bench-oneshot-check", conf=conf)
    got = {
        r["id"]: (r["name"], r["notes"])
        for r in spark.read.format("hudi").load(str(base)).select("id", "name", "notes").collect()
    }
    spark.stop()
    return got == rows


def java_of(home: str | None) -> str:
    java = Path(home) / "bin" / "java" if home else Path("java")
    done = subprocess.run([str(java), "-version"], capture_output=True, text=True)
    return (done.stderr.splitlines() or ["?"])[0]


def lakes(args: argparse.Namespace, work: Path) -> dict[str, str]:
    """Where the tables are, by label: the local disk alone, or with ``--lake`` the local disk and the lake."""
    if not args.lake:
        return {"": str(work / "table")}
    return {"local disk": str(work / "table"), urlsplit(args.lake).scheme: f"{args.lake.rstrip('/')}/oneshot"}


def measure(
    args: argparse.Namespace, work: Path
) -> tuple[dict[str, list[dict]], dict[str, str], dict[str, tuple[Events, str]]]:
    """Every setting's runs, alternated; and what each JDK of ``--jdks`` did (its archive, its first round)."""
    tables = {
        where: (Events(work / ("events" + (f"-{i}" if i else "")), args.keys), base)
        for i, (where, base) in enumerate(lakes(args, work).items())
    }
    for events, _ in tables.values():
        events.load()
    chosen = {name: dict(env) for name, env in SETTINGS.items() if not args.settings or name in args.settings}
    if not chosen:
        raise SystemExit(f"--settings: none of {args.settings} is one of {list(SETTINGS)}")
    outcomes = {}
    if any(env.get("HUDI_CDC_JVM_ARCHIVE") != "off" for env in chosen.values()):
        outcomes["Java 17 (JAVA_HOME)"] = build_archive({})
    for entry in args.jdks:
        label, env, more = jdk_settings(entry)
        outcomes[label] = build_archive(env)
        chosen.update(more)
    settings = {
        (f"{name}, {where}" if where else name): (env, where) for name, env in chosen.items() for where in tables
    }
    for where, (events, base) in tables.items():  # the load, and warm-up
        first = one_run(ingest_args(events, base, args.s3_endpoint), SETTINGS["JIT full, no archive"], work)
        if "error" in first:
            raise SystemExit(f"the first load failed ({where or base}): {first['error']}")
    runs: dict[str, list[dict]] = {name: [] for name in settings}
    failed: dict[str, str] = {}
    for repeat in range(args.repeats):
        for name, (env, where) in settings.items():
            if name in failed and not runs[name]:
                continue  # its first round failed: this JDK does not run
            events, base = tables[where]
            events.batch(args.events)
            took = one_run(ingest_args(events, base, args.s3_endpoint), env, work)
            if "error" in took:  # recorded; a later run also takes this batch's events
                failed.setdefault(name, took["error"])
                print(f"  {name}: failed: {took['error']}", flush=True)
                continue
            runs[name].append(took)
            print(f"  {repeat + 1}: {name}: {took['wall']:.2f} s wall, session {took['session']:.2f} s, "
                  f"plan {took['plan']:.2f} s, commit {took['commit']:.2f} s", flush=True)  # fmt: skip
    for events, base in tables.values():  # what a failed run left
        if "error" in one_run(ingest_args(events, base, args.s3_endpoint), SETTINGS["JIT full, no archive"], work):
            raise SystemExit(f"the last round failed ({base})")
    outcomes.update({name: f"a round failed: {error}" for name, error in failed.items()})
    return {n: r for n, r in runs.items() if r}, outcomes, tables


def tables(runs: dict[str, list[dict]], outcomes: dict[str, str]) -> dict[str, dict]:
    from bench import results

    phases = [results.column(f"{p}_s", p.replace("_", " "), "s") for p in PHASES]
    summary = [
        {"setting": name, "runs": len(r), "wall_s": round(statistics.median(x["wall"] for x in r), 2),
         "archive_runs": sum(bool(x["archive"]) for x in r), "min_s": round(min(x["wall"] for x in r), 2), "max_s": round(max(x["wall"] for x in r), 2),
         **{f"{p}_s": round(statistics.median(x[p] for x in r), 2) for p in PHASES}}
        for name, r in runs.items()
    ]  # fmt: skip
    each = [
        {"setting": name, "run": i + 1, "wall_s": round(x["wall"], 3), **{f"{p}_s": round(x[p], 3) for p in PHASES}}
        for name, r in runs.items() for i, x in enumerate(r)
    ]  # fmt: skip
    wall = [results.column("wall_s", "wall (median)", "s"), results.column("min_s", "fastest", "s"),
            results.column("max_s", "slowest", "s")]  # fmt: skip
    out = {
        "oneshot": results.table(
            [
                results.column("setting"),
                results.column("runs"),
                results.column("archive_runs", "runs that mapped the archive"),
                *wall,
                *phases,
            ],
            summary,
        ),
        "runs": results.table([results.column("setting"), results.column("run"), wall[0], *phases], each),
    }
    if outcomes:
        rows = [{"what": name, "outcome": outcome} for name, outcome in outcomes.items()]
        out["outcomes"] = results.table(
            [results.column("what"), results.column("outcome", "archive built, or why not")], rows
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=100_000, help="rows of the table")
    parser.add_argument("--events", type=int, default=20_000, help="events of each measured round")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each setting")
    parser.add_argument(
        "--jdks",
        nargs="*",
        default=[],
        help="other JDKs to try: JAVA_HOME[,SPARK_HOME] each (JIT quick, archive off/on)",
    )
    parser.add_argument("--settings", nargs="*", default=[], help=f"only these of {list(SETTINGS)}")
    parser.add_argument("--lake", help="also a table under this URI (s3a://bucket/folder), runs alternated")
    parser.add_argument("--s3-endpoint", help="the lake's S3 endpoint, when not AWS")
    parser.add_argument("--work", type=Path, default=REPO / ".bench" / "oneshot")
    parser.add_argument("--name", default="oneshot", help="the result's name (object-storage-oneshot: with --lake)")
    parser.add_argument("--notes", help="what the result file should say about the run (the machine's load)")
    parser.add_argument(
        "--results", type=Path, help="write the result file under this folder (default: .bench/results)"
    )
    args = parser.parse_args()

    import shutil

    from bench import results

    started_utc = results.now_utc()
    for gone in ("events", "events-1", "table", "jars"):  # the archives in cache/ are kept: they fit the same jars
        shutil.rmtree(args.work / gone, ignore_errors=True)
    args.work.mkdir(parents=True, exist_ok=True)
    private_jars(args.work)
    runs, outcomes, fed = measure(args, args.work)
    same = all(check_table(base, events.rows, args.s3_endpoint) for events, base in fed.values())
    print(f"the table equals the rows the events leave: {same}", flush=True)
    results.write(
        args.name,
        parameters={"keys": args.keys, "events": args.events, "repeats": args.repeats, "table_type": "cow",
                    "source": "files", "jdks": args.jdks, "table_equal": same,
                    **({"settings": args.settings} if args.settings else {}),
                    **({"lake": args.lake, "s3_endpoint": args.s3_endpoint} if args.lake else {})},
        tables=tables(runs, outcomes),
        directory=args.results or results.LOCAL,
        started_utc=started_utc,
        notes=args.notes,
    )  # fmt: skip
    if not same:
        raise SystemExit("the table does not hold the rows the events leave")


if __name__ == "__main__":
    if sys.argv[1:2] == ["probe"]:
        sys.exit(probe(sys.argv[2:]))
    main()
