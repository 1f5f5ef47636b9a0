"""Tables on object storage: the s3a settings of a table's buckets, set on the session's Hadoop configuration.

Hadoop's s3a connector reads a bucket's settings from ``fs.s3a.bucket.<bucket>.<key>`` before its own
``fs.s3a.<key>``, when the bucket's file system is first made (then cached for the JVM's life): so each
table's endpoint is set for its own buckets only, before anything of the table is read, and tables on
different stores share one session. Two tables that want different settings for one bucket are refused:
the first one's file system would serve both.

Credentials are never set here: s3a's provider chain finds them (the environment's ``AWS_ACCESS_KEY_ID``
and ``AWS_SECRET_ACCESS_KEY``, an instance or container role; a profile through
``fs.s3a.aws.credentials.provider``), so no secret passes through hudi-cdc's settings, files or logs.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from hudi_cdc._jvm import jvm
from hudi_cdc.errors import ConfigError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from hudi_cdc.config import IngestConfig

__all__ = ["S3A_CLASS", "bucket_settings", "buckets", "configure", "configure_table"]

S3A_CLASS = "org.apache.hadoop.fs.s3a.S3AFileSystem"
_SCHEMES = ("s3a",)


def buckets(paths: Iterable[str | None]) -> list[str]:
    """The buckets of the ``s3a://`` paths among ``paths``, in order, once each."""
    found: list[str] = []
    for path in paths:
        parts = urlsplit(path or "")
        if parts.scheme.lower() in _SCHEMES and parts.netloc and parts.netloc not in found:
            found.append(parts.netloc)
    return found


def bucket_settings(bucket: str, *, endpoint: str | None, path_style: bool) -> dict[str, str]:
    """The Hadoop keys for ``bucket``: none without an endpoint (s3a's own settings then hold)."""
    if not endpoint:
        return {}
    prefix = f"fs.s3a.bucket.{bucket}."
    settings = {prefix + "endpoint": endpoint, prefix + "path.style.access": "true" if path_style else "false"}
    if urlsplit(endpoint).scheme == "http":  # s3a speaks TLS unless told otherwise
        settings[prefix + "connection.ssl.enabled"] = "false"
    return settings


def configure(
    spark: SparkSession, paths: Iterable[str | None], *, endpoint: str | None, path_style: bool, table: str = ""
) -> list[str]:
    """Set the s3a settings of each bucket of ``paths`` on ``spark``'s Hadoop configuration; the buckets.

    Raises a ConfigError when a path is s3a:// but the session has no s3a connector, or when a bucket
    already has another endpoint in this session.
    """
    found = buckets(paths)
    if not found:
        return []
    gateway = jvm(spark)
    try:
        gateway.java.lang.Class.forName(
            S3A_CLASS, False, gateway.java.lang.Thread.currentThread().getContextClassLoader()
        )
    except Exception as exc:  # py4j's error for ClassNotFoundException
        raise ConfigError(
            f"{table or 'the table'}: s3a:// needs Hadoop's s3a connector (hadoop-aws and the AWS SDK bundle) on "
            "the session's classpath: `make jars` fetches them into .jars/s3a, or put hadoop-aws-3.3.4.jar and "
            "aws-java-sdk-bundle-1.12.262.jar in the folder HUDI_CDC_JARS_DIR names (and leave HUDI_CDC_S3A unset); "
            "under spark-submit, pass them with --jars"
        ) from exc
    conf = spark.sparkContext._jsc.hadoopConfiguration()  # noqa: SLF001 - the session's Hadoop configuration
    for bucket in found:
        for key, value in bucket_settings(bucket, endpoint=endpoint, path_style=path_style).items():
            current = conf.get(key)
            if current is not None and str(current) != value:
                raise ConfigError(
                    f"{table or 'the table'}: {key} is {current!r} in this session and this table wants {value!r}: "
                    "tables sharing a bucket need the same s3_endpoint and s3_path_style_access (or run them in "
                    "separate processes)"
                )
            conf.set(key, value)
    return found


def configure_table(spark: SparkSession, config: IngestConfig) -> list[str]:
    """:func:`configure` for a table's paths: its base path, its tombstones' and its quarantine's."""
    paths = (config.target_base_path, config.resolved_tombstone_path, config.resolved_quarantine_path)
    return configure(
        spark, paths, endpoint=config.s3_endpoint, path_style=config.s3_path_style_access, table=config.target_table
    )
