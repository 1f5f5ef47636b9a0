"""A source's batch to one frame of flat, ordered change rows: what the merge policy decides over.

Used by the ingest round and by ``hudi-cdc verify``'s replay of a folder, so
both read the same events the same way.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from hudi_cdc.envelope.evolution import align_to_table, unify
from hudi_cdc.envelope.flatten import flatten
from hudi_cdc.envelope.types import value_conversions

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

    from hudi_cdc.config import SchemaChangeBehavior, TruncateBehavior
    from hudi_cdc.sources.base import Batch
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
) -> DataFrame:
    """Every part flattened, the parts' schemas reconciled with each other and the table's, ordered."""
    flats = [
        (
            flatten(
                part.envelopes,
                source_meta_columns=policy.source_meta_columns,
                key_fields=key_fields,
                ingested_at=ingested_at,
                where=part.where or batch.description,
                value_conversions=value_conversions(part.avro_schema) if part.avro_schema else None,
                truncates=truncates,
            ),
            part.where or batch.description,
        )
        for part in batch.parts
    ]
    flat = unify(flats, behavior=behavior)
    flat = align_to_table(flat, table_schema, behavior=behavior, where=batch.description)
    return policy.with_order(flat)
