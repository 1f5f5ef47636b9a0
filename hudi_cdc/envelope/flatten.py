"""Flatten Debezium change envelopes into table rows with ``_source_*`` columns.

``after`` is the row for create/update/snapshot-read events, ``before`` for
deletes. Every problem that makes an event unusable (no op, unknown op, missing
image, null key) becomes a message in the error column instead of a silently
dropped row; the pipeline fails the batch if any event has one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from hudi_cdc.errors import DecodeError
from payloads.base import (
    DELETED_COLUMN,
    ERROR_COLUMN,
    INGESTED_AT_COLUMN,
    INTERNAL_PREFIX,
    OP_COLUMN,
    ORIGIN_COLUMN,
)

if TYPE_CHECKING:
    from collections.abc import Mapping
    from datetime import datetime

    from pyspark.sql import Column, DataFrame

    from hudi_cdc.envelope.types import Conversion

__all__ = ["KNOWN_OPS", "ORIGIN_COLUMN", "flatten"]

KNOWN_OPS = ("c", "u", "d", "r")

ENVELOPE_FIELDS = ("before", "after", "source", "op")
_IMAGE = INTERNAL_PREFIX + "image"  # the row image an event carries: ``before`` for a delete, else ``after``


def flatten(
    envelopes: DataFrame,
    *,
    source_meta_columns: Sequence[tuple[str, str, str, bool]],
    key_fields: Sequence[str],
    ingested_at: datetime,
    where: str,
    value_conversions: Mapping[str, Conversion] | None = None,
    truncates: str = "fail",
) -> DataFrame:
    """Rows of the changed table plus meta columns, one per envelope.

    ``truncates`` says what a TRUNCATE event (op ``t``, no key, no images) becomes:
    an error (``fail``), nothing (``ignore``), or a row with a NULL key that the
    merge policy applies (``apply``).

    ``envelopes`` has the envelope fields plus the internal origin/arrival
    columns, and may have an error column of the source's own; ``value_conversions`` turn physical Avro values into their logical
    types (see :mod:`hudi_cdc.envelope.types`); ``ingested_at`` should be timezone-aware (a naive one is read in the
    Python process's local time). ``source_meta_columns`` comes from the merge policy; ``where``
    names the batch in error messages.
    """
    from pyspark.sql import functions as F

    value_fields = _value_fields(envelopes, key_fields, where)
    op = F.col("op")
    image = F.when(op == F.lit("d"), F.col("before")).otherwise(F.col("after"))
    rows = envelopes.select(
        *[c for c in envelopes.columns if c.startswith(INTERNAL_PREFIX)],
        op.alias(OP_COLUMN),
        image.alias(_IMAGE),
        *_source_meta(envelopes, source_meta_columns, where),
    )
    if truncates == "ignore":
        rows = rows.where(F.col(OP_COLUMN).isNull() | (F.col(OP_COLUMN) != F.lit("t")))
    error = _event_error(key_fields, truncates)
    if ERROR_COLUMN in envelopes.columns:  # the source's own finding (e.g. undecodable bytes) explains the rest
        error = F.coalesce(F.col(ERROR_COLUMN), error)
    conversions = value_conversions or {}
    misfits = [c.error(F.col(_IMAGE)[n]) for n, c in conversions.items() if c.error is not None and n in value_fields]
    if misfits:  # a type mapping's refused value (envelope.type_mapping); a delete needs only its key
        misfit = F.concat_ws("; ", *misfits)  # every refused column of the row, in one message
        error = F.coalesce(error, F.when((F.col(OP_COLUMN) != F.lit("d")) & (misfit != F.lit("")), misfit))
    return rows.select(
        *[_typed(f, conversions) for f in value_fields],
        *[c for c in rows.columns if c not in (_IMAGE, ERROR_COLUMN)],
        (F.col(OP_COLUMN) == F.lit("d")).alias(DELETED_COLUMN),
        F.lit(ingested_at).cast("timestamp").alias(INGESTED_AT_COLUMN),
        error.alias(ERROR_COLUMN),
    )


def _value_fields(envelopes: DataFrame, key_fields: Sequence[str], where: str) -> list[str]:
    """The changed table's columns: the fields of the envelopes' ``after`` record, which must hold the key."""
    from pyspark.sql.types import StructType

    names = set(envelopes.columns)
    missing = [f for f in ENVELOPE_FIELDS if f not in names]
    if missing:
        raise DecodeError(
            f"{where}: records are not Debezium change envelopes: missing field(s) {', '.join(missing)} "
            f"(found {', '.join(sorted(n for n in names if not n.startswith(INTERNAL_PREFIX)))}); "
            "a topic flattened by ExtractNewRecordState needs add.fields with the op and the position "
            "(docs/formats.md)"
        )
    after_type = envelopes.schema["after"].dataType
    if not isinstance(after_type, StructType):
        raise DecodeError(f"{where}: envelope field 'after' is {after_type.simpleString()}, expected a record")
    value_fields = [f.name for f in after_type.fields]
    absent_keys = [k for k in key_fields if k not in value_fields]
    if absent_keys:
        raise DecodeError(
            f"{where}: record key field(s) {', '.join(absent_keys)} not in the table's columns "
            f"({', '.join(value_fields)}); check --record-key-fields"
        )
    return value_fields


def _source_meta(
    envelopes: DataFrame, source_meta_columns: Sequence[tuple[str, str, str, bool]], where: str
) -> list[Column]:
    """The ``_source_*`` columns from the envelope's ``source`` block: the policy's, then the commit time and
    the snapshot flag, which every flavor's connector may send."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    source_type = envelopes.schema["source"].dataType
    source_fields = {f.name for f in source_type.fields} if isinstance(source_type, StructType) else set()
    meta = []
    for column, field, ddl, required in source_meta_columns:
        if field in source_fields:
            meta.append(F.col("source")[field].cast(ddl).alias(column))
        elif required:
            raise DecodeError(
                f"{where}: the envelope's source block has no '{field}' field, needed for {column}; "
                f"source fields are {', '.join(sorted(source_fields)) or 'none'}: is --flavor right?"
            )
        else:
            meta.append(F.lit(None).cast(ddl).alias(column))
    optional_source = {"ts_ms": ("_source_ts_ms", "bigint"), "snapshot": ("_source_snapshot", "string")}
    for field, (column, ddl) in optional_source.items():
        value = F.col("source")[field] if field in source_fields else F.lit(None)
        meta.append(value.cast(ddl).alias(column))
    return meta


def _event_error(key_fields: Sequence[str], truncates: str) -> Column:
    """Why a row's event is unusable, or NULL: no op or an unknown one, a missing image, a null key, or a
    TRUNCATE the settings do not apply."""
    from pyspark.sql import functions as F

    op = F.col(OP_COLUMN)
    error = F.when(op.isNull(), F.lit("envelope has no op"))
    if truncates == "apply":
        error = error.when(op == F.lit("t"), F.lit(None))  # no key, no image: the policy applies it
    else:
        error = error.when(
            op == F.lit("t"),
            F.lit("a TRUNCATE event (op=t) with truncate_behavior = fail: set it to apply or ignore, or re-snapshot"),
        )
    error = (
        error.when(~op.isin(*KNOWN_OPS), F.concat(F.lit("unknown op '"), op, F.lit("'")))
        .when((op == F.lit("d")) & F.col(_IMAGE).isNull(), F.lit("delete without a before image"))
        .when(F.col(_IMAGE).isNull(), F.concat(F.lit("op '"), op, F.lit("' without an after image")))
    )
    for key in key_fields:
        error = error.when(F.col(_IMAGE)[key].isNull(), F.lit(f"record key field '{key}' is null"))
    return error


def _typed(name: str, conversions: Mapping[str, Conversion]) -> Column:
    """Column ``name`` of the row's image, in its logical type."""
    from pyspark.sql import functions as F

    physical = F.col(_IMAGE)[name]
    convert = conversions[name].expr if name in conversions else None
    return (convert(physical) if convert is not None else physical).alias(name)
