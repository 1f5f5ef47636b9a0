"""``validate``'s checks of the Hudi table written to: the path writable, an existing table's settings, the checkpoint.

A table that exists already must have the key, type, partitioning, ordering
and index this command line would write; the checkpoint shown is the one the
next round starts from.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hudi_cdc.checks.kit import _NO_SPARK, _Context, _fail, _is_local, _local, _ok, _Outcome, _Skip
from hudi_cdc.errors import ConfigError, SinkError
from hudi_cdc.sink import options as opt

__all__ = ["check_checkpoint", "check_table_config", "check_target_writable"]


def check_target_writable(ctx: _Context) -> _Outcome:
    paths = [ctx.config.target_base_path, ctx.config.resolved_tombstone_path]
    if ctx.spark is None and not all(_is_local(p) for p in paths):
        raise _Skip(_NO_SPARK + " to probe a Hadoop URI")
    for path in paths:
        problem = _probe_hadoop(ctx.spark, path) if ctx.spark is not None else _probe_local(path)
        if problem and "No space left on device" in problem:
            # Not a wrong setting: the round may run once space is back (a retry, or the next run).
            raise SinkError(f"no space left under {path}: {problem}")
        if problem:
            return _fail(
                f"cannot write under {path}: {problem}",
                "give a --target-base-path (and --tombstone-path) this user may create files in",
            )
    return _ok(f"created and deleted a probe file under {' and '.join(paths)}")


def _probe_name() -> str:
    return f".hudi-cdc-probe-{uuid.uuid4().hex[:12]}"


def _probe_local(path: str) -> str | None:
    target = _local(path)
    existing = target
    while not existing.exists() and existing.parent != existing:
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing} is a file, not a folder"
    probe = target / _probe_name()
    try:
        target.mkdir(parents=True, exist_ok=True)
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        return f"{exc.strerror or exc} ({exc.filename or target})"
    finally:
        if target != existing:
            _remove_if_empty(target)
    return None


def _remove_if_empty(folder: Path) -> None:
    """Remove the probe's own folder, not the parents it made: tables probed at once share them
    (a pipeline's ``lake/``), and removing one under another's probe failed it."""
    try:
        folder.rmdir()
    except OSError:
        pass


def _probe_hadoop(spark: Any, path: str) -> str | None:
    from hudi_cdc._jvm import hadoop_conf, java_message, jvm

    gateway = jvm(spark)
    Path_ = gateway.org.apache.hadoop.fs.Path
    target = Path_(path)
    try:
        fs = target.getFileSystem(hadoop_conf(spark))
        # The probe's own folder is removed again if it made it; parents it made stay, since tables
        # probed at once share them (a pipeline's lake/) and removing one failed another's probe.
        created = [] if fs.exists(target) else [target]
        folder = target
        while folder is not None and not fs.exists(folder):
            folder = folder.getParent()
        if folder is not None and fs.getFileStatus(folder).isFile():
            return f"{folder} is a file, not a folder"
        probe = Path_(target, _probe_name())
        try:
            fs.create(probe, False).close()
            fs.delete(probe, False)
        finally:
            for made in created:
                try:
                    if fs.exists(made) and not fs.listStatus(made):
                        fs.delete(made, False)
                except Exception:
                    break
    except Exception as exc:  # py4j wraps Hadoop's IOExceptions
        return java_message(exc)
    return None


def check_table_config(ctx: _Context) -> _Outcome:
    """The existing table's Hudi config against what this command line would write."""
    config = ctx.config
    exists = ctx.table_exists()
    from payloads.history import record_key_fields, source_key_fields

    held = ctx.table().record_key_fields() if exists else ()
    keys = record_key_fields(config.history, config.record_key_fields or source_key_fields(held))
    user_conf = config.hoodie_conf
    if exists:  # the index a round would use on it: the one it recorded, or its default (index_conf)
        from hudi_cdc.sink.hudi import index_conf

        user_conf = index_conf(ctx.table(), user_conf, partitioned=bool(config.partition_path_field))
    try:  # settings refused whatever the table holds (an index, a record merger): before the first ingest too
        wanted = opt.write_options(
            table_name=config.target_table,
            table_type=config.table_type,
            record_key_fields=keys,
            partition_path_field=config.partition_path_field,
            ordering_field=_ordering_column(),
            user_conf=user_conf,
        )
    except ConfigError as exc:
        return _fail(str(exc))
    if not exists:
        return _ok(
            f"no Hudi table at {config.target_base_path} yet: the first ingest creates it ({config.table_type}, "
            f"index {_new_table_index(config.hoodie_conf, wanted)})"
        )
    table = ctx.table()
    tc = table._meta_client().getTableConfig()
    merge_mode = tc.getRecordMergeMode()
    have = {
        "table name": str(tc.getTableName()),
        "table type": str(tc.getTableType().name()),
        "record key": str(tc.getRecordKeyFieldProp() or ""),
        "partition field": ",".join(p.split(":")[0] for p in str(tc.getPartitionFieldProp() or "").split(",") if p),
        "ordering field": ",".join(str(f) for f in tc.getOrderingFields()),
        "merge mode": str(merge_mode.name()) if merge_mode is not None else "",
    }
    last = table.checkpoint_commit()
    recorded_index = last.extra.get(opt.INDEX_KEY) if last else None
    if recorded_index is not None:  # recorded by hudi-cdc's commits since the index guard
        have["index"] = recorded_index
    if last is not None:
        have["history"] = last.extra.get(opt.HISTORY_KEY, "none")
    want = {
        "table name": wanted[opt.TABLE_NAME],
        "table type": wanted[opt.TABLE_TYPE],
        "record key": wanted[opt.RECORD_KEY],
        "partition field": wanted[opt.PARTITION_PATH],
        "ordering field": wanted[opt.PRECOMBINE_FIELD],
        "merge mode": wanted[opt.MERGE_MODE],
        "index": opt.index_layout(wanted),
        "history": config.history,
    }
    differ = [k for k in want if have.get(k, want[k]) != want[k]]
    payload = tc.getPayloadClassIfPresent()
    payload_note = f", payload {payload.get()}" if payload.isPresent() else ""
    if differ:
        return _fail(
            f"the table at {config.target_base_path} has "
            + "; ".join(f"{k} {have[k] or '(none)'!r}, the command line {want[k] or '(none)'!r}" for k in differ),
            "use the table's settings on the command line (a table's key, type, partitioning, index and history "
            "mode cannot change), or write to a new --target-base-path",
        )
    return _ok(
        f"{have['table type']} table {have['table name']!r}, key {have['record key']}, "
        f"partition {have['partition field'] or '(none)'}, ordering {have['ordering field']}, "
        f"{have['merge mode']}{payload_note}, index {want['index']}: matches the command line"
    )


def _new_table_index(user_conf: Mapping[str, str], wanted: Mapping[str, str]) -> str:
    """The index a new table gets: the settings' own, or the bucket default sized by its first commit."""
    partitioned = bool(wanted[opt.PARTITION_PATH])
    if opt.names_index(user_conf, partitioned=partitioned):
        return opt.index_layout(wanted)
    buckets = user_conf.get(opt.NUM_BUCKETS) or f"{opt.MIN_BUCKETS}-{opt.MAX_BUCKETS} by the first commit's rows"
    return f"BUCKET (SIMPLE engine, {buckets} buckets)"


def _ordering_column() -> str:
    from payloads.base import ORDER_COLUMN

    return ORDER_COLUMN


def check_checkpoint(ctx: _Context) -> _Outcome:
    stored = ctx.stored_checkpoint()
    if stored is None:
        start = {"kafka": ctx.config.kafka_starting_offsets, "jdbc": "the first row"}.get(
            ctx.config.source, "the first file"
        )
        return _ok(f"no checkpoint yet: the first ingest starts at {start}")
    origin, checkpoint = stored
    shown = {k: v for k, v in checkpoint.items() if k != "kind"}
    return _ok(f"from {origin}: {json.dumps(shown, sort_keys=True)[:300]}")
