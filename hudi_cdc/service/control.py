"""Pause, resume, remove and retry tables of a running pipeline, and the runner's status file.

The mechanism is files in the pipeline's state folder, so a shell, a scheduler
or a notebook can use it with no connection to the running process, and a
restarted process sees the same instructions:

- ``control/<table>.paused``: the runner starts no new round of the table (a
  round under way finishes and commits). Deleted by ``resume``.
- ``control/<table>.removed``: as paused, and the table is no longer listed as
  part of the pipeline; its Hudi table and checkpoint stay where they are, so
  ``resume`` continues from the checkpoint.
- ``control/<table>.retry``: a failed table is tried again (the runner deletes
  the file when it has read it). ``resume`` writes it too.
- ``control/<table>.repair``: a repair request (JSON: the source, the table, the
  bound; a password only by reference). The runner runs it as the table's next
  round, the table's one writer, and leaves the outcome in
  ``repairs/<table>.<id>.json``; it deletes the request after that, so a runner
  killed mid-repair runs it again when it restarts (a repair is idempotent).

``status.json`` is the runner's view of every table, rewritten after each
change of state (write to a temporary file, then rename: a reader never sees
half of it).

Runners sharing a pipeline (docs/many-processes.md) each have a state folder of
their own, and a table moves between them with its writer lease. So a table's
pause and remove are also kept beside the table, in its own folder
(``<target_base_path>/.hudi_cdc/control/``, reached as its writer lease is:
local paths by the operating system, other schemes through Spark's Hadoop file
system), where every runner that takes the table reads them:

- ``paused.json``, ``removed.json``: written by ``pause``/``remove`` (who, when,
  through which state folder) beside the state folder's file; deleted by
  ``resume``, which writes ``resumed.json`` (when): a state folder's pause or
  remove older than that resume is stale (given through one runner, resumed
  through another) and the runner holding that folder deletes it.
- ``repaired.json``: the last repair a runner settled on the table (its request,
  when it started, by whom, its outcome). A request left in another runner's
  state folder (that runner was killed under it, and the repair was asked for
  again and done elsewhere) asking for the same repair, and older than that
  one's start, is settled as already done instead of run again.

A runner reads the table's flags when it takes the table's lease, before its
first round under it, and again at every discovery
(``[run] discovery_interval_seconds``) for the tables it holds and those its
own state folder pauses or removes (at once for a resume given through its own
state folder). A round under way finishes either way. A pause made by hand in a
state folder alone (or by ``pause`` without ``base_path``) stays that runner's:
it is not carried to the table's folder, so deleting the file resumes it.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hudi_cdc.errors import ConfigError, HudiCdcError, SinkError
from hudi_cdc.sink.lease import LeaseOwner, table_store

__all__ = [
    "PAUSED",
    "REMOVED",
    "REPAIR",
    "RETRY",
    "TABLE_CONTROL_FOLDER",
    "TableFlags",
    "carry_flag",
    "drop_flag",
    "flag_time",
    "instructions",
    "iso_time",
    "pause",
    "pending_repair",
    "repair_outcome",
    "request_repair",
    "settle_repair",
    "read_status",
    "remove",
    "repair_done_elsewhere",
    "repair_requested_at",
    "record_repair",
    "request_fields",
    "resume",
    "runner_alive",
    "stale_flags",
    "table_flags",
    "take_retry",
    "write_status",
]

PAUSED, REMOVED, RETRY, REPAIR = "paused", "removed", "retry", "repair"
_FLAGS = (PAUSED, REMOVED, RETRY, REPAIR)


def _control(state_dir: str | os.PathLike[str]) -> Path:
    return Path(state_dir) / "control"


def _marker(state_dir: str | os.PathLike[str], table: str, flag: str) -> Path:
    if not table or "/" in table or table.startswith("."):
        raise ConfigError(f"{table!r} is not a table name (schema.table)")
    return _control(state_dir) / f"{table}.{flag}"


def _touch(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch()


def pause(
    state_dir: str | os.PathLike[str],
    table: str,
    *,
    base_path: str | None = None,
    spark: Any | None = None,  # noqa: ANN401 - a SparkSession, for a table folder reached through Hadoop
) -> None:
    """Start no new round of ``table``: in the state folder, and, given the table's ``base_path``, in the table's
    own folder (first: a table folder that cannot be written leaves nothing half done)."""
    _set(state_dir, table, PAUSED, base_path, spark)


def remove(
    state_dir: str | os.PathLike[str],
    table: str,
    *,
    base_path: str | None = None,
    spark: Any | None = None,  # noqa: ANN401
) -> None:
    _set(state_dir, table, REMOVED, base_path, spark)


def _set(state_dir: str | os.PathLike[str], table: str, flag: str, base_path: str | None, spark: Any) -> None:  # noqa: ANN401
    marker = _marker(state_dir, table, flag)
    if base_path is not None:
        carry_flag(base_path, flag, table=table, state_dir=state_dir, spark=spark)
    _touch(marker)


def resume(
    state_dir: str | os.PathLike[str],
    table: str,
    *,
    base_path: str | None = None,
    spark: Any | None = None,  # noqa: ANN401
) -> None:
    """Undo pause and remove, and retry the table if it had failed: in the state folder and, given the table's
    ``base_path``, in the table's own folder (every runner sharing the pipeline then resumes it)."""
    _marker(state_dir, table, RETRY)  # the name checked before anything is written
    # A table no writer, pause or remove ever reached has no folder of hudi-cdc's: none is made (a misspelt name)
    if base_path is not None:
        with _reaching(base_path, "resumed"):
            if table_store(base_path, _TABLE_FOLDER, spark=spark, what="the table's folder").names():
                store = _table_store(base_path, spark)
                store.replace(_RESUMED_FILE, _record(table, state_dir))
                for flag in (PAUSED, REMOVED):
                    store.delete(flag + ".json")
    for flag in (PAUSED, REMOVED):
        _marker(state_dir, table, flag).unlink(missing_ok=True)
    _touch(_marker(state_dir, table, RETRY))


def flag_time(state_dir: str | os.PathLike[str], table: str, flag: str) -> float | None:
    """When the state folder's ``flag`` of ``table`` was set (None: it is not)."""
    try:
        return _marker(state_dir, table, flag).stat().st_mtime
    except FileNotFoundError:
        return None


def drop_flag(state_dir: str | os.PathLike[str], table: str, flag: str) -> None:
    """Delete the state folder's ``flag`` of ``table`` (a runner's stale pause: resumed through another folder)."""
    _marker(state_dir, table, flag).unlink(missing_ok=True)


# --- the table's own folder ----------------------------------------------------------------------------------

_TABLE_FOLDER = ".hudi_cdc"
TABLE_CONTROL_FOLDER = _TABLE_FOLDER + "/control"
_RESUMED_FILE, _REPAIRED_FILE = "resumed.json", "repaired.json"


@dataclass(frozen=True)
class TableFlags:
    """What the table's own folder says: its pause and remove (who set them, when), its last resume."""

    paused: Mapping[str, Any] | None = None
    removed: Mapping[str, Any] | None = None
    resumed_at: float | None = None

    @property
    def flags(self) -> set[str]:
        return {f for f, r in ((PAUSED, self.paused), (REMOVED, self.removed)) if r is not None}

    def describe(self, flag: str) -> str:
        record = self.paused if flag == PAUSED else self.removed
        if not record:
            return f"not {flag}"
        return f"{flag} at {iso_time(float(record.get('at', 0)))} by {record.get('by')}"


def _table_store(base_path: str, spark: Any | None) -> Any:  # noqa: ANN401 - sink.lease's store
    return table_store(base_path, TABLE_CONTROL_FOLDER, spark=spark, what="the table's control flags")


@contextlib.contextmanager
def _reaching(base_path: str, doing: str) -> Iterator[None]:
    """A table folder that does not answer (a Hadoop store's exception through py4j, a local OSError) is a
    transient :class:`SinkError` naming the folder and what to do; hudi-cdc's own errors pass as they are."""
    try:
        yield
    except HudiCdcError:
        raise
    except Exception as exc:  # noqa: BLE001 - py4j's wrapper of Hadoop's exceptions, or an OSError
        from hudi_cdc._jvm import java_message

        raise SinkError(
            f"{base_path}/{TABLE_CONTROL_FOLDER}: the table's control flags could not be {doing}: "
            f"{java_message(exc)}. Check that the store answers and that this user may read and write there "
            "(its credentials: Spark's Hadoop settings, --hoodie-conf), then try again"
        ) from exc


def _record(table: str, state_dir: str | os.PathLike[str] | None) -> bytes:
    """Who sets a flag, and when: this process, and the state folder it was given through."""
    by = LeaseOwner.here().describe()
    value = {
        "at": time.time(),
        "by": by,
        "table": table,
        "state_dir": os.path.abspath(state_dir) if state_dir else None,
    }
    return json.dumps(value, sort_keys=True).encode()


def _read_json(store: Any, name: str) -> dict[str, Any] | None:  # noqa: ANN401
    data = store.read(name)
    if not data:
        return None
    try:
        value = json.loads(data)
    except ValueError:
        return {"at": 0.0, "by": f"? (unreadable {name})"}  # a flag that cannot be read still stops the table
    return value if isinstance(value, dict) else {"at": 0.0, "by": f"? (unreadable {name})"}


def table_flags(base_path: str, *, spark: Any | None = None) -> TableFlags:  # noqa: ANN401
    """The table's pause, remove and last resume, from its own folder (a listing, then a read of each file)."""
    with _reaching(base_path, "read"):
        store = _table_store(base_path, spark)
        names = set(store.names())
        found = {n: _read_json(store, n) for n in (PAUSED + ".json", REMOVED + ".json", _RESUMED_FILE) if n in names}
    resumed = found.get(_RESUMED_FILE)
    return TableFlags(
        paused=found.get(PAUSED + ".json"),
        removed=found.get(REMOVED + ".json"),
        resumed_at=float(resumed.get("at") or 0.0) if resumed else None,
    )


def stale_flags(state_dir: str | os.PathLike[str], table: str, own: set[str], found: TableFlags) -> set[str]:
    """The state folder's pause or remove of ``table`` (in ``own``) that the table's folder (``found``) says was
    resumed since: given through this folder, then resumed through another runner's."""
    stale = set()
    for flag in own & {PAUSED, REMOVED} - found.flags:
        since = flag_time(state_dir, table, flag)
        if found.resumed_at is not None and since is not None and since < found.resumed_at:
            stale.add(flag)
    return stale


def carry_flag(
    base_path: str,
    flag: str,
    *,
    table: str,
    state_dir: str | os.PathLike[str] | None = None,
    spark: Any | None = None,  # noqa: ANN401
) -> None:
    """Set ``flag`` (paused or removed) in the table's own folder."""
    if flag not in (PAUSED, REMOVED):
        raise ConfigError(f"{flag!r} is not a flag of a table's folder (paused, removed)")
    with _reaching(base_path, "written"):
        _table_store(base_path, spark).replace(flag + ".json", _record(table, state_dir))


def instructions(state_dir: str | os.PathLike[str]) -> dict[str, set[str]]:
    """Table name -> the flags set for it."""
    found: dict[str, set[str]] = {}
    folder = _control(state_dir)
    if not folder.is_dir():
        return found
    for path in folder.iterdir():
        table, _, flag = path.name.rpartition(".")
        if flag in _FLAGS and table:
            found.setdefault(table, set()).add(flag)
    return found


def take_retry(state_dir: str | os.PathLike[str], table: str) -> bool:
    """Whether a retry was asked for ``table``; the request is consumed."""
    marker = _marker(state_dir, table, RETRY)
    try:
        marker.unlink()
    except FileNotFoundError:
        return False
    return True


def _write_json(path: Path, value: Mapping[str, Any]) -> None:
    """Write ``value`` to a temporary file, then rename it: a reader never sees half of it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}-", suffix=".tmp")
    with os.fdopen(fd, "w") as out:
        json.dump(value, out, indent=2, sort_keys=True, default=str)
    os.replace(tmp, path)


def request_repair(state_dir: str | os.PathLike[str], table: str, request: Mapping[str, Any]) -> str:
    """Ask the runner to repair ``table`` (``request``: no secret, only a reference); return the request's id."""
    marker = _marker(state_dir, table, REPAIR)
    if marker.exists():
        raise ConfigError(
            f"{table}: a repair is already requested ({marker}): wait for its outcome, or delete the file"
        )
    request_id = uuid.uuid4().hex[:12]
    _write_json(marker, {**request, "id": request_id})
    return request_id


def pending_repair(state_dir: str | os.PathLike[str], table: str) -> dict[str, Any] | None:
    """The table's repair request, if there is one."""
    try:
        return json.loads(_marker(state_dir, table, REPAIR).read_text())
    except FileNotFoundError:
        return None


def settle_repair(state_dir: str | os.PathLike[str], table: str, request_id: str, outcome: Mapping[str, Any]) -> None:
    """Leave a repair's outcome for whoever asked, then take the request away."""
    _write_json(Path(state_dir) / "repairs" / f"{table}.{request_id}.json", outcome)
    _marker(state_dir, table, REPAIR).unlink(missing_ok=True)


def request_fields(request: Mapping[str, Any]) -> dict[str, Any]:
    """What a repair request asks for: the request without its id (two requests asking the same are equal)."""
    return {k: v for k, v in json.loads(json.dumps(request, default=str)).items() if k != "id"}


def repair_requested_at(state_dir: str | os.PathLike[str], table: str) -> float | None:
    """When the table's pending repair request was written (None: there is none)."""
    return flag_time(state_dir, table, REPAIR)


def record_repair(
    base_path: str,
    request: Mapping[str, Any],
    outcome: Mapping[str, Any],
    *,
    started_at: float,
    by: str,
    spark: Any | None = None,  # noqa: ANN401
) -> None:
    """Keep a repair done on the table in its own folder: the same request left in another runner's state folder
    before ``started_at`` is then settled as done (``repair_done_elsewhere``) rather than run again."""
    value = {
        "request": request_fields(request),
        "id": request.get("id"),
        "started_at": started_at,
        "settled_at": time.time(),
        "by": by,
        "outcome": dict(outcome),
    }
    with _reaching(base_path, "written"):
        store = _table_store(base_path, spark)
        store.replace(_REPAIRED_FILE, json.dumps(value, sort_keys=True, default=str).encode())


def repair_done_elsewhere(
    base_path: str,
    request: Mapping[str, Any],
    requested_at: float | None,
    *,
    spark: Any | None = None,  # noqa: ANN401
) -> dict[str, Any] | None:
    """The outcome to settle ``request`` with, when a repair asking the same was done on the table after the
    request was written (by another runner, or an earlier run of this one): that repair's outcome, marked
    ``already_done_by``; None when the request must run."""
    with _reaching(base_path, "read"):
        done = _read_json(_table_store(base_path, spark), _REPAIRED_FILE)
    if not done or requested_at is None:
        return None
    if done.get("request") != request_fields(request) or float(done.get("started_at") or 0.0) < requested_at:
        return None
    earlier = dict(done.get("outcome") or {})
    when = iso_time(float(done["started_at"]))
    described = f"already done by {done.get('by')}, started {when} (repair {done.get('id')}): not run again"
    return {
        **earlier,
        "described": described + (f"; its outcome: {earlier['described']}" if earlier.get("described") else ""),
        "already_done_by": done.get("by"),
        "already_done_in": done.get("id"),
        "already_done_at": when,
    }


def iso_time(seconds: float) -> str:
    """Seconds since the epoch as an ISO time (UTC), as the flags' messages show them."""
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="seconds")


def repair_outcome(state_dir: str | os.PathLike[str], table: str, request_id: str) -> dict[str, Any] | None:
    try:
        return json.loads((Path(state_dir) / "repairs" / f"{table}.{request_id}.json").read_text())
    except FileNotFoundError:
        return None


def write_status(state_dir: str | os.PathLike[str], status: Mapping[str, Any]) -> None:
    folder = Path(state_dir)
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".status-", suffix=".json")
    with os.fdopen(fd, "w") as out:
        json.dump(status, out, indent=2, sort_keys=True, default=str)
    os.replace(tmp, folder / "status.json")


def runner_alive(status: Mapping[str, Any] | None, now: float | None = None) -> bool:
    """Whether the runner that wrote ``status`` (``read_status``) is still running: not ended, and its
    heartbeat (rewritten every quarter of its lease expiry, from any host) younger than that expiry."""
    if not status or status.get("ended"):
        return False
    beat, expiry = status.get("heartbeat_at"), status.get("heartbeat_expiry_s")
    if beat is None or expiry is None:
        return False  # written by a runner from before heartbeats: taken for stopped
    return (time.time() if now is None else now) - float(beat) <= float(expiry)


def listed_topics(table: Mapping[str, Any]) -> list[str]:
    """The source topics a runner listed for one table in ``status.json`` (a merged table's shards, else its
    topic; none when the entry has neither)."""
    shards = table.get("shards")
    if shards:
        return [str(s) for s in shards]
    return [str(table["topic"])] if table.get("topic") else []


def read_status(state_dir: str | os.PathLike[str]) -> dict[str, Any] | None:
    path = Path(state_dir) / "status.json"
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None
