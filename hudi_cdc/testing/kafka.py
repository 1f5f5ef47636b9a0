"""Kafka-side helpers for tests, the demo and the benchmarks: Confluent-framed Avro messages and topic state.

Messages are framed as Confluent serializers (and Apicurio's converter with the
4-byte id handler) write them: magic byte 0, the 4-byte big-endian schema id,
then the Avro body. Needs a broker (confluent-kafka) and a Confluent-compatible
registry for ``register_schema``.
"""

from __future__ import annotations

import io
import json
import struct
import time
import urllib.request
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from hudi_cdc.console import kafka_logger
from hudi_cdc.sources.kafka import end_offsets, new_consumer

__all__ = [
    "Framer",
    "create_topic",
    "end_offsets",
    "produce",
    "record_key",
    "register_schema",
    "wait_until_published",
    "wait_until_quiet",
]


def register_schema(registry_url: str, subject: str, schema: Mapping[str, Any]) -> int:
    """Register ``schema`` under ``subject`` (idempotent) and return its id."""
    body = json.dumps({"schema": json.dumps(schema), "schemaType": "AVRO"}).encode()
    request = urllib.request.Request(
        f"{registry_url.rstrip('/')}/subjects/{subject}/versions",
        data=body,
        headers={"Content-Type": "application/vnd.schemaregistry.v1+json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return int(json.loads(response.read())["id"])


class Framer:
    """Encodes records of one writer schema in the Confluent wire format."""

    def __init__(self, schema_id: int, schema: Mapping[str, Any]) -> None:
        import fastavro

        self._header = struct.pack(">bI", 0, schema_id)
        self._schema = fastavro.parse_schema(dict(schema))

    def __call__(self, record: Mapping[str, Any]) -> bytes:
        import fastavro

        out = io.BytesIO()
        out.write(self._header)
        fastavro.schemaless_writer(out, self._schema, dict(record))
        return out.getvalue()


def create_topic(bootstrap: str, topic: str, *, partitions: int = 1, config: Mapping[str, str] | None = None) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    conf: dict[str, Any] = {"bootstrap.servers": bootstrap, "logger": kafka_logger()}  # the stubs want scalars only
    admin = AdminClient(conf)
    futures = admin.create_topics([NewTopic(topic, partitions, 1, config=dict(config or {}))])
    futures[topic].result(30)


def produce(bootstrap: str, topic: str, messages: Iterable[tuple[bytes | None, bytes | None, int]]) -> int:
    """Produce ``(key, value, partition)`` triples (``value`` None is a tombstone); returns the count."""
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 20,
            "batch.num.messages": 10000,
            "compression.type": "lz4",
            "logger": kafka_logger(),
        }
    )
    count = 0
    for key, value, partition in messages:
        while True:
            try:
                producer.produce(topic, value=value, key=key, partition=partition)
                break
            except BufferError:
                producer.poll(0.1)
        count += 1
        if count % 10000 == 0:
            producer.poll(0)
    left = producer.flush(60)
    if left:
        raise RuntimeError(f"{left} message(s) to {topic} were not acknowledged")
    return count


def wait_until_quiet(
    bootstrap: str,
    topics: Sequence[str],
    *,
    since: Mapping[tuple[str, int], int] | None = None,
    quiet_s: float = 3.0,
    timeout_s: float = 120.0,
) -> dict[tuple[str, int], int]:
    """Wait until the topics' end offsets moved past ``since`` and then stood still for ``quiet_s``.

    Debezium publishes a committed transaction a moment after the commit; this
    is how a test knows the change stream has caught up with the database.
    """
    deadline = time.monotonic() + timeout_s
    last = end_offsets(bootstrap, topics)
    still_since = time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.5)
        now = end_offsets(bootstrap, topics)
        moved = since is None or any(now.get(k, 0) > v for k, v in since.items()) or len(now) > len(since)
        if now != last:
            last, still_since = now, time.monotonic()
        elif moved and time.monotonic() - still_since >= quiet_s:
            return now
    raise TimeoutError(f"topics {list(topics)} did not settle within {timeout_s:.0f}s (end offsets {last})")


def wait_until_published(
    bootstrap: str,
    topics: Sequence[str],
    mark: Callable[[], int],
    marks_topic: str,
    *,
    since: Mapping[tuple[str, int], int] | None = None,
    settle_s: float = 0.5,
    live: bool = False,
    timeout_s: float = 120.0,
) -> dict[tuple[str, int], int]:
    """Wait until a Debezium connector has published every change committed before this call.

    ``mark`` commits a row into a table the connector captures, whose topic is ``marks_topic``, and
    returns the row's key (the key's one integer field). The connector reads the log in commit order and
    Kafka Connect sends a task's records in order (one producer, one request in flight), so once that row
    is on its topic the changes before it are on theirs. It is found by its key: other tests mark the same
    table at the same time, and a mark of theirs committed before the changes may reach the topic after
    this call began. A request holds at most ``max.request.size`` of records: ``settle_s`` of end offsets
    standing still covers a rest sent in the next one. ``since``: the topics must also have moved past it
    (a new topic: ``{}``). No fixed wait for silence (:func:`wait_until_quiet`), so a test waits for as
    long as the connector takes, not a guess. ``live``: other writers keep the topics moving, so they
    never stand still; the rest of a request is waited for by ``settle_s`` after the mark alone.
    """
    deadline = time.monotonic() + timeout_s
    start = end_offsets(bootstrap, [marks_topic])
    _wait_for_key(bootstrap, marks_topic, start, mark(), deadline)
    now = end_offsets(bootstrap, topics)
    while True:
        time.sleep(settle_s)
        later = end_offsets(bootstrap, topics)
        moved = since is None or any(later.get(k, 0) > v for k, v in since.items()) or len(later) > len(since)
        if (live or later == now) and moved:
            return later
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"topics {list(topics)} did not move past {since} within {timeout_s:.0f}s (end offsets {later})"
            )
        now = later


def _wait_for_key(bootstrap: str, topic: str, start: Mapping[tuple[str, int], int], key: int, deadline: float) -> None:
    """Read ``topic`` from ``start`` (its end offsets before the mark; none: a topic the mark creates) until
    the record whose key is ``key`` is on it."""
    from confluent_kafka import TopicPartition

    consumer = new_consumer(bootstrap, {}, group_id="hudi-cdc-testing-marks")
    try:
        assigned = False
        while time.monotonic() <= deadline:
            if not assigned:
                partitions = end_offsets(bootstrap, [topic])
                if not partitions:  # not there until the connector publishes the first mark
                    time.sleep(0.1)
                    continue
                consumer.assign([TopicPartition(t, p, start.get((t, p), 0)) for t, p in partitions])
                assigned = True
            message = consumer.poll(0.2)
            if message is not None and message.error() is None and record_key(message.key()) == key:
                return
    finally:
        consumer.close()
    raise TimeoutError(f"the mark {key} did not reach {topic} in time: is the connector running?")


def record_key(key: bytes | None) -> int | None:
    """The first field of a Confluent-framed Avro record key, read as an int or long (a zigzag varint); None
    for a key framed otherwise."""
    if not key or len(key) < 6 or key[0] != 0:
        return None
    value = shift = 0
    for byte in key[5:]:
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (value >> 1) ^ -(value & 1)
        shift += 7
    return None
