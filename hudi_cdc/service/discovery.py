"""Which tables the pipeline's source holds now: topics, folders named like topics, or a database's tables."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hudi_cdc.errors import SourceError, TransientError
from hudi_cdc.service.spec import PipelineSpec, TableRef
from hudi_cdc.sources.kafka import client_conf, new_consumer, request_timeout_s

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["discover"]


def discover(spark: SparkSession, spec: PipelineSpec) -> list[TableRef]:
    """The source's tables that match the pipeline's patterns, sorted by topic."""
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

    conf = client_conf(spec.defaults.get("hoodie_conf", {}))
    # A consumer, not an AdminClient: it can be closed, so no client keeps retrying a dead broker behind us.
    client = new_consumer(str(spec.source.bootstrap_servers), conf, group_id="hudi-cdc-discovery")
    try:
        topics = client.list_topics(timeout=request_timeout_s(conf)).topics
    except KafkaException as exc:
        raise TransientError(f"cannot list the topics of {spec.source.bootstrap_servers}: {exc}") from None
    finally:
        client.close()
    return [name for name in topics if not name.startswith("_")]  # internal topics (__consumer_offsets, _schemas)


def _folders(spark: SparkSession, spec: PipelineSpec) -> list[str]:
    from hudi_cdc._jvm import hadoop_conf, java_message, jvm

    root = jvm(spark).org.apache.hadoop.fs.Path(spec.source.path)
    try:
        fs = root.getFileSystem(hadoop_conf(spark))
        if not fs.exists(root):
            raise SourceError(f"{spec.origin} [source]: path {spec.source.path} does not exist")
        return [
            s.getPath().getName()
            for s in fs.listStatus(root)
            if s.isDirectory() and not s.getPath().getName().startswith((".", "_"))
        ]
    except SourceError:
        raise
    except Exception as exc:  # py4j wraps Hadoop's IOExceptions
        raise SourceError(f"cannot list {spec.source.path}: {java_message(exc)}") from exc
