"""Small MERGE_ON_READ rounds through Hudi's Java write client: the write runs no Spark job.

A round of a thousand rows written by Spark's Hudi datasource costs 2-5 s of fixed work: a chain
of Spark jobs to tag, write and commit, whatever the row count. Hudi's Java write client does the
same write in the driver's JVM (``jars/writer``'s ``SmallWrite``): the rows are collected once,
turned into Avro records of the table's schema, tagged with their bucket's file group as Hudi's
bucket index tags them, appended to those file groups' logs and committed with the round's
checkpoint, in one commit as before. A bucket with no file group yet gets one, named for its
bucket, whose first slice is log files only (the datasource writes it a base file; compaction
gives it one). Readers see the same table (docs/benchmarks-rounds.md, "Hudi's Java write client";
tests/sink/test_small_write.py compares it with the datasource's).

It is used where it is measured to win and known to be equal: MERGE_ON_READ, unpartitioned,
the bucket index with its simple engine (hudi-cdc's default for new unpartitioned tables), an
upsert of at most ``java_writer_max_rows`` rows holding at most ``java_writer_max_bytes`` (by
default a sixteenth of the driver's heap: the driver holds the rows about four times over while
it writes them). It only ever steps aside, never holds the table up:

- the JVM side declines, before it starts a commit, what it cannot write exactly as the
  datasource would (a schema that is not the table's, a null in a column the table declares NOT
  NULL, a key type Avro and Spark render differently, an index in the metadata table only Spark
  maintains, an earlier write's instant still pending, a compaction plan pending where compaction
  runs inline); the round goes to Spark as before;
- any failure of its own before its commit starts (an out-of-memory error included) hands the
  round to Spark's datasource too: logged as a warning and counted (``Outcome.failed``);
- a failure after the commit started is a failed write like any other: the inflight instant is
  rolled back by the next round, which is Spark's (an instant is pending);
- two file groups in one bucket are refused as the corruption they are (Hudi's bucket index
  refuses them too).

It runs no compaction: its commit schedules the plan, and with ``compaction = "async"`` (the
default) the next rounds stay its own while the compactor (``sink.compaction``: the
process's thread, or ``hudi-cdc compact``) executes the plan; where compaction runs inline the
next round goes to the datasource, whose inline compaction executes pending plans first.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hudi_cdc._jvm import jvm
from hudi_cdc.errors import TerminalSinkError
from hudi_cdc.sink import options as opt

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, Row, SparkSession
    from pyspark.sql.types import StructField

__all__ = ["HEAP_SHARE", "JAVA_CLASS", "Outcome", "counted", "declined", "round_bytes", "rows_bytes", "write"]

log = logging.getLogger(__name__)

JAVA_CLASS = "io.hudicdc.writer.SmallWrite"

HEAP_SHARE = 16
"""The default byte budget of a round is the driver's heap over this: the rows arrive compressed,
become Avro records, their payloads' bytes and then log blocks, each held while the next is made."""


@dataclass(frozen=True)
class Outcome:
    """What the Java client did with a round."""

    instant: str | None = None
    """Its commit; None: it wrote nothing, and Spark's datasource writes the round."""
    declined: str | None = None
    """Why it did not take the round, by its rules."""
    failed: str | None = None
    """Its own failure before its commit started: the round went to the datasource all the same."""


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


# The round_bytes of frames made from rows the driver held (a small plan's), counted from those rows when the
# frame was made: counting at the write instead collected the frame back from the JVM (0.07 s of a 0.6 s round
# of 1,000 rows under cProfile; the benchmark's round moved within its noise). Weak keys: an entry goes with its
# frame; a frame shaped since is a new one, counted at the write.
_COUNTED: weakref.WeakKeyDictionary[DataFrame, int] = weakref.WeakKeyDictionary()


def counted(frame: DataFrame, rows: Iterable[Mapping[str, Any]], fields: Sequence[StructField]) -> DataFrame:
    """``frame``, made from ``rows`` (of ``fields``), with its :func:`round_bytes` counted from them now."""
    _COUNTED[frame] = rows_bytes(rows, fields)
    return frame


def round_bytes(rows: DataFrame) -> int:
    """The bytes ``rows`` hold, as the driver would hold them: text and binary values by their length,
    nested values by their JSON text, 8 for any other value (one Spark job over the rows, none collected)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    if (known := _COUNTED.get(rows)) is not None:
        return known
    if (local := _local_bytes(rows)) is not None:
        return local
    sizes: list[Column] = []
    fixed = 0
    for field in rows.schema.fields:
        column = rows[field.name]
        if isinstance(field.dataType, (T.StringType, T.BinaryType)):
            sizes.append(F.coalesce(F.octet_length(column), F.lit(0)))
        elif isinstance(field.dataType, (T.ArrayType, T.MapType, T.StructType)):
            sizes.append(F.coalesce(F.octet_length(F.to_json(column)), F.lit(0)))
        else:
            fixed += 8
    per_row = sum(sizes, F.lit(fixed).cast("long"))
    total = rows.agg(F.sum(per_row).alias("bytes")).first()
    return int(total["bytes"] or 0) if total else 0


def _local_bytes(rows: DataFrame) -> int | None:
    """:func:`round_bytes` of rows the driver already holds (a local relation: a small plan made in the driver),
    counted from them without a Spark job; None for any other plan.

    A nested value counts its JSON text as Python writes it: Spark's ``to_json`` writes the same text for
    numbers, text and NULLs, a few characters more or less for a date, a timestamp, a decimal or bytes (a
    budget's estimate either way, never a value written)."""
    plan = rows._jdf.queryExecution().optimizedPlan()
    if plan.getClass().getSimpleName() != "LocalRelation":
        return None
    return rows_bytes(rows.collect(), rows.schema.fields)  # a local relation's collect runs no job


def rows_bytes(rows: Iterable[Mapping[str, Any]] | Iterable[Row], fields: Sequence[StructField]) -> int:
    """:func:`round_bytes` of rows in the driver (Spark's rows or dicts, their values by field name)."""
    import json

    from pyspark.sql import types as T

    text = [f.name for f in fields if isinstance(f.dataType, T.StringType)]
    binary = [f.name for f in fields if isinstance(f.dataType, T.BinaryType)]
    nested = [f.name for f in fields if isinstance(f.dataType, (T.ArrayType, T.MapType, T.StructType))]
    fixed = 8 * (len(fields) - len(text) - len(binary) - len(nested))
    total = 0
    for row in rows:
        total += fixed + sum(len(row[c].encode("utf-8")) for c in text if row[c] is not None)
        total += sum(len(row[c]) for c in binary if row[c] is not None)
        total += sum(
            len(json.dumps(row[c], ensure_ascii=False, separators=(",", ":"), default=str).encode("utf-8"))
            for c in nested
            if row[c] is not None
        )
    return total


def write(
    spark: SparkSession,
    base_path: str,
    rows: DataFrame,
    options: Mapping[str, str],
    metadata: Mapping[str, str],
    *,
    max_bytes: int | None = None,
) -> Outcome:
    """Write ``rows`` in one commit carrying ``metadata``, unless they hold more than ``max_bytes``
    (None: the driver's heap / HEAP_SHARE) or the Java side declines or fails before its commit: then
    nothing is written and the caller writes with Spark. Two file groups in a bucket raise."""
    from py4j.java_gateway import JavaClass

    gateway = jvm(spark)
    writer = getattr(gateway, JAVA_CLASS)
    if not isinstance(writer, JavaClass):  # a session without jars/writer's jar (`make jars` builds it)
        log.warning("%s is not on the session's classpath: writing with Spark's datasource", JAVA_CLASS)
        return Outcome(declined="the writer's jar is not on the classpath")
    budget = (
        max_bytes if max_bytes is not None else int(gateway.java.lang.Runtime.getRuntime().maxMemory()) // HEAP_SHARE
    )
    size = round_bytes(rows)
    if size > budget:
        why = f"the round holds about {size:,} bytes > java_writer_max_bytes = {budget:,}"
        log.info("%s: written with Spark's datasource: %s", base_path, why)
        return Outcome(declined=why)
    outcome = str(
        writer.write(spark._jsparkSession, rows._jdf, base_path, dict(options), {**metadata, opt.WRITER_KEY: "java"})
    )
    kind, _, value = outcome.partition(":")
    if kind == "commit":
        return Outcome(instant=value)
    if kind == "corrupt":
        raise TerminalSinkError(f"the table is corrupt: {value}")
    if kind == "fail":
        log.warning(
            "%s: Hudi's Java write client failed before its commit, nothing written; Spark's datasource "
            "writes the round instead: %s",
            base_path,
            value,
        )
        return Outcome(failed=value)
    log.info("%s: written with Spark's datasource: %s", base_path, value)
    return Outcome(declined=value)
