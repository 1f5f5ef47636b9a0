"""Catalog sync settings (issue 45; docs/catalog.md): ingest settings, the pipeline file's [catalog], the
command line, name templates and the sync properties. Pure: no Spark, no metastore."""

from __future__ import annotations

from pathlib import Path

import pytest

from hudi_cdc.cli._common import options_config
from hudi_cdc.config import load_config
from hudi_cdc.errors import ConfigError
from hudi_cdc.service.spec import TableRef, load_pipeline
from hudi_cdc.sink.catalog import CatalogTarget, catalog_names, sync_options

BASE = {"source_path": "/in/dbserver1.inventory.customers", "target_base_path": "/lake/c", "target_table": "c"}
URI = "thrift://127.0.0.1:59083"


def _config(**kw: object):  # noqa: ANN202
    return load_config(env={}, **{**BASE, "record_key_fields": "id", **kw})


def test_defaults_are_off_and_hms_needs_a_thrift_uri() -> None:
    assert _config().catalog == "none"
    with pytest.raises(ConfigError, match=r"catalog 'hms' needs catalog_uri .*none"):
        _config(catalog="hms")
    with pytest.raises(ConfigError, match=r"catalog_uri .*got 'http://u:\*\*\*@h:1'"):
        _config(catalog="hms", catalog_uri="http://u:secret@h:1")
    with pytest.raises(ConfigError, match="catalog='unity' is not one of none, hms, glue, datahub, bigquery"):
        _config(catalog="unity")


def test_templates_name_known_fields_only() -> None:
    with pytest.raises(ConfigError, match=r"catalog_table '\{tbl\}'.*unknown: tbl"):
        _config(catalog="hms", catalog_uri=URI, catalog_table="{tbl}")
    with pytest.raises(ConfigError, match="catalog_database ''"):
        _config(catalog="hms", catalog_uri=URI, catalog_database="")


def test_secrets_are_redacted_in_the_repr() -> None:
    config = _config(
        catalog="hms",
        catalog_uri="thrift://admin:hunter2@h:9083",
        catalog_options={"hoodie.datasource.hive_sync.password": "hunter2", "hive.x": "1"},
    )
    text = repr(config)
    assert "hunter2" not in text and "admin:***@h:9083" in text and "'hive.x': '1'" in text


def test_environment_sets_catalog_settings() -> None:
    env = {
        "HUDI_CDC__CATALOG": "HMS",
        "HUDI_CDC__CATALOG_URI": URI,
        "HUDI_CDC__CATALOG_SYNC_PARTITIONS": "false",
        "HUDI_CDC__CATALOG_OPTIONS": "hive.metastore.connect.retries=3;a=b",
    }
    config = load_config(env=env, **BASE, record_key_fields="id")
    assert (config.catalog, config.catalog_uri, config.catalog_sync_partitions) == ("hms", URI, False)
    assert config.catalog_options == {"hive.metastore.connect.retries": "3", "a": "b"}


def test_command_line_options() -> None:
    options = {
        "source_path": BASE["source_path"],
        "target_base_path": "/lake/c",
        "target_table": "c",
        "record_key_fields": ("id",),
        "catalog": "hms",
        "catalog_uri": URI,
        "catalog_database": "lake_{schema}",
        "catalog_table": None,
        "catalog_sync_partitions": None,
        "catalog_options": ("hive.metastore.connect.retries=2", "x = y"),
    }
    config = options_config(None, None, (), options)
    assert config.catalog_database == "lake_{schema}" and config.catalog_table == "{table}"
    assert config.catalog_options == {"hive.metastore.connect.retries": "2", "x": "y"}
    with pytest.raises(ConfigError, match="--catalog-options expects KEY=VALUE, got 'novalue'"):
        options_config(None, None, (), {**options, "catalog_options": ("novalue",)})


@pytest.mark.parametrize(
    ("settings", "names"),
    [
        ({}, ("inventory", "customers")),
        ({"catalog_database": "{server}_{schema}", "catalog_table": "cdc_{table}"}, ("dbserver1_inventory", "cdc_customers")),
        ({"catalog_table": "{target}"}, ("inventory", "c")),
        ({"source": "kafka", "topic": "db1.Shop.Orders", "bootstrap_servers": "b:1", "schema_registry_url": "http://r"},
         ("shop", "orders")),
        ({"source": "kafka", "topic": "db1.shop.orders", "flavor": "mysql", "bootstrap_servers": "b:1",
          "schema_registry_url": "http://r", "catalog_database": "{database}"}, ("shop", "orders")),
        ({"source": "jdbc", "jdbc_url": "jdbc:postgresql://h:5432/erp", "jdbc_table": "sales.orders",
          "jdbc_timestamp_column": "t", "jdbc_incrementing_column": "id", "catalog_database": "{database}_{schema}"},
         ("erp_sales", "orders")),
    ],
)  # fmt: skip
def test_name_templates_render_from_the_source_table(settings: dict, names: tuple[str, str]) -> None:
    config = _config(catalog="hms", catalog_uri=URI, **settings)
    assert catalog_names(config) == names


def test_a_template_that_renders_no_name_says_which_field_is_unknown() -> None:
    config = _config(catalog="hms", catalog_uri=URI, catalog_database="{database}")  # postgres: not in the folder name
    with pytest.raises(ConfigError, match=r"catalog_database '\{database\}' renders ''.*\{database\} not known"):
        catalog_names(config)
    folder = _config(catalog="hms", catalog_uri=URI, source_path="/in/customers")  # no schema in the name
    with pytest.raises(ConfigError, match="catalog_database"):
        catalog_names(folder)


def test_sync_properties_partitioned_mor_and_options_win() -> None:
    config = _config(
        catalog="hms",
        catalog_uri=URI,
        table_type="mor",
        partition_path_field="region",
        catalog_options={"hoodie.datasource.hive_sync.support_timestamp": "false"},
    )
    target = CatalogTarget.of(config)
    assert target.views == ("customers", "customers_ro", "customers_rt")
    props = sync_options(config, target)
    assert props["hoodie.datasource.hive_sync.partition_fields"] == "region"
    assert props["hoodie.datasource.hive_sync.partition_extractor_class"].endswith("MultiPartKeysValueExtractor")
    assert props["hoodie.datasource.hive_sync.mode"] == "hms"
    assert props["hoodie.datasource.hive_sync.metastore.uris"] == URI
    assert props["hoodie.datasource.meta.sync.base.path"] == "/lake/c"
    assert props["hoodie.datasource.hive_sync.support_timestamp"] == "false"  # catalog_options win
    unpartitioned = sync_options(_config(catalog="hms", catalog_uri=URI, partition_path_field="region",
                                         catalog_sync_partitions=False), target)  # fmt: skip
    assert unpartitioned["hoodie.datasource.hive_sync.partition_fields"] == ""
    assert unpartitioned["hoodie.datasource.hive_sync.partition_extractor_class"].endswith("NonPartitionedExtractor")


PIPELINE = """
[source]
source = "files"
source_path = "/in"
tables = ["dbserver1.inventory.*"]

[defaults]
target_base_path = "/lake/{table}"
target_table = "{table}"
record_key_fields = "id"

[catalog]
catalog = "hms"
catalog_uri = "thrift://127.0.0.1:59083"
catalog_database = "lake_{schema}"
catalog_sync_partitions = false
catalog_options = { "hive.metastore.connect.retries" = "2" }

[tables."inventory.orders"]
catalog_table = "orders_v2"
catalog_options = { "a" = "b" }

[tables."inventory.audit"]
catalog = "none"
"""


def test_pipeline_catalog_section_applies_to_every_table_and_a_table_may_override(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text(PIPELINE)
    spec = load_pipeline(path)
    customers = spec.table_config(TableRef("dbserver1.inventory.customers"), env={})
    assert (customers.catalog, customers.catalog_uri, customers.catalog_sync_partitions) == ("hms", URI, False)
    assert catalog_names(customers) == ("lake_inventory", "customers")
    orders = spec.table_config(TableRef("dbserver1.inventory.orders"), env={})
    assert catalog_names(orders) == ("lake_inventory", "orders_v2")
    assert orders.catalog_options == {"hive.metastore.connect.retries": "2", "a": "b"}  # merged key by key
    assert spec.table_config(TableRef("dbserver1.inventory.audit"), env={}).catalog == "none"


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ('[catalog]\ncatalog = "hms"\nurl = "x"', r"\[catalog\]: unknown setting 'url'; did you mean catalog_uri\?"),
        (
            '[catalog]\ncatalog = "hms"\ncatalog_uri = "thrift://h:1"\ncatalog_sync_partitions = "no"',
            "catalog_sync_partitions must be true or false",
        ),
        ('[catalog]\ncatalog = "oracle"', "catalog='oracle' is not one of"),
    ],
)
def test_pipeline_catalog_section_errors_name_the_place(tmp_path: Path, section: str, message: str) -> None:
    path = tmp_path / "p.toml"
    path.write_text(PIPELINE.split("[catalog]")[0] + section)
    with pytest.raises(ConfigError, match=message):
        spec = load_pipeline(path)
        spec.table_config(TableRef("dbserver1.inventory.customers"), env={})


def test_pipeline_catalog_and_defaults_may_not_both_set_it(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text(PIPELINE.replace('record_key_fields = "id"', 'record_key_fields = "id"\ncatalog = "hms"'))
    with pytest.raises(ConfigError, match=r"\[catalog\]: catalog also set in \[defaults\]"):
        load_pipeline(path)


def test_paths_compare_as_locations_and_schemas_without_record_names() -> None:
    from hudi_cdc.sink.catalog import _avro_type_name, _columns, _same_path, describe

    assert _same_path("file:/lake/orders", "/lake/orders/") and _same_path("file:///lake/orders", "/lake/orders")
    assert _same_path("s3a://bucket/lake/orders/", "s3a://bucket/lake/orders")
    assert not _same_path("file:/lake/orders", "/lake/orders2") and not _same_path("s3a://a/x", "s3a://b/x")
    spark_named = '{"type":"record","name":"a_record","namespace":"hoodie.a","fields":[{"name":"id","type":"long"}]}'
    java_named = '{"type":"record","name":"b","fields":[{"name":"id","type":"long","doc":""}]}'
    assert _columns(spark_named) == _columns(java_named)
    assert _columns(spark_named) != _columns(spark_named.replace('"long"', '"int"'))
    assert _avro_type_name(["null", {"type": "long", "logicalType": "timestamp-micros"}]) == "timestamp-micros"
    assert _avro_type_name(["null", "int"]) == "int"
    lagging = {"catalog": "hms", "names": ["lake.orders"], "synced_to": "1", "table_at": "2", "lagging": True}
    assert describe(lagging) == "catalog hms (lake.orders): LAGGING; synced to 1, table at 2"
    assert "cannot tell: down" in describe({**lagging, "problem": "down"})


def test_a_metastore_without_the_s3a_connector_is_not_a_missing_sync_tool() -> None:
    # The stack's metastore before it had hadoop-aws answered an s3a:// table's create so; hudi-cdc had called it
    # "Hudi's sync tool is not on the classpath" and failed the table for good.
    from hudi_cdc.sink.catalog import CatalogTarget, _metastore_hint, _tool_missing

    target = CatalogTarget("hms", "thrift://h:9083", "lake", "orders", ("orders",), "s3a://bucket/lake/orders")
    server = (
        "py4j.protocol.Py4JJavaError: An error occurred while calling o91.syncHoodieTable.\n"
        ": org.apache.hudi.exception.HoodieException: Got runtime exception when hive syncing orders\n"
        "Caused by: MetaException(message:java.lang.RuntimeException: java.lang.ClassNotFoundException: "
        "Class org.apache.hadoop.fs.s3a.S3AFileSystem not found)"
    )
    assert not _tool_missing(server, target)
    hint = _metastore_hint(server, target)
    assert "s3a:// location itself" in hint and "hadoop-aws" in hint and "docs/object-storage.md" in hint
    assert _tool_missing("TypeError: 'JavaPackage' object is not callable", target)
    assert _tool_missing("java.lang.ClassNotFoundException: org.apache.hudi.hive.HiveSyncTool", target)
    assert _metastore_hint("MetaException(message:Got exception: TTransportException)", target) == ""
