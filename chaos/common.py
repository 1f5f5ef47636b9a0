"""What the chaos runs share: the stack's addresses, the random workload, the checkpoint in a timeline, the rows.

``chaos/run.py`` (one ingest per table type, killed; the stack restarted) and ``chaos/runners.py`` (two
runners sharing a pipeline, killed by turns) both drive this workload and read the timeline with no JVM.
"""

from __future__ import annotations

import os
import random
import re
import string
import subprocess
import threading
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

from hudi_cdc.sink.options import CHECKPOINT_KEY
from hudi_cdc.testing.postgres import connect

__all__ = [
    "BOOTSTRAP",
    "PASSWORD_ENV",
    "REGISTRY",
    "REPO",
    "SOURCE_URL",
    "Workload",
    "append_rows",
    "exit_report",
    "git_commit",
    "latest_checkpoint",
]

REPO = Path(__file__).resolve().parent.parent
BOOTSTRAP = "127.0.0.1:59092"
REGISTRY = "http://127.0.0.1:58080/apis/ccompat/v7"
SOURCE_URL = "postgresql://debezium@127.0.0.1:55432/inventory"
PASSWORD_ENV = "HUDI_CDC_CHAOS_PASSWORD"  # the stack's password, by reference: a URL or a request never holds it
_LETTERS = string.ascii_letters + string.digits


# --- the workload ------------------------------------------------------------------------------------


class Workload(threading.Thread):
    """Random transactions on one table until stopped; the only writer of that table."""

    def __init__(self, table: str, seed: int, pause_s: float) -> None:
        super().__init__(daemon=True, name="workload")
        self.table = table
        self.rng = random.Random(seed)
        self.pause_s = pause_s
        self.changes = 0
        self.transactions = 0
        self.error: BaseException | None = None
        self._halt = threading.Event()
        self._live: list[int] = []
        self._deleted: list[int] = []
        self._next_id = 1

    def create(self) -> None:
        with connect() as conn:
            conn.execute(
                f"create table inventory.{self.table} (id bigint primary key, version int not null, name text not null,"
                " amount numeric(12,2), body text, updated_at timestamptz not null default now());"
                f" alter table inventory.{self.table} alter column body set storage external"
            )

    def stop(self) -> None:
        self._halt.set()
        self.join(60)
        if self.error is not None:
            raise RuntimeError(f"the workload failed: {self.error}") from self.error

    def _body(self) -> str | None:
        roll = self.rng.random()
        if roll < 0.6:  # out of line (TOAST): updates that leave it alone carry Debezium's placeholder
            return "".join(self.rng.choices(_LETTERS, k=self.rng.randint(3_000, 9_000)))
        return None if roll < 0.8 else f"short {self.rng.random():.6f}"

    def _take(self, pool: list[int]) -> int:
        i = self.rng.randrange(len(pool))
        pool[i], pool[-1] = pool[-1], pool[i]
        return pool.pop()

    def _one(self, cur: Any) -> None:  # noqa: ANN401
        t, roll = f"inventory.{self.table}", self.rng.random()
        amount = Decimal(self.rng.randint(-(10**7), 10**7)) / 100
        if roll < 0.40 or len(self._live) < 20:
            key, self._next_id = self._next_id, self._next_id + 1
            cur.execute(f"insert into {t} (id, version, name, amount, body) values (%s, 1, %s, %s, %s)",
                        (key, f"n{key}", amount, self._body()))  # fmt: skip
            self._live.append(key)
        elif roll < 0.65:
            key = self.rng.choice(self._live)
            cur.execute(f"update {t} set version = version + 1, name = %s, amount = %s, updated_at = now()"
                        " where id = %s", (f"u{self.changes}", amount, key))  # fmt: skip
        elif roll < 0.73:
            key = self.rng.choice(self._live)
            cur.execute(f"update {t} set body = %s, version = version + 1 where id = %s", (self._body(), key))
        elif roll < 0.85:
            key = self._take(self._live)
            cur.execute(f"delete from {t} where id = %s", (key,))
            self._deleted.append(key)
        elif roll < 0.93 and self._deleted:
            key = self._take(self._deleted)  # a key deleted before comes back
            cur.execute(f"insert into {t} (id, version, name, amount, body) values (%s, 1, %s, %s, %s)",
                        (key, f"again{key}", amount, self._body()))  # fmt: skip
            self._live.append(key)
        else:
            key, new = self._take(self._live), self._next_id  # a primary-key change: delete + create in Debezium
            self._next_id += 1
            cur.execute(f"update {t} set id = %s, version = version + 1 where id = %s", (new, key))
            self._deleted.append(key)
            self._live.append(new)

    def transaction(self, conn: Any) -> None:  # noqa: ANN401
        """One transaction of 1-6 random changes; if it rolls back, so does our picture of the table."""
        live, deleted, next_id = list(self._live), list(self._deleted), self._next_id
        try:
            with conn.transaction(), conn.cursor() as cur:
                for _ in range(self.rng.randint(1, 6)):
                    self._one(cur)
                    self.changes += 1
            self.transactions += 1
        except Exception:
            self._live, self._deleted, self._next_id = live, deleted, next_id
            raise

    def run(self) -> None:
        try:
            with connect() as conn:
                while not self._halt.is_set():
                    self.transaction(conn)
                    time.sleep(self.pause_s)
        except BaseException as exc:  # noqa: BLE001 - reported by stop()
            self.error = exc


# --- the timeline, read with no JVM --------------------------------------------------------------


def latest_checkpoint(timeline: Path) -> str | None:
    """The checkpoint in the newest completed commit that has one.

    Read from the timeline's files (Hudi 1.x writes commit metadata as Avro data
    files) rather than through Spark: the harness runs no JVM while it watches.
    """
    import fastavro

    if not timeline.is_dir():
        return None
    done = sorted(n for n in os.listdir(timeline) if n.endswith((".commit", ".deltacommit")))
    for name in reversed(done):
        with open(timeline / name, "rb") as f:
            meta = next(iter(fastavro.reader(f)), None)
        checkpoint = ((meta or {}).get("extraMetadata") or {}).get(CHECKPOINT_KEY)
        if checkpoint:
            return str(checkpoint)
    return None


# --- the results ---------------------------------------------------------------------------------


def git_commit() -> str:
    try:
        out = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
        return out.stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def append_rows(path: Path, rows: list[str], marker: str) -> None:
    """Add rows at the end of a results table, before its end marker (the table is the last thing in its section)."""
    text = path.read_text()
    path.write_text(text.replace(marker, "\n".join(rows) + "\n" + marker))


# --- how a process that ended by itself ended -------------------------------------------------------


# The line a hudi-cdc command prints when it fails (hudi_cdc/cli/wrappers.py): "<prefix>: <kind>: <message>",
# the prefix "hudi-cdc" (ingest) or "hudi-cdc <command>" ("hudi-cdc run: error: ..."); click's usage error
# ("Error: ...") for a bad command line.
_ERROR_LINE = re.compile(r"^(hudi-cdc(?: [a-z][a-z -]*)?: |Error: )")
# What a JVM says before it goes: HotSpot's warnings and crash report, Spark's handler of a fatal error.
_JVM_LAST_WORDS = (
    "CodeCache is full",
    "VirtualMachineError",
    "OutOfMemoryError",
    "SparkUncaughtExceptionHandler",
    "A fatal error has been detected",
    "hs_err_pid",
)
_LOG_TIME = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} ")  # Python logging's asctime
_SECRET_SETTING = re.compile(r"(?i)\b(password|passwd|secret|token|sasl\.jaas\.config)(\s*[=:]\s*)\S+")


def exit_report(log: Path, code: int | None, *, lines: int = 30, secret_envs: tuple[str, ...] = (PASSWORD_ENV,)) -> str:
    """How a hudi-cdc process that ended by itself ended, from its log (its stdout and stderr): the exit code,
    its error line, the JVM's first words of a fatal error, and the log's last ``lines`` lines (a line repeated
    is shown once, with its count). Secrets are masked: the values of ``secret_envs`` and any
    ``password=...``-like setting."""
    try:
        text = log.read_text(errors="replace")
    except OSError as exc:
        return f"exit {code}: (its log {log} could not be read: {exc})"
    secrets = [v for v in (os.environ.get(e) for e in secret_envs) if v]

    def clean(line: str) -> str:
        for value in secrets:
            line = line.replace(value, "***")
        line = _SECRET_SETTING.sub(r"\1\2***", line)
        return line if len(line) <= 300 else line[:300] + " [...]"

    all_lines = text.splitlines()
    errors = [ln for ln in all_lines if _ERROR_LINE.match(ln)]
    report = [f"exit {code}: {clean(errors[-1]) if errors else '(no error line)'} (log: {log})"]
    jvm = [ln for ln in all_lines if any(w in ln for w in _JVM_LAST_WORDS)]
    seen: set[str] = set()
    for line in jvm:
        key = line.split("]")[-1].strip()
        if key not in seen and len(seen) < 6:
            seen.add(key)
            report.append(f"  the JVM: {clean(line.strip())}")
    tail: list[list[Any]] = []  # [line, times]: a line repeated (its time aside) is shown once
    for line in all_lines:
        if tail and _LOG_TIME.sub("", tail[-1][0]) == _LOG_TIME.sub("", line):
            tail[-1][1] += 1
        else:
            tail.append([line, 1])
    report.append(f"  its last {lines} lines:" if len(tail) > lines else "  its log:")
    for line, times in tail[-lines:]:
        report.append(f"    {clean(line)}" + (f"  [x{times}]" if times > 1 else ""))
    return "\n".join(report)
