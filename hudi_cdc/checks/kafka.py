"""``validate``'s checks of Kafka and the schema registry: the topic, its retention against the checkpoint, the subjects.

The topic's watermarks and settings and the registry's subjects are asked once
through the shared context; the value schema must be a Debezium envelope as a
file's writer schema must.
"""

from __future__ import annotations

from hudi_cdc.checks.kit import _Context, _envelope_outcome, _fail, _ok, _Outcome, _Skip, _warn
from hudi_cdc.errors import HudiCdcError

__all__ = ["check_key_schema", "check_registry", "check_retention", "check_topic", "check_value_schema"]


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
            f"not {', '.join(absent)} (--record-key-fields)",
            f"use --record-key-fields {','.join(fields)} (the table's primary key), or leave it out",
        )
    return _ok(f"{subject}: fields {', '.join(fields)} include --record-key-fields {', '.join(wanted)}")


def check_value_schema(ctx: _Context) -> _Outcome:
    ids = ctx.subjects().get("value")
    subject = f"{ctx.config.topic}-value"
    if not ids:
        raise _Skip(f"no registry subject {subject}")
    return _envelope_outcome(ctx, ctx.registry().schema(ids[-1]), f"{subject} (newest version, id {ids[-1]})")
