"""``validate``'s checks of what a Kafka topic's messages are: JSON from ``JsonConverter``, flattened or not.

The newest message of each partition is read (a few, never committed) and
checked against ``--kafka-value-format`` and ``--kafka-value-schema-file``: the
schema embedded or not as expected, a Debezium envelope or a flattened row with
the fields ordering needs.
"""

from __future__ import annotations

import json
from typing import Any

from hudi_cdc.checks.kit import _Context, _fail, _ok, _Outcome, _Skip, _warn
from hudi_cdc.errors import DecodeError, TransientError

__all__ = ["check_json_converter", "check_json_messages"]

_JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"


def _newest(ctx: _Context, per_partition: int = 1) -> list[tuple[int, int, bytes]]:
    """``(partition, offset, value)`` of the newest messages that are not tombstones."""
    from confluent_kafka import KafkaException, TopicPartition

    from hudi_cdc.sources.kafka import new_consumer

    c = ctx.config
    marks = ctx.watermarks()
    consumer = new_consumer(str(c.bootstrap_servers), ctx.kafka_conf(), group_id="hudi-cdc-validate")
    found: list[tuple[int, int, bytes]] = []
    try:
        for partition, (low, high) in sorted(marks.items()):
            start = max(low, high - per_partition - 2)  # a tombstone or two follow a delete
            if start >= high:
                continue
            consumer.assign([TopicPartition(c.topic or "", partition, start)])
            for message in consumer.consume(high - start, timeout=10):
                if message.error() is None and message.value() is not None:
                    found.append((partition, int(message.offset() or 0), bytes(message.value() or b"")))
    except KafkaException as exc:
        raise TransientError(f"cannot read {c.topic} from {c.bootstrap_servers}: {exc}") from None
    finally:
        consumer.close()
    return found


def _describe(value: bytes, embedded_expected: bool) -> tuple[str, dict[str, Any] | None, Any]:  # noqa: ANN401
    """(problem or "", the Connect schema, the payload) of one message."""
    if len(value) >= 5 and value[0] == 0:
        return "the Confluent Avro wire format, not JSON: use --kafka-value-format avro", None, None
    try:
        document = json.loads(value)
    except ValueError:
        return f"neither JSON nor Avro (first bytes 0x{value[:8].hex()})", None, None
    embedded = isinstance(document, dict) and set(document) == {"schema", "payload"}
    if embedded and not embedded_expected:
        return "JSON with an embedded schema (schemas.enable=true): drop --kafka-value-schema-file", None, None
    if not embedded and embedded_expected:
        return (
            "JSON with no embedded schema (schemas.enable=false): give --kafka-value-schema-file",
            None,
            None,
        )
    return "", document.get("schema") if embedded else None, document.get("payload") if embedded else document


def check_json_messages(ctx: _Context) -> _Outcome:
    from hudi_cdc.envelope.connect_schema import connect_envelope, is_envelope, value_struct
    from hudi_cdc.envelope.unflatten import lacking_fields
    from hudi_cdc.policy import merge_policy

    c = ctx.config
    given = None
    if c.kafka_value_schema_file:
        try:
            with open(c.kafka_value_schema_file, encoding="utf-8") as handle:
                given = connect_envelope(json.load(handle), c.kafka_value_schema_file)
        except (OSError, ValueError, DecodeError) as exc:
            return _fail(f"--kafka-value-schema-file: {exc}", "save one message of a schemas-on topic, or its schema")
    messages = _newest(ctx)
    if not messages:
        raise _Skip(f"topic {c.topic!r} holds no message to look at")
    meta = merge_policy(c).source_meta_columns
    enveloped = True
    for partition, offset, value in messages:
        where = f"{c.topic}-{partition}@{offset}"
        problem, schema, payload = _describe(value, embedded_expected=given is None)
        if problem:
            return _fail(
                f"{where}: {problem}", "set --kafka-value-format / --kafka-value-schema-file as the connector writes"
            )
        schema = schema or given
        assert schema is not None
        enveloped = is_envelope(schema)
        if not enveloped:
            lacking, settings = lacking_fields([f.get("field", "") for f in schema.get("fields", [])], meta)
            if lacking:
                return _fail(
                    f"{where}: a flattened row (ExtractNewRecordState) without {', '.join(lacking)}",
                    f"add.fields={settings} and delete.tombstone.handling.mode=rewrite",
                )
        if given is not None and isinstance(payload, dict):
            image = payload.get("after") or payload.get("before") if enveloped else payload
            fields = {f["field"] for f in value_struct(schema).get("fields", [])}
            unknown = sorted(set(image or {}) - fields)
            if unknown:
                return _fail(
                    f"{where}: column(s) {', '.join(unknown)} not in --kafka-value-schema-file",
                    "add them to the file (a column added at the source)",
                )
    kind = "Debezium envelopes" if enveloped else "rows flattened by ExtractNewRecordState"
    how = "embedded schemas" if given is None else "the schema of --kafka-value-schema-file"
    return _ok(f"{len(messages)} newest message(s): JSON {kind} with {how}")


def check_json_converter(ctx: _Context) -> _Outcome:
    config = ctx.connector().config
    converter = config.get("value.converter")
    if converter is None:
        return _warn(
            "value.converter not set on the connector (the worker's, which the REST API does not show)",
            f"set value.converter={_JSON_CONVERTER} on the connector",
        )
    if converter != _JSON_CONVERTER:
        return _fail(f"value.converter is {converter}, not {_JSON_CONVERTER}", "use --kafka-value-format avro")
    embedded = config.get("value.converter.schemas.enable", "true").lower() == "true"
    if embedded == bool(ctx.config.kafka_value_schema_file):
        have = "on" if embedded else "off"
        return _fail(
            f"value.converter.schemas.enable is {have}, and --kafka-value-schema-file is "
            f"{'given' if ctx.config.kafka_value_schema_file else 'not given'}",
            "give the schema file exactly when the connector writes no schemas",
        )
    if config.get("value.converter.decimal.format", "BASE64").upper() != "BASE64":
        return _fail(
            "value.converter.decimal.format is NUMERIC: hudi-cdc reads decimals as JsonConverter's default BASE64",
            "drop value.converter.decimal.format (or set BASE64)",
        )
    return _ok(f"JsonConverter, schemas {'embedded' if embedded else 'off'}, decimals as BASE64")
