"""``hudi-cdc validate``: preflight checks before the first ingest, and the cheap ones every ingest runs first.

Each check is a small function that returns an outcome (ok, warn, fail, skip)
with what it found, where, and how to fix a problem; a problem the check is
there to find is never raised. A check whose input was not given (no database
URL, no Connect URL, no Spark session) is ``skip``, saying what to pass.

Checks share one context so each service is asked once: the Kafka watermarks,
the connector's state, the database connection, the table's checkpoint. When
one of those cannot be had, the first check that needed it fails with the
reason and the later ones are skipped pointing at it.

``cheap=True`` runs only what an ingest round asks anyway (the existing
table's config, the target writable, the topic's existence): it is what
:func:`hudi_cdc.pipeline.run` calls before its first round.
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hudi_cdc.checks.kit import (
    _NO_SPARK,
    Check,
    Status,
    ValidationReport,
    _basename,
    _Context,
    _fail,
    _is_local,
    _local,
    _ok,
    _Outcome,
    _Skip,
    _warn,
)
from hudi_cdc.config import IngestConfig
from hudi_cdc.errors import ConfigError, HudiCdcError, SinkError
from hudi_cdc.sink import options as opt

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from hudi_cdc.upstream.database import SourceDatabase

__all__ = ["Check", "Status", "ValidationReport", "preflight", "validate"]

log = logging.getLogger("hudi_cdc")

MIN_JAVA = 17
FILES_TO_DECODE = 20
"""How many of the newest files the files check opens (each one open; a folder may hold thousands)."""

_REPLICA_IDENTITY = {"d": "DEFAULT", "f": "FULL", "n": "NOTHING", "i": "USING INDEX"}


# --- environment -------------------------------------------------------------------------------------------


def check_java(ctx: _Context) -> _Outcome:
    if ctx.spark is not None:
        from hudi_cdc._jvm import jvm

        system = jvm(ctx.spark).java.lang.System
        version, where = str(system.getProperty("java.version")), str(system.getProperty("java.home"))
    else:
        from hudi_cdc._jvm import java_binary

        java = java_binary()
        if java is None:
            return _fail(
                "no java: JAVA_HOME is not set and there is no java on PATH", f"install Java {MIN_JAVA} or later"
            )
        try:
            shown = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30).stderr
        except (OSError, subprocess.TimeoutExpired) as exc:
            return _fail(f"{java} -version failed: {exc}", f"install Java {MIN_JAVA} or later")
        found = re.search(r'version "([^"]+)"', shown)
        version, where = (found.group(1) if found else shown.strip()[:80]), java
    major = _java_major(version)
    if major is None or major < MIN_JAVA:
        return _fail(
            f"Java {version} ({where}); Spark 3.5 with Hudi 1.2 here needs {MIN_JAVA}+",
            f"install Java {MIN_JAVA} and point JAVA_HOME at it",
        )
    return _ok(f"Java {version} ({where})")


def _java_major(version: str) -> int | None:
    found = re.match(r"(\d+)(?:\.(\d+))?", version)
    if not found:
        return None
    first = int(found.group(1))
    return int(found.group(2) or 0) if first == 1 else first  # 1.8.0_x is Java 8


def check_jars(ctx: _Context) -> _Outcome:
    if ctx.spark is not None:
        from hudi_cdc._jvm import jvm

        gateway = jvm(ctx.spark)
        try:
            loader = gateway.java.lang.Thread.currentThread().getContextClassLoader()
            gateway.java.lang.Class.forName("org.apache.hudi.DefaultSource", True, loader)
        except Exception:  # py4j's error for ClassNotFoundException
            return _fail(
                "the Spark session has no Hudi on its classpath",
                "start it with hudi_cdc.spark_session(), or give spark-submit `hudi-cdc jars --submit-args`",
            )
        return _ok("the Spark session loads Hudi's Spark datasource")
    from hudi_cdc.jars import PACKAGES, resolve_jars

    try:
        source = resolve_jars()
    except ConfigError as exc:
        return _fail(str(exc))
    if source.kind == "folder":
        return _ok(f"{len(source.jars)} jar(s) from {source.folder}")
    bundle = PACKAGES[0].split(":")
    cached = Path.home() / ".ivy2" / "jars" / f"{bundle[0]}_{bundle[1]}-{bundle[2]}.jar"
    if cached.exists():
        return _ok(f"Maven coordinates, already in Spark's Ivy cache ({cached.parent})")
    return _warn(
        f"Spark downloads {', '.join(PACKAGES)} from Maven Central when the first session starts",
        "on a machine without Maven Central: `hudi-cdc jars --fetch DIR` elsewhere, copy DIR, set HUDI_CDC_JARS_DIR",
    )


# --- target ------------------------------------------------------------------------------------------------


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
    keys = config.record_key_fields or (ctx.table().record_key_fields() if exists else ())
    try:  # settings refused whatever the table holds (an index, a record merger): before the first ingest too
        wanted = opt.write_options(
            table_name=config.target_table,
            table_type=config.table_type,
            record_key_fields=keys,
            partition_path_field=config.partition_path_field,
            ordering_field=_ordering_column(),
            user_conf=config.hoodie_conf,
        )
    except ConfigError as exc:
        return _fail(str(exc))
    if not exists:
        return _ok(f"no Hudi table at {config.target_base_path} yet: the first ingest creates it ({config.table_type})")
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
    want = {
        "table name": wanted[opt.TABLE_NAME],
        "table type": wanted[opt.TABLE_TYPE],
        "record key": wanted[opt.RECORD_KEY],
        "partition field": wanted[opt.PARTITION_PATH],
        "ordering field": wanted[opt.PRECOMBINE_FIELD],
        "merge mode": wanted[opt.MERGE_MODE],
        "index": opt.index_layout(wanted),
    }
    differ = [k for k in want if have.get(k, want[k]) != want[k]]
    payload = tc.getPayloadClassIfPresent()
    payload_note = f", payload {payload.get()}" if payload.isPresent() else ""
    if differ:
        return _fail(
            f"the table at {config.target_base_path} has "
            + "; ".join(f"{k} {have[k] or '(none)'!r}, the command line {want[k] or '(none)'!r}" for k in differ),
            "use the table's settings on the command line (a table's key, type, partitioning and index cannot "
            "change), or write to a new --target-base-path",
        )
    return _ok(
        f"{have['table type']} table {have['table name']!r}, key {have['record key']}, "
        f"partition {have['partition field'] or '(none)'}, ordering {have['ordering field']}, "
        f"{have['merge mode']}{payload_note}, index {want['index']}: matches the command line"
    )


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


# --- files source ------------------------------------------------------------------------------------------


def _listed_files(ctx: _Context) -> list[tuple[str, int]]:
    """``(path, size)`` of the files an ingest would consider, in its order."""

    def fetch() -> list[tuple[str, int]]:
        root = ctx.config.source_path or ""
        if ctx.spark is not None:
            from hudi_cdc.sources.files import FileSource

            # The source's own listing: the same hidden-file and suffix rules as the ingest's.
            return [(f.path, f.size) for f in FileSource(ctx.spark, ctx.config)._list()]
        if not _is_local(root):
            raise _Skip(_NO_SPARK + " to list a Hadoop URI")
        from hudi_cdc.errors import SourceError
        from hudi_cdc.sources.files import _hidden

        folder = _local(root)
        if not folder.is_dir():
            raise SourceError(f"--source-path {root} does not exist")
        found = []
        for dirpath, _, names in os.walk(folder):
            for name in names:
                relative = os.path.relpath(os.path.join(dirpath, name), folder).replace(os.sep, "/")
                if not _hidden(relative) and relative.endswith(ctx.config.source_file_suffix):
                    found.append((relative, os.path.join(dirpath, name)))
        return [(path, os.path.getsize(path)) for _, path in sorted(found)]

    return ctx.memo("files", fetch)  # type: ignore[no-any-return]


def check_files_folder(ctx: _Context) -> _Outcome:
    files = _listed_files(ctx)
    root = ctx.config.source_path
    if not files:
        return _warn(
            f"{root} holds no {ctx.config.source_file_suffix} files: an ingest has nothing to read",
            "check --source-path and --source-file-suffix, or wait for the connector's sink to write",
        )
    size = sum(s for _, s in files)
    return _ok(f"{root}: {len(files)} file(s), {size} bytes, newest {_basename(files[-1][0])}")


def _writer_schemas(ctx: _Context) -> list[tuple[str, dict[str, Any] | str]]:
    """The newest files' writer schemas, newest first; a string where the file is not Avro."""

    def fetch() -> list[tuple[str, dict[str, Any] | str]]:
        out: list[tuple[str, dict[str, Any] | str]] = []
        for path, size in reversed(_listed_files(ctx)[-FILES_TO_DECODE:]):
            out.append((path, _read_header(ctx, path, size)))
        return out

    return ctx.memo("schemas", fetch)  # type: ignore[no-any-return]


def _read_header(ctx: _Context, path: str, size: int) -> dict[str, Any] | str:
    if _is_local(path):
        import fastavro

        try:
            with open(_local(path), "rb") as stream:
                return json.loads(fastavro.reader(stream).metadata["avro.schema"])
        except Exception as exc:  # fastavro raises ValueError, EOFError, struct errors...
            return f"not an Avro Object Container File ({type(exc).__name__}: {exc})"
    from hudi_cdc.sources.files import FileSource, ListedFile

    try:
        text = FileSource(ctx.need_spark(), ctx.config)._writer_schema(ListedFile(path, path, size, 0))
    except HudiCdcError as exc:
        return str(exc)
    return json.loads(text)  # type: ignore[no-any-return]


def check_files_decode(ctx: _Context) -> _Outcome:
    schemas = _writer_schemas(ctx)
    if not schemas:
        raise _Skip("no files to decode")
    bad = [(p, s) for p, s in schemas if isinstance(s, str)]
    if bad:
        shown = "; ".join(f"{p}: {s}" for p, s in bad[:3])
        return _fail(
            f"{len(bad)} of the {len(schemas)} newest file(s) do not decode: {shown}",
            "remove or replace them (an ingest stops at the first one and commits nothing)",
        )
    return _ok(f"the {len(schemas)} newest file(s) are Avro container files")


def check_files_envelope(ctx: _Context) -> _Outcome:
    good = [(p, s) for p, s in _writer_schemas(ctx) if not isinstance(s, str)]
    if not good:
        raise _Skip("no decodable file")
    path, schema = good[0]
    return _envelope_outcome(ctx, schema, f"the writer schema of {path}")


def _envelope_outcome(ctx: _Context, schema: dict[str, Any], where: str) -> _Outcome:
    problems = envelope_problems(schema, flavor=ctx.config.flavor, key_fields=ctx.config.record_key_fields)
    if problems:
        return _fail(
            f"{where}: " + "; ".join(problems),
            "hudi-cdc reads Debezium's envelope (no ExtractNewRecordState/unwrap SMT); check --flavor and "
            "--record-key-field",
        )
    keys = ", ".join(ctx.config.record_key_fields) or "from the key schema"
    return _ok(f"{where}: a {ctx.config.flavor} Debezium envelope (op, before, after, source); key {keys}")


def envelope_problems(schema: Mapping[str, Any], *, flavor: str, key_fields: tuple[str, ...]) -> list[str]:
    """What an Avro schema lacks to be a Debezium envelope hudi-cdc can order and key (pure)."""
    from payloads import policy_for

    named: dict[str, Mapping[str, Any]] = {}

    def index(node: Any, namespace: str = "") -> None:
        if isinstance(node, list):
            for branch in node:
                index(branch, namespace)
        elif isinstance(node, Mapping):
            if node.get("type") in ("record", "error"):
                ns = node.get("namespace", namespace)
                name = node["name"]
                full = name if "." in name else f"{ns}.{name}" if ns else name
                named[full] = node
                named.setdefault(name.rsplit(".", 1)[-1], node)
                for f in node.get("fields", []):
                    index(f.get("type"), ns)
            elif isinstance(node.get("type"), (list, Mapping)):
                index(node["type"], namespace)

    index(schema)

    def record(node: Any) -> Mapping[str, Any] | None:
        if isinstance(node, list):
            return next((r for r in (record(b) for b in node) if r is not None), None)
        if isinstance(node, str):
            return named.get(node) or named.get(node.rsplit(".", 1)[-1])
        if isinstance(node, Mapping):
            return node if node.get("type") in ("record", "error") else record(node.get("type"))
        return None

    fields = {f["name"]: f["type"] for f in schema.get("fields", [])}
    missing = [n for n in ("op", "before", "after", "source") if n not in fields]
    if missing:
        return [f"missing envelope field(s) {', '.join(missing)}: not a Debezium change event"]
    problems = []
    source = record(fields["source"]) or {}
    source_fields = {f["name"] for f in source.get("fields", [])}
    policy = policy_for(flavor)
    ordering = [name for _, name, _, required in policy.source_meta_columns if required]
    lacking = [n for n in ordering if n not in source_fields]
    if lacking:
        problems.append(
            f"source has no {', '.join(lacking)}, which orders {flavor} events (is --flavor right? "
            f"source fields: {', '.join(sorted(source_fields))})"
        )
    after = record(fields["after"]) or {}
    columns = {f["name"] for f in after.get("fields", [])}
    absent = [k for k in key_fields if k not in columns]
    if absent:
        problems.append(
            f"the row has no column {', '.join(absent)} (--record-key-field); columns: {', '.join(sorted(columns))}"
        )
    return problems


# --- Kafka and the registry --------------------------------------------------------------------------------


def check_topic(ctx: _Context) -> _Outcome:
    marks = ctx.watermarks()
    retained = sum(high - low for low, high in marks.values())
    span = ", ".join(f"{p}:{low}..{high}" for p, (low, high) in sorted(marks.items()))
    where = f"topic {ctx.config.topic!r}, {len(marks)} partition(s) [{span}]"
    if retained == 0:
        return _ok(f"{where}: empty (no message retained)")
    return _ok(f"{where}: has data, {retained} message(s) retained")


def check_retention(ctx: _Context) -> _Outcome:
    marks = ctx.watermarks()
    topic = ctx.config.topic
    try:
        tc = ctx.topic_config()
        policy = f"cleanup.policy={tc.get('cleanup.policy')}, retention.ms={tc.get('retention.ms')}"
    except HudiCdcError as exc:
        policy = f"topic settings unknown ({exc})"
    stored = ctx.stored_checkpoint()
    if stored is None:
        low_parts = {p: low for p, (low, _) in marks.items() if low > 0}
        if low_parts and ctx.config.kafka_starting_offsets == "earliest":
            first = ", ".join(f"{topic}-{p} starts at {low}" for p, low in sorted(low_parts.items()))
            return _warn(
                f"no checkpoint, and the topic no longer holds its first messages ({first}; {policy}): if they "
                "were the connector's initial snapshot, a new table would miss rows",
                "re-snapshot the table (a Debezium incremental snapshot, or a new connector with snapshot.mode=initial)",
            )
        return _ok(f"no checkpoint yet; {policy}")
    origin, checkpoint = stored
    offsets = {int(p): int(o) for p, o in checkpoint.get("offsets", {}).items()}
    if not offsets:
        return _ok(f"the checkpoint ({origin}) starts at {checkpoint.get('start', 'earliest')}; {policy}")
    lost, ahead = [], []
    for partition, offset in sorted(offsets.items()):
        if partition not in marks:
            continue
        low, high = marks[partition]
        if offset < low:
            lost.append(f"{topic}-{partition}: checkpoint offset {offset}, earliest retained {low}")
        elif offset > high:
            ahead.append(f"{topic}-{partition}: checkpoint offset {offset}, newest {high}")
    if lost or ahead:
        detail = (
            f"the checkpoint ({origin}) is outside what Kafka retains: "
            + "; ".join(lost + [a + " (was the topic recreated?)" for a in ahead])
            + f"; {policy}. "
        )
        if lost:
            detail += "Changes were lost: the events between them are gone from Kafka."
        fix = "re-snapshot the table (new --target-base-path, or --checkpoint earliest after a new Debezium snapshot)"
        if ctx.config.allow_data_loss:
            return _warn(detail + " --allow-data-loss: the ingest continues past the gap", fix)
        return _fail(detail, fix + "; or accept the loss with --allow-data-loss")
    behind = sum(marks[p][1] - o for p, o in offsets.items() if p in marks)
    return _ok(f"the checkpoint ({origin}) is within the retained offsets, {behind} message(s) behind; {policy}")


def check_registry(ctx: _Context) -> _Outcome:
    from hudi_cdc.sources.registry import redact_url

    subjects = ctx.subjects()
    url = redact_url(ctx.config.schema_registry_url or "")
    missing = [f"{ctx.config.topic}-{s}" for s, ids in subjects.items() if not ids]
    if not missing:
        versions = ", ".join(f"{ctx.config.topic}-{s} ({len(ids or [])} version(s))" for s, ids in subjects.items())
        return _ok(f"{url}: {versions}")
    empty = False
    try:
        empty = sum(high - low for low, high in ctx.watermarks().values()) == 0
    except (HudiCdcError, _Skip):
        pass
    if empty:
        return _warn(
            f"{url} has no subject {', '.join(missing)}; the topic is empty, and the converter registers its "
            "schemas with the first message",
            "nothing to do unless the topic should have data",
        )
    consequence = []
    if not subjects.get("value"):
        consequence.append("the ingest decodes each writer schema apart (slower; each batch held in memory)")
    if not subjects.get("key") and not ctx.config.record_key_fields:
        consequence.append("the record key comes from one message's key schema")
    return _warn(
        f"{url} has no subject {', '.join(missing)}: " + "; ".join(consequence),
        "use the converter's TopicNameStrategy (Debezium's default) against this registry, or check "
        "--schema-registry-url",
    )


def check_key_schema(ctx: _Context) -> _Outcome:
    ids = ctx.subjects().get("key")
    subject = f"{ctx.config.topic}-key"
    if not ids:
        raise _Skip(f"no registry subject {subject}")
    schema = ctx.registry().schema(ids[-1])
    fields = [f["name"] for f in schema.get("fields", [])]
    wanted = ctx.config.record_key_fields
    if not wanted:
        return _ok(f"{subject}: fields {', '.join(fields)}, the record key")
    absent = [k for k in wanted if k not in fields]
    if absent:
        return _fail(
            f"{subject} (newest version, id {ids[-1]}) has fields {', '.join(fields) or '(none)'}, "
            f"not {', '.join(absent)} (--record-key-field)",
            f"use --record-key-field {','.join(fields)} (the table's primary key), or leave it out",
        )
    return _ok(f"{subject}: fields {', '.join(fields)} include --record-key-field {', '.join(wanted)}")


def check_value_schema(ctx: _Context) -> _Outcome:
    ids = ctx.subjects().get("value")
    subject = f"{ctx.config.topic}-value"
    if not ids:
        raise _Skip(f"no registry subject {subject}")
    return _envelope_outcome(ctx, ctx.registry().schema(ids[-1]), f"{subject} (newest version, id {ids[-1]})")


# --- Kafka Connect -----------------------------------------------------------------------------------------


def check_connector(ctx: _Context) -> _Outcome:
    from hudi_cdc.upstream.database import redact_url

    state = ctx.connector()
    kind = state.config.get("connector.class", "?")
    if not state.running:
        problems = [] if state.state == "RUNNING" else [f"connector {state.state}" + _trace(state.trace_head)]
        problems += [
            f"task {t.id} {t.state} on {t.worker}" + _trace(t.trace_head) for t in state.tasks if t.state != "RUNNING"
        ]
        if not state.tasks:
            problems.append("no tasks")
        return _fail(
            f"{state.name}: " + "; ".join(problems) + f". No change events flow, so {ctx.config.target_table} lags",
            f"fix the cause, then restart: curl -X POST '{redact_url(ctx.connect_url or '')}/connectors/{state.name}"
            "/restart?includeTasks=true&onlyFailed=true' (Connect never restarts a FAILED task by itself; "
            "a PAUSED connector needs .../resume)",
        )
    flavor_words = {
        "postgres": ("postgres",),
        "mysql": ("mysql", "mariadb"),
        "sqlserver": ("sqlserver",),
        "oracle": ("oracle",),
    }[ctx.config.flavor]
    if not any(w in kind.lower() for w in flavor_words):
        return _fail(
            f"connector {state.name} is {kind}, not Debezium's {ctx.config.flavor} connector", "check --flavor"
        )
    return _ok(f"{state.name} ({kind.rsplit('.', 1)[-1]}) RUNNING, {len(state.tasks)} task(s) RUNNING")


def _trace(head: str | None) -> str:
    return f" ({head})" if head else ""


def check_converter(ctx: _Context) -> _Outcome:
    config = ctx.connector().config
    problems, notes = [], []
    for side in ("key", "value"):
        converter = config.get(f"{side}.converter")
        if converter is None:
            notes.append(f"{side}.converter not set on the connector (the worker's, which the REST API does not show)")
            continue
        if "avro" not in converter.lower():
            problems.append(f"{side}.converter is {converter}, not an Avro converter")
            continue
        prefix = f"{side}.converter.apicurio.registry."
        if "apicurio" in converter.lower():
            if config.get(prefix + "headers.enabled", "").lower() != "false":
                problems.append(
                    f"{prefix}headers.enabled is not false: the schema id travels in headers, and the "
                    "messages lack the Confluent framing hudi-cdc reads"
                )
            if "4byte" not in config.get(prefix + "id-handler", "").lower():
                problems.append(f"{prefix}id-handler is not a 4-byte id handler (Default4ByteIdHandler)")
            if config.get(prefix + "use-id", "contentId") != "contentId":
                problems.append(f"{prefix}use-id is not contentId: the ids will not resolve through /apis/ccompat")
        elif not config.get(f"{side}.converter.schema.registry.url"):
            notes.append(f"{side}.converter.schema.registry.url not set on the connector")
    if problems:
        return _fail(
            "; ".join(problems),
            "see docs/setup-postgres.md#connector-settings-hudi-cdc-expects for the converter settings",
        )
    if notes:
        return _warn("; ".join(notes), "make sure the worker's converter is Avro with a Confluent-compatible registry")
    return _ok(f"Avro ({config['value.converter'].rsplit('.', 1)[-1]}) for keys and values, Confluent framing")


def check_decimal_mode(ctx: _Context) -> _Outcome:
    mode, _ = ctx.connector_setting("decimal.handling.mode")
    if mode == "precise":
        return _ok(
            "decimal.handling.mode=precise: NUMERIC/DECIMAL columns land as exact decimal(p,s) (text beyond 38 digits)"
        )
    consequence = {
        "double": "NUMERIC/DECIMAL columns arrive as double: values with more than ~15 significant digits are rounded",
        "string": "NUMERIC/DECIMAL columns arrive as text: the Hudi columns are strings, not decimals",
    }.get(mode, f"unknown mode {mode!r}")
    return _warn(f"decimal.handling.mode={mode}: {consequence}", "set decimal.handling.mode=precise for exact decimals")


def check_time_mode(ctx: _Context) -> _Outcome:
    mode, _ = ctx.connector_setting("time.precision.mode")
    meaning = {
        "adaptive": "timestamps keep their column's precision (ms or µs); TIME as text HH:MM:SS[.fff]",
        "adaptive_time_microseconds": "timestamps keep their precision; TIME as text with microseconds",
        "isostring": "dates, times and timestamps arrive as ISO-8601 text: the Hudi columns are strings",
    }
    if mode == "isostring":
        return _warn(f"time.precision.mode={mode}: {meaning[mode]}", "set time.precision.mode=adaptive")
    if mode in meaning:
        return _ok(f"time.precision.mode={mode}: {meaning[mode]}")
    if mode == "connect":
        return _warn(
            "time.precision.mode=connect: TIMESTAMP and TIME values are cut to milliseconds "
            "(Kafka Connect's own logical types)",
            "set time.precision.mode=adaptive to keep microseconds",
        )
    return _warn(f"time.precision.mode={mode}: not a mode hudi-cdc was tested with", "docs/types.md lists what lands")


def check_tombstones(ctx: _Context) -> _Outcome:
    value, _ = ctx.connector_setting("tombstones.on.delete")
    tombstones = value.lower() == "true"
    detail = f"tombstones.on.delete={value.lower()}: " + (
        "the Kafka tombstone after each delete is skipped (the delete event itself carries the delete)"
        if tombstones
        else "no Kafka tombstones; deletes come as delete events"
    )
    if ctx.config.source == "kafka":
        try:
            compacted = "compact" in ctx.topic_config().get("cleanup.policy", "")
        except (HudiCdcError, _Skip):
            compacted = False
        if compacted and tombstones:
            return _warn(
                detail + f". Topic {ctx.config.topic!r} is compacted: a delete the ingest has not read before "
                "compaction survives only as its tombstone, which carries no change event, so the row stays in Hudi",
                "keep cleanup.policy=delete on the topic, or set tombstones.on.delete=false",
            )
    return _ok(detail)


# --- the source database -----------------------------------------------------------------------------------


def check_wal_level(ctx: _Context) -> _Outcome:
    level = ctx.query("SELECT current_setting('wal_level') AS level")[0]["level"]
    if level != "logical":
        return _fail(
            f"wal_level={level} on {ctx.db_name()}: logical decoding is off",
            "ALTER SYSTEM SET wal_level = logical; then restart PostgreSQL",
        )
    return _ok(f"wal_level=logical on {ctx.db_name()}")


def check_slot(ctx: _Context) -> _Outcome:
    try:
        wanted: str | None = ctx.connector_setting("slot.name")[0]
    except _Skip:
        wanted = None
    except HudiCdcError:
        wanted = None  # the connector check says why
    slots = ctx.query(
        "SELECT slot_name, plugin, active, wal_status, "
        "pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn)::bigint AS behind "
        "FROM pg_replication_slots WHERE slot_type = 'logical' AND database = current_database() ORDER BY slot_name"
    )
    mine = [s for s in slots if wanted is None or s["slot_name"] == wanted]
    if not mine:
        named = f"slot {wanted!r} (the connector's slot.name)" if wanted else "logical replication slot"
        others = f"; slots here: {', '.join(s['slot_name'] for s in slots)}" if slots else ""
        return _fail(
            f"no {named} on {ctx.db_name()}{others}",
            "start the Debezium connector (it creates its slot on first start), or check slot.name",
        )
    slot = mine[0]
    where = f"slot {slot['slot_name']} ({slot['plugin']})"
    if slot.get("wal_status") == "lost":
        return _fail(
            f"{where} lost WAL it still needed (wal_status=lost): changes were lost",
            "drop the slot and re-snapshot the table (a new Debezium snapshot)",
        )
    behind = slot.get("behind")
    lag = f", {behind // (1 << 20)} MiB of WAL not yet confirmed" if behind is not None else ""
    if not slot["active"]:
        return _fail(
            f"{where} exists but is not active{lag}: no one reads it, and the server keeps WAL for it",
            "start (or restart) the Debezium connector",
        )
    return _ok(f"{where} active{lag}")


def check_publication(ctx: _Context) -> _Outcome:
    schema, table = ctx.source_table()
    try:
        wanted: str | None = ctx.connector_setting("publication.name")[0]
    except (_Skip, HudiCdcError):
        wanted = None
    rows = ctx.query(
        "SELECT p.pubname, p.pubinsert, p.pubupdate, p.pubdelete FROM pg_publication p "
        "JOIN pg_publication_tables t ON t.pubname = p.pubname WHERE t.schemaname = %s AND t.tablename = %s",
        (schema, table),
    )
    mine = [r for r in rows if wanted is None or r["pubname"] == wanted]
    if not mine:
        named = f"publication {wanted!r} (the connector's publication.name)" if wanted else "no publication"
        elsewhere = f"; it is in {', '.join(r['pubname'] for r in rows)}" if rows else ""
        subject = f"{named} does not cover" if wanted else f"{named} covers"
        return _fail(
            f"{subject} {schema}.{table} on {ctx.db_name()}{elsewhere}: its changes are never decoded",
            f"ALTER PUBLICATION {wanted or 'dbz_publication'} ADD TABLE {schema}.{table} (as the publication's owner)",
        )
    pub = mine[0]
    skipped = [op for op in ("insert", "update", "delete") if not pub[f"pub{op}"]]
    if skipped:
        return _fail(
            f"publication {pub['pubname']} does not publish {', '.join(skipped)}s of {schema}.{table}",
            f"ALTER PUBLICATION {pub['pubname']} SET (publish = 'insert, update, delete')",
        )
    return _ok(f"publication {pub['pubname']} covers {schema}.{table}")


def check_replica_identity(ctx: _Context) -> _Outcome:
    schema, table = ctx.source_table()
    rel = ctx.relation()
    identity = _REPLICA_IDENTITY.get(rel["relreplident"], rel["relreplident"])
    name = f"{schema}.{table}"
    if identity == "DEFAULT":
        return _ok(
            f"{name}: DEFAULT (deletes carry the key only; an unchanged TOASTed value arrives as a placeholder, "
            "which hudi-cdc fills from the table). FULL would send whole before images, at more WAL"
        )
    if identity == "FULL":
        return _ok(f"{name}: FULL (whole before images; placeholders only for unchanged TOASTed values of updates)")
    if identity == "NOTHING":
        return _fail(
            f"{name}: NOTHING: deletes carry no before image, so they cannot be applied",
            f"ALTER TABLE {name} REPLICA IDENTITY DEFAULT (with a primary key) or FULL",
        )
    index = [r["attname"] for r in _index_columns(ctx, rel["oid"], "indisreplident")]
    keys = ctx.config.record_key_fields
    if keys and set(keys) != set(index):
        return _warn(
            f"{name}: USING INDEX ({', '.join(index)}), but the record key is {', '.join(keys)}: deletes "
            "carry only the index columns",
            f"use --record-key-field {','.join(index)}",
        )
    return _ok(f"{name}: USING INDEX ({', '.join(index)})")


def _index_columns(ctx: _Context, oid: int, flag: str) -> list[dict[str, Any]]:
    assert flag in ("indisprimary", "indisreplident")  # a column name, never user input
    return ctx.query(
        "SELECT a.attname FROM pg_index i CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY k(attnum, n) "
        f"JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum WHERE i.indrelid = %s AND i.{flag} "
        "ORDER BY k.n",
        (oid,),
    )


def check_primary_key(ctx: _Context) -> _Outcome:
    schema, table = ctx.source_table()
    rel = ctx.relation()
    name = f"{schema}.{table}"
    columns = [r["attname"] for r in _index_columns(ctx, rel["oid"], "indisprimary")]
    if not columns:
        return _fail(
            f"{name} has no primary key: Debezium sends its changes without a key, so no record key identifies a row",
            f"ALTER TABLE {name} ADD PRIMARY KEY (...), or a unique index with REPLICA IDENTITY USING INDEX "
            "and Debezium's message.key.columns",
        )
    keys = ctx.config.record_key_fields
    if keys and list(keys) != columns:
        return _warn(
            f"{name}: primary key ({', '.join(columns)}), record key {', '.join(keys)}",
            f"use --record-key-field {','.join(columns)}, or leave it out to take the Debezium key",
        )
    return _ok(f"{name}: primary key ({', '.join(columns)})")


# --- the checks and their order ----------------------------------------------------------------------------

_CheckFn = Callable[[_Context], _Outcome]


def _plan(config: IngestConfig, cheap: bool) -> Iterator[tuple[str, _CheckFn]]:
    """``(name, check)`` in order; an earlier check owns the inputs later ones reuse."""
    if cheap:
        yield "target.table_config", check_table_config
        yield "target.writable", check_target_writable
        if config.source == "kafka":
            yield "kafka.topic", check_topic
        return
    yield "env.java", check_java
    yield "env.jars", check_jars
    yield "target.writable", check_target_writable
    yield "target.table_config", check_table_config
    yield "target.checkpoint", check_checkpoint
    if config.source == "jdbc":
        from hudi_cdc.checks.jdbc import check_jdbc_cursor_index, check_jdbc_primary_key, check_jdbc_relation

        yield "jdbc.relation", check_jdbc_relation
        yield "jdbc.cursor_index", check_jdbc_cursor_index
        yield "jdbc.primary_key", check_jdbc_primary_key
        return  # no connector, topic or replication slot: the database is read as it is
    if config.source == "files":
        yield "files.folder", check_files_folder
        yield "files.decode", check_files_decode
        yield "files.envelope", check_files_envelope
    else:
        yield "kafka.topic", check_topic
        yield "kafka.retention", check_retention
    if config.source == "kafka" and config.kafka_value_format == "json":
        from hudi_cdc.checks.formats import check_json_converter, check_json_messages

        yield "kafka.json_messages", check_json_messages
        yield "connect.connector", check_connector
        yield "connect.converter", check_json_converter
    else:
        if config.source == "kafka":
            yield "registry.subjects", check_registry
            yield "registry.key_schema", check_key_schema
            yield "registry.value_schema", check_value_schema
        yield "connect.connector", check_connector
        yield "connect.converter", check_converter
    yield "connect.decimal_handling", check_decimal_mode
    yield "connect.time_precision", check_time_mode
    yield "connect.tombstones", check_tombstones
    yield "postgres.wal_level", check_wal_level
    yield "postgres.slot", check_slot
    yield "postgres.publication", check_publication
    yield "postgres.replica_identity", check_replica_identity
    yield "postgres.primary_key", check_primary_key


def _run(name: str, fn: _CheckFn, ctx: _Context) -> Check:
    try:
        outcome = fn(ctx)
    except _Skip as skip:
        return Check(name, "skip", skip.detail, skip.fix)
    except HudiCdcError as exc:
        if id(exc) in ctx.blamed:
            return Check(name, "skip", f"not checked: {ctx.blamed[id(exc)]} failed")
        ctx.blamed[id(exc)] = name
        return Check(name, "fail", str(exc), None, transient=exc.transient, error=exc)
    except Exception as exc:  # a bug or an unforeseen reply must not hide the other checks
        from hudi_cdc._jvm import java_message

        log.debug("check %s failed unexpectedly", name, exc_info=True)
        return Check(name, "fail", f"the check itself failed: {java_message(exc)}", error=exc)
    return Check(name, outcome.status, outcome.detail, outcome.fix)


def validate(
    config: IngestConfig,
    *,
    spark: SparkSession | None = None,
    database: SourceDatabase | None = None,
    connect_url: str | None = None,
    connector: str | None = None,
    source_table: str | None = None,
    cheap: bool = False,
) -> ValidationReport:
    """Run the preflight checks for one table; never raises for a problem it finds.

    ``source_table`` (``schema.table``) names the database table when the
    topic (or folder) is not named ``<prefix>.<schema>.<table>``.
    """
    ctx = _Context(config, spark, database, connect_url, connector, source_table)
    try:
        return ValidationReport(tuple(_run(name, fn, ctx) for name, fn in _plan(config, cheap)))
    finally:
        ctx.close()


def preflight(config: IngestConfig, *, spark: SparkSession) -> ValidationReport:
    """The cheap checks an ingest runs before its first round.

    Raises :class:`ConfigError` listing what failed; a service that did not
    answer raises its own (transient) error, as the round itself would.
    Warnings are logged.
    """
    report = validate(config, spark=spark, cheap=True)
    for warning in report.warnings:
        log.warning("%s: %s", warning.name, warning.detail)
    terminal = [c for c in report.failed if not c.transient]
    if terminal:
        raise ConfigError(
            "preflight failed, nothing read or written: "
            + "; ".join(f"{c.name}: {c.detail}" + (f" (fix: {c.fix})" if c.fix else "") for c in terminal)
        )
    transient = next((c.error for c in report.failed if c.error is not None), None)
    if transient is not None:
        raise transient
    return report
