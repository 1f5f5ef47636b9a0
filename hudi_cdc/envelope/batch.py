"""A source's batch to one frame of flat, ordered change rows: what the merge policy decides over.

Used by the ingest round and by ``hudi-cdc verify``'s replay of a folder, so
both read the same events the same way.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING

from hudi_cdc.envelope.evolution import align_to_table, unify
from hudi_cdc.envelope.flatten import flatten
from hudi_cdc.envelope.type_mapping import mapped_conversions
from hudi_cdc.envelope.types import absent_columns, value_conversions
from hudi_cdc.envelope.unflatten import is_flattened, unflatten
from payloads.base import ERROR_COLUMN, INTERNAL_PREFIX, RAW_COLUMN

if TYPE_CHECKING:
    from collections.abc import Mapping

    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

    from hudi_cdc.config import SchemaChangeBehavior, TruncateBehavior
    from hudi_cdc.envelope.events import Batch, BatchPart
    from hudi_cdc.envelope.evolution import SchemaChangeLog
    from hudi_cdc.envelope.shape import Shape
    from hudi_cdc.envelope.type_mapping import TypeMapping
    from hudi_cdc.envelope.types import Conversion
    from payloads.base import MergePolicy

__all__ = ["change_rows"]


def change_rows(
    batch: Batch,
    policy: MergePolicy,
    *,
    key_fields: tuple[str, ...],
    ingested_at: datetime,
    behavior: SchemaChangeBehavior,
    table_schema: StructType | None,
    truncates: TruncateBehavior = "fail",
    keep_raw: bool = False,
    shape: Shape | None = None,
    type_mapping: TypeMapping | None = None,
    schema_policy: Mapping[str, str] | None = None,
    schema_changes: SchemaChangeLog | None = None,
) -> DataFrame:
    """Every part flattened, the parts' schemas reconciled with each other and the table's, ordered.

    ``keep_raw`` keeps each event's bytes in the raw column (for quarantine): a source's own
    (a Kafka message value), else the envelope encoded in Avro with the part's schema.
    """
    parts = [
        unflatten(part, policy.source_meta_columns, part.where or batch.description)
        if is_flattened(part.envelopes.columns)
        else part
        for part in batch.parts
    ]
    if shape is not None and shape.masks:  # masked first: nothing below sees a value unmasked (envelope.shape)
        parts = [replace(p, envelopes=shape.mask_envelopes(p.envelopes, p.where or batch.description)) for p in parts]
        shape.check_masked_columns(_after_fields(parts), batch.description)
    flats = [
        (
            flatten(
                _with_raw(part) if keep_raw else part.envelopes.drop(RAW_COLUMN),
                source_meta_columns=policy.source_meta_columns,
                key_fields=key_fields,
                ingested_at=ingested_at,
                where=part.where or batch.description,
                value_conversions=_conversions(part, type_mapping, part.where or batch.description),
                truncates=truncates,
            ),
            part.where or batch.description,
        )
        for part in parts
    ]
    # A merged reader schema keeps the columns the newest writer dropped, marked (envelope.avro_schemas).
    absent = frozenset(absent_columns(parts[-1].avro_schema)) if parts[-1].avro_schema else frozenset()
    if shape is not None and shape.active:
        flats = [(_carried(f, absent, shape.renames), where) for f, where in flats]
        flats = [(shape.unkept_placeholders(shape.rename(f, where), policy), where) for f, where in flats]
        absent = absent - set(shape.renames.values())  # a rename's target is live again
    # Schema changes per kind (envelope.evolution): schema_policy over behavior's, recorded in schema_changes.
    if schema_changes is not None:
        schema_changes.absent_columns = absent
    flat = unify(flats, behavior=behavior, policy=schema_policy, table=table_schema, changes=schema_changes)
    flat = align_to_table(
        flat,
        table_schema,
        behavior=behavior,
        where=batch.description,
        policy=schema_policy,
        changes=schema_changes,
        ignore_source=shape.unkept(flat.columns) if shape is not None else (),
        ignore_table=tuple(shape.computed) if shape is not None else (),
    )
    return policy.with_order(flat)


def _carried(flat: DataFrame, absent: frozenset[str], renames: Mapping[str, str]) -> DataFrame:
    """A rename's new source column, with the old one's values folded in where a merged reader schema still
    holds the old column (older events of the batch): the rename then finds one column, not two."""
    from pyspark.sql import functions as F

    for source, target in renames.items():
        if target in absent and source in flat.columns and target in flat.columns:
            flat = flat.withColumn(source, F.coalesce(F.col(source), F.col(target))).drop(target)
    return flat


def _conversions(part: BatchPart, type_mapping: TypeMapping | None, where: str) -> dict[str, Conversion] | None:
    """The part's value conversions: the logical types' (envelope.types), with the type mappings' in place."""
    if type_mapping:
        return mapped_conversions(part.avro_schema, part.envelopes.schema["after"].dataType, type_mapping, where=where)
    return value_conversions(part.avro_schema) if part.avro_schema else None


def _after_fields(parts: list[BatchPart]) -> list[str]:
    """The row columns of every part (the fields of its ``after`` records), in order, once each."""
    from pyspark.sql.types import StructType

    names: dict[str, None] = {}
    for part in parts:
        after = part.envelopes.schema["after"].dataType if "after" in part.envelopes.columns else None
        names.update(dict.fromkeys(after.fieldNames() if isinstance(after, StructType) else ()))
    return list(names)


def _with_raw(part: BatchPart) -> DataFrame:
    """The part's envelopes with the raw column as ``struct(data, format, schema)``."""
    from pyspark.sql import functions as F
    from pyspark.sql.avro.functions import to_avro
    from pyspark.sql.types import BinaryType

    envelopes = part.envelopes
    if RAW_COLUMN in envelopes.columns:
        data_type = envelopes.schema[RAW_COLUMN].dataType
        if not isinstance(data_type, BinaryType):
            return envelopes  # already the struct (events read back from a quarantine table)
        raw = F.struct(
            F.col(RAW_COLUMN).alias("data"),
            F.lit("confluent").alias("format"),
            F.lit(None).cast("string").alias("schema"),
        )
    else:
        fields = [c for c in envelopes.columns if not c.startswith(INTERNAL_PREFIX)]
        record = F.struct(*[F.col(f"`{c}`") for c in fields])
        schema = json.dumps(part.avro_schema) if part.avro_schema else None  # None: Spark derives one, not kept
        data = to_avro(record, schema) if schema else to_avro(record)
        if ERROR_COLUMN in envelopes.columns:  # a masked table's Kafka message that did not decode: no bytes kept
            data = F.when(F.col(ERROR_COLUMN).isNull(), data)
        raw = F.struct(
            data.alias("data"),
            F.lit("avro").alias("format"),
            F.lit(schema).cast("string").alias("schema"),
        )
    return envelopes.withColumn(RAW_COLUMN, raw)
