"""``hudi-cdc status``: where every table of a pipeline stands, read from the tables and the source.

It needs no running process. Per table: the runner's state if a runner has
written one (with control flags applied: paused, removed), the last commit
and its time, the checkpoint, how far the table is behind its source (Kafka
messages past the checkpoint, or files not taken yet) and in seconds (0 when
caught up, else now minus the newest source commit time the table holds),
and the counts of its recent commits.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from hudi_cdc.errors import HudiCdcError
from hudi_cdc.service import control
from hudi_cdc.service.backlog import RECENT_COMMITS, Position, measure, position, stats
from hudi_cdc.service.spec import PipelineSpec, TableRef
from hudi_cdc.sink import options as opt
from hudi_cdc.sink.catalog import catalog_status
from hudi_cdc.sink.catalog import describe as describe_catalog

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from hudi_cdc.config import IngestConfig
    from hudi_cdc.sink.hudi import CommitInfo

__all__ = ["PipelineStatus", "TableStatus", "pipeline_status"]


@dataclass
class TableStatus:
    name: str
    topic: str
    target: str
    state: str  # the runner's (running, waiting, retrying, failed, done), or paused/removed, or idle/not started
    last_error: str | None = None
    last_commit: str | None = None
    last_commit_at: str | None = None
    checkpoint: str | None = None
    behind: int | None = None  # Kafka messages, or files, not in the table yet; None when unknown
    behind_unit: str = "messages"
    lag_s: float | None = None
    recent: dict[str, int] = field(default_factory=dict)  # summed over the last RECENT_COMMITS commits
    tombstones_held: int | None = None
    quarantined: int | None = None  # events waiting in the quarantine table (None: it has none, or unread)
    dropped_at_source: str | None = None  # the DROP the runner saw on the schema-change topic
    freshness: dict[str, Any] | None = None
    """The runner's view against the table's ``max_freshness_seconds`` (continuous Kafka runs): target_s,
    oldest_pending_s, late (what it waits for, while past the target), missed (rounds), last_miss."""
    schema_changes: dict[str, int] = field(default_factory=dict)
    """Schema changes the table's commits took, by kind (column_added, column_dropped, ...)."""
    last_schema_change: dict[str, Any] | None = None  # the newest: kind, column, change, action, commit
    catalog: dict[str, Any] | None = None
    """Catalog sync (docs/catalog.md): names, synced_to (the instant the catalog is in step with), table_at,
    lagging (a commit since changed the schema or wrote a new partition), problem; None: no catalog."""
    writer: dict[str, Any] | None = None
    """Who holds the table's writer lease (docs/many-processes.md): holder (host, pid, command; a runner's
    pipeline and state folder), since, heartbeat_age_s, live; None: no process ever took it."""
    problems: list[str] = field(default_factory=list)  # what could not be read


@dataclass
class PipelineStatus:
    pipeline: str
    runner: dict[str, Any] | None  # pid, alive, updated_at, ended: from the runner's status file
    tables: list[TableStatus]
    cut: dict[str, Any] | None = None
    """The newest consistent cut (docs/consistent-cuts.md): id, at, transaction, its tables' commits, and
    ``behind``: per table, the Kafka messages its head holds past the cut (None: unknown)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        runner = self.runner
        if runner is None:
            head = f"pipeline {self.pipeline}: no runner has written a status yet"
        else:
            alive = "running" if runner["alive"] else "ended" if runner.get("ended") else "not running (killed?)"
            head = f"pipeline {self.pipeline}: runner pid {runner['pid']} {alive}, status of {runner['updated_at']}"
        lines = [head]
        for t in self.tables:
            behind = "?" if t.behind is None else f"{t.behind} {t.behind_unit}"
            lag = "?" if t.lag_s is None else f"{t.lag_s:.0f}s"
            commit = f"{t.last_commit} ({t.last_commit_at})" if t.last_commit else "no commit yet"
            recent = ", ".join(f"{k} {v}" for k, v in t.recent.items()) or "-"
            lines.append(f"  {t.name}: {t.state}; {commit}; behind {behind}, lag {lag}; recent: {recent}")
            if t.tombstones_held is not None:
                lines[-1] += f"; tombstones {t.tombstones_held}"
            if t.quarantined:
                lines[-1] += f"; quarantined {t.quarantined} (hudi-cdc quarantine list)"
            if t.last_error:
                lines.append(f"    last error: {t.last_error}")
            if t.dropped_at_source:
                lines.append(f"    dropped at the source: {t.dropped_at_source}")
            if t.writer is not None:
                lines.append(f"    writer: {_writer_line(t.writer)}")
            lines += _freshness_lines(t.freshness)
            if t.schema_changes:
                counts = ", ".join(f"{k} {v}" for k, v in sorted(t.schema_changes.items()))
                last = t.last_schema_change or {}
                lines.append(
                    f"    schema changes: {counts}; newest: {last.get('kind')} of '{last.get('column')}' "
                    f"({last.get('change')}, {last.get('action')}) in commit {last.get('commit')}"
                )
            if t.catalog is not None:
                lines.append("    " + describe_catalog(t.catalog))
            lines += [f"    could not read: {p}" for p in t.problems]
        if self.cut is not None:
            lines.append(_cut_line(self.cut))
        underway = (self.runner or {}).get("cut_underway")
        if underway:
            waiting = ", ".join(underway["pending"]) or "-"
            lines.append(
                f"  a consistent cut is under way at transaction {underway['transaction']}: bounded rounds of {waiting}"
                if underway["transaction"]
                else "  a consistent cut is under way: waiting for the rounds under way to finish"
            )
        blocked = (self.runner or {}).get("cut_blocked")
        if blocked:
            lines.append(
                f"  consistent cuts not made since {blocked['since']} ({blocked['failed_plans']} plan(s) in a row): "
                f"{blocked['reason']}; next attempt at {blocked['next_attempt_at']}"
            )
        return "\n".join(lines)


def _cut_line(cut: dict[str, Any]) -> str:
    behind = ", ".join(f"{n} {'?' if b is None else b}" for n, b in sorted(cut["behind"].items()))
    line = f"  newest consistent cut {cut['id']} at {cut['at']} ({cut['age_s']:.0f}s ago, transaction "
    line += f"{cut['transaction']}): the tables' heads are past it by (messages) {behind}"
    if cut.get("left_out"):
        line += "; left out: " + ", ".join(f"{n} ({why})" for n, why in sorted(cut["left_out"].items()))
    if cut.get("partial"):
        line += "; PARTIAL, events quarantined: " + ", ".join(
            f"{n} {p['quarantined']}" for n, p in sorted(cut["partial"].items())
        )
    return line


def _newest_cut(spec: PipelineSpec, statuses: Sequence[TableStatus]) -> dict[str, Any] | None:
    """The newest cut, and how many messages each of its tables' newest commit holds past it."""
    import json

    from hudi_cdc.service.cuts import CutStore
    from hudi_cdc.service.schedule import committed_offsets

    cut = CutStore.load(spec.run.state_dir).newest
    if cut is None:
        return None
    checkpoints = {s.name: s.checkpoint for s in statuses}
    behind: dict[str, int | None] = {}
    for name, table in cut["tables"].items():
        text = checkpoints.get(name)
        head = committed_offsets(json.loads(text)) if text and text.startswith("{") else None
        at = {int(p): int(o) for p, o in table["offsets"].items()}
        behind[name] = None if head is None else sum(max(0, head.get(p, 0) - o) for p, o in at.items())
    commits = {n: t["commit"] for n, t in cut["tables"].items()}
    keys = ("id", "at", "transaction", "transaction_offset", "left_out", "partial")
    age_s = round((datetime.now(UTC) - datetime.fromisoformat(cut["at"])).total_seconds(), 1)
    return {**{k: cut.get(k) for k in keys}, "age_s": age_s, "commits": commits, "behind": behind}


def _freshness_lines(freshness: dict[str, Any] | None) -> list[str]:
    if not freshness:
        return []
    lines = []
    if freshness.get("late"):
        lines.append(
            f"    late: its oldest change has waited {freshness['oldest_pending_s']}s "
            f"(target {freshness['target_s']:g}s), for {freshness['late']}"
        )
    if freshness.get("missed"):
        lines.append(
            f"    freshness target missed by {freshness['missed']} round(s); the last: {freshness['last_miss']}"
        )
    return lines


def _freshness(known: dict[str, Any] | None) -> dict[str, Any] | None:
    """The runner's freshness figures of a table from ``status.json``; None without a target."""
    if not known or known.get("freshness_target_s") is None:
        return None
    return {
        "target_s": known["freshness_target_s"],
        "oldest_pending_s": known.get("oldest_pending_s"),
        "late": known.get("late"),
        "missed": known.get("freshness_missed", 0),
        "last_miss": known.get("last_miss"),
    }


def pipeline_status(spark: SparkSession, spec: PipelineSpec, *, tables: Sequence[str] = ()) -> PipelineStatus:
    from hudi_cdc.service.discovery import discover
    from hudi_cdc.service.spec import select

    written = control.read_status(spec.run.state_dir)
    known = (written or {}).get("tables", {})
    try:
        refs = [r for r in discover(spark, spec) if spec.enabled(r)]
    except HudiCdcError:  # the source is down: the tables the runner knew
        refs = [TableRef(s) for t in known.values() for s in control.listed_topics(t)]
    refs, _ = spec.routed(refs)  # [[routes]]: a routed table by its target, a merged one with all its shards
    names = {r.name for r in refs}
    gone = [TableRef(s) for n, t in known.items() if n not in names for s in control.listed_topics(t)]
    refs += [r for r in spec.routed(gone)[0] if r.name not in names]
    refs = select(sorted(refs, key=lambda r: r.name), tables)
    flags = control.instructions(spec.run.state_dir)
    read = [_table(spark, spec, ref, known.get(ref.name), flags.get(ref.name, set())) for ref in refs]
    statuses = [status for status, _ in read]
    positions = {status.name: held for status, held in read if held is not None}
    # The runner's hudi_cdc_behind and hudi_cdc_lag_seconds are the same measure.
    for name, backlog in measure(spark, spec, positions).items():
        status = next(s for s in statuses if s.name == name)
        status.behind, status.lag_s = backlog.behind, backlog.lag_s
        status.problems += backlog.problems
    return PipelineStatus(spec.name, _runner(written), statuses, _newest_cut(spec, statuses))


def _writer_line(writer: dict[str, Any]) -> str:
    if not writer["live"]:
        return f"none (the lease is free: last held by {writer['holder']})"
    return f"{writer['holder']}, since {writer['since']}, heartbeat {writer['heartbeat_age_s']:.0f} s ago"


def _runner(written: dict[str, Any] | None) -> dict[str, Any] | None:
    if written is None:
        return None
    pid = int(written["pid"])
    alive = control.runner_alive(written)
    return {
        "pid": pid,
        "alive": alive,
        "updated_at": written["updated_at"],
        "ended": bool(written.get("ended")),
        "cut_underway": written.get("cut_underway") if alive else None,  # a dead runner's cut is not recorded
        "cut_blocked": written.get("cut_blocked") if alive else None,
    }


def _table(
    spark: SparkSession,
    spec: PipelineSpec,
    ref: TableRef,
    known: dict[str, Any] | None,
    flags: set[str],
) -> tuple[TableStatus, Position | None]:
    """The table's status but its backlog, and where it stands (None when that cannot be read)."""
    from hudi_cdc.sink.hudi import HudiTable
    from hudi_cdc.sink.lease import lease_holder
    from hudi_cdc.sink.object_store import configure_table

    state = (known or {}).get("state") or "idle"
    try:
        config = spec.table_config(ref)
        configure_table(spark, config)  # an s3a:// table's buckets, before its folder is read
    except HudiCdcError as exc:  # its settings are refused: reported, the other tables still are
        return TableStatus(ref.name, ref.topic, "?", "failed", last_error=str(exc)), None
    try:  # the table's own folder: a pause or remove given through another runner's state folder counts too
        found = control.table_flags(config.target_base_path, spark=spark)
        flags = (flags - control.stale_flags(spec.run.state_dir, ref.name, flags, found)) | found.flags
    except (HudiCdcError, OSError):
        pass  # shown as this state folder says
    if control.REMOVED in flags:
        state = control.REMOVED
    elif control.PAUSED in flags and state != "running":
        state = control.PAUSED
    status = TableStatus(
        ref.name, ref.topic, config.target_base_path, state, last_error=(known or {}).get("last_error")
    )
    if state != "failed":
        status.last_error = None
    status.dropped_at_source = (known or {}).get("dropped_at_source")
    holder = lease_holder(config.target_base_path, spark=spark)
    status.writer = holder.to_status() if holder is not None else None
    status.freshness = _freshness(known)
    status.behind_unit = "messages" if spec.source.kind == "kafka" else "files"
    try:
        commits = HudiTable(spark, config.target_base_path).commits()
    except Exception as exc:  # noqa: BLE001 - a table that cannot be read is reported, not fatal
        from hudi_cdc._jvm import java_message

        status.problems.append(f"the Hudi table: {java_message(exc)}")
        return status, None
    ours = [c for c in commits if opt.CHECKPOINT_KEY in c.extra]
    if not ours:
        status.state = status.state if known else "not started"
        return status, position(ref.topic, config, ours)
    newest = ours[0]
    status.last_commit = newest.instant
    status.last_commit_at = _instant_time(newest.instant)
    status.checkpoint = newest.extra[opt.CHECKPOINT_KEY]
    _recent(status, ours[:RECENT_COMMITS])
    _schema_changes(status, ours)
    status.quarantined = _quarantined(spark, config, status)
    status.catalog = catalog_status(spark, config)
    return status, position(ref.topic, config, ours)


def _recent(status: TableStatus, commits: list[CommitInfo]) -> None:
    counted = ("events", "upserts", "deletes", "stale", "quarantined")
    totals = {"commits": len(commits), **dict.fromkeys(counted, 0), "inserts": 0, "updates": 0}
    for commit in commits:
        kept = stats(commit)
        for key in counted:
            totals[key] += int(kept.get(key) or 0)
        for key in ("inserts", "updates"):
            totals[key] += commit.written.get(key, 0)
        if status.tombstones_held is None and "tombstones_held" in kept:
            status.tombstones_held = int(kept["tombstones_held"])
    status.recent = totals


def _schema_changes(status: TableStatus, commits: list[CommitInfo]) -> None:
    """Every schema change the commits recorded (``hudi_cdc.schema_changes``), counted by kind; the newest."""
    import json

    for commit in commits:  # newest first
        for change in json.loads(commit.extra.get(opt.SCHEMA_CHANGES_KEY) or "[]"):
            status.schema_changes[change["kind"]] = status.schema_changes.get(change["kind"], 0) + 1
            if status.last_schema_change is None:
                status.last_schema_change = {**change, "commit": commit.instant}


def _quarantined(spark: SparkSession, config: IngestConfig, status: TableStatus) -> int | None:
    from hudi_cdc.sink.quarantine import QuarantineStore

    try:
        store = QuarantineStore(spark, config.resolved_quarantine_path, target_table=config.target_table)
        return store.count() if store.exists() else None
    except Exception as exc:  # noqa: BLE001 - reported, not fatal
        from hudi_cdc._jvm import java_message

        status.problems.append(f"the quarantine table: {java_message(exc)}")
        return None


def _instant_time(instant: str) -> str | None:
    """A Hudi instant (yyyyMMddHHmmss[SSS], in the writer JVM's time zone: UTC for sessions hudi-cdc starts)."""
    try:
        moment = datetime.strptime(instant[:14], "%Y%m%d%H%M%S").replace(tzinfo=UTC)
    except ValueError:
        return None
    return moment.isoformat(timespec="seconds")
