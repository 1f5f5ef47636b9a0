"""The Kafka source against a real broker and a real Confluent-compatible registry (Apicurio's ccompat API).

Each test makes its own topic, registers Debezium envelope schemas and produces
Confluent-framed messages, then runs `hudi-cdc ingest` and reads the table back.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from hudi_cdc.testing import envelope_schema, pg_event
from hudi_cdc.testing.kafka import Framer, create_topic, produce, register_schema
from tests.stack.conftest import BOOTSTRAP, REGISTRY
from tests.support import PLACEHOLDER, apply_events, commit_instants, read_rows, run_cli

pytestmark = [pytest.mark.kafka, pytest.mark.hudi]

V1 = [("id", "long"), ("name", ["null", "string"])]
V2 = [*V1, ("tier", ["null", "int"])]  # a column added upstream


class Topic:
    """A fresh topic with the value and key schemas registered like Debezium's converter does."""

    def __init__(self, partitions: int = 1) -> None:
        self.name = f"it.t{uuid.uuid4().hex[:10]}.customers"  # Avro names cannot start with a digit
        create_topic(BOOTSTRAP, self.name, partitions=partitions)
        self.partitions = partitions
        key_schema = {
            "type": "record",
            "name": "Key",
            "namespace": self.name,
            "fields": [{"name": "id", "type": "long"}],
        }
        self.key = Framer(register_schema(REGISTRY, f"{self.name}-key", key_schema), key_schema)
        self.values: dict[int, Framer] = {}
        for version, columns in ((1, V1), (2, V2)):
            schema = envelope_schema("customers", columns, schema=self.name.split(".")[1])
            self.values[version] = Framer(register_schema(REGISTRY, f"{self.name}-value", schema), schema)

    def send(self, events: Sequence[dict[str, Any]], *, version: int = 1) -> None:
        def key_of(event: dict[str, Any]) -> int:
            return (event["after"] or event["before"])["id"]

        produce(
            BOOTSTRAP,
            self.name,
            ((self.key({"id": key_of(e)}), self.values[version](e), key_of(e) % self.partitions) for e in events),
        )

    def send_raw(self, messages: Sequence[tuple[int, bytes | None]]) -> None:
        produce(BOOTSTRAP, self.name, ((self.key({"id": k}), v, k % self.partitions) for k, v in messages))


def ingest(topic: Topic, base: str, *extra: str, registry: str = REGISTRY) -> Any:
    return run_cli(
        "--source", "kafka", "--topic", topic.name, "--bootstrap-servers", BOOTSTRAP,
        "--schema-registry-url", registry, "--target-base-path", base, "--target-table", "customers",
        "--json", *extra,
    )  # fmt: skip


def last_result(output: str) -> dict[str, Any]:
    return json.loads([line for line in output.splitlines() if line.startswith("{")][-1])


def row(key: int, name: str | None, **more: Any) -> dict[str, Any]:
    return {"id": key, "name": name, **more}


def test_resumes_at_checkpoint_and_a_tombstone_only_batch_moves_it(spark, tmp_path: Path) -> None:
    topic, base = Topic(), str(tmp_path / "t")
    first = [pg_event("c", lsn=10, after=row(1, "a")), pg_event("c", lsn=20, after=row(2, "b"))]
    topic.send(first)
    assert ingest(topic, base).exit_code == 0
    second = [pg_event("u", lsn=30, after=row(1, "a2")), pg_event("d", lsn=40, before=row(2, None))]
    topic.send(second)
    topic.send_raw([(2, None)])  # Debezium's Kafka tombstone after the delete
    done = ingest(topic, base)
    assert done.exit_code == 0, done.output
    assert last_result(done.output)["checkpoint"]["offsets"] == {"0": 5}
    assert read_rows(spark, base, ["id", "name"]) == [(1, "a2")]

    topic.send_raw([(1, None), (3, None)])
    commits = commit_instants(spark, base)
    done = ingest(topic, base)
    assert done.exit_code == 0, done.output
    assert last_result(done.output)["checkpoint"]["offsets"] == {"0": 7}
    assert len(commit_instants(spark, base)) == len(commits) + 1
    assert read_rows(spark, base, ["id", "name"]) == [(1, "a2")]
    # Nothing new: no commit.
    assert ingest(topic, base).exit_code == 0
    assert len(commit_instants(spark, base)) == len(commits) + 1


def test_partitions_schema_versions_and_source_limit(spark, tmp_path: Path) -> None:
    topic, base = Topic(partitions=3), str(tmp_path / "t")
    old = [pg_event("c", lsn=10 + k, after=row(k, f"n{k}")) for k in range(12)]
    new = [pg_event("u", lsn=100 + k, after=row(k, f"m{k}", tier=k % 4)) for k in range(0, 12, 2)]
    new += [pg_event("d", lsn=200 + k, before=row(k, None, tier=None)) for k in (3, 6)]
    topic.send(old, version=1)
    topic.send(new, version=2)
    rounds = 0
    while True:
        done = ingest(topic, base, "--source-limit", "7")
        assert done.exit_code == 0, done.output
        rounds += 1
        result = last_result(done.output)
        assert result["events"] <= 7
        if sum(result["checkpoint"]["offsets"].values()) == len(old) + len(new):
            break
        assert rounds < 10
    assert rounds >= 3  # 20 messages, at most 7 a round
    expected = apply_events([dict(e, after={**e["after"], "tier": None}) if e["op"] == "c" else e for e in old] + new)
    rows = read_rows(spark, base, ["id", "name", "tier"])
    assert rows == sorted((r["id"], r["name"], r.get("tier")) for r in expected.values())


@pytest.mark.parametrize(
    ("spoil", "named"),
    [
        (lambda good: good[:1] + (987654321).to_bytes(4, "big") + good[5:], "schema id 987654321"),
        (lambda good: good[:12], "does not decode with its writer schema (id"),  # known id, cut-off Avro body
        (lambda good: b"\x7fELF" + bytes(range(256)) * 4, "not in the Confluent wire format"),  # binary garbage
    ],
    ids=["unknown-schema-id", "undecodable-payload", "binary-garbage"],
)
def test_a_bad_message_stops_the_batch_with_its_place(spark, tmp_path: Path, spoil: Any, named: str) -> None:
    topic, base = Topic(), str(tmp_path / "t")
    topic.send([pg_event("c", lsn=10, after=row(1, "a"))])
    assert ingest(topic, base).exit_code == 0
    commits = commit_instants(spark, base)
    good = topic.values[1](pg_event("c", lsn=20, after=row(2, "b")))
    topic.send_raw([(2, spoil(good))])
    done = ingest(topic, base)
    assert done.exit_code == 1
    assert named in done.output and f"{topic.name}-0@1" in done.output
    assert commit_instants(spark, base) == commits


def test_registry_unreachable_is_transient_and_writes_nothing(tmp_path: Path) -> None:
    topic, base = Topic(), tmp_path / "t"
    topic.send([pg_event("c", lsn=10, after=row(1, "a"))])
    done = ingest(topic, str(base), registry="http://user:s3cret@127.0.0.1:9/apis/ccompat/v7")
    assert done.exit_code == 75, done.output
    assert "unreachable" in done.output and "s3cret" not in done.output
    assert not (base / ".hoodie" / "timeline").exists() or not any((base / ".hoodie" / "timeline").glob("*.commit"))


def test_rounds_share_one_planning_consumer(spark, tmp_path: Path) -> None:
    """A round no longer connects to Kafka afresh to plan: each source of the process finds the same consumer."""
    from hudi_cdc.config import load_config
    from hudi_cdc.sources import kafka

    topic, base = Topic(partitions=2), str(tmp_path / "t")
    config = load_config(
        source="kafka", topic=topic.name, bootstrap_servers=BOOTSTRAP, schema_registry_url=REGISTRY,
        target_base_path=base, target_table="customers",
    )  # fmt: skip
    made = []

    def source() -> kafka.KafkaSource:
        made_by = kafka.KafkaSource(spark, config)
        real = made_by._consumer
        made_by._consumer = lambda: made.append(1) or real()  # type: ignore[method-assign]
        return made_by

    topic.send([pg_event("c", lsn=10 + i, after=row(i, "a")) for i in range(5)])
    first = source()._watermarks()
    topic.send([pg_event("u", lsn=20 + i, after=row(i, "b")) for i in range(3)])
    second = source()._watermarks()
    assert sum(high for _, high in first.values()) == 5 and sum(high for _, high in second.values()) == 8
    assert len(made) <= 1  # none if an earlier test of this process already made it


def test_missing_topic_is_named_and_not_created(tmp_path: Path) -> None:
    from confluent_kafka.admin import AdminClient

    name = f"it.{uuid.uuid4().hex[:10]}.missing"
    done = run_cli(
        "--source", "kafka", "--topic", name, "--bootstrap-servers", BOOTSTRAP, "--schema-registry-url", REGISTRY,
        "--target-base-path", str(tmp_path / "t"), "--target-table", "t",
    )  # fmt: skip
    assert done.exit_code == 2  # a configuration error (docs/cli.md)
    assert f"topic {name!r} does not exist" in done.output
    assert name not in AdminClient({"bootstrap.servers": BOOTSTRAP}).list_topics(timeout=10).topics


def test_offsets_past_retention_need_an_explicit_choice(spark, tmp_path: Path) -> None:
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    topic, base = Topic(), str(tmp_path / "t")
    topic.send([pg_event("c", lsn=10 + k, after=row(k, "a")) for k in range(3)])
    assert ingest(topic, base).exit_code == 0  # checkpoint: offset 3
    topic.send([pg_event("u", lsn=100 + k, after=row(k, "b")) for k in range(3)])  # offsets 3..5
    # Retention removes offsets 3 and 4 before the next run.
    admin = AdminClient({"bootstrap.servers": BOOTSTRAP})
    for future in admin.delete_records([TopicPartition(topic.name, 0, 5)]).values():
        future.result(30)
    commits = commit_instants(spark, base)
    done = ingest(topic, base)
    assert done.exit_code == 1
    assert "data was lost upstream" in done.output and "--allow-data-loss" in done.output
    assert commit_instants(spark, base) == commits
    done = ingest(topic, base, "--allow-data-loss")
    assert done.exit_code == 0, done.output
    assert read_rows(spark, base, ["id", "name"]) == [(0, "a"), (1, "a"), (2, "b")]


def test_versions_avro_cannot_resolve_are_decoded_one_by_one(spark, tmp_path: Path) -> None:
    # tier: int, then string. No single Avro reader schema reads both, so the source decodes
    # per writer schema and the evolution rules (here: evolve to text) reconcile the versions.
    topic, base = Topic(), str(tmp_path / "t")
    v3 = envelope_schema("customers", [*V1, ("tier", ["null", "string"])], schema=topic.name.split(".")[1])
    topic.values[3] = Framer(register_schema(REGISTRY, f"{topic.name}-value", v3), v3)
    topic.send(
        [pg_event("c", lsn=10, after=row(1, "a", tier=2)), pg_event("c", lsn=11, after=row(2, "b", tier=3))], version=2
    )
    topic.send([pg_event("u", lsn=20, after=row(2, "b", tier="gold"))], version=3)
    done = ingest(topic, base, "--schema-change-behavior", "evolve")
    assert done.exit_code == 0, done.output
    result = last_result(done.output)
    assert (result["details"]["decode"], result["details"]["writer_schemas"]) == ("per-writer-schema", 2)
    assert read_rows(spark, base, ["id", "name", "tier"]) == [(1, "a", "2"), (2, "b", "gold")]


def test_a_round_never_ends_between_the_halves_of_a_primary_key_change(spark, tmp_path: Path) -> None:
    # UPDATE ... SET id = 2 WHERE id = 1, the name TOASTed and left alone: a delete of 1 and a create of 2 at
    # LSN 20 with Debezium's tombstone between them. Key 1 is created in the same round, so it is never in the
    # table: were the round cut after the delete, the next one could not fill the placeholder.
    topic, base = Topic(), str(tmp_path / "t")
    topic.send([pg_event("c", lsn=10, after=row(1, "long name")), pg_event("d", lsn=20, before=row(1, None))])
    topic.send_raw([(1, None)])
    topic.send([pg_event("c", lsn=20, after=row(2, PLACEHOLDER)), pg_event("c", lsn=30, after=row(3, "c"))])
    done = ingest(topic, base, "--source-limit", "2")  # offsets 0 and 1: the round would end on the delete
    assert done.exit_code == 0, done.output
    assert last_result(done.output)["checkpoint"]["offsets"] == {"0": 4}  # extended over the tombstone and create
    done = ingest(topic, base)
    assert done.exit_code == 0, done.output
    assert read_rows(spark, base, ["id", "name"]) == [(2, "long name"), (3, "c")]


def test_a_topic_of_another_table_is_refused(spark, tmp_path: Path) -> None:
    # The table is keyed by id; the other topic's Debezium key is (order_id, line_no): the wrong --topic.
    mine, base = Topic(), str(tmp_path / "t")
    mine.send([pg_event("c", lsn=10, after=row(1, "a"))])
    assert ingest(mine, base).exit_code == 0
    commits = commit_instants(spark, base)
    other = Topic()
    key = {"type": "record", "name": "Key", "namespace": other.name,
           "fields": [{"name": "order_id", "type": "long"}, {"name": "line_no", "type": "int"}]}  # fmt: skip
    framed_key = Framer(register_schema(REGISTRY, f"{other.name}-key", key), key)({"order_id": 2, "line_no": 1})
    produce(BOOTSTRAP, other.name, [(framed_key, other.values[1](pg_event("c", lsn=20, after=row(2, "b"))), 0)])
    done = ingest(other, base)
    assert done.exit_code == 1 and f"the checkpoint is for topic {mine.name!r}, not {other.name!r}" in done.output
    # Starting over on purpose does not get past the key: the table is keyed by id, the topic by order_id, line_no.
    done = ingest(other, base, "--checkpoint", "earliest")
    assert done.exit_code == 1, done.output
    assert other.name in done.output and "order_id" in done.output and "id" in done.output, done.output
    assert commit_instants(spark, base) == commits


def test_a_record_larger_than_the_fetch_size_is_read_whole(spark, tmp_path: Path) -> None:
    # Kafka hands over at least one record per fetch however small the fetch limits are set.
    topic, base = Topic(), str(tmp_path / "t")
    large = "L" * 400_000
    topic.send([pg_event("c", lsn=10, after=row(1, large)), pg_event("c", lsn=11, after=row(2, "small"))])
    # (fetch.max.bytes stays: librdkafka, which plans the round, refuses one below message.max.bytes)
    done = ingest(topic, base, "--hoodie-conf", "kafka.max.partition.fetch.bytes=1024")
    assert done.exit_code == 0, done.output
    assert read_rows(spark, base, ["id", "name"]) == [(1, large), (2, "small")]


def test_quarantine_keeps_the_message_bytes_and_reapplies_through_the_registry(spark, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from hudi_cdc.cli import main

    topic, base = Topic(), str(tmp_path / "t")
    settings = ["--on-bad-event", "quarantine"]
    topic.send([pg_event("c", lsn=10, after=row(1, "a", tier=1))], version=2)
    assert ingest(topic, base, *settings).exit_code == 0
    garbage = b"\x7fELF" + bytes(range(256)) * 4
    topic.send_raw([(2, garbage)])
    topic.send([pg_event("u", lsn=30, after=row(3, PLACEHOLDER, tier=7))], version=2)  # key 3 never seen
    topic.send([pg_event("c", lsn=40, after=row(4, "d", tier=4))], version=2)
    done = ingest(topic, base, *settings)
    assert done.exit_code == 0, done.output
    assert last_result(done.output)["quarantined"] == 2
    assert read_rows(spark, base, ["id", "name", "tier"]) == [(1, "a", 1), (4, "d", 4)]
    held = {r["origin"]: r for r in spark.read.format("hudi").load(base + "_hudi_cdc_quarantine").collect()}
    assert set(held) == {f"{topic.name}-0@1", f"{topic.name}-0@2"}
    assert bytes(held[f"{topic.name}-0@1"]["raw"]) == garbage  # the message as Kafka held it
    assert "not in the Confluent wire format" in held[f"{topic.name}-0@1"]["reason"]
    assert "TOAST placeholder" in held[f"{topic.name}-0@2"]["reason"]
    assert {r["raw_format"] for r in held.values()} == {"confluent"}

    # The fix: key 3's full row arrives from before the update; the re-apply decodes the kept bytes again.
    topic.send([pg_event("c", lsn=25, after=row(3, "c", tier=3))], version=2)
    assert ingest(topic, base, *settings).exit_code == 0
    common = [
        "--source", "kafka", "--topic", topic.name, "--bootstrap-servers", BOOTSTRAP,
        "--schema-registry-url", REGISTRY, "--target-base-path", base, "--target-table", "customers", "--json",
    ]  # fmt: skip
    result = CliRunner().invoke(main, ["quarantine", "reapply", *common], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert {k: v for k, v in last_result(result.output).items() if k in ("reapplied", "still_quarantined")} == {
        "reapplied": 1,
        "still_quarantined": 1,
    }
    assert read_rows(spark, base, ["id", "name", "tier"]) == [(1, "a", 1), (3, "c", 7), (4, "d", 4)]


def test_a_small_round_read_by_the_driver_gives_the_table_the_executors_read_gives(
    spark,  # noqa: ANN001
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Three partitions, two schema versions, Kafka tombstones, deletes and a source limit: the same rounds
    read by the process's consumer (the default for a small round) and by Spark's executors."""
    topic = Topic(partitions=3)
    first = [pg_event("c", lsn=10 + k, after=row(k, f"n{k}")) for k in range(9)]
    later = [pg_event("u", lsn=100 + k, after=row(k, f"m{k}", tier=k)) for k in range(0, 9, 2)]
    later += [pg_event("d", lsn=200 + k, before=row(k, None, tier=None)) for k in (1, 4)]
    topic.send(first)
    topic.send(later, version=2)
    topic.send_raw([(1, None), (4, None)])  # Debezium's tombstones after the deletes
    tables = {}
    for read_by, limit in (("driver", None), ("executors", "0")):
        if limit is not None:
            monkeypatch.setenv("HUDI_CDC__KAFKA_DRIVER_READ_MAX_MESSAGES", limit)
        base, seen = str(tmp_path / read_by), set()
        for _ in range(3):  # 18 messages, at most 6 a round
            done = ingest(topic, base, "--source-limit", "6")
            assert done.exit_code == 0, done.output
            result = last_result(done.output)
            seen.add(result["details"].get("read"))
        assert seen == {read_by}
        assert sum(result["checkpoint"]["offsets"].values()) == 18
        tables[read_by] = read_rows(spark, base, ["id", "name", "tier"])
    expected = apply_events([dict(e, after={**e["after"], "tier": None}) for e in first] + later)
    assert (
        tables["driver"]
        == tables["executors"]
        == sorted((r["id"], r["name"], r.get("tier")) for r in expected.values())
    )


def test_a_driver_read_of_offsets_no_longer_retained_is_data_loss(tmp_path: Path) -> None:
    """Retention removing a range's start between planning and reading: an error, never a silent gap."""
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    from hudi_cdc.sources.kafka import OffsetRange, read_ranges

    topic = Topic()
    topic.send([pg_event("c", lsn=10 + k, after=row(k, "a")) for k in range(5)])
    assert [m[3] for m in read_ranges(BOOTSTRAP, topic.name, [OffsetRange(0, 1, 4)], {}, what="t")] == [1, 2, 3]
    admin = AdminClient({"bootstrap.servers": BOOTSTRAP})
    for future in admin.delete_records([TopicPartition(topic.name, 0, 3)]).values():
        future.result(30)
    from hudi_cdc.errors import SourceError

    with pytest.raises(SourceError, match=r"-0: offset 1 is gone from Kafka: data was lost upstream"):
        read_ranges(BOOTSTRAP, topic.name, [OffsetRange(0, 1, 5)], {}, what=topic.name)
