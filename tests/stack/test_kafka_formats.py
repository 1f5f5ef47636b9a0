"""The message formats Debezium users run: JsonConverter (schemas on and off) and ExtractNewRecordState.

The stack's Postgres holds a table of every type; three connectors publish it:
the stack's own (Avro), one with ``JsonConverter`` and schemas on, one with
schemas off. Inserts, updates, deletes, TOASTed values left unchanged and an
added column go through all three. Each JSON topic is ingested into COW and
MOR; every table must equal Postgres, and the JSON tables must hold exactly the
Avro table's values and types. The schemaless topic refuses the added column
until its schema file has it. Topics flattened by ExtractNewRecordState (Avro
and JSON, into COW and MOR) replicate the same way; one without the position is refused. A topic
read in the wrong format fails the round naming the topic, the offset and what
was found.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from hudi_cdc.ops.verify import verify
from hudi_cdc.testing.kafka import end_offsets, wait_until_quiet
from hudi_cdc.testing.postgres import connect
from tests.stack.conftest import BOOTSTRAP, REGISTRY
from tests.stack.connectors import CONNECT, postgres_connector
from tests.stack.test_bootstrap import _TYPES_ROWS, _TYPES_TABLE, PG, _data, _wait_for_messages
from tests.support import run_cli

pytestmark = [pytest.mark.kafka, pytest.mark.postgres, pytest.mark.hudi]

JSON = "org.apache.kafka.connect.json.JsonConverter"


def _json_settings(schemas: bool) -> dict[str, str]:
    enabled = str(schemas).lower()
    return {
        "key.converter": JSON,
        "value.converter": JSON,
        "key.converter.schemas.enable": enabled,
        "value.converter.schemas.enable": enabled,
    }


def _ingest(topic: str, base: Path, table_type: str, *extra: str):  # noqa: ANN202
    return run_cli(
        "--source", "kafka", "--topic", topic, "--bootstrap-servers", BOOTSTRAP,
        "--target-base-path", str(base), "--target-table", base.name, "--table-type", table_type, *extra,
    )  # fmt: skip


def _last_message(topic: str) -> bytes:
    from confluent_kafka import Consumer, TopicPartition

    end = end_offsets(BOOTSTRAP, [topic])[(topic, 0)]
    consumer = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": "t", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, 0, end - 1)])
        message = consumer.poll(15)
        assert message is not None and message.error() is None
        return message.value()
    finally:
        consumer.close()


def _changes(table: str) -> None:
    """Updates, deletes, TOASTed values left alone by later updates, an added column."""
    with connect() as conn:
        conn.execute(f"update {table} set num_fixed = num_fixed + 1, note = null, at_zoned = now() where id % 7 = 0")
        conn.execute(f"delete from {table} where id % 13 = 0")
        # Large values Postgres stores out of line (TOAST), then changes that leave them alone.
        conn.execute(
            f"update {table} set note = (select string_agg(md5(random()::text || g), '') "
            "from generate_series(1, 300) g) where id between 1 and 20"
        )
        conn.execute(f"update {table} set small = small + 1 where id between 1 and 20")
        conn.execute(f"alter table {table} add column extra text")
        conn.execute(f"insert into {table} (id, extra, num_wide) values (100001, 'added', 1.5), (100002, null, 2)")
        conn.execute(f"update {table} set extra = 'later' where id between 21 and 25")


def _assert_as_avro(spark, tmp_path: Path, avro_topic: str, bases: list[Path]) -> None:  # noqa: ANN001
    """Each table holds exactly the values and types of the table fed by the Avro envelopes and the registry."""
    avro = tmp_path / "avro"
    result = _ingest(avro_topic, avro, "cow", "--schema-registry-url", REGISTRY)
    assert result.exit_code == 0, result.output
    expected = _data(spark, avro).localCheckpoint(eager=True)
    for base in bases:
        got = _data(spark, base)
        assert {f.name: f.dataType for f in got.schema} == {f.name: f.dataType for f in expected.schema}, base.name
        assert got.exceptAll(expected).count() == 0 and expected.exceptAll(got).count() == 0, base.name


def test_json_topics_replicate_as_the_avro_topic_does(spark, tmp_path: Path) -> None:  # noqa: ANN001
    run = uuid.uuid4().hex[:8]
    table = f"inventory.json_types_{run}"
    avro_topic = f"dbserver1.{table}"
    embedded, bare = f"jsona{run}.{table}", f"jsonb{run}.{table}"
    rows = 400
    with connect() as conn:
        conn.execute(_TYPES_TABLE.format(t=table))
        conn.execute(_TYPES_ROWS.format(t=table, n=rows))
    schema_file = tmp_path / "envelope-schema.json"
    with (
        postgres_connector(f"json-a-{run}", slot=f"json_a_{run}", topic_prefix=f"jsona{run}", table=table, **_json_settings(True)),
        postgres_connector(f"json-b-{run}", slot=f"json_b_{run}", topic_prefix=f"jsonb{run}", table=table, **_json_settings(False)),
    ):  # fmt: skip
        for topic in (embedded, bare):
            _wait_for_messages(topic, rows)
        # A user with schemas off keeps the schema of one message written with them on.
        schema_file.write_bytes(_last_message(embedded))
        bases = {
            (topic, table_type): tmp_path / f"{name}_{table_type}"
            for topic, name in ((embedded, "embedded"), (bare, "bare"))
            for table_type in ("cow", "mor")
        }

        def ingest_all() -> dict[tuple[str, str], object]:
            out = {}
            for (topic, table_type), base in bases.items():
                extra = ["--kafka-value-format", "json"]
                if topic == bare:
                    extra += ["--kafka-value-schema-file", str(schema_file)]
                out[(topic, table_type)] = _ingest(topic, base, table_type, *extra)
            return out

        for result in ingest_all().values():
            assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
        _validate_sees_the_format(tmp_path, run, embedded, bare, schema_file)

        before = end_offsets(BOOTSTRAP, [embedded, bare, avro_topic])
        _changes(table)
        wait_until_quiet(BOOTSTRAP, [embedded, bare, avro_topic], since=before)

        results = ingest_all()
        for (topic, _), result in results.items():
            if topic == embedded:
                assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
            else:  # the added column is not in the schema file: refused, nothing committed
                assert result.exit_code != 0  # type: ignore[attr-defined]
                output = result.output  # type: ignore[attr-defined]
                assert "column(s) extra not in --kafka-value-schema-file" in output and f"{bare}-0@" in output, output
        schema_file.write_bytes(_last_message(embedded))  # the fix: the schema as it is now
        for result in ingest_all().values():
            assert result.exit_code == 0, result.output  # type: ignore[attr-defined]

    for base in bases.values():
        outcome = verify(spark, str(base), PG, table)
        assert outcome.equal, (base.name, outcome.differences[:3], outcome.missing_columns, outcome.skipped_columns)

    _assert_as_avro(spark, tmp_path, avro_topic, list(bases.values()))


def _validate_sees_the_format(tmp_path: Path, run: str, embedded: str, bare: str, schema_file: Path) -> None:
    from click.testing import CliRunner

    from hudi_cdc.cli import main

    def checks(topic: str, connector: str, *extra: str) -> dict[str, dict]:
        args = [
            "validate", "--source", "kafka", "--topic", topic, "--bootstrap-servers", BOOTSTRAP,
            "--kafka-value-format", "json", "--target-base-path", str(tmp_path / "validated"), "--target-table", "v",
            "--connect-url", CONNECT, "--connector", connector, "--json", *extra,
        ]  # fmt: skip
        result = CliRunner().invoke(main, args, catch_exceptions=False)
        found = {c["name"]: c for c in json.loads(result.output)["checks"]}
        assert not any(name.startswith("registry.") for name in found)
        return found

    ok = checks(embedded, f"json-a-{run}")
    assert ok["kafka.json_messages"]["status"] == "ok", ok["kafka.json_messages"]
    assert ok["connect.converter"]["status"] == "ok", ok["connect.converter"]
    wrong = checks(bare, f"json-b-{run}")  # schemas off, and no schema file
    assert "JSON with no embedded schema" in wrong["kafka.json_messages"]["detail"]
    assert wrong["connect.converter"]["status"] == "fail"
    right = checks(bare, f"json-b-{run}", "--kafka-value-schema-file", str(schema_file))
    assert right["kafka.json_messages"]["status"] == "ok", right["kafka.json_messages"]
    assert right["connect.converter"]["status"] == "ok", right["connect.converter"]


def _unwrap(*fields: str) -> dict[str, str]:
    return {
        "transforms": "unwrap",
        "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState",
        "transforms.unwrap.add.fields": ",".join(fields),
        "transforms.unwrap.delete.tombstone.handling.mode": "rewrite",
    }


def test_flattened_topics_replicate_and_one_without_the_position_is_refused(spark, tmp_path: Path) -> None:  # noqa: ANN001
    run = uuid.uuid4().hex[:8]
    table = f"inventory.flat_types_{run}"
    avro_topic = f"dbserver1.{table}"
    flat_avro, flat_json, no_lsn = (f"{p}{run}.{table}" for p in ("flata", "flatj", "flatn"))
    rows = 300
    with connect() as conn:
        conn.execute(_TYPES_TABLE.format(t=table))
        conn.execute(_TYPES_ROWS.format(t=table, n=rows))
    flattened = _unwrap("op", "lsn", "source.ts_ms")
    with (
        postgres_connector(f"flat-a-{run}", slot=f"flat_a_{run}", topic_prefix=f"flata{run}", table=table, **flattened),
        postgres_connector(
            f"flat-j-{run}", slot=f"flat_j_{run}", topic_prefix=f"flatj{run}", table=table,
            **flattened, **_json_settings(True),
        ),
        postgres_connector(f"flat-n-{run}", slot=f"flat_n_{run}", topic_prefix=f"flatn{run}", table=table, **_unwrap("op")),
    ):  # fmt: skip
        for topic in (flat_avro, flat_json, no_lsn):
            _wait_for_messages(topic, rows)
        before = end_offsets(BOOTSTRAP, [flat_avro, flat_json, no_lsn, avro_topic])
        _changes(table)
        wait_until_quiet(BOOTSTRAP, [flat_avro, flat_json, no_lsn, avro_topic], since=before)

    bases = {
        tmp_path / f"flat_{name}_{table_type}": (topic, table_type, extra)
        for name, topic, extra in (
            ("avro", flat_avro, ["--schema-registry-url", REGISTRY]),
            ("json", flat_json, ["--kafka-value-format", "json"]),
        )
        for table_type in ("cow", "mor")
    }
    for base, (topic, table_type, extra) in bases.items():
        result = _ingest(topic, base, table_type, *extra)
        assert result.exit_code == 0, result.output
        outcome = verify(spark, str(base), PG, table)
        assert outcome.equal, (base.name, outcome.differences[:3], outcome.missing_columns)
    _assert_as_avro(spark, tmp_path, avro_topic, list(bases))

    refused = _ingest(no_lsn, tmp_path / "no_lsn", "cow", "--schema-registry-url", REGISTRY)
    assert refused.exit_code != 0
    assert "a flattened topic (ExtractNewRecordState) without __lsn" in refused.output, refused.output
    assert "add.fields=op,lsn,source.ts_ms" in refused.output


def test_a_topic_in_another_format_is_refused_with_what_was_found(tmp_path: Path) -> None:
    from hudi_cdc.testing.kafka import create_topic, produce

    run = uuid.uuid4().hex[:8]
    avro_topic = "dbserver1.inventory.customers"
    result = _ingest(avro_topic, tmp_path / "as_json", "cow", "--kafka-value-format", "json")
    assert result.exit_code != 0
    assert f"{avro_topic}-0@0: found the Confluent Avro wire format (magic byte 0, schema id" in result.output
    assert "use --kafka-value-format avro" in result.output

    json_topic = f"json_plain_{run}"
    create_topic(BOOTSTRAP, json_topic)
    envelope = {"before": None, "after": {"id": 1}, "source": {"lsn": 1}, "op": "c"}
    produce(BOOTSTRAP, json_topic, [(b'{"id": 1}', json.dumps(envelope).encode(), 0), (None, b"not json at all", 0)])
    as_avro = _ingest(json_topic, tmp_path / "as_avro", "cow", "--schema-registry-url", REGISTRY)
    assert as_avro.exit_code != 0
    assert f"{json_topic}-0@0" in as_avro.output and "found JSON" in as_avro.output
    assert "use --kafka-value-format json" in as_avro.output, as_avro.output
    as_embedded = _ingest(json_topic, tmp_path / "as_embedded", "cow", "--kafka-value-format", "json")
    assert as_embedded.exit_code != 0
    assert f"{json_topic}-0@0: found JSON with no embedded schema" in as_embedded.output, as_embedded.output


def _connect_envelope(columns: list[str]) -> dict:
    row = {
        "type": "struct", "name": "q.Value", "optional": True,
        "fields": [{"type": "int64", "optional": False, "field": "id"}]
        + [{"type": "string", "optional": True, "field": c} for c in columns],
    }  # fmt: skip
    source = {"type": "struct", "name": "q.Source", "optional": False, "field": "source",
              "fields": [{"type": "int64", "optional": False, "field": "lsn"},
                         {"type": "int64", "optional": True, "field": "ts_ms"}]}  # fmt: skip
    return {"type": "struct", "name": "q.Envelope", "optional": False,
            "fields": [{**row, "field": "before"}, {**row, "field": "after"}, source,
                       {"type": "string", "optional": False, "field": "op"}]}  # fmt: skip


def test_json_events_quarantined_for_a_missing_column_are_reapplied_after_the_fix(spark, tmp_path: Path) -> None:  # noqa: ANN001
    from click.testing import CliRunner

    from hudi_cdc.cli import main
    from hudi_cdc.testing.kafka import create_topic, produce
    from tests.support import read_rows

    topic = f"json_quarantine_{uuid.uuid4().hex[:8]}"
    create_topic(BOOTSTRAP, topic)

    def event(op: str, lsn: int, row: dict) -> tuple[bytes, bytes, int]:
        envelope = {"before": None, "after": row, "source": {"lsn": lsn, "ts_ms": 1}, "op": op}
        return json.dumps({"id": row["id"]}).encode(), json.dumps(envelope).encode(), 0

    produce(BOOTSTRAP, topic, [
        event("c", 10, {"id": 1, "name": "a"}),
        event("c", 20, {"id": 2, "name": "b"}),
        event("u", 30, {"id": 1, "name": "a2", "extra": "x"}),  # the column was added at the source
        event("c", 40, {"id": 3, "name": "c", "extra": None}),
        event("u", 50, {"id": 2, "name": "b2"}),
    ])  # fmt: skip
    schema_file = tmp_path / "schema.json"
    schema_file.write_text(json.dumps(_connect_envelope(["name"])))
    base = tmp_path / "quarantined"
    args = [
        "--source", "kafka", "--topic", topic, "--bootstrap-servers", BOOTSTRAP, "--kafka-value-format", "json",
        "--kafka-value-schema-file", str(schema_file), "--target-base-path", str(base), "--target-table", "q",
        "--on-bad-event", "quarantine",
    ]  # fmt: skip
    result = run_cli(*args)
    assert result.exit_code == 0, result.output
    assert read_rows(spark, str(base), ["id", "name"]) == [(1, "a"), (2, "b2")]

    def quarantine(action: str) -> dict:
        out = CliRunner().invoke(main, ["quarantine", action, *args, "--json"], catch_exceptions=False)
        return json.loads(out.output)

    listed = quarantine("list")
    assert listed["quarantined"] == 2, listed
    assert all("column(s) extra not in --kafka-value-schema-file" in e["reason"] for e in listed["events"]), listed
    assert {e["raw_format"] for e in listed["events"]} == {"json"}

    schema_file.write_text(json.dumps(_connect_envelope(["name", "extra"])))  # the fix
    applied = quarantine("reapply")
    assert (applied["reapplied"], applied["still_quarantined"]) == (2, 0), applied
    rows = read_rows(spark, str(base), ["id", "name", "extra"])
    assert rows == [(1, "a2", "x"), (2, "b2", None), (3, "c", None)], rows


def test_embedded_schemas_that_the_samples_miss_are_read_by_their_own(spark, tmp_path: Path) -> None:  # noqa: ANN001
    """The sampled messages share a schema; one between them has another, one is not JSON at all."""
    from hudi_cdc.testing.kafka import create_topic, produce
    from tests.support import read_rows

    topic = f"json_mixed_{uuid.uuid4().hex[:8]}"
    create_topic(BOOTSTRAP, topic)
    v1, v2 = _connect_envelope(["name"]), _connect_envelope(["name", "extra"])

    def event(schema: dict, lsn: int, row: dict) -> tuple[bytes, bytes, int]:
        envelope = {"before": None, "after": row, "source": {"lsn": lsn, "ts_ms": 1}, "op": "c"}
        message = json.dumps({"schema": schema, "payload": envelope}, separators=(",", ":"))
        return json.dumps({"id": row["id"]}).encode(), message.encode(), 0

    # 21 messages: the round samples offsets 0, 5, 10, 15 and 20, so offsets 3 and 7 are never sampled.
    messages = [event(v1, 10 + i, {"id": i, "name": f"n{i}"}) for i in range(21)]
    messages[3] = event(v2, 13, {"id": 3, "name": "n3", "extra": "x"})
    messages[7] = (b'{"id":7}', b"\x00\x00\x00\x00\x07not json", 0)
    produce(BOOTSTRAP, topic, messages)
    base = tmp_path / "mixed"
    args = [
        "--source", "kafka", "--topic", topic, "--bootstrap-servers", BOOTSTRAP, "--kafka-value-format", "json",
        "--target-base-path", str(base), "--target-table", "m", "--on-bad-event", "quarantine", "--json",
    ]  # fmt: skip
    result = run_cli(*args)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output.strip().splitlines()[-1])
    assert (summary["upserts"], summary["quarantined"]) == (20, 1), summary
    assert summary["details"]["decode"] == "json: 1 schema(s) by sampled prefix, 1 by hash", summary
    expected = [(i, f"n{i}", "x" if i == 3 else None) for i in range(21) if i != 7]
    assert read_rows(spark, str(base), ["id", "name", "extra"]) == expected


def test_flattened_mysql_rows_order_by_binlog_file_and_position(spark, tmp_path: Path) -> None:  # noqa: ANN001
    """MySQL's flattened rows (add.fields=op,file,pos,row): a change early in the next binlog file wins over
    one late in the previous file, and a rewritten delete removes the row."""
    from hudi_cdc.testing.kafka import create_topic, produce
    from tests.support import read_rows

    fields = [("id", "int64", False), ("name", "string", True), ("__op", "string", True), ("__file", "string", True),
              ("__pos", "int64", True), ("__row", "int32", True), ("__deleted", "string", True)]  # fmt: skip
    schema = {"type": "struct", "name": "m.Value", "optional": False,
              "fields": [{"type": t, "optional": o, "field": n} for n, t, o in fields]}  # fmt: skip

    def row(key: int, name: str, op: str, file: str, pos: int, deleted: str = "false") -> tuple[bytes, bytes, int]:
        payload = {"id": key, "name": name, "__op": op, "__file": file, "__pos": pos, "__row": 0, "__deleted": deleted}
        return json.dumps({"id": key}).encode(), json.dumps({"schema": schema, "payload": payload}).encode(), 0

    topic = f"flat_mysql_{uuid.uuid4().hex[:8]}"
    create_topic(BOOTSTRAP, topic)
    produce(BOOTSTRAP, topic, [
        row(1, "later", "u", "mysql-bin.000002", 4),  # arrives first (a replay), but is the newer change
        row(1, "first", "c", "mysql-bin.000001", 90_000),
        row(2, "two", "c", "mysql-bin.000001", 90_100),
        row(2, "two", "d", "mysql-bin.000002", 50, deleted="true"),
    ])  # fmt: skip
    base = tmp_path / "flat_mysql"
    for table_type in ("cow", "mor"):
        result = _ingest(topic, base.with_name(f"flat_mysql_{table_type}"), table_type, "--kafka-value-format", "json",
                         "--flavor", "mysql")  # fmt: skip
        assert result.exit_code == 0, result.output
        assert read_rows(spark, str(base.with_name(f"flat_mysql_{table_type}")), ["id", "name"]) == [(1, "later")]
    refused = _ingest(topic, tmp_path / "as_sqlserver", "cow", "--kafka-value-format", "json", "--flavor", "sqlserver")
    assert refused.exit_code != 0 and "without __commit_lsn, __change_lsn" in refused.output, refused.output
