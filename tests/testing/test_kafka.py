"""The tests' wait for a connector's stream, against the stack's Kafka: a topic another writer keeps moving
(a workload still running) never stands still, so only the ``live`` wait may end."""

from __future__ import annotations

import threading
import uuid

import pytest
from confluent_kafka import Producer

from hudi_cdc.console import kafka_logger
from hudi_cdc.testing.kafka import create_topic, end_offsets, produce, wait_until_published
from tests.stack.conftest import BOOTSTRAP

pytestmark = [pytest.mark.stack, pytest.mark.kafka]


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
        mark = lambda: produce(BOOTSTRAP, marks, [(None, b"mark", 0)])  # noqa: E731
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
