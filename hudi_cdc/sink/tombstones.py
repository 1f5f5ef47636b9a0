"""Delete tombstones: the newest delete position per key, kept beside the table.

Hudi removes a deleted row, and with it the delete's position, so a late,
older event for that key would insert the row again (the limitation the
Debezium RFC admits). hudi-cdc keeps ``(key, _source_order)`` of every delete
beside the table, so readers of the main table never see deleted rows, and the
merge policy drops any non-delete event at or below a key's tombstone.

Layout: one Parquet directory per batch that had deletes (``batch-*``) and, after
a purge or when there are many, one consolidated directory (``merged-*``). A
directory counts once Spark's ``_SUCCESS`` marker is in it. Reading takes the
newest tombstone per key over all of them, so a duplicate left by a crash
between writing a consolidated directory and removing the ones it replaced
changes nothing. Plain files, not a second Hudi table: a Hudi commit per batch
cost about 4 s of every round that had deletes.

Tombstones are written before the batch's data commit. A crash between the two
leaves tombstones for deletes the table has not applied yet; the replayed batch
carries those same deletes, so nothing is lost (tombstones only ever hold real
delete positions). Retention: tombstones older than ``tombstone_retention_hours``
are purged at the start of each run; an event older than a purged tombstone
can resurrect its row, which is the bound the retention trades for space.

One writer per table at a time, as for the Hudi table itself. That lets a
process remember what it last found in a store (:class:`_Known`): a continuous
run otherwise read every tombstone twice a round (the purge, the count), about
0.5 s of every round of a table that ever had a delete.
"""

from __future__ import annotations

import math
import os
import re
import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from hudi_cdc._jvm import hadoop_conf, jvm
from hudi_cdc.spark import release
from payloads.base import ORDER_COLUMN, TOMBSTONED_AT_COLUMN

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["TombstoneStore"]

CONSOLIDATE_AFTER = 32
"""Directories beyond which the next purge rewrites them into one, even with nothing expired."""


@dataclass(frozen=True)
class _Known:
    """What this process last found in a store: its directories, the key count, the oldest tombstone.

    Only the store's one writer adds tombstones, stamped with the start of their round
    (``record(stamped_at=)``). So while every directory seen then is still there, the
    oldest tombstone is the one known, or a newer stamp; while the directories are exactly
    those, the count holds. A directory gone (``hudi-cdc tombstones --purge``, another
    process) makes the next call read the store again.
    """

    directories: frozenset[str]
    count: int | None
    oldest_s: float | None  # epoch seconds of the oldest tombstone; None: not known


_known: dict[str, _Known] = {}
_known_lock = threading.Lock()
_MARKER = "/_SUCCESS"
_KINDS = ("batch-", "merged-")
_GLOB_SPECIAL = re.compile(r"[\\\[\]{}*?]")  # escaped in the store's own path, which is not a pattern
_schemas: dict[str, Any] = {}
"""A store's schema as last read or written: without it each read infers it, a Spark job."""


def _shape(schema: Any) -> list[tuple[str, Any]]:  # noqa: ANN401 - StructType
    return [(f.name, f.dataType) for f in schema.fields]  # Parquet reads every column as nullable


def _utc(value: datetime | None) -> datetime | None:
    return value.astimezone(UTC) if value is not None else None


def _held_by_driver(frame: DataFrame) -> bool:
    """Whether ``frame`` is a local relation: rows the driver holds, collected without a Spark job."""
    return bool(frame._jdf.queryExecution().optimizedPlan().getClass().getSimpleName() == "LocalRelation")


class TombstoneStore:
    def __init__(self, spark: SparkSession, path: str, *, key_fields: Sequence[str]) -> None:
        self._spark = spark
        self.path = path.rstrip("/")
        self._keys = list(key_fields)

    def _hadoop_path(self, *parts: Any) -> Any:
        return jvm(self._spark).org.apache.hadoop.fs.Path(*parts)

    def _fs(self) -> tuple[Any, Any]:
        root = self._hadoop_path(self.path)
        return root.getFileSystem(hadoop_conf(self._spark)), root

    def _directories(self) -> list[str]:
        """The complete tombstone directories, oldest first.

        One glob for their ``_SUCCESS`` markers: each py4j call is a round trip, and listing the
        directories, then testing each for its marker, took 17-20 ms a call here at a few
        dozen directories, several calls a round.
        """
        pattern = self._hadoop_path(_GLOB_SPECIAL.sub(r"\\\g<0>", self.path) + "/*" + _MARKER)
        found = pattern.getFileSystem(hadoop_conf(self._spark)).globStatus(pattern)  # None: no such folder
        paths = jvm(self._spark).org.apache.hadoop.fs.FileUtil.stat2Paths(found) if found is not None else []
        directories = (str(path.toString()).removesuffix(_MARKER) for path in paths)
        named = [(d.rsplit("/", 1)[-1], d) for d in directories]
        return [
            d for name, d in sorted(named, key=lambda nd: (nd[0].split("-", 1)[-1], nd[1])) if name.startswith(_KINDS)
        ]

    def _new_directory(self, kind: str) -> str:
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%f")
        return f"{self.path}/{kind}-{stamp}-{uuid.uuid4().hex[:8]}"

    def _read(self, directories: list[str]) -> DataFrame:
        from pyspark.sql import functions as F

        # Trusted while nothing this process saw of the store has gone (another process may have rebuilt it).
        schema = _schemas.get(self.path) if self._known(directories) is not None else None
        frame = (self._spark.read if schema is None else self._spark.read.schema(schema)).parquet(*directories)
        _schemas[self.path] = frame.schema
        keys = self._keys or [c for c in frame.columns if c not in (ORDER_COLUMN, TOMBSTONED_AT_COLUMN)]
        return frame.groupBy(*keys).agg(
            F.max(ORDER_COLUMN).alias(ORDER_COLUMN), F.max(TOMBSTONED_AT_COLUMN).alias(TOMBSTONED_AT_COLUMN)
        )

    def read(self) -> DataFrame | None:
        """Key columns, ``_source_order`` and ``_tombstoned_at`` of the newest delete per key; None if none."""
        directories = self._directories()
        return self._read(directories) if directories else None

    def count(self) -> int:
        directories = self._directories()
        if not directories:
            return 0
        known = self._known(directories)
        if known is not None and known.count is not None and known.directories == set(directories):
            return known.count
        count = self._read(directories).count()
        self._remember(directories, count, known.oldest_s if known is not None else None)
        return count

    def _known(self, directories: list[str]) -> _Known | None:
        """What this process knows of the store, while nothing it saw has gone."""
        with _known_lock:
            known = _known.get(self.path)
        return known if known is not None and known.directories <= set(directories) else None

    def _remember(self, directories: list[str], count: int | None, oldest_s: float | None) -> None:
        with _known_lock:
            _known[self.path] = _Known(frozenset(directories), count, oldest_s)

    def record(self, tombstones: DataFrame, *, stamped_at: datetime | None = None, new_keys: int | None = None) -> None:
        """Add tombstones (key columns, ``_source_order``, ``_tombstoned_at``), one row per key.

        ``stamped_at``: no row's ``_tombstoned_at`` is older (a round stamps its tombstones
        with its start), so the next purge need not read the store to know nothing expired.
        ``new_keys``: how many of the keys held no tombstone yet (the merge plan joined them
        with the store), so the next count need not read the store either: that read was
        3-4 Spark jobs of every round with a delete.
        """
        if self.local_path() is not None and _held_by_driver(tombstones):  # a plan made in the driver: no job
            rows = [row.asDict() for row in tombstones.collect()]
            self.record_in_driver(rows, tombstones.schema, stamped_at=stamped_at, new_keys=new_keys)
            return
        before = self._directories() if new_keys is not None else None
        tombstones.coalesce(1).write.parquet(self._new_directory("batch"))
        self._recorded(tombstones.schema, before, stamped_at, new_keys)

    def _recorded(
        self,
        schema: Any,  # noqa: ANN401 - StructType
        before: list[str] | None,
        stamped_at: datetime | None,
        new_keys: int | None,
    ) -> None:
        """What :meth:`record` remembers of the store once a batch directory of ``schema`` is written."""
        if self.path in _schemas and _shape(_schemas[self.path]) != _shape(schema):
            del _schemas[self.path]  # another key type: the next read looks at the files again
        after = self._directories() if new_keys is not None else None
        stamp = stamped_at.timestamp() if stamped_at is not None else None
        with _known_lock:
            known = _known.get(self.path)
            if before == []:  # the store was empty: it holds just these keys now, as old as their stamp
                known = _Known(frozenset(), 0, stamp)
            if known is None:
                return
            oldest = min(known.oldest_s, stamp) if stamp is not None and known.oldest_s is not None else None
            # The count holds if the store was as counted and this write is all that changed it.
            if (
                new_keys is not None
                and known.count is not None
                and before is not None
                and after is not None
                and known.directories == set(before)
                and len(after) == len(before) + 1
                and set(before) < set(after)
            ):
                _known[self.path] = _Known(frozenset(after), known.count + new_keys, oldest)
            else:
                _known[self.path] = _Known(known.directories, None, oldest)

    # -- the driver's side: a small round's plan reads and adds tombstones without a Spark job (pipeline's
    # small plan). Local stores only: pyarrow reads and writes the same Parquet directories Spark does.
    def local_path(self) -> str | None:
        """The store's folder on the local file system, or None when it lives elsewhere (the driver reads only there)."""
        if self.path.startswith("file:"):
            return "/" + self.path.removeprefix("file:").lstrip("/")
        return self.path if "://" not in self.path and self.path.startswith("/") else None

    def newest_in_driver(self) -> dict[tuple[Any, ...], str] | None:
        """:meth:`read`'s newest delete position per key tuple, read by pyarrow in the driver; None if no tombstone.

        Raises ``ValueError`` for a store off the local file system (the caller plans with Spark instead)."""
        import pyarrow.parquet as pq

        if self.local_path() is None:
            raise ValueError(f"the tombstone store {self.path} is not on the local file system")
        directories = self._directories()
        if not directories:
            return None
        newest: dict[tuple[Any, ...], str] = {}
        for directory in directories:
            local = directory.removeprefix("file:")
            files = [f for f in pq.ParquetDataset(local).files if not f.rsplit("/", 1)[-1].startswith(("_", "."))]
            for file in files:
                table = pq.read_table(file)
                keys = self._keys or [c for c in table.column_names if c not in (ORDER_COLUMN, TOMBSTONED_AT_COLUMN)]
                columns = [table.column(k).to_pylist() for k in keys]
                for key, order in zip(zip(*columns, strict=True), table.column(ORDER_COLUMN).to_pylist(), strict=True):
                    if order is not None and (key not in newest or order > newest[key]):
                        newest[key] = order
        return newest

    def record_in_driver(
        self,
        rows: Sequence[dict[str, Any]],
        schema: Any,  # noqa: ANN401 - StructType
        *,
        stamped_at: datetime | None,
        new_keys: int | None,
    ) -> None:
        """:meth:`record` for tombstones held by the driver: one Parquet file written by pyarrow, then the
        ``_SUCCESS`` marker that makes the directory count. ``schema``: their Spark schema (key columns,
        ``_source_order``, ``_tombstoned_at``)."""
        import pyarrow as pa
        import pyarrow.parquet as pq
        from pyspark.sql.pandas.types import to_arrow_schema

        local = self.local_path()
        if local is None:
            raise ValueError(f"the tombstone store {self.path} is not on the local file system")
        before = self._directories() if new_keys is not None else None
        directory = self._new_directory("batch").removeprefix("file:")
        arrow_schema = to_arrow_schema(schema)
        # Spark writes timestamps as UTC instants; pyarrow's own UTC timestamps read back as the same instants.
        stamps = [f.name for f in schema.fields if f.dataType.typeName() == "timestamp"]
        # A naive datetime is Spark's collect of an instant, in local time: the instant, in UTC.
        aware = [{**row, **{s: _utc(row[s]) for s in stamps}} for row in rows]
        table = pa.Table.from_pylist(aware, schema=arrow_schema)
        os.makedirs(directory)
        pq.write_table(table, f"{directory}/part-00000-{uuid.uuid4()}-c000.snappy.parquet", compression="snappy")
        with open(directory + _MARKER, "wb"):
            pass
        self._recorded(schema, before, stamped_at, new_keys)

    def purge(self, older_than: datetime) -> int:
        """Delete tombstones recorded before ``older_than`` (timezone-aware); return how many."""
        from pyspark.sql import functions as F

        directories = self._directories()
        if not directories:
            return 0
        known = self._known(directories)
        if (
            known is not None
            and known.oldest_s is not None
            and known.oldest_s >= older_than.timestamp()
            and len(directories) <= CONSOLIDATE_AFTER
        ):
            return 0  # nothing is old enough yet, and nothing to consolidate
        current = self._read(directories).localCheckpoint(eager=True)
        expired = F.col(TOMBSTONED_AT_COLUMN) < F.lit(older_than)
        found = current.agg(
            F.count(F.when(expired, F.lit(1))).alias("expired"),
            F.count(F.when(~expired, F.lit(1))).alias("kept"),
            F.min(F.when(~expired, F.col(TOMBSTONED_AT_COLUMN))).cast("double").alias("oldest"),
        ).first()
        assert found is not None  # an aggregate without grouping has one row
        count, kept = int(found["expired"]), int(found["kept"])
        # With nothing left, the next record() says how old its tombstones are.
        oldest = float(found["oldest"]) if found["oldest"] is not None else math.inf
        if count or len(directories) > CONSOLIDATE_AFTER:
            # The replacement is complete before anything it replaces goes.
            current.filter(~expired).coalesce(1).write.parquet(self._new_directory("merged"))
            fs, _ = self._fs()
            for directory in directories:
                fs.delete(self._hadoop_path(directory), True)
            directories = self._directories()
        release(current)
        self._remember(directories, kept, oldest)
        return count
