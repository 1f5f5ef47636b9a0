#!/usr/bin/env python3
"""CPU seconds per test file and kind of process, for a whole `make test` run (.ci/run starts it).

    cpu_by_test.py sample OUT.json MARKS_DIR   # until SIGTERM: every second, every process's CPU
    cpu_by_test.py report OUT.json [TOP]       # the table .ci/run prints

tests/conftest.py writes, into MARKS_DIR (``CI_CPU_MARKS``), each pytest process's pid and the test it is
running. Each second the sampler reads every process's CPU time from /proc and gives what it used since the
last second to the test its pytest ancestor was running then: the pytest process itself ("pytest"), the
Spark JVM it started for its session ("session JVM"), or anything a test started ("started JVMs",
"started Python", "started other"), and what a test started also to its program (``hudi-cdc run``, airflow, ...,
the nearest such ancestor) with the JVMs each program started. CPU outside the tests goes to the stack's
services or to "set-up and other" by command. A process that ends between two samples loses at most its last
second; a profile, not an invoice. Standard library only: it runs before the venv exists.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import time
from collections import defaultdict
from collections.abc import Container
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")
STACK = (
    ("postgres", "postgres"),
    ("mariadbd", "mariadb"),
    ("weed", "SeaweedFS"),
    ("kafka.Kafka", "Kafka"),
    ("ConnectDistributed", "Kafka Connect"),
    ("quarkus", "registry"),
    ("HiveMetaStore", "metastore"),
)


COMMAND = re.compile(r"[a-z][a-z_-]*")  # a command's name: not an option, nor an option's value (a URL, a path)


def _stat(pid: str) -> tuple[str, int, float, str]:
    """A process's command name, parent, CPU seconds so far and start time."""
    text = Path(f"/proc/{pid}/stat").read_text()
    name = text[text.index("(") + 1 : text.rindex(")")]
    fields = text[text.rindex(")") + 2 :].split()
    return name, int(fields[1]), (int(fields[11]) + int(fields[12])) / TICK, fields[19]


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _marks(folder: Path) -> dict[int, str]:
    """pytest pid -> the test file it is running."""
    marks = {}
    for path in folder.glob("*"):
        try:
            pid, nodeid = path.read_text().split("\t", 1)
            marks[int(pid)] = nodeid.split("::", 1)[0]
        except (OSError, ValueError):
            continue
    return marks


def _outside(name: str, cmdline: str) -> str:
    for needle, service in STACK:
        if needle in cmdline or name.startswith(needle):
            return f"stack: {service}"
    return f"set-up and other: {name}"


def _line(pid: int, parents: dict[int, int], ends: Container[int]) -> tuple[list[int], int | None]:
    """``pid`` and its ancestors below the first one in ``ends`` (a pytest process a test marked), and that
    one; None where no ancestor within 40 is."""
    chain = []
    while pid not in ends and pid in parents and len(chain) < 40:
        chain.append(pid)
        pid = parents[pid]
    return chain, pid if pid in ends else None


def _program(chain: list[int], cmdlines: dict[int, str]) -> str:
    """What a test started, by the nearest process of ``chain`` (a process and its ancestors below the pytest
    process, :func:`_line`) that names a program: ``hudi-cdc`` and its command, or the first word of the
    process the test started itself."""
    for ancestor in chain:
        words = cmdlines.get(ancestor, "").split()
        for i, word in enumerate(words[:2]):  # the program or its interpreter's first argument, never a script's text
            if word.rsplit("/", 1)[-1] == "hudi-cdc" or (word == "-m" and words[i + 1 : i + 2] == ["hudi_cdc"]):
                command = next((w for w in words[i + 1 :] if COMMAND.fullmatch(w) and w != "hudi_cdc"), "")
                return f"hudi-cdc {command}".strip()
    words = cmdlines.get(chain[-1], "").split() if chain else []
    return words[0].rsplit("/", 1)[-1] if words else "?"


def _kind(pid: int, name: str, parent: int, pytest_pid: int) -> str:
    if pid == pytest_pid:
        return "pytest"
    if name == "java":
        return "session JVM" if parent == pytest_pid else "started JVMs"
    return "started Python" if name.startswith("python") else "started other"


def sample(out: Path, marks_dir: Path) -> None:
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    seen: dict[int, tuple[str, float, str]] = {}  # pid -> start time, CPU counted, command line
    cpu: dict[tuple[str, str, str], float] = defaultdict(float)  # (test file, kind, program) -> CPU seconds
    jvms: dict[tuple[str, str], int] = defaultdict(int)  # (test file, program) -> JVMs started
    java: set[tuple[int, str]] = set()  # the JVMs living at the last sample: (pid, start time)
    started, first = time.monotonic(), True
    while not stop:
        marks = _marks(marks_dir)
        now = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    now[int(entry)] = _stat(entry)
                except (OSError, ValueError, IndexError):
                    continue
        counted = {}
        for pid, (_, _, used, start) in now.items():
            before = seen.get(pid)
            if before is None or before[0] != start:  # new, or a new process under a reused pid
                before = (start, 0.0, _cmdline(pid))
            counted[pid] = before[1]
            seen[pid] = (start, used, before[2])
        parents = {pid: stat[1] for pid, stat in now.items()}
        cmdlines = {pid: entry[2] for pid, entry in seen.items()}
        for pid, (name, parent, used, start) in now.items():
            a_new_jvm = not first and name == "java" and (pid, start) not in java
            if not a_new_jvm and (first or used <= counted[pid]):  # what ran before the sampler is not the run's
                continue
            chain, test = _line(pid, parents, marks)
            if test is not None:
                kind = _kind(pid, name, parent, test)
                program = "" if kind in ("pytest", "session JVM") else _program(chain, cmdlines)
                key = (marks[test], kind, program)
                if kind == "started JVMs" and a_new_jvm:
                    jvms[(marks[test], program)] += 1
            else:
                key = ("-", _outside(name, seen[pid][2]), "")
            cpu[key] += used - counted[pid]
        seen = {pid: seen[pid] for pid in now}  # the living only: what an ended one used is counted
        java = {(pid, stat[3]) for pid, stat in now.items() if stat[0] == "java"}
        first = False
        time.sleep(1)
    rows = [[f, k, round(s, 1), p] for (f, k, p), s in sorted(cpu.items(), key=lambda kv: -kv[1])]
    started_jvms = [[f, p, n] for (f, p), n in sorted(jvms.items(), key=lambda kv: -kv[1])]
    result = {"wall_s": round(time.monotonic() - started), "cpu": rows, "jvms_started": started_jvms}
    out.write_text(json.dumps(result, indent=0) + "\n")


TEST_KINDS = ("session JVM", "started JVMs", "started Python", "pytest", "started other")


def report(path: Path, top: int = 40) -> str:
    data = json.loads(path.read_text())
    by_kind: dict[str, float] = defaultdict(float)
    by_file: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    by_program: dict[str, float] = defaultdict(float)
    for file, kind, seconds, *program in data["cpu"]:
        by_kind[kind if file != "-" else kind.split(":")[0]] += seconds
        if file != "-":
            by_file[file][kind] += seconds
        if program and program[0]:
            by_program[program[0]] += seconds
    jvms: dict[str, int] = defaultdict(int)
    for _, program, count in data.get("jvms_started", []):
        jvms[program] += count
    total = sum(by_kind.values())
    lines = [f"CPU seconds by kind of process ({total:,.0f} CPU-s in {data['wall_s']:,} s):"]
    lines += [f"  {s:8,.0f}  {k}" for k, s in sorted(by_kind.items(), key=lambda kv: -kv[1])]
    lines.append(f"CPU seconds per test file (the {top} largest; " + ", ".join(TEST_KINDS) + "):")
    ranked = sorted(by_file.items(), key=lambda kv: -sum(kv[1].values()))
    for file, kinds in ranked[:top]:
        split = " ".join(f"{kinds.get(k, 0):6.0f}" for k in TEST_KINDS)
        lines.append(f"  {sum(kinds.values()):7.0f} = {split}  {file}")
    if by_program:
        lines.append("What the tests started, by program (CPU seconds, JVMs started):")
        for program, seconds in sorted(by_program.items(), key=lambda kv: -kv[1])[:top]:
            lines.append(f"  {seconds:7.0f} {jvms.get(program, 0):5d}  {program}")
    return "\n".join(lines)


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "sample":
        sample(Path(sys.argv[2]), Path(sys.argv[3]))
    elif len(sys.argv) >= 3 and sys.argv[1] == "report":
        print(report(Path(sys.argv[2]), *(int(a) for a in sys.argv[3:4])))
    else:
        sys.exit(__doc__)
