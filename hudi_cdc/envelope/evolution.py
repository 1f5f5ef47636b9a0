"""Schema evolution: reconcile the batch's writer-schema versions with each other and with the table.

Pure functions over DataFrames and Spark types. Additions and Hudi-supported
widenings (int->bigint, float->double, decimal precision up) always apply; a
column the source dropped reads NULL in new rows; a rename is a drop plus an
add. An incompatible change (e.g. text -> int) follows ``schema_change_behavior``:

- ``fail`` (default): stop, naming the column and both types; nothing is written.
- ``evolve``: the column becomes a string column, holding old and new values as text.
- ``ignore``: the table's schema does not change: new columns are not added.
  Incompatible type changes still stop the run, since ignoring them would lose values.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from hudi_cdc.errors import SchemaChangeError
from payloads.base import is_data_column

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import DataType, StructType

__all__ = ["SchemaChangeBehavior", "widen", "unify", "align_to_table"]

SchemaChangeBehavior = Literal["fail", "evolve", "ignore"]

_NUMERIC_RANK = {"tinyint": 0, "smallint": 1, "int": 2, "bigint": 3, "float": 4, "double": 5}


def widen(a: DataType, b: DataType) -> DataType | None:
    """The type both ``a`` and ``b`` widen to without loss of meaning, or None."""
    from pyspark.sql.types import DecimalType

    if a == b:
        return a
    sa, sb = a.simpleString(), b.simpleString()
    if sa in _NUMERIC_RANK and sb in _NUMERIC_RANK:
        return a if _NUMERIC_RANK[sa] >= _NUMERIC_RANK[sb] else b
    if isinstance(a, DecimalType) and isinstance(b, DecimalType):
        scale = max(a.scale, b.scale)
        integral = max(a.precision - a.scale, b.precision - b.scale)
        if scale != min(a.scale, b.scale):
            return None  # a scale change rescales stored values: not a widening Hudi applies
        return DecimalType(integral + scale, scale) if integral + scale <= 38 else None
    return None


def _combine(column: str, a: DataType, b: DataType, behavior: str, where: str) -> DataType:
    from pyspark.sql.types import StringType

    common = widen(a, b)
    if common is not None:
        return common
    if behavior == "evolve":
        return StringType()
    raise SchemaChangeError(
        f"{where}: column '{column}' changed type from {a.simpleString()} to {b.simpleString()}, which cannot be "
        "applied without losing values; nothing was written. Rerun with --schema-change-behavior evolve to keep "
        "the column as text, or rebuild the table"
    )


def unify(parts: Sequence[tuple[DataFrame, str]], *, behavior: str) -> DataFrame:
    """One DataFrame from parts decoded with different writer schemas (oldest first)."""
    from pyspark.sql import functions as F

    if len(parts) == 1:
        return parts[0][0]
    types: dict[str, DataType] = {}
    seen_in: dict[str, str] = {}
    for frame, where in parts:
        for f in frame.schema.fields:
            if f.name in types:
                types[f.name] = _combine(f.name, types[f.name], f.dataType, behavior, f"{seen_in[f.name]} vs {where}")
            else:
                types[f.name] = f.dataType
                seen_in[f.name] = where
    newest = [f.name for f in parts[-1][0].schema.fields]
    order = newest + [name for name in types if name not in newest]
    aligned = []
    for frame, _ in parts:
        present = set(frame.columns)
        aligned.append(
            frame.select(
                *[
                    (F.col(name) if name in present else F.lit(None)).cast(types[name]).alias(name)
                    if name not in present or frame.schema[name].dataType != types[name]
                    else F.col(name)
                    for name in order
                ]
            )
        )
    result = aligned[0]
    for frame in aligned[1:]:
        result = result.unionByName(frame)
    return result


def align_to_table(frame: DataFrame, table: StructType | None, *, behavior: str, where: str) -> DataFrame:
    """Fit the batch to the table: add dropped columns as NULL, cast narrower values up,
    and apply or refuse type changes per ``behavior``."""
    from pyspark.sql import functions as F

    if table is None:
        return frame
    table_types = {f.name: f.dataType for f in table.fields if is_data_column(f.name)}
    incoming = {f.name: f.dataType for f in frame.schema.fields}
    columns = []
    for name, dtype in incoming.items():
        if name not in table_types:
            if behavior != "ignore" or name.startswith("__hudi_cdc_"):
                columns.append(F.col(name))
            continue
        target = table_types[name]
        common = widen(target, dtype)
        if common is None:
            # evolve: string; Hudi promotes a stored non-string column to string itself.
            common = _combine(name, target, dtype, behavior, where)
        columns.append(F.col(name) if common == dtype else F.col(name).cast(common).alias(name))
    for name, dtype in table_types.items():
        if name not in incoming:
            columns.append(F.lit(None).cast(dtype).alias(name))
    return frame.select(*columns)
