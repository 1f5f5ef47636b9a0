"""SQL Server change events (Debezium's SQL Server connector, reading SQL Server's CDC tables).

Order: ``source.commit_lsn`` (the transaction's commit), then ``change_lsn``
(the change within it), then ``event_serial_no`` (events at one change LSN: a
primary-key update is a delete and a create there), the same order Debezium's
own offsets keep. LSNs are ``xxxxxxxx:xxxxxxxx:xxxx`` (10 bytes in hex, fixed
width), so their text order is their order. A snapshot read (``op=r``)
carries the LSN the snapshot was taken at and no change LSN; it ranks below a
streaming event at that LSN. SQL Server's CDC captures whole rows: no
placeholders.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from payloads.base import OP_COLUMN, MergePolicy

if TYPE_CHECKING:
    from pyspark.sql import Column

__all__ = ["SqlServerPolicy"]

_LSN = r"^[0-9a-f]{8}:[0-9a-f]{8}:[0-9a-f]{4}$"
_NO_LSN = "00000000:00000000:0000"
_SERIAL_DIGITS = 20


class SqlServerPolicy(MergePolicy):
    name = "sqlserver"

    @property
    def source_meta_columns(self) -> Sequence[tuple[str, str, str, bool]]:
        return (
            ("_source_commit_lsn", "commit_lsn", "string", True),
            ("_source_change_lsn", "change_lsn", "string", True),
            ("_source_event_serial_no", "event_serial_no", "bigint", False),  # Debezium 1.x had none
        )

    @staticmethod
    def _lsn(column: str) -> Column:
        from pyspark.sql import functions as F

        return F.lower(F.col(column))

    def order_expr(self) -> Column:
        from pyspark.sql import functions as F

        serial = F.coalesce(F.col("_source_event_serial_no"), F.lit(0)).cast("string")
        streaming = F.when(F.col(OP_COLUMN) == F.lit("r"), F.lit("0")).otherwise(F.lit("1"))
        # The snapshot's LSN is where its rows stand: the flag ranks it below any change committed there.
        return F.concat(
            F.coalesce(self._lsn("_source_commit_lsn"), F.lit(_NO_LSN)),
            streaming,
            F.coalesce(self._lsn("_source_change_lsn"), F.lit(_NO_LSN)),
            F.lpad(serial, _SERIAL_DIGITS, "0"),
        )

    def position_error(self) -> Column:
        from pyspark.sql import functions as F

        streaming = F.col(OP_COLUMN) != F.lit("r")
        error = F.when(
            streaming & (F.col("_source_commit_lsn").isNull() | F.col("_source_change_lsn").isNull()),
            F.lit("source.commit_lsn or source.change_lsn is null on a streaming event, so it cannot be ordered"),
        )
        for column, field in (("_source_commit_lsn", "commit_lsn"), ("_source_change_lsn", "change_lsn")):
            error = error.when(
                F.col(column).isNotNull() & ~self._lsn(column).rlike(_LSN),
                F.concat(
                    F.lit(f"source.{field} '"), F.col(column), F.lit("' is not an LSN like 0000002a:00000f60:0002")
                ),
            )
        return error.when(F.col("_source_event_serial_no") < 0, F.lit("source.event_serial_no is negative"))
