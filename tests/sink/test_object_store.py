"""The s3a settings of a table's buckets (sink.object_store): which paths are on object storage, and the keys."""

from __future__ import annotations

from hudi_cdc.config import load_config
from hudi_cdc.settings import declared
from hudi_cdc.sink.object_store import bucket_settings, buckets


def test_only_s3a_paths_name_buckets_each_once() -> None:
    paths = [
        "s3a://lake/db/orders",
        "/tmp/t",
        None,
        "s3a://lake/db/orders_hudi_cdc_tombstones",
        "S3A://other/x",
        "file:///x",
    ]
    assert buckets(paths) == ["lake", "other"]
    assert buckets(["hdfs://nn/x", "s3://emr-bucket/x"]) == []  # s3:// is EMRFS's scheme, not s3a's


def test_an_endpoint_is_set_for_its_bucket_only_with_path_style_and_plain_http() -> None:
    assert bucket_settings("lake", endpoint="http://127.0.0.1:58333", path_style=True) == {
        "fs.s3a.bucket.lake.endpoint": "http://127.0.0.1:58333",
        "fs.s3a.bucket.lake.path.style.access": "true",
        "fs.s3a.bucket.lake.connection.ssl.enabled": "false",
    }
    assert bucket_settings("lake", endpoint="https://s3.eu-west-1.amazonaws.com", path_style=False) == {
        "fs.s3a.bucket.lake.endpoint": "https://s3.eu-west-1.amazonaws.com",
        "fs.s3a.bucket.lake.path.style.access": "false",
    }
    # Without an endpoint nothing is set: s3a's own settings (AWS, or fs.s3a.* given to Spark) hold.
    assert bucket_settings("lake", endpoint=None, path_style=True) == {}


def test_the_settings_are_declared_once_and_hold_no_credentials() -> None:
    from hudi_cdc.config import IngestConfig

    names = {d.name for d in declared(IngestConfig)}
    assert {"s3_endpoint", "s3_path_style_access"} <= names
    assert not {n for n in names if n.startswith("s3_") and ("key" in n or "secret" in n)}
    config = load_config(
        env={"HUDI_CDC__S3_ENDPOINT": "http://h:1", "HUDI_CDC__S3_PATH_STYLE_ACCESS": "false"},
        target_base_path="s3a://b/t", target_table="t", source_path="/tmp/e", record_key_fields=["id"],
    )  # fmt: skip
    assert (config.s3_endpoint, config.s3_path_style_access) == ("http://h:1", False)
