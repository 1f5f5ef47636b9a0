"""Postgres (pgoutput / decoderbufs) change events, Hudi's PostgresDebeziumAvroPayload equivalent.

Order: ``source.lsn``; a snapshot read (``op=r``) ranks below a streaming event
at the same LSN. TOAST: Debezium sends a placeholder for unchanged out-of-line
values when REPLICA IDENTITY is not FULL; the policy keeps the stored value.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from payloads.base import OP_COLUMN, MergePolicy, lpad

if TYPE_CHECKING:
    from pyspark.sql import Column

__all__ = ["PostgresPolicy", "LSN_DIGITS", "DEFAULT_TOAST_PLACEHOLDER"]

# Debezium's default `unavailable.value.placeholder`.
DEFAULT_TOAST_PLACEHOLDER = "__debezium_unavailable_value"

# 2**64 has 20 decimal digits: every unsigned LSN fits.
LSN_DIGITS = 20


class PostgresPolicy(MergePolicy):
    name = "postgres"

    def __init__(
        self, *, toast_placeholder: str | None = DEFAULT_TOAST_PLACEHOLDER, apply_truncates: bool = False
    ) -> None:
        super().__init__(toast_placeholder=toast_placeholder, apply_truncates=apply_truncates)

    @property
    def source_meta_columns(self) -> Sequence[tuple[str, str, str, bool]]:
        return (
            ("_source_lsn", "lsn", "bigint", True),
            ("_source_txid", "txId", "string", False),
        )

    def order_expr(self) -> Column:
        from pyspark.sql import functions as F

        lsn = F.coalesce(F.col("_source_lsn"), F.lit(0)).cast("decimal(20,0)")
        # Debezium carries the LSN in a signed long; read it back as unsigned.
        unsigned = F.when(lsn < 0, lsn + F.lit(str(2**64)).cast("decimal(20,0)")).otherwise(lsn)
        streaming = F.when(F.col(OP_COLUMN) == F.lit("r"), F.lit("0")).otherwise(F.lit("1"))
        return F.concat(F.lpad(unsigned.cast("string"), LSN_DIGITS, "0"), streaming)

    def order_of(self, row: Mapping[str, Any]) -> str | None:
        """:meth:`order_expr` of one flat row, in the driver (proven equal: tests/payloads/test_driver_plan.py)."""
        lsn = row.get("_source_lsn")
        lsn = 0 if lsn is None else int(lsn)
        unsigned = lsn + 2**64 if lsn < 0 else lsn
        return lpad(str(unsigned), LSN_DIGITS) + ("0" if row.get(OP_COLUMN) == "r" else "1")

    def position_error_of(self, row: Mapping[str, Any]) -> str | None:
        """:meth:`position_error` of one flat row, in the driver."""
        if row.get("_source_lsn") is None and row.get(OP_COLUMN) is not None and row.get(OP_COLUMN) != "r":
            return "source.lsn is null on a streaming event, so it cannot be ordered"
        return None

    def position_error(self) -> Column:
        from pyspark.sql import functions as F

        return F.when(
            F.col("_source_lsn").isNull() & (F.col(OP_COLUMN) != F.lit("r")),
            F.lit("source.lsn is null on a streaming event, so it cannot be ordered"),
        )
