"""The Kafka source's planning and checkpoints, without a broker; the registry client's failures."""

from __future__ import annotations

import socket
import time

import pytest

from hudi_cdc.errors import CheckpointError, ConfigError, SourceError, TransientError
from hudi_cdc.sources.kafka import OffsetRange, end_offsets, parse_kafka_checkpoint, plan_ranges, request_timeout_s
from hudi_cdc.sources.registry import SchemaRegistry, SchemaRegistryUnavailable, redact_url


def _plan(watermarks, checkpoint=None, limit=None, start="earliest", allow=False):  # noqa: ANN001, ANN202
    return plan_ranges(watermarks, checkpoint, limit=limit, start_when_new=start, allow_data_loss=allow, topic="t")


def test_first_run_reads_from_earliest_or_latest() -> None:
    marks = {0: (5, 100), 1: (0, 10)}
    assert _plan(marks) == [OffsetRange(0, 5, 100), OffsetRange(1, 0, 10)]
    assert _plan(marks, start="latest") == [OffsetRange(0, 100, 100), OffsetRange(1, 10, 10)]


def test_resume_from_checkpoint_and_new_partitions_start_at_earliest() -> None:
    checkpoint = {"kind": "kafka/v1", "topic": "t", "offsets": {"0": 40}}
    assert _plan({0: (5, 100), 1: (3, 9)}, checkpoint) == [OffsetRange(0, 40, 100), OffsetRange(1, 3, 9)]


def test_limit_is_shared_across_partitions() -> None:
    ranges = _plan({0: (0, 1000), 1: (0, 1000), 2: (0, 3)}, limit=300)
    assert sum(r.count for r in ranges) == 300
    assert ranges[2] == OffsetRange(2, 0, 3)  # a small partition is drained, the rest share the limit
    assert abs(ranges[0].count - ranges[1].count) <= 1


def test_offsets_out_of_range_mean_data_loss() -> None:
    checkpoint = {"kind": "kafka/v1", "topic": "t", "offsets": {"0": 2}}
    with pytest.raises(
        SourceError,
        match=r"t-0: checkpoint offset 2 is before the oldest retained.*data was lost upstream.*--allow-data-loss",
    ):
        _plan({0: (50, 100)}, checkpoint)
    assert _plan({0: (50, 100)}, checkpoint, allow=True) == [OffsetRange(0, 50, 100)]


def test_checkpoint_forms() -> None:
    assert parse_kafka_checkpoint("t,0:12,1:40", "t")["offsets"] == {"0": 12, "1": 40}
    assert parse_kafka_checkpoint('{"kind": "kafka/v1", "topic": "t", "offsets": {"0": 3}}', "t")["offsets"] == {"0": 3}
    assert parse_kafka_checkpoint("earliest", "t")["start"] == "earliest"
    with pytest.raises(CheckpointError, match="for topic 'other'"):
        parse_kafka_checkpoint("other,0:1", "t")
    with pytest.raises(CheckpointError, match="not a Kafka checkpoint"):
        parse_kafka_checkpoint('{"kind": "files/v1"}', "t")


def test_registry_unreachable_is_transient_and_hides_credentials() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    registry = SchemaRegistry(f"http://user:s3cret@127.0.0.1:{port}", timeout_s=2)
    assert "s3cret" not in repr(registry)
    with pytest.raises(SchemaRegistryUnavailable) as failure:
        registry.schema(1)
    assert failure.value.transient and "s3cret" not in str(failure.value) and "unreachable" in str(failure.value)
    assert redact_url("http://u:p@h:1/x") == "http://u:***@h:1/x"


def test_a_schema_id_is_fetched_once_per_process_and_credentials() -> None:
    """A continuous run makes a registry client per round: the schema of an id is asked for once, not every round."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    asked: list[tuple[str, str | None]] = []

    class Registry(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            asked.append((self.path, self.headers.get("Authorization")))
            schema = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "long"}]}
            body = json.dumps({"schema": json.dumps(schema)}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Registry)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        first = SchemaRegistry(url).schema(7)
        first["fields"].clear()  # a caller's change stays its own
        again = SchemaRegistry(url).schema(7)
        assert again["fields"] == [{"name": "a", "type": "long"}]
        assert asked == [("/schemas/ids/7", None)]
        SchemaRegistry(url, basic_auth="u:p").schema(7)  # another user may not be allowed to read it: asked again
        SchemaRegistry(url).schema(8)
        assert [path for path, _ in asked] == ["/schemas/ids/7", "/schemas/ids/7", "/schemas/ids/8"]
        assert asked[1][1] is not None and asked[1][1].startswith("Basic ")
    finally:
        server.shutdown()


def test_a_dead_broker_fails_the_round_within_the_clients_socket_timeout() -> None:
    assert request_timeout_s({}) == 15.0
    assert request_timeout_s({"socket.timeout.ms": "2500"}) == 2.5
    with pytest.raises(ConfigError, match=r"kafka\.socket\.timeout\.ms='soon'"):
        request_timeout_s({"socket.timeout.ms": "soon"})
    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    started = time.monotonic()
    with pytest.raises(TransientError, match=f"cannot reach Kafka at 127.0.0.1:{port}"):
        end_offsets(f"127.0.0.1:{port}", ["t"], {"socket.timeout.ms": "1500"})
    assert time.monotonic() - started < 10  # not the 15 s default
