"""MySQL binlog change events, Hudi's MySqlDebeziumAvroPayload equivalent.

Order: binlog file number, then position, then row within the event, all
numeric (``mysql-bin.000010`` pos 4 is after ``mysql-bin.000009`` pos 900). A
snapshot read (``op=r``) ranks below a streaming event at the same position.
MySQL sends whole rows (binlog_row_image=FULL), so there is no placeholder.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from payloads.base import OP_COLUMN, MergePolicy

if TYPE_CHECKING:
    from pyspark.sql import Column

__all__ = ["MySqlPolicy"]

_FILE_NUMBER = r"\.([0-9]+)$"
_FILE_DIGITS, _POS_DIGITS, _ROW_DIGITS = 10, 20, 10


class MySqlPolicy(MergePolicy):
    name = "mysql"

    def __init__(self, *, toast_placeholder: str | None = None, apply_truncates: bool = False) -> None:
        super().__init__(toast_placeholder=toast_placeholder, apply_truncates=apply_truncates)

    @property
    def source_meta_columns(self) -> Sequence[tuple[str, str, str, bool]]:
        return (
            ("_source_file", "file", "string", True),
            ("_source_pos", "pos", "bigint", True),
            ("_source_row", "row", "int", False),
            ("_source_txid", "gtid", "string", False),
        )

    def _file_number(self) -> Column:
        from pyspark.sql import functions as F

        return F.regexp_extract(F.col("_source_file"), _FILE_NUMBER, 1)

    def order_expr(self) -> Column:
        from pyspark.sql import functions as F

        number = F.when(self._file_number() == F.lit(""), F.lit("0")).otherwise(self._file_number())
        pos = F.coalesce(F.col("_source_pos"), F.lit(0)).cast("string")
        row = F.coalesce(F.col("_source_row"), F.lit(0)).cast("string")
        streaming = F.when(F.col(OP_COLUMN) == F.lit("r"), F.lit("0")).otherwise(F.lit("1"))
        return F.concat(
            F.lpad(number, _FILE_DIGITS, "0"),
            F.lpad(pos, _POS_DIGITS, "0"),
            F.lpad(row, _ROW_DIGITS, "0"),
            streaming,
        )

    def position_error(self) -> Column:
        from pyspark.sql import functions as F

        streaming = F.col(OP_COLUMN) != F.lit("r")
        return (
            F.when(
                streaming & (F.col("_source_file").isNull() | F.col("_source_pos").isNull()),
                F.lit("source.file or source.pos is null on a streaming event, so it cannot be ordered"),
            )
            .when(
                streaming & (self._file_number() == F.lit("")),
                F.concat(F.lit("binlog file name "), F.col("_source_file"), F.lit(" has no numeric extension")),
            )
            .when(
                (F.length(self._file_number()) > _FILE_DIGITS) | (F.col("_source_pos") < 0),
                F.lit("binlog file number or position out of range"),
            )
        )
