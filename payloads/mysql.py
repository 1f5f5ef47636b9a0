"""MySQL binlog change events, Hudi's MySqlDebeziumAvroPayload equivalent.

Order: binlog file number, then position, then row within the event, all
numeric (``mysql-bin.000010`` pos 4 is after ``mysql-bin.000009`` pos 900). A
snapshot read (``op=r``) ranks below a streaming event at the same position.
MySQL sends whole rows (binlog_row_image=FULL), so there is no placeholder.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from payloads.base import OP_COLUMN, MergePolicy, lpad

if TYPE_CHECKING:
    from pyspark.sql import Column

__all__ = ["MySqlPolicy"]

_FILE_NUMBER = r"\.([0-9]+)$"
_FILE_DIGITS, _POS_DIGITS, _ROW_DIGITS = 10, 20, 10
# _FILE_NUMBER as Java reads it: ``$`` also matches before one final line terminator of any kind.
_FILE_NUMBER_PY = re.compile(r"\.([0-9]+)(?=(?:\r\n|[\n\r\u0085\u2028\u2029])?\Z)")


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

    @staticmethod
    def _file_number_of(row: Mapping[str, Any]) -> str | None:
        file = row.get("_source_file")
        if file is None:
            return None
        found = _FILE_NUMBER_PY.search(file)
        return found.group(1) if found else ""

    def order_of(self, row: Mapping[str, Any]) -> str | None:
        """:meth:`order_expr` of one flat row, in the driver (proven equal: tests/payloads/test_driver_plan.py)."""
        number = self._file_number_of(row)
        if number is None:  # NULL in Spark: the whole order is NULL
            return None
        pos, index = row.get("_source_pos"), row.get("_source_row")
        return (
            lpad(number or "0", _FILE_DIGITS)
            + lpad(str(0 if pos is None else pos), _POS_DIGITS)
            + lpad(str(0 if index is None else index), _ROW_DIGITS)
            + ("0" if row.get(OP_COLUMN) == "r" else "1")
        )

    def position_error_of(self, row: Mapping[str, Any]) -> str | None:
        """Whether :meth:`position_error` is set for one flat row, in the driver (its text is Spark's to give)."""
        op, file, pos = row.get(OP_COLUMN), row.get("_source_file"), row.get("_source_pos")
        streaming = op is not None and op != "r"
        number = self._file_number_of(row)
        if streaming and (file is None or pos is None):
            return "source.file or source.pos is null on a streaming event, so it cannot be ordered"
        if streaming and number == "":
            return f"binlog file name {file} has no numeric extension"
        if (number is not None and len(number) > _FILE_DIGITS) or (pos is not None and pos < 0):
            return "binlog file number or position out of range"
        return None

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
