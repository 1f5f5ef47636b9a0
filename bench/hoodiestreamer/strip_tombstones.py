"""Copy a Debezium topic into a new topic without its tombstones (null values).

Hudi's DebeziumSource hands every Kafka value to Avro-to-Row conversion with no
null check, so one delete tombstone (Debezium's default, tombstones.on.delete=true)
fails the whole round with a NullPointerException. Hudi has no setting to skip
them. The benchmark therefore feeds HoodieStreamer this copy. Key and value bytes
are copied as they are, so the registry schema ids in them stay valid.

    .venv/bin/python bench/hoodiestreamer/strip_tombstones.py SRC_TOPIC DEST_TOPIC [BOOTSTRAP]

DEST_TOPIC is deleted and recreated first, so a rerun never appends duplicates.
"""

from __future__ import annotations

import sys
import time

from hudi_cdc.spark import spark_session


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    src, dest = argv[0], argv[1]
    bootstrap = argv[2] if len(argv) == 3 else "127.0.0.1:59092"
    spark = spark_session(app_name="strip-tombstones")
    jvm = spark.sparkContext._jvm
    props = jvm.java.util.Properties()
    props.put("bootstrap.servers", bootstrap)
    admin = jvm.org.apache.kafka.clients.admin.AdminClient.create(props)
    try:
        partitions = (
            admin.describeTopics(jvm.java.util.Collections.singletonList(src))
            .allTopicNames()
            .get()
            .get(src)
            .partitions()
            .size()
        )
        names = jvm.java.util.Collections.singletonList(dest)
        if admin.listTopics().names().get().contains(dest):
            admin.deleteTopics(names).all().get()
            # deletion is asynchronous on the broker; creating too early fails
            while admin.listTopics().names().get().contains(dest):
                time.sleep(0.5)
        new_topic = jvm.org.apache.kafka.clients.admin.NewTopic(dest, partitions, jvm.java.lang.Short.valueOf("1"))
        for attempt in range(20):
            try:
                admin.createTopics(jvm.java.util.Collections.singletonList(new_topic)).all().get()
                break
            except Exception:  # TopicExistsException while the delete settles
                if attempt == 19:
                    raise
                time.sleep(0.5)
    finally:
        admin.close()

    df = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", src)
        .option("startingOffsets", "earliest")
        .option("endingOffsets", "latest")
        .load()
    )
    kept = df.where("value IS NOT NULL")
    # same partition number keeps each key's events in their original order
    (
        kept.selectExpr("key", "value", "partition")
        .write.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", dest)
        .save()
    )
    total, copied = df.count(), kept.count()
    print(f"{src} -> {dest}: {copied} of {total} messages copied, {total - copied} tombstones dropped")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
