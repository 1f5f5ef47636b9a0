"""The tests' wait for a connector's stream, against the stack's Kafka: a topic another writer keeps moving
(a workload still running) never stands still, so only the ``live`` wait may end; and only this call's mark,
not another process's, says the changes before it are published."""

from __future__ import annotations

import itertools
import threading
import time
import uuid

import pytest
from confluent_kafka import Producer

from hudi_cdc.console import kafka_logger
from hudi_cdc.testing.kafka import Framer, create_topic, end_offsets, produce, record_key, wait_until_published
from tests.stack.conftest import BOOTSTRAP

# A marks table's key as the stack's connector writes it: one bigint column, Avro in the Confluent frame.
_KEY = Framer(7, {"type": "record", "name": "Key", "fields": [{"name": "id", "type": "long"}]})
_IDS = itertools.count(1)


def _marker(marks: str):  # noqa: ANN202
    def mark() -> int:
        key = next(_IDS)
        produce(BOOTSTRAP, marks, [(_KEY({"id": key}), b"mark", 0)])
        return key

    return mark


@pytest.mark.parametrize("key", [0, 1, -1, 63, 64, -65, 2**31 - 1, 2**62, -(2**63)])
def test_a_record_keys_integer_is_read_back(key: int) -> None:
    assert record_key(_KEY({"id": key})) == key
    as_int = Framer(3, {"type": "record", "name": "K", "fields": [{"name": "id", "type": "int"}]})
    if -(2**31) <= key < 2**31:
        assert record_key(as_int({"id": key})) == key


def test_a_key_framed_otherwise_is_none() -> None:
    assert record_key(None) is None
    assert record_key(b"") is None
    assert record_key(b"plain text key") is None
    assert record_key(_KEY({"id": 5})[:5]) is None  # the frame alone


def test_a_live_wait_ends_on_the_mark_while_a_quiet_one_waits_for_silence() -> None:
    topic, marks = f"live_{uuid.uuid4().hex[:8]}", f"marks_{uuid.uuid4().hex[:8]}"
    for name in (topic, marks):
        create_topic(BOOTSTRAP, name)
    stop = threading.Event()

    def keep_writing() -> None:  # a record every 50 ms, as tests/stack/test_repair.py's workload does
        producer = Producer({"bootstrap.servers": BOOTSTRAP, "logger": kafka_logger()})
        while not stop.wait(0.05):
            producer.produce(topic, value=b"x", partition=0)
            producer.flush(10)

    writer = threading.Thread(target=keep_writing, daemon=True)
    writer.start()
    try:
        mark = _marker(marks)
        before = end_offsets(BOOTSTRAP, [topic])[(topic, 0)]
        live = wait_until_published(BOOTSTRAP, [topic], mark, marks, live=True, timeout_s=30)
        assert live[(topic, 0)] >= before  # everything before the mark, and whatever came since
        # Two seconds without a write would be needed to end it: far beyond any pause of a loaded machine.
        with pytest.raises(TimeoutError, match="did not move past"):
            wait_until_published(BOOTSTRAP, [topic], mark, marks, settle_s=2.0, timeout_s=8)
    finally:
        stop.set()
        writer.join()
    assert wait_until_published(BOOTSTRAP, [topic], mark, marks, timeout_s=30) == end_offsets(BOOTSTRAP, [topic])


def test_another_processes_mark_does_not_end_the_wait() -> None:
    # Another test's mark, committed before this one's changes, reaches the topic after the wait began:
    # only this call's own mark, a second later, may end it.
    topic, marks = f"quiet_{uuid.uuid4().hex[:8]}", f"marks_{uuid.uuid4().hex[:8]}"
    for name in (topic, marks):
        create_topic(BOOTSTRAP, name)
    produce(BOOTSTRAP, topic, [(None, b"x", 0)])
    own = next(_IDS)
    later = threading.Timer(1.5, lambda: produce(BOOTSTRAP, marks, [(_KEY({"id": own}), b"mark", 0)]))

    def mark() -> int:
        produce(BOOTSTRAP, marks, [(_KEY({"id": next(_IDS)}), b"theirs", 0)])
        later.start()
        return own

    started = time.monotonic()
    try:
        ended = wait_until_published(BOOTSTRAP, [topic], mark, marks, timeout_s=30)
        waited = time.monotonic() - started
    finally:
        later.join()
    assert waited >= 1.5
    assert ended == end_offsets(BOOTSTRAP, [topic])


def test_a_mark_that_makes_its_topic_is_found() -> None:
    topic, marks = f"quiet_{uuid.uuid4().hex[:8]}", f"marks_{uuid.uuid4().hex[:8]}"  # marks: not made yet
    create_topic(BOOTSTRAP, topic)

    def mark() -> int:
        create_topic(BOOTSTRAP, marks)  # as the connector's first mark makes its topic
        return _marker(marks)()

    assert wait_until_published(BOOTSTRAP, [topic], mark, marks, since={}, timeout_s=30) == {(topic, 0): 0}
