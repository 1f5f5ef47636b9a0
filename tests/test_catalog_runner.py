"""``hudi-cdc run`` with a pipeline-wide ``[catalog]`` (issue 45; docs/catalog.md): every table of the pipeline is
registered in the metastore after its commit, and ``status`` shows each table's catalog state. Real Spark, real
Hudi, the stack's Hive metastore (HUDI_CDC_TEST_METASTORE_URI points at another one)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hudi_cdc.ops.status import pipeline_status
from hudi_cdc.service import load_pipeline, run_pipeline
from hudi_cdc.testing.samples import SampleCustomers
from tests.sink.test_catalog import Metastore, metastore  # noqa: F401 - the fixture
from tests.stack.conftest import METASTORE_URI

pytestmark = [pytest.mark.spark, pytest.mark.hudi, pytest.mark.stack]


def test_every_pipeline_table_is_synced_and_status_shows_each_catalog(
    spark,  # noqa: ANN001
    metastore: Metastore,  # noqa: F811
    tmp_path: Path,
) -> None:
    database = metastore.database(tmp_path)
    for seed, table in enumerate(("t1", "t2")):
        SampleCustomers(tmp_path / "landing", keys=10, topic=f"dbserver1.public.{table}").snapshot(5 + seed)
    path = tmp_path / "inventory.toml"
    path.write_text(
        f"""
[source]
source = "files"
source_path = "{tmp_path / "landing"}"
tables = "dbserver1.public.*"

[defaults]
target_base_path = "{tmp_path / "lake"}/{{table}}"
target_table = "{{table}}"
record_key_fields = "id"
table_type = "cow"

[tables."public.t2"]
table_type = "mor"
catalog_table = "{{table}}_mor"

[catalog]
catalog = "hms"
catalog_uri = "{METASTORE_URI}"
catalog_database = "{database}"

[run]
max_concurrent_tables = 2
discovery_interval_seconds = 0
"""
    )
    report = run_pipeline(path, spark=spark)
    assert report.failed == [] and report.exit_code == 0
    expected = {"t1": ("t1",), "t2": ("t2_mor", "t2_mor_ro", "t2_mor_rt")}
    for table, names in expected.items():
        for name in names:
            registered = metastore.table(database, name)
            assert registered is not None, name
            assert registered["location"].rstrip("/").endswith(str(tmp_path / "lake" / table))
            assert {"id", "name", "email", "notes"} <= registered["columns"].keys()

    shown = pipeline_status(spark, load_pipeline(path))
    tables = {t.name: t for t in shown.tables}
    for name, table in (("public.t1", "t1"), ("public.t2", "t2_mor")):
        state = tables[name].catalog
        assert state is not None and state["lagging"] is False, state
        assert state["synced_to"] == tables[name].last_commit and state["names"][0] == f"{database}.{table}"
    assert f"catalog hms ({database}.t1): in step; synced to {tables['public.t1'].last_commit}" in shown.describe()
