"""Rows pulled by the JDBC source, ordered by the cursor they were read at.

The source sends each row as a read (``op=r``) whose ``source`` block holds its
cursor: the timestamp column in microseconds (``cursor_ts``) and the
incrementing column (``cursor_id``). Order: the timestamp, then the
incrementing value; a row read again (the look-back, a replayed round) has the
same order and the same values, so it changes nothing. Deletes (keys found gone
by reconciliation or a full refresh) rank at the database clock of their round;
no placeholders come this way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from payloads.base import MergePolicy

if TYPE_CHECKING:
    from pyspark.sql import Column

__all__ = ["JdbcPolicy"]

_DIGITS = 20
_TS_BIAS = 2**62  # timestamps before 1970 are negative microseconds: shifted so the text still sorts
_ID_BIAS = 2**63


class JdbcPolicy(MergePolicy):
    name = "jdbc"

    @property
    def source_meta_columns(self) -> Sequence[tuple[str, str, str, bool]]:
        return (
            ("_source_cursor_ts", "cursor_ts", "bigint", True),
            ("_source_cursor_id", "cursor_id", "bigint", True),
        )

    def order_expr(self) -> Column:
        from pyspark.sql import functions as F

        def padded(column: str, bias: int) -> Column:
            shifted = F.coalesce(F.col(column), F.lit(0)).cast("decimal(20,0)") + F.lit(str(bias)).cast("decimal(20,0)")
            return F.lpad(shifted.cast("string"), _DIGITS, "0")

        return F.concat(padded("_source_cursor_ts", _TS_BIAS), padded("_source_cursor_id", _ID_BIAS))

    def position_error(self) -> Column:
        from pyspark.sql import functions as F

        return F.when(
            F.col("_source_cursor_ts").isNull() & F.col("_source_cursor_id").isNull(),
            F.lit("the row has no cursor value (timestamp or incrementing column), so it cannot be ordered"),
        )
