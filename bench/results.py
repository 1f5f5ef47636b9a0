"""A benchmark run's numbers as data: one JSON file per run, ``bench/results/<benchmark>/<UTC time>-<commit>.json``.

Every benchmark entry point ends with :func:`write`. A file holds the benchmark's
name, the run's parameters, its numbers as tables (columns with units, rows of
values) and the environment it ran in (machine, versions, git commit, UTC time).
``bench/report.py`` renders docs/benchmarks*.md's result tables and the plots from
the newest file of each benchmark (of each series the page shows); the files are the history.

Numbers from different machines do not compare: the environment says which
machine a file's numbers belong to.
"""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results"
# Where a run started by hand writes unless told (`--results`): the make targets write the history, bench/results.
LOCAL = REPO / ".bench" / "results"
SCHEMA = 1

REQUIRED = ("schema", "benchmark", "series", "parameters", "tables", "environment")
ENVIRONMENT = ("machine", "versions", "git", "time_utc")
MACHINE = ("cores", "memory_gib", "cpu", "os")
VERSIONS = ("python", "java", "pyspark", "hudi", "hudi_cdc")


def column(key: str, title: str | None = None, unit: str | None = None) -> dict[str, Any]:
    """A table column: the row key, the header shown, the unit of its numbers (None for labels)."""
    return {"key": key, "title": title or key.replace("_", " "), "unit": unit}


def table(columns: Sequence[dict[str, Any]], rows: Iterable[Mapping[str, Any]], title: str | None = None) -> dict:
    keys = [c["key"] for c in columns]
    return {"title": title, "columns": list(columns), "rows": [{k: r.get(k) for k in keys} for r in rows]}


def _run(command: list[str]) -> subprocess.CompletedProcess[str] | None:
    try:
        return subprocess.run(command, capture_output=True, text=True, cwd=REPO, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None


def machine() -> dict[str, Any]:
    cpu = memory = None
    try:
        cpu = next(
            (line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), None
        )
        kib = next(int(line.split()[1]) for line in open("/proc/meminfo") if line.startswith("MemTotal"))
        memory = round(kib / 1024 / 1024)
    except (OSError, StopIteration):
        pass
    # The load when the result is written: the machine may be shared, and the numbers then say less.
    load = [round(x, 2) for x in os.getloadavg()]
    return {"cores": os.cpu_count(), "memory_gib": memory, "cpu": cpu, "os": platform.platform(), "load_average": load}


def java_version() -> str | None:
    done = _run(["java", "-version"])
    found = re.search(r'version "([^"]+)"', done.stderr) if done else None
    return found.group(1) if found else None


def versions() -> dict[str, str | None]:
    from hudi_cdc._version import __version__
    from hudi_cdc.jars import HUDI_VERSION

    try:
        import pyspark

        spark: str | None = pyspark.__version__
    except ImportError:
        spark = None
    return {
        "python": platform.python_version(), "java": java_version(), "pyspark": spark, "hudi": HUDI_VERSION,
        "hudi_cdc": __version__,
    }  # fmt: skip


def git() -> dict[str, Any]:
    head = _run(["git", "rev-parse", "--short=7", "HEAD"])
    status = _run(["git", "status", "--porcelain", "--untracked-files=no"])
    return {
        "commit": head.stdout.strip() if head and head.returncode == 0 else None,
        "dirty": bool(status.stdout.strip()) if status and status.returncode == 0 else None,
    }


def now_utc() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def environment(started_utc: str | None = None) -> dict[str, Any]:
    """Where and when a run ran: ``started_utc`` (default now) as ``YYYY-MM-DDTHH:MM:SSZ``."""
    return {"machine": machine(), "versions": versions(), "git": git(), "time_utc": started_utc or now_utc()}


def file_name(result: Mapping[str, Any]) -> str:
    env = result["environment"]
    stamp = re.sub(r"[-:]", "", env["time_utc"])
    return f"{stamp}-{env['git'].get('commit') or 'unknown'}.json"


def write(
    benchmark: str,
    *,
    parameters: Mapping[str, Any],
    tables: Mapping[str, dict],
    series: str | None = None,
    directory: Path | None = None,
    started_utc: str | None = None,
    notes: str | None = None,
) -> Path:
    """Write one run's result under ``directory/<benchmark>/`` (default bench/results) and return its path.

    ``series`` tells runs apart that do not replace each other (another table type, table size); the
    report shows the newest run of each.
    """
    result: dict[str, Any] = {
        "schema": SCHEMA, "benchmark": benchmark, "series": series or benchmark, "parameters": dict(parameters),
        "tables": dict(tables), "environment": environment(started_utc), "notes": notes, "imported_from": None,
    }  # fmt: skip
    problems = check(result)
    if problems:
        raise ValueError(f"{benchmark}: not a valid result: {'; '.join(problems)}")
    folder = (directory or RESULTS) / benchmark
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / file_name(result)
    n = 2
    while path.exists():
        path = path.with_name(f"{path.stem.rsplit('~', 1)[0]}~{n}.json")
        n += 1
    path.write_text(json.dumps(result, indent=1, default=str) + "\n")
    print(f"results: {path}", flush=True)
    return path


def check(result: Mapping[str, Any]) -> list[str]:
    """What a result lacks, as sentences (nothing: it is whole)."""
    problems = [f"no {key!r}" for key in REQUIRED if key not in result]
    if problems:
        return problems
    env = result["environment"]
    problems += [f"environment has no {key!r}" for key in ENVIRONMENT if key not in env]
    problems += [f"environment.machine has no {key!r}" for key in MACHINE if key not in env.get("machine", {})]
    problems += [f"environment.versions has no {key!r}" for key in VERSIONS if key not in env.get("versions", {})]
    problems += [f"environment.git has no {key!r}" for key in ("commit", "dirty") if key not in env.get("git", {})]
    if not re.fullmatch(r"\d{4}-\d\d-\d\d(T\d\d:\d\d(:\d\d)?Z)?", str(env.get("time_utc"))):
        problems.append(f"environment.time_utc {env.get('time_utc')!r} is not YYYY-MM-DD[THH:MM[:SS]Z]")
    if not result["tables"]:
        problems.append("no tables")
    for name, t in result["tables"].items():
        keys = [c.get("key") for c in t.get("columns", [])]
        if not keys or not all(keys):
            problems.append(f"table {name!r} has no columns, or a column without a key")
        for row in t.get("rows", []):
            if set(row) - set(keys):
                problems.append(f"table {name!r}: a row has values for no column: {sorted(set(row) - set(keys))}")
                break
    return problems


def load(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text())
    data["path"] = path
    return data


def load_all(directory: Path = RESULTS) -> list[dict[str, Any]]:
    return [load(p) for p in sorted(directory.glob("*/*.json"))]
