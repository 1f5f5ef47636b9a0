"""OpenLineage settings, dataset names and the column-lineage rules (pure: no Spark)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hudi_cdc.config import load_config
from hudi_cdc.errors import ConfigError
from hudi_cdc.service.spec import TableRef, load_pipeline
from hudi_cdc.sink.lineage import (
    FILTER,
    Edge,
    column_lineage,
    dataset_of_path,
    input_datasets,
    job_name,
    source_table_dataset,
    table_edges,
)

BASE = dict(source_path="/data/customers", target_base_path="/lake/customers", target_table="customers")
META = {"_source_lsn": "source.lsn", "_source_txid": "source.txId", "_source_ts_ms": "source.ts_ms"}


def _config(**settings: object):  # noqa: ANN202
    return load_config(env={}, record_key_fields="id", **{**BASE, **settings})


def test_lineage_settings_are_checked_and_the_url_redacted() -> None:
    assert _config().lineage_transport == "none"
    with pytest.raises(ConfigError, match="lineage_transport 'http' needs lineage_url"):
        _config(lineage_transport="http")
    with pytest.raises(ConfigError, match="needs lineage_file"):
        _config(lineage_transport="file")
    with pytest.raises(ConfigError, match="lineage_transport='kafka' is not one of"):
        _config(lineage_transport="kafka")
    with pytest.raises(ConfigError, match=r"lineage_timeout_seconds must be a number of seconds in \(0, 60\]"):
        _config(lineage_transport="console", lineage_timeout_seconds=0)
    with pytest.raises(ConfigError, match="lineage_api_key_env is for lineage_transport 'http'"):
        _config(lineage_transport="console", lineage_api_key_env="OL_KEY")
    config = _config(lineage_transport="HTTP", lineage_url="http://ol:s3cr3t@marquez:5000")
    assert config.lineage_transport == "http" and "s3cr3t" not in repr(config)
    # From the environment, typed.
    env = {"HUDI_CDC__LINEAGE_TRANSPORT": "console", "HUDI_CDC__LINEAGE_TIMEOUT_SECONDS": "0.5"}
    config = load_config(env=env, record_key_fields="id", **BASE)
    assert (config.lineage_transport, config.lineage_timeout_seconds) == ("console", 0.5)


def test_the_pipeline_files_lineage_section_is_for_every_table(tmp_path: Path) -> None:
    def pipeline(text: str) -> Path:
        path = tmp_path / "inventory.toml"
        path.write_text(
            '[source]\nsource = "files"\nsource_path = "/data"\ntables = ["dbserver1.inventory.*"]\n'
            '[defaults]\ntarget_base_path = "/lake/{table}"\ntarget_table = "{table}"\nrecord_key_fields = "id"\n'
            + text
        )
        return path

    spec = load_pipeline(
        pipeline(
            '[lineage]\nlineage_transport = "file"\nlineage_file = "/tmp/ol.jsonl"\nlineage_namespace = "inventory"\n'
        )
    )
    config = spec.table_config(TableRef("dbserver1.inventory.orders"), env={})
    assert (config.lineage_transport, config.lineage_file, config.lineage_namespace) == (
        "file",
        "/tmp/ol.jsonl",
        "inventory",
    )
    with pytest.raises(ConfigError, match=r"\[lineage\]: unknown setting 'uri'; did you mean lineage_url\?"):
        load_pipeline(pipeline('[lineage]\nlineage_transport = "http"\nuri = "http://x"\n'))
    with pytest.raises(ConfigError, match=r"lineage_transport: lineage is pipeline-wide: set it in \[lineage\]"):
        load_pipeline(pipeline('[tables."inventory.orders"]\nlineage_transport = "console"\n'))


def test_dataset_names_follow_openlineages_conventions() -> None:
    assert dataset_of_path("/lake/x/../customers") == ("file", "/lake/customers")
    assert dataset_of_path("file:///lake/customers") == ("file", "/lake/customers")
    assert dataset_of_path("s3a://bucket/lake/customers") == ("s3://bucket", "lake/customers")
    assert dataset_of_path("gs://bucket/lake/customers") == ("gs://bucket", "lake/customers")
    assert dataset_of_path("hdfs://nn:8020/lake/customers") == ("hdfs://nn:8020", "/lake/customers")
    kafka = _config(
        source="kafka",
        topic="dbserver1.inventory.customers",
        bootstrap_servers="k1:9092,k2:9092",
        kafka_value_format="json",
    )
    assert input_datasets(kafka) == [("kafka://k1:9092", "dbserver1.inventory.customers")]
    assert job_name(kafka) == "hudi-cdc.ingest.customers"
    pg = _config(source="jdbc", jdbc_url="jdbc:postgresql://db:5432/shop", jdbc_table="sales.orders", jdbc_mode="full")
    assert input_datasets(pg) == [("postgres://db:5432", "shop.sales.orders")]
    my = _config(source="jdbc", jdbc_url="jdbc:mariadb://db/shop", jdbc_table="orders", jdbc_mode="full")
    assert input_datasets(my) == [("mysql://db:3306", "shop.orders")]
    query = _config(source="jdbc", jdbc_url="jdbc:mariadb://db/shop", jdbc_query="select 1 as id", jdbc_mode="full")
    assert input_datasets(query) == []


def test_the_database_table_behind_a_debezium_source_is_named_when_its_address_is_given() -> None:
    kafka = {"source": "kafka", "bootstrap_servers": "k:9092", "kafka_value_format": "json"}
    pg = _config(**kafka, topic="dbserver1.public.customers", lineage_source_namespace="postgres://db:5432")
    assert source_table_dataset(_config(**kafka, topic="dbserver1.public.customers")) is None  # not asked for
    with pytest.raises(
        ConfigError, match=r"renders '\.public\.customers' \(\{database\} not known.*--lineage-source-name"
    ):
        source_table_dataset(pg)  # a Postgres topic names no database
    named = _config(
        **kafka,
        topic="dbserver1.public.customers",
        lineage_source_namespace="postgres://db:5432",
        lineage_source_name="shop.{schema}.{table}",
    )
    assert source_table_dataset(named) == ("postgres://db:5432", "shop.public.customers")
    my = _config(**kafka, topic="dbserver1.shop.orders", flavor="mysql", lineage_source_namespace="mysql://db:3306")
    assert source_table_dataset(my) == ("mysql://db:3306", "shop.orders")  # MySQL's topic names its database
    for bad, why in (
        ({"lineage_source_namespace": "db:5432"}, "expected scheme://host:port"),
        ({"lineage_source_namespace": "postgres://u:pw@db:5432"}, "no credentials"),
        ({"lineage_source_name": "x.{table}"}, "needs lineage_source_namespace"),
    ):
        with pytest.raises(ConfigError, match=why):
            _config(**kafka, topic="dbserver1.public.customers", **bad)
    # The table's columns are the change events' images; the stream's own fields are not the table's.
    edges = [Edge("after.email_address", "TRANSFORMATION", "mask hash", True), Edge("before.email_address"), Edge("op")]
    assert table_edges(edges) == [Edge("email_address", "TRANSFORMATION", "mask hash", True)]


def test_column_lineage_through_renames_masks_computed_columns_and_the_filter() -> None:
    config = _config(
        column_renames={"email_address": "email"},
        masks={"email": "hash", "ssn": "keep_last:4"},
        mask_salt_env="SALT",
        computed_columns={"domain": "split(email, '@')[1]", "changed": "_source_ts_ms", "twice": "domain || domain"},
        columns_drop=["notes"],
        row_filter="status <> 'test'",
        partition_path_field="domain",
    )
    columns = [
        *("_hoodie_commit_time", "_hoodie_record_key", "_hoodie_partition_path", "id", "email", "ssn", "status"),
        *("_source_op", "_source_lsn", "_source_txid", "_source_ts_ms", "_source_order", "_hoodie_is_deleted"),
        *("_ingested_at", "domain", "changed", "twice"),
    ]
    reads = {"domain": ["email"], "changed": ["_source_ts_ms"], "twice": ["domain"], FILTER: ["status"]}
    lineage, dataset = column_lineage(columns, config, meta_fields=META, order_fields=["source.lsn"], reads=reads)
    hashed = Edge("after.email_address", "TRANSFORMATION", "mask hash: HMAC-SHA256 with a secret salt", masking=True)
    assert lineage["id"] == [Edge("after.id")]
    assert lineage["status"] == [Edge("after.status")]
    assert lineage["email"] == [hashed]
    assert lineage["ssn"] == [Edge("after.ssn", "TRANSFORMATION", "mask keep_last:4", masking=True)]
    assert lineage["domain"] == [
        Edge("after.email_address", "TRANSFORMATION", "computed: split(email, '@')[1]", masking=True)
    ]
    assert lineage["changed"] == [Edge("source.ts_ms", "IDENTITY", "computed: _source_ts_ms")]
    assert lineage["twice"] == [
        Edge("after.email_address", "TRANSFORMATION", "computed: domain || domain", masking=True)
    ]
    assert lineage["_source_lsn"] == [Edge("source.lsn")] and lineage["_source_txid"] == [Edge("source.txId")]
    assert lineage["_source_op"] == [Edge("op")]
    assert lineage["_hoodie_is_deleted"] == [Edge("op", "TRANSFORMATION", "op = 'd'")]
    assert lineage["_source_order"] == [Edge("source.lsn", "TRANSFORMATION", "the change's position in the source")]
    assert lineage["_hoodie_record_key"] == [Edge("after.id", "TRANSFORMATION", "the record key")]
    assert lineage["_hoodie_partition_path"] == [
        Edge("after.email_address", "TRANSFORMATION", "the partition", masking=True)
    ]
    assert lineage["_ingested_at"] == [] and lineage["_hoodie_commit_time"] == []
    assert "notes" not in lineage and set(lineage) == set(columns)
    assert dataset == [Edge("after.status", "FILTER", "row_filter: status <> 'test'")]


def test_history_tables_take_the_before_image_too_and_jdbc_has_no_envelope() -> None:
    soft = _config(history="soft_delete")
    lineage, _ = column_lineage(
        ["name", "_source_deleted"], soft, meta_fields=META, order_fields=["source.lsn"], reads={}
    )
    assert lineage["name"] == [Edge("after.name"), Edge("before.name")]
    assert lineage["_source_deleted"] == [Edge("op", "TRANSFORMATION", "marks a deleted row (soft_delete)")]
    jdbc = _config(
        source="jdbc",
        jdbc_url="jdbc:postgresql://db:5432/shop",
        jdbc_table="orders",
        jdbc_timestamp_column="updated_at",
        jdbc_incrementing_column="id",
    )
    columns = ["id", "name", "_source_op", "_source_cursor_ts", "_source_order", "_hoodie_is_deleted"]
    lineage, _ = column_lineage(columns, jdbc, meta_fields=META, order_fields=["source.lsn"], reads={})
    assert lineage["name"] == [Edge("name")]
    assert lineage["_source_cursor_ts"] == [Edge("updated_at", "TRANSFORMATION", "the JDBC cursor")]
    assert [e.field for e in lineage["_source_order"]] == ["updated_at", "id"]
    assert lineage["_source_op"] == [] and lineage["_hoodie_is_deleted"] == []


def test_our_json_schema_of_the_spec_refuses_what_the_spec_refuses() -> None:
    import copy
    import json

    import jsonschema

    schema = json.loads((Path(__file__).parent / "schemas" / "openlineage-run-event.json").read_text())
    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    facet = {"_producer": "urn:hudi-cdc:1", "_schemaURL": "https://openlineage.io/spec/facets/1-2-0/"}
    lineage = {
        **facet,
        "_schemaURL": facet["_schemaURL"] + "ColumnLineageDatasetFacet.json#/$defs/ColumnLineageDatasetFacet",
        "fields": {
            "a": {
                "inputFields": [
                    {
                        "namespace": "file",
                        "name": "/x",
                        "field": "after.a",
                        "transformations": [{"type": "DIRECT", "subtype": "IDENTITY", "masking": False}],
                    }
                ]
            }
        },
    }
    good = {
        "eventTime": "2026-11-28T06:38:21.593305+00:00",
        "producer": "urn:hudi-cdc:1",
        "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
        "eventType": "COMPLETE",
        "run": {"runId": "01a220df-c382-78a3-a85d-525317fe3a5c"},
        "job": {"namespace": "hudi-cdc", "name": "hudi-cdc.ingest.t"},
        "inputs": [{"namespace": "file", "name": "/x"}],
        "outputs": [{"namespace": "file", "name": "/t", "facets": {"columnLineage": lineage}}],
    }
    assert not list(validator.iter_errors(good))

    def broken(change) -> bool:  # noqa: ANN001
        event = copy.deepcopy(good)
        change(event)
        return bool(list(validator.iter_errors(event)))

    def transformation(event: dict) -> dict:
        return event["outputs"][0]["facets"]["columnLineage"]["fields"]["a"]["inputFields"][0]["transformations"][0]

    assert broken(lambda e: e.pop("producer"))
    assert broken(lambda e: e.update(eventType="DONE"))
    assert broken(lambda e: e["run"].update(runId="run-1"))
    assert broken(lambda e: e.update(eventTime="yesterday"))
    assert broken(lambda e: e["job"].pop("name"))
    assert broken(lambda e: transformation(e).update(type="MASKED"))
    assert broken(lambda e: transformation(e).update(subtype="FILTER"))  # FILTER is INDIRECT
    assert broken(lambda e: e["outputs"][0]["facets"]["columnLineage"].pop("_producer"))
    assert broken(lambda e: e["outputs"][0]["facets"]["columnLineage"]["fields"]["a"].pop("inputFields"))


def test_the_record_keys_lineage_from_the_debezium_key_and_with_scd2() -> None:
    kafka = load_config(
        env={},
        **{**BASE, "source_path": None},
        source="kafka",
        topic="dbserver1.inventory.customers",
        bootstrap_servers="k:9092",
        kafka_value_format="json",
    )
    lineage, _ = column_lineage(
        ["_hoodie_record_key"], kafka, meta_fields=META, order_fields=["source.lsn"], reads={}, keys=("id",)
    )
    assert lineage["_hoodie_record_key"] == [Edge("after.id", "TRANSFORMATION", "the record key")]
    scd2 = _config(history="scd2")
    lineage, _ = column_lineage(["_hoodie_record_key"], scd2, meta_fields=META, order_fields=["source.lsn"], reads={})
    assert [e.field for e in lineage["_hoodie_record_key"]] == ["after.id", "before.id", "source.lsn"]


def test_the_openlineage_client_loads_only_when_lineage_is_on() -> None:
    import subprocess
    import sys

    code = "import sys, hudi_cdc.pipeline, hudi_cdc.cli; print('openlineage' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
