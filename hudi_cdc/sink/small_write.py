"""Small MERGE_ON_READ rounds through Hudi's Java write client: the write runs no Spark job.

A round of a thousand rows written by Spark's Hudi datasource costs 2-5 s of fixed work: a chain
of Spark jobs to tag, write and commit, whatever the row count. Hudi's Java write client does the
same write in the driver's JVM (``jars/writer``'s ``SmallWrite``): the rows are collected once,
turned into Avro records of the table's schema, tagged with their bucket's file group as Hudi's
bucket index tags them, appended to those file groups' logs and committed with the round's
checkpoint, in one commit as before. Readers see the same table (docs/benchmarks.md, "Hudi's
Java write client"; tests/sink/test_small_write.py compares it with the datasource's).

It is used where it is measured to win and known to be equal: MERGE_ON_READ, unpartitioned,
the bucket index with its simple engine (hudi-cdc's default for new unpartitioned tables), an
upsert of at most ``java_writer_max_rows`` rows. The JVM side declines, before it starts a commit,
what it cannot write exactly as the datasource would (a schema that is not the table's, a key
type Avro and Spark render differently, a bucket with no file group yet); the round then goes
to Spark as before. A failure after the commit started is a failed write like any other: the
inflight instant is rolled back by the next writer.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

from hudi_cdc._jvm import jvm
from hudi_cdc.sink import options as opt

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["JAVA_CLASS", "declined", "write"]

log = logging.getLogger(__name__)

JAVA_CLASS = "io.hudicdc.writer.SmallWrite"


def declined(options: Mapping[str, str], rows: int, max_rows: int) -> str | None:
    """Why a write with ``options`` of ``rows`` rows goes to Spark's datasource; None if the Java client may take it."""
    if max_rows <= 0 or rows > max_rows:
        return f"{rows} rows > java_writer_max_rows = {max_rows}" if max_rows > 0 else "java_writer_max_rows = 0"
    if options.get(opt.TABLE_TYPE) != "MERGE_ON_READ":
        return "not MERGE_ON_READ"
    if options.get(opt.OPERATION, "upsert") != "upsert":
        return f"a {options[opt.OPERATION]}"
    if options.get(opt.PARTITION_PATH):
        return "a partitioned table"
    if not opt.index_layout(options).startswith("BUCKET(SIMPLE"):
        return f"index {opt.index_layout(options)}"
    return None


def write(
    spark: SparkSession, base_path: str, rows: DataFrame, options: Mapping[str, str], metadata: Mapping[str, str]
) -> str | None:
    """Write ``rows`` in one commit carrying ``metadata``; its instant, or None if the Java side declined
    (nothing written: the caller writes with Spark)."""
    from py4j.java_gateway import JavaClass

    writer = getattr(jvm(spark), JAVA_CLASS)
    if not isinstance(writer, JavaClass):  # a session without jars/writer's jar (`make jars` builds it)
        log.warning("%s is not on the session's classpath: writing with Spark's datasource", JAVA_CLASS)
        return None
    outcome = str(
        writer.write(spark._jsparkSession, rows._jdf, base_path, dict(options), {**metadata, opt.WRITER_KEY: "java"})
    )
    kind, _, value = outcome.partition(":")
    if kind == "skip":
        log.info("%s: written with Spark's datasource: %s", base_path, value)
        return None
    return value
