"""``validate``'s catalog checks: which run, how a catalog table is judged against the Hudi table (pure), an
unreachable metastore (Spark, no metastore), and tables in the stack's Hive metastore (Spark + metastore)."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest

import hudi_cdc
from hudi_cdc.checks.catalog import TIMEOUT_S, CatalogTable, TableFacts, same_location, table_problems
from hudi_cdc.checks.validate import _plan, validate
from hudi_cdc.config import IngestConfig
from hudi_cdc.testing import envelope_schema, pg_event, write_events
from tests.checks.support import files_config, status
from tests.stack.conftest import metastore_uri  # noqa: F401 - a fixture
from tests.support import CUSTOMERS

CATALOG = ["catalog.metastore", "catalog.database", "catalog.table"]


def hms(source: Path, base: Path, uri: str, database: str, table: str, **more: object) -> IngestConfig:
    return files_config(
        source, base, catalog="hms", catalog_uri=uri, catalog_database=database, catalog_table=table, **more
    )


def test_the_catalog_checks_run_after_the_target_s_when_a_catalog_is_set(tmp_path: Path) -> None:
    plain = [name for name, _ in _plan(files_config(tmp_path, tmp_path / "t"), False)]
    assert not [n for n in plain if n.startswith("catalog.")]
    names = [name for name, _ in _plan(hms(tmp_path, tmp_path / "t", "thrift://h:9083", "db", "t"), False)]
    at = names.index("target.checkpoint")
    assert names[at + 1 : at + 4] == CATALOG
    assert not [
        n for n, _ in _plan(hms(tmp_path, tmp_path / "t", "thrift://h:9083", "db", "t"), True) if "catalog" in n
    ]


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("/lake/t", "file:/lake/t", True),
        ("file:///lake/t/", "/lake/t", True),
        ("/lake/./t", "/lake/t", True),
        ("/lake/t", "/lake/t2", False),
        ("s3a://Bucket/lake/t", "s3a://bucket/lake/t/", True),
        ("s3a://bucket/lake/t", "file:/lake/t", False),
        ("hdfs://nn:8020/lake/t", "hdfs://other:8020/lake/t", False),
    ],
)
def test_same_location(a: str, b: str, same: bool) -> None:
    assert same_location(a, b) is same


def test_a_catalog_table_is_judged_by_its_location_declared_key_and_type() -> None:
    cow = TableFacts(True, ("id",), "COPY_ON_WRITE")
    mine = CatalogTable("db.t", "file:/lake/t", "/lake/t", "org.apache.hudi.hadoop.HoodieParquetInputFormat")
    assert table_problems(mine, "/lake/t", cow) == []

    moved = CatalogTable("t", "file:/lake/other", "/lake/other", "org.apache.hudi.hadoop.HoodieParquetInputFormat")
    assert table_problems(moved, "/lake/t", cow) == [
        "catalog table t has location file:/lake/other, this Hudi table is at /lake/t"
    ]
    declared = CatalogTable("t", "file:/lake/t", "/lake/t", "x", {"primaryKey": "uuid", "type": "mor"})
    assert table_problems(declared, "/lake/t", cow) == [
        "catalog table t declares record key uuid, this Hudi table's is id",
        "catalog table t is a MERGE_ON_READ table's, this Hudi table is COPY_ON_WRITE",
    ]
    realtime = "org.apache.hudi.hadoop.realtime.HoodieParquetRealtimeInputFormat"
    assert table_problems(CatalogTable("t_rt", "/lake/t", None, realtime), "/lake/t", cow) == [
        "catalog table t_rt is a MERGE_ON_READ table's, this Hudi table is COPY_ON_WRITE"
    ]
    # Nothing to compare a key with before the first ingest, when the settings leave it to the source.
    assert table_problems(declared, "/lake/t", TableFacts(False, (), "MERGE_ON_READ")) == []


def test_an_unreachable_metastore_fails_naming_it_without_its_secret(spark, tmp_path: Path) -> None:
    uri = "thrift://hive:s3cret@127.0.0.1:1"
    started = time.monotonic()
    report = validate(hms(tmp_path, tmp_path / "t", uri, "db", "t"), spark=spark)
    took = time.monotonic() - started
    check = report.check("catalog.metastore")
    assert check.status == "fail" and check.transient, check
    assert "the Hive metastore at thrift://hive:***@127.0.0.1:1 did not answer" in check.detail, check.detail
    assert "Connection refused" in check.detail and "s3cret" not in "\n".join(report.lines())
    for name in ("catalog.database", "catalog.table"):
        assert status(report, name) == ("skip", "not checked: catalog.metastore failed")
    assert took < TIMEOUT_S + 20  # the whole validate, with one try of the metastore


def _sync(spark, base: Path, uri: str, database: str, table: str) -> None:
    """Register the Hudi table at ``base`` as ``database.table`` with Hudi's own HiveSyncTool."""
    gateway = spark.sparkContext._jvm
    props = gateway.java.util.Properties()
    for key, value in {
        "hoodie.datasource.meta.sync.base.path": str(base),
        "hoodie.datasource.hive_sync.mode": "hms",
        "hoodie.datasource.hive_sync.metastore.uris": uri,
        "hoodie.datasource.hive_sync.database": database,
        "hoodie.datasource.hive_sync.table": table,
        "hoodie.datasource.hive_sync.partition_extractor_class": "org.apache.hudi.hive.NonPartitionedExtractor",
    }.items():
        props.setProperty(key, value)
    conf = gateway.org.apache.hadoop.conf.Configuration(spark.sparkContext._jsc.hadoopConfiguration())
    conf.set("hive.metastore.uris", uri)
    tool = gateway.org.apache.hudi.hive.HiveSyncTool(props, conf)
    try:
        tool.syncHoodieTable()
    finally:
        tool.close()


def _set_table_property(spark, uri: str, database: str, table: str, key: str, value: str) -> None:
    gateway = spark.sparkContext._jvm
    conf = gateway.org.apache.hadoop.hive.conf.HiveConf()
    conf.set("hive.metastore.uris", uri)
    client = gateway.org.apache.hadoop.hive.metastore.HiveMetaStoreClient(conf)
    try:
        got = client.getTable(database, table)
        got.getParameters().put(key, value)
        client.alter_table(database, table, got)
    finally:
        client.close()


def _drop_database(spark, uri: str, database: str) -> None:
    gateway = spark.sparkContext._jvm
    conf = gateway.org.apache.hadoop.hive.conf.HiveConf()
    conf.set("hive.metastore.uris", uri)
    client = gateway.org.apache.hadoop.hive.metastore.HiveMetaStoreClient(conf)
    try:
        client.dropDatabase(database, False, True, True)  # the Hudi table's files stay (pytest's tmp_path)
    finally:
        client.close()


def test_catalog_tables_against_the_hudi_table(spark, tmp_path: Path, metastore_uri: str) -> None:  # noqa: F811
    source, base = tmp_path / "events", tmp_path / "table"
    write_events(source / "a.avro", envelope_schema("customers", CUSTOMERS), [pg_event("c", lsn=1, after={"id": 1})])
    hudi_cdc.ingest(files_config(source, base), spark=spark)  # in process: no second JVM to start
    database = f"ck_{uuid.uuid4().hex[:10]}"

    fresh = validate(hms(source, base, metastore_uri, database, "customers"), spark=spark)
    assert status(fresh, "catalog.metastore")[0] == "ok", fresh.lines()
    assert status(fresh, "catalog.database") == (
        "ok",
        f"no database {database} in the metastore at {metastore_uri}: the first sync creates it (whether the "
        "metastore lets this user create databases shows then: a refusal is a failed sync, the commit stands)",
    )
    assert status(fresh, "catalog.table") == (
        "ok",
        f"{database}.customers not registered yet: the first sync after a commit registers them",
    )
    no_create = hms(
        source,
        base,
        metastore_uri,
        database,
        "customers",
        catalog_options={"hoodie.datasource.hive_sync.auto_create_database": "false"},
    )
    assert status(validate(no_create, spark=spark), "catalog.database")[0] == "fail"

    try:
        _sync(spark, base, metastore_uri, database, "customers")
        ours = validate(hms(source, base, metastore_uri, database, "customers"), spark=spark)
        assert ours.ok, "\n".join(ours.lines())
        assert status(ours, "catalog.database")[1].startswith(f"database {database} exists (location ")
        assert status(ours, "catalog.table") == ("ok", f"{database}.customers at {base}: this table's, key id")

        # Another table (another path, another key) given the same catalog name: both places, both keys.
        other = validate(
            hms(source, tmp_path / "other", metastore_uri, database, "customers", record_key_fields="id,name"),
            spark=spark,
        )
        check = other.check("catalog.table")
        assert check.status == "fail", check
        assert check.detail == (
            f"catalog table customers has location file:{base}, this Hudi table is at {tmp_path / 'other'}; "
            "the table there has record key id, this one id,name"
        )

        # A catalog table that declares another key (as Spark SQL's Hudi catalog writes it) at this table's path.
        _set_table_property(spark, metastore_uri, database, "customers", "primaryKey", "uuid")
        declared = validate(hms(source, base, metastore_uri, database, "customers"), spark=spark).check("catalog.table")
        assert declared.status == "fail"
        assert declared.detail == "catalog table customers declares record key uuid, this Hudi table's is id"
    finally:
        _drop_database(spark, metastore_uri, database)
