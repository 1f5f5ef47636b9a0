"""Oracle change events (Debezium's Oracle connector, LogMiner or XStream).

Order: the transaction's commit SCN (``source.commit_scn``), then the event's
place in its transaction (``source.txSeq``, which newer connectors send), then
its own SCN (``source.scn``), then the SQL sequence number (``source.ssn``)
that tells apart statements sharing an SCN. SCNs are decimal numbers sent as
text, compared as numbers. A snapshot read (``op=r``) has the snapshot's SCN
and no commit SCN; it ranks below a streaming event committed at that SCN,
whatever that event's own SCN. LOB columns a
change did not touch arrive as Debezium's unavailable-value placeholder (with
``lob.enabled``), kept from the stored row as for Postgres's TOAST.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from payloads.base import OP_COLUMN, MergePolicy
from payloads.postgres import DEFAULT_TOAST_PLACEHOLDER

if TYPE_CHECKING:
    from pyspark.sql import Column

__all__ = ["OraclePolicy"]

_DIGITS = 20  # an SCN is below 2**64, as are txSeq and ssn


class OraclePolicy(MergePolicy):
    name = "oracle"

    def __init__(
        self, *, toast_placeholder: str | None = DEFAULT_TOAST_PLACEHOLDER, apply_truncates: bool = False
    ) -> None:
        super().__init__(toast_placeholder=toast_placeholder, apply_truncates=apply_truncates)

    @property
    def source_meta_columns(self) -> Sequence[tuple[str, str, str, bool]]:
        return (
            ("_source_scn", "scn", "string", True),
            ("_source_commit_scn", "commit_scn", "string", True),
            ("_source_tx_seq", "txSeq", "bigint", False),
            ("_source_ssn", "ssn", "bigint", False),
            ("_source_txid", "txId", "string", False),
        )

    def order_expr(self) -> Column:
        from pyspark.sql import functions as F

        def padded(c: Column) -> Column:
            return F.lpad(F.coalesce(c.cast("string"), F.lit("0")), _DIGITS, "0")

        streaming = F.when(F.col(OP_COLUMN) == F.lit("r"), F.lit("0")).otherwise(F.lit("1"))
        # The snapshot's SCN is where its rows stand: the flag ranks it below any change committed there.
        return F.concat(
            padded(F.coalesce(F.col("_source_commit_scn"), F.col("_source_scn"))),
            streaming,
            padded(F.col("_source_tx_seq")),
            padded(F.col("_source_scn")),
            padded(F.col("_source_ssn")),
        )

    def position_error(self) -> Column:
        from pyspark.sql import functions as F

        streaming = F.col(OP_COLUMN) != F.lit("r")
        error = F.when(
            streaming & (F.col("_source_commit_scn").isNull() | F.col("_source_scn").isNull()),
            F.lit("source.commit_scn or source.scn is null on a streaming event, so it cannot be ordered"),
        )
        for column, field in (("_source_commit_scn", "commit_scn"), ("_source_scn", "scn")):
            error = error.when(
                F.col(column).isNotNull() & ~F.col(column).rlike(f"^[0-9]{{1,{_DIGITS}}}$"),
                F.concat(F.lit(f"source.{field} '"), F.col(column), F.lit("' is not an SCN (a decimal number)")),
            )
        return error.when(
            (F.col("_source_tx_seq") < 0) | (F.col("_source_ssn") < 0), F.lit("source.txSeq or source.ssn is negative")
        )
