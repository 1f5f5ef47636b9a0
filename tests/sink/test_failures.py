"""A failed Hudi write is transient only while a retry may help: by its exception, else until it repeats."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from py4j.protocol import Py4JJavaError

from hudi_cdc._jvm import jvm
from hudi_cdc.sink.failures import failure_kind, failure_signature
from hudi_cdc.testing import envelope_schema, pg_event, write_events
from tests.support import CUSTOMERS, commit_instants, ingest_args, read_rows, run_cli

pytestmark = pytest.mark.hudi

SCHEMA = envelope_schema("customers", CUSTOMERS)
NO_SUCH_MERGER = "hoodie.write.record.merge.custom.implementation.classes=com.example.NoSuchMerger"


def _thrown(call) -> Py4JJavaError:  # noqa: ANN001
    with pytest.raises(Py4JJavaError) as raised:
        call()
    return raised.value


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_the_kind_of_real_java_failures(spark) -> None:  # noqa: ANN001
    gateway = jvm(spark)
    negative = _thrown(lambda: gateway.java.lang.reflect.Array.newInstance(gateway.java.lang.Integer.TYPE, -5))
    refused = _thrown(lambda: gateway.java.net.Socket("127.0.0.1", _closed_port()))
    missing = _thrown(lambda: gateway.java.io.FileInputStream("/nonexistent/hudi-cdc"))
    assert failure_kind(negative) == "terminal"
    assert failure_kind(refused) == "transient"
    assert failure_kind(missing) is None  # the exception cannot tell: repetition decides
    assert failure_kind(ValueError("not from the JVM")) is None
    again = _thrown(lambda: gateway.java.lang.reflect.Array.newInstance(gateway.java.lang.Integer.TYPE, -7))
    assert failure_signature(negative) == failure_signature(again)  # the message's number differs
    assert failure_signature(negative).startswith("java.lang.NegativeArraySizeException at ")
    assert failure_signature(negative) != failure_signature(missing)


def _table_with_a_pending_batch(tmp_path: Path) -> tuple[Path, str]:
    source, base = tmp_path / "events", str(tmp_path / "table")
    write_events(source / "a.avro", SCHEMA, [pg_event("c", lsn=1, after={"id": 1, "name": "a", "bio": "b"})])
    assert run_cli(*ingest_args(str(source), base)).exit_code == 0
    write_events(source / "b.avro", SCHEMA, [pg_event("u", lsn=2, after={"id": 1, "name": "a2", "bio": "b"})])
    return source, base


def test_a_write_failing_by_its_nature_is_terminal_at_once(spark, tmp_path: Path) -> None:  # noqa: ANN001
    source, base = _table_with_a_pending_batch(tmp_path)
    commits = commit_instants(spark, base)
    done = run_cli(*ingest_args(str(source), base), "--hoodie-conf", "hoodie.parquet.compression.codec=nosuchcodec")
    assert done.exit_code == 1, done.output
    assert done.output.startswith(
        f"hudi-cdc: error: writing Hudi table {base} failed: java.lang.IllegalArgumentException"
    )
    assert "a retry fails the same way" in done.output
    assert commit_instants(spark, base) == commits and read_rows(spark, base, ["id", "name"]) == [(1, "a")]


def test_a_failure_of_unknown_kind_is_terminal_when_it_repeats(spark, tmp_path: Path) -> None:  # noqa: ANN001
    source, base = _table_with_a_pending_batch(tmp_path)
    memory = Path(base) / ".hoodie" / ".aux" / "hudi_cdc" / "write-failure.json"
    first = run_cli(*ingest_args(str(source), base), "--hoodie-conf", NO_SUCH_MERGER)
    assert first.exit_code == 75, first.output  # a class missing now may be there on the next try
    assert "hudi-cdc: transient:" in first.output and "com.example.NoSuchMerger" in first.output
    assert memory.exists()
    second = run_cli(*ingest_args(str(source), base), "--hoodie-conf", NO_SUCH_MERGER)
    assert second.exit_code == 1, second.output
    assert "the same failure as the attempt at" in second.output and "on the same batch" in second.output
    assert read_rows(spark, base, ["id", "name"]) == [(1, "a")]  # nothing half-committed

    fixed = run_cli(*ingest_args(str(source), base))
    assert fixed.exit_code == 0, fixed.output
    assert read_rows(spark, base, ["id", "name"]) == [(1, "a2")] and not memory.exists()
    # A failure of another batch is a first failure again, not a repetition.
    write_events(source / "c.avro", SCHEMA, [pg_event("u", lsn=3, after={"id": 1, "name": "a3", "bio": "b"})])
    assert run_cli(*ingest_args(str(source), base), "--hoodie-conf", NO_SUCH_MERGER).exit_code == 75
