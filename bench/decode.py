"""Decode-only rates of a Kafka topic of Confluent-framed Debezium Avro: the design hudi-cdc uses against alternatives.

- ``spark_from_avro`` (hudi-cdc's design): executors read their offset ranges
  with Spark's Kafka source and decode in the JVM with ``from_avro``, every
  writer version into one merged reader schema (``KafkaSource.next_batch``),
  into Spark rows, in one pass.
- ``python_fastavro_arrow``: executors (Python workers, ``mapInArrow``) read
  their ranges with confluent-kafka, decode each message with fastavro against
  the newest schema and hand Arrow batches to Spark: the same rows, via Python.
- ``python_fastavro_count``: the same reading and decoding, but the records are
  only counted: the Python decode ceiling without building any rows.

Each result is events/s over the whole topic, end to end (planning, reading, decoding).
"""

from __future__ import annotations

import io
import json
import struct
import time
from collections.abc import Iterator
from typing import Any

from hudi_cdc.config import load_config
from hudi_cdc.sources.kafka import KafkaSource


def _ranges(bootstrap: str, topic: str, chunks: int) -> list[tuple[int, int, int]]:
    from hudi_cdc.testing.kafka import end_offsets

    result = []
    for (_, partition), high in sorted(end_offsets(bootstrap, [topic]).items()):
        step = max(1, -(-high // chunks))
        result += [(partition, start, min(high, start + step)) for start in range(0, high, step)]
    return result


def spark_from_avro(spark: Any, bootstrap: str, registry: str, topic: str) -> int:
    config = load_config(
        source="kafka", topic=topic, bootstrap_servers=bootstrap, schema_registry_url=registry,
        target_base_path="/tmp/unused", target_table="unused",
    )  # fmt: skip
    batch = KafkaSource(spark, config).next_batch(None)
    assert batch is not None
    for part in batch.parts:
        _consume(part.envelopes)
    return -1  # the caller knows the count


def _consume(frame: Any) -> None:
    # The noop sink evaluates every column (count() would let the optimizer prune the decoding away).
    frame.write.format("noop").mode("overwrite").save()


def _decode_partitions(
    bootstrap: str, registry: str, topic: str, reader_schema: dict[str, Any], as_arrow: bool, arrow_schema: Any = None
) -> Any:
    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import fastavro
        import pyarrow as pa
        from confluent_kafka import Consumer, TopicPartition

        from hudi_cdc.sources.registry import SchemaRegistry

        reg = SchemaRegistry(registry)
        writers: dict[int, Any] = {}
        reader = fastavro.parse_schema(reader_schema)
        for ranges in batches:
            for partition, start, end in zip(*(ranges.column(i).to_pylist() for i in range(3)), strict=True):
                consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False,
                                     "fetch.max.bytes": 52428800, "max.partition.fetch.bytes": 10485760})  # fmt: skip
                consumer.assign([TopicPartition(topic, partition, start)])
                position, rows, count = start, [], 0
                while position < end:
                    # consume(n) waits until n messages are there: never ask for more than the range holds
                    for message in consumer.consume(min(10_000, end - position), timeout=5):
                        if message.error() or message.offset() >= end:
                            continue
                        position = message.offset() + 1
                        value = message.value()
                        if value is None:
                            continue
                        schema_id = struct.unpack(">I", value[1:5])[0]
                        if schema_id not in writers:
                            writers[schema_id] = fastavro.parse_schema(reg.schema(schema_id))
                        record = fastavro.schemaless_reader(io.BytesIO(value[5:]), writers[schema_id], reader)
                        count += 1
                        if as_arrow:
                            rows.append(record)
                            if len(rows) == 20_000:
                                yield pa.RecordBatch.from_pylist(rows, schema=arrow_schema)
                                rows = []
                consumer.close()
                if as_arrow and rows:
                    yield pa.RecordBatch.from_pylist(rows, schema=arrow_schema)
                if not as_arrow:
                    yield pa.RecordBatch.from_pylist([{"n": count}])

    return run


def python_fastavro(spark: Any, bootstrap: str, registry: str, topic: str, *, as_arrow: bool) -> int:
    from pyspark.sql import functions as F
    from pyspark.sql.avro.functions import from_avro
    from pyspark.sql.pandas.types import to_arrow_schema

    from hudi_cdc.sources.registry import SchemaRegistry

    cores = spark.sparkContext.defaultParallelism
    ranges = spark.createDataFrame(_ranges(bootstrap, topic, cores), "p int, start long, end long").repartition(cores)
    # Every message is read into the newest writer schema, as the other designs end up with.
    registry_client = SchemaRegistry(registry)
    newest = registry_client.schema(registry_client.subject_schema_ids(f"{topic}-value")[-1])
    if not as_arrow:
        counts = ranges.mapInArrow(_decode_partitions(bootstrap, registry, topic, newest, False), "n long")
        return int(counts.agg(F.sum("n")).first()[0])
    # The Spark types of that schema: what the Arrow batches must carry.
    spark_schema = spark.range(0).select(from_avro(F.lit(b""), json.dumps(newest)).alias("e")).schema["e"].dataType
    decoded = ranges.mapInArrow(
        _decode_partitions(bootstrap, registry, topic, newest, True, to_arrow_schema(spark_schema)), spark_schema
    )
    _consume(decoded)
    return -1  # the same messages as the other designs: the caller knows the count


def measure(spark: Any, bootstrap: str, registry: str, topic: str, events: int) -> dict[str, dict[str, float]]:
    """Seconds and events/s of each design over the whole topic (``events`` change events, plus tombstones)."""
    designs = {
        "spark_from_avro": lambda: spark_from_avro(spark, bootstrap, registry, topic),
        "python_fastavro_arrow": lambda: python_fastavro(spark, bootstrap, registry, topic, as_arrow=True),
        "python_fastavro_count": lambda: python_fastavro(spark, bootstrap, registry, topic, as_arrow=False),
    }
    results = {}
    for name, run in designs.items():
        t0 = time.perf_counter()
        counted = int(run())
        if counted >= 0 and counted != events:
            raise AssertionError(f"decode {name}: {counted} events, the topic has {events}")
        seconds = time.perf_counter() - t0
        results[name] = {"events": events, "seconds": round(seconds, 2), "events_per_s": round(events / seconds)}
        print(f"decode {name:<24} {events:>9} events {seconds:7.1f}s {events / seconds:>10,.0f} events/s", flush=True)
    return results
