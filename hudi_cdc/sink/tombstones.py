"""Delete tombstones: the newest delete position per key, kept beside the table.

Hudi removes a deleted row, and with it the delete's position, so a late,
older event for that key would insert the row again (the limitation the
Debezium RFC admits). hudi-cdc keeps ``(key, _source_order)`` of every delete
in a small Hudi table of its own, so readers of the main table never see
deleted rows, and the merge policy drops any non-delete event at or below a
key's tombstone.

Tombstones are written before the batch's data commit. A crash between the two
leaves tombstones for deletes the table has not applied yet; the replayed batch
carries those same deletes, so nothing is lost (tombstones only ever hold real
delete positions). Retention: tombstones older than ``tombstone_retention_hours``
are purged at the start of each run; an event older than a purged tombstone
can resurrect its row, which is the bound the retention trades for space.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from hudi_cdc.sink import options as opt
from hudi_cdc.sink.hudi import HudiTable
from payloads.base import ORDER_COLUMN, TOMBSTONED_AT_COLUMN

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["TombstoneStore"]


class TombstoneStore:
    def __init__(self, spark: SparkSession, path: str, *, table_name: str, key_fields: Sequence[str]) -> None:
        self._spark = spark
        self._table = HudiTable(spark, path)
        self._name = table_name + "_hudi_cdc_tombstones"
        self._keys = list(key_fields)

    @property
    def path(self) -> str:
        return self._table.base_path

    def _options(self, operation: str) -> dict[str, str]:
        options = opt.write_options(
            table_name=self._name,
            table_type="COPY_ON_WRITE",
            record_key_fields=self._keys,
            partition_path_field=None,
            ordering_field=ORDER_COLUMN,
            user_conf={},
        )
        options[opt.OPERATION] = operation
        return options

    def read(self) -> DataFrame | None:
        if not self._table.exists():
            return None
        return self._table.read().select(*self._keys, ORDER_COLUMN, TOMBSTONED_AT_COLUMN)

    def count(self) -> int:
        frame = self.read()
        return 0 if frame is None else frame.count()

    def record(self, tombstones: DataFrame) -> None:
        """Upsert tombstones; per key the highest ``_source_order`` is kept."""
        tombstones.write.format("hudi").options(**self._options("upsert")).mode("append").save(self.path)

    def purge(self, older_than: datetime) -> int:
        """Delete tombstones recorded before ``older_than`` (timezone-aware); return how many."""
        from pyspark.sql import functions as F

        frame = self.read()
        if frame is None:
            return 0
        expired = frame.filter(F.col(TOMBSTONED_AT_COLUMN) < F.lit(older_than)).localCheckpoint(eager=True)
        count = expired.count()
        if count:
            expired.write.format("hudi").options(**self._options("delete")).mode("append").save(self.path)
        return count
