"""A small Kafka round's messages, read by the driver, decoded there by fastavro as the Spark plan decodes them.

``KafkaSource`` reads a round of at most ``kafka_driver_read_max_messages`` messages with the process's own
consumer and, when the subject's versions resolve to one reader schema, keeps those messages and the writer
schemas on the batch part (``BatchPart.messages``, ``BatchPart.writer_schemas``): no further Kafka or
registry request is needed to decode them here. :func:`decode_in_driver` reads each one as the single-pass
decode (``KafkaSource._single_pass``: ``from_avro`` with the message's writer schema, its ``avroSchema`` the
part's reader schema) does: the Confluent wire format (magic byte 0, the 4-byte big-endian schema id, the
Avro body), the body read with its writer schema resolved to the reader schema, the arrival ``(partition,
offset)``; a Kafka tombstone (Debezium's null value after a delete) it drops, as that decode does. Whatever
that decode would not give as a plain envelope it declines, naming why, and the Spark plan takes the round:
a message not in the wire format, a schema id that is no version of the subject, a payload fastavro does not
read whole, a column whose type the reader schema promotes.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hudi_cdc.envelope.events import BatchPart

__all__ = ["decode_in_driver"]

_HEADER = 5  # magic byte 0, then the 4-byte schema id


def decode_in_driver(part: BatchPart, max_events: int) -> tuple[list[dict[str, Any]], list[tuple[int, int]]] | str:
    """The part's messages decoded by fastavro in the driver, ordered by their arrival ``(partition, offset)`` as
    the Spark plan orders its arrival column, with those arrivals; or why not."""
    import fastavro

    if part.messages is None or part.avro_schema is None:
        return "the round's messages were not read by the driver"
    if len(part.messages) > max_events:
        return f"more than {max_events} events"
    reader = fastavro.parse_schema(part.avro_schema)
    writers: dict[int, Any] = {}
    records: list[dict[str, Any]] = []
    arrivals: list[tuple[int, int]] = []
    for _, value, partition, offset in sorted(part.messages, key=lambda m: (m[2], m[3])):
        where = f"partition {partition} offset {offset}"
        if value is None:  # Debezium's tombstone after a delete: the single pass drops it too (no event)
            continue
        if len(value) < _HEADER or value[0] != 0:
            return f"a message not in the Confluent wire format at {where}"
        schema_id = int.from_bytes(value[1:_HEADER], "big")
        if schema_id not in writers:
            schema = part.writer_schemas.get(schema_id)
            if schema is None:
                return f"schema id {schema_id} at {where} is no version of the subject"
            why = _promoted(schema, part.avro_schema)
            if why is not None:
                return why
            writers[schema_id] = fastavro.parse_schema(schema)
        body = io.BytesIO(value[_HEADER:])
        try:
            record = fastavro.schemaless_reader(body, writers[schema_id], reader)
        except Exception as exc:  # noqa: BLE001 - the Spark plan reports (or quarantines) the message
            return f"a payload that does not decode with schema id {schema_id} at {where} ({type(exc).__name__})"
        if body.tell() != len(value) - _HEADER:  # Avro's Java reader ignores what follows; not guessed here
            return f"a payload with bytes after its record at {where}"
        records.append(record)  # type: ignore[arg-type]
        arrivals.append((partition, offset))
    return records, arrivals


def _promoted(writer: dict[str, Any], reader: dict[str, Any]) -> str | None:
    """Why resolving ``writer`` to ``reader`` is more than fields added or left out (a type promoted, a union
    changed, a record renamed), for the envelope's records; or None. The rest is left to Spark's Avro reader."""
    import fastavro

    expanded = [fastavro.parse_schema(s, expand=True, _write_hint=False) for s in (writer, reader)]
    theirs, ours = ({f["name"]: f["type"] for f in s.get("fields", [])} for s in expanded)  # type: ignore[union-attr]
    for name in ("before", "after", "source", "op"):
        if name not in theirs or name not in ours:
            return f"an envelope without {name!r} in a writer or the reader schema"
        if name == "op":
            if _strip(theirs[name]) != _strip(ours[name]):
                return "a writer schema whose op field differs from the reader's"
            continue
        w_fields, r_fields = _record(theirs[name]), _record(ours[name])
        if w_fields is None or r_fields is None:
            return f"a writer schema whose {name!r} is not an optional record"
        shared = w_fields.keys() & r_fields.keys()
        changed = sorted(c for c in shared if _strip(w_fields[c]) != _strip(r_fields[c]))
        if changed:
            return f"a writer schema whose {name}.{changed[0]} the reader schema reads as another type"
    return None


def _record(avro_type: Any) -> dict[str, Any] | None:  # noqa: ANN401 - an Avro schema
    branches = avro_type if isinstance(avro_type, list) else [avro_type]
    records = [b for b in branches if isinstance(b, dict) and b.get("type") == "record"]
    return {f["name"]: f["type"] for f in records[0]["fields"]} if len(records) == 1 else None


def _strip(avro_type: Any) -> Any:  # noqa: ANN401 - an Avro schema
    """A type as resolution sees it: its branches and their names and kinds, no documentation or properties."""
    if isinstance(avro_type, list):
        return [_strip(b) for b in avro_type]
    if isinstance(avro_type, dict):
        kept = {k: v for k, v in avro_type.items() if k in ("type", "name", "logicalType", "precision", "scale")}
        if "fields" in avro_type:
            kept["fields"] = [(f["name"], _strip(f["type"])) for f in avro_type["fields"]]
        if "items" in avro_type:
            kept["items"] = _strip(avro_type["items"])
        if "values" in avro_type:
            kept["values"] = _strip(avro_type["values"])
        if "symbols" in avro_type:
            kept["symbols"] = list(avro_type["symbols"])
        return kept
    return avro_type
