"""Property: the hash-based per-key pick (``jars/pick``) gives exactly what the sort-based one gives.

Hypothesis draws random batches for every flavor's positions (Postgres LSNs, MySQL binlog
file/pos/row, JDBC cursors, Oracle SCNs, SQL Server LSNs) and every source's arrival (files,
Kafka, JDBC): few keys and few distinct positions, so that source orders tie and arrival decides;
snapshot reads, deletes, NULLs, TOAST placeholders in strings and arrays, events whose position
is missing (an error) and events with a decode error. ``_per_key`` must return the same rows with
either pick, with and without quarantine, with and without a map column (which the sort-based pick
cannot order, so it takes ``max_by`` there). Spark, no Hudi.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from payloads import JdbcPolicy, MySqlPolicy, OraclePolicy, PostgresPolicy, SqlServerPolicy
from payloads.base import (
    ARRIVAL_COLUMN,
    ERROR_COLUMN,
    ORIGIN_COLUMN,
    MergePolicy,
    _Events,
    _hash_pick_loadable,
    _per_key,
)

PLACEHOLDER = "__debezium_unavailable_value"
POLICIES = {
    "postgres": PostgresPolicy,
    "mysql": MySqlPolicy,
    "jdbc": JdbcPolicy,
    "oracle": OraclePolicy,
    "sqlserver": SqlServerPolicy,
}
SOURCE_META = {
    "postgres": "_source_lsn bigint, _source_txid string",
    "mysql": "_source_file string, _source_pos bigint, _source_row int, _source_txid string",
    "jdbc": "_source_cursor_ts bigint, _source_cursor_id bigint",
    "oracle": "_source_scn string, _source_commit_scn string, _source_tx_seq bigint, _source_ssn bigint, "
    "_source_txid string",
    "sqlserver": "_source_commit_lsn string, _source_change_lsn string, _source_event_serial_no bigint",
}
ARRIVALS = {  # as the files, Kafka and JDBC sources set it
    "files": "struct<file:string, block:bigint, row:bigint>",
    "kafka": "struct<partition:int, offset:bigint>",
    "jdbc": "struct<file:string, row:bigint>",
}
SMALL = st.integers(0, 3)  # few distinct values: source orders tie often
TEXT = st.sampled_from([None, PLACEHOLDER, "a", "b", "ü", "\U0001f600"])


def _lsn(n: int) -> str:
    return f"{n >> 48:08x}:{(n >> 16) & 0xFFFFFFFF:08x}:{n & 0xFFFF:04x}"


def _meta(flavor: str) -> st.SearchStrategy[tuple]:
    """One event's source position columns, missing now and then (then the event is an error)."""
    if flavor == "postgres":
        return st.tuples(st.one_of(st.none(), SMALL, st.just(-1)), st.just("7"))
    if flavor == "mysql":
        files = st.sampled_from([None, "mysql-bin.000009", "mysql-bin.000010", "binlog"])
        return st.tuples(files, st.one_of(st.none(), SMALL), st.one_of(st.none(), SMALL), st.just(None))
    if flavor == "jdbc":
        return st.tuples(st.one_of(st.none(), st.integers(-2, 2)), st.one_of(st.none(), SMALL))
    if flavor == "oracle":
        scn = st.one_of(st.none(), SMALL.map(str))
        return st.tuples(scn, scn, st.one_of(st.none(), SMALL), st.one_of(st.none(), SMALL), st.just(None))
    lsn = st.one_of(st.none(), SMALL.map(_lsn))
    return st.tuples(lsn, lsn, st.one_of(st.none(), SMALL))


def _event(flavor: str) -> st.SearchStrategy[tuple]:
    return st.tuples(
        st.integers(0, 4),  # the key
        st.sampled_from(["c", "u", "u", "d", "r"]),
        _meta(flavor),
        TEXT,
        TEXT,
        st.one_of(st.none(), st.lists(TEXT, max_size=2)),
        st.one_of(st.none(), st.integers(-5, 5)),
        st.sampled_from([None, None, None, "the Avro payload does not decode"]),
        st.sampled_from(["s3://b/events/1.avro", "s3://b/events/2.avro", "s3://b/é.avro"]),
    )


def _batch(spark, flavor: str, arrival: str, events: list[tuple], with_map: bool) -> Any:  # noqa: ANN001, ANN401
    """The events as a flattened batch of ``flavor`` (positions ordered by its policy)."""
    from pyspark.sql import functions as F

    policy = POLICIES[flavor](toast_placeholder=PLACEHOLDER)
    rows = []
    for i, (key, op, meta, name, bio, tags, amount, error, file) in enumerate(events):
        arrived = {"files": (file, 0, i), "kafka": (i % 2, i), "jdbc": (file, i)}[arrival]
        attrs = {"k": name or "-"} if with_map else None
        rows.append((key, op, *meta, name, bio, tags, amount, attrs, error, file, arrived))
    ddl = (
        f"id bigint, _source_op string, {SOURCE_META[flavor]}, name string, bio string, tags array<string>, "
        f"amount bigint, attrs map<string,string>, {ERROR_COLUMN} string, {ORIGIN_COLUMN} string, "
        f"{ARRIVAL_COLUMN} {ARRIVALS[arrival]}"
    )
    frame = spark.createDataFrame(rows, ddl).withColumn("_hoodie_is_deleted", F.col("_source_op") == F.lit("d"))
    if not with_map:
        frame = frame.drop("attrs")
    return policy, policy.with_order(frame)


def _picked(policy: MergePolicy, flat: Any, by_hash: bool, quarantine: bool) -> list:  # noqa: ANN401
    events = _Events.of(policy, flat, ["id"], quarantine=quarantine)
    return sorted((r.asDict(recursive=True) for r in _per_key(events, by_hash=by_hash).collect()), key=repr)


def test_the_pick_jar_is_on_the_sessions_classpath(spark) -> None:
    # `make jars` builds it into .jars/hudi; without it every round would take the sort-based fallback.
    assert _hash_pick_loadable(spark)


SETTINGS = settings(
    max_examples=8,  # of up to six streams each: a Spark job pair per example, not per stream
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)


@pytest.mark.parametrize("flavor", POLICIES)
@SETTINGS
@given(data=st.data(), arrival=st.sampled_from(sorted(ARRIVALS)), quarantine=st.booleans(), with_map=st.booleans())
def test_hash_pick_equals_sort_pick(spark, flavor: str, data, arrival: str, quarantine: bool, with_map: bool) -> None:  # noqa: ANN001
    # The pick is per key: streams on keys of their own share a batch as if each had one to itself.
    streams = data.draw(st.lists(st.lists(_event(flavor), min_size=1, max_size=40), min_size=1, max_size=6))
    events = [(key + 10 * n, *rest) for n, stream in enumerate(streams) for key, *rest in stream]
    policy, flat = _batch(spark, flavor, arrival, events, with_map)
    assert _picked(policy, flat, True, quarantine) == _picked(policy, flat, False, quarantine)
