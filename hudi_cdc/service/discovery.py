"""Which tables the pipeline's source holds now: topics, folders named like topics, or a database's tables."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from hudi_cdc.errors import SourceError, TransientError
from hudi_cdc.service.spec import PipelineSpec, TableRef
from hudi_cdc.sources.kafka import broker_conf, list_topics, new_consumer, request_timeout_s
from hudi_cdc.sources.kafka_security import KafkaSecurity

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["discover"]


def discover(spark: SparkSession | None, spec: PipelineSpec) -> list[TableRef]:
    """The source's tables that match the pipeline's patterns, sorted by topic.

    Without a Spark session (``spark`` None) a files source on the local file system is listed by Python;
    another file system needs the session's Hadoop settings."""
    if spec.source.kind == "jdbc":
        return [TableRef(n, key) for n, key in sorted(_database_tables(spec)) if spec.source.matches(n)]
    names = _topics(spec) if spec.source.kind == "kafka" else _folders(spark, spec)
    return [TableRef(n) for n in sorted(names) if spec.source.matches(n) and not _transaction_topic(spec, n)]


def _transaction_topic(spec: PipelineSpec, topic: str) -> bool:
    """A connector's transaction topic (``[source] transaction_topic``, or Debezium's default
    ``<topic.prefix>.transaction``): metadata, never a table, whatever the patterns match."""
    if topic == spec.source.transaction_topic:
        return True
    return topic.count(".") == 1 and topic.endswith(".transaction")


def _database_tables(spec: PipelineSpec) -> list[tuple[str, tuple[str, ...]]]:
    from hudi_cdc.sources.jdbc import database_tables, source_database

    s = spec.source
    assert s.url
    return database_tables(source_database(s.url, s.user, s.password_file, s.password_env))


def _topics(spec: PipelineSpec) -> list[str]:
    from confluent_kafka import KafkaException

    conf = broker_conf(spec.defaults.get("hoodie_conf", {}), KafkaSecurity.of(spec.source))
    # A consumer, not an AdminClient: it can be closed, so no client keeps retrying a dead broker behind us.
    client = new_consumer(str(spec.source.bootstrap_servers), conf, group_id="hudi-cdc-discovery")
    try:
        topics = list_topics(client, str(spec.source.bootstrap_servers), request_timeout_s(conf)).topics
    except KafkaException as exc:
        raise TransientError(f"cannot list the topics of {spec.source.bootstrap_servers}: {exc}") from None
    finally:
        client.close()
    return [name for name in topics if not name.startswith("_")]  # internal topics (__consumer_offsets, _schemas)


def _folders(spark: SparkSession | None, spec: PipelineSpec) -> list[str]:
    if spark is None:
        return _local_folders(spec)
    from hudi_cdc._jvm import hadoop_conf, java_message, jvm

    root = jvm(spark).org.apache.hadoop.fs.Path(spec.source.path)
    try:
        fs = root.getFileSystem(hadoop_conf(spark))
        if not fs.exists(root):
            raise SourceError(f"{spec.origin} [source]: source_path {spec.source.path} does not exist")
        return [
            s.getPath().getName()
            for s in fs.listStatus(root)
            if s.isDirectory() and not s.getPath().getName().startswith((".", "_"))
        ]
    except SourceError:
        raise
    except Exception as exc:  # py4j wraps Hadoop's IOExceptions
        raise SourceError(f"cannot list {spec.source.path}: {java_message(exc)}") from exc


def _local_folders(spec: PipelineSpec) -> list[str]:
    """The folders a files source on the local file system holds, listed as Hadoop lists them (hidden ones
    and ``_`` ones left out)."""
    path = str(spec.source.path)
    parts = urlsplit(path)
    if parts.scheme not in ("", "file"):
        raise SourceError(f"listing {path} needs a Spark session (its Hadoop file system)")
    root = Path(parts.path if parts.scheme else path)
    if not root.exists():
        raise SourceError(f"{spec.origin} [source]: source_path {path} does not exist")
    try:
        return [e.name for e in os.scandir(root) if e.is_dir() and not e.name.startswith((".", "_"))]
    except OSError as exc:
        raise SourceError(f"cannot list {path}: {exc.strerror}") from exc
