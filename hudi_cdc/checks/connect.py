"""``validate``'s checks of Kafka Connect and the Debezium connector: its state, converters and the settings that shape the rows.

The connector is the one ``--connector`` names, else the one whose topic
prefix is the topic's; a setting its config leaves out is Debezium's default.
"""

from __future__ import annotations

from hudi_cdc.checks.kit import _Context, _fail, _ok, _Outcome, _Skip, _warn
from hudi_cdc.errors import HudiCdcError

__all__ = ["check_connector", "check_converter", "check_decimal_mode", "check_time_mode", "check_tombstones"]


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
