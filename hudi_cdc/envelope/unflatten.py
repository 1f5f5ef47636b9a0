"""Events flattened by Debezium's ``ExtractNewRecordState`` back into change envelopes.

The transform replaces the envelope with the row itself plus the fields named
in ``add.fields`` (``__op``, ``__lsn``, ``__source_ts_ms`` ...), and with
``delete.tombstone.handling.mode=rewrite`` a delete becomes the old row with
``__deleted = "true"``. That is enough to rebuild ``before``/``after``/``source``
/``op`` and merge as any other event, but only when the position fields the
flavor orders by were added: without them two changes to a row cannot be
ordered, and without ``__deleted`` deletes never reach the topic (tombstones
carry no position). Such a topic is refused with the settings that fix it.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hudi_cdc.errors import DecodeError
from payloads.base import INTERNAL_PREFIX

if TYPE_CHECKING:
    from hudi_cdc.envelope.events import BatchPart

__all__ = ["ADDED_PREFIX", "is_flattened", "lacking_fields", "unflatten"]

ADDED_PREFIX = "__"  # ExtractNewRecordState's default add.fields.prefix
_OPTIONAL_SOURCE = ("ts_ms", "snapshot")


def _added(columns: Sequence[str]) -> dict[str, str]:
    """``{name without prefix: column}`` of the fields ``add.fields`` put on the row."""
    return {
        c[len(ADDED_PREFIX) :]: c for c in columns if c.startswith(ADDED_PREFIX) and not c.startswith(INTERNAL_PREFIX)
    }


def is_flattened(columns: Sequence[str]) -> bool:
    """A row with ``add.fields`` of its own rather than an envelope."""
    return "before" not in columns and "after" not in columns and bool(_added(columns))


def _source_column(added: dict[str, str], field: str) -> str | None:
    # add.fields=lsn gives __lsn; add.fields=source.ts_ms gives __source_ts_ms.
    return added.get(field) or added.get("source_" + field)


def lacking_fields(
    columns: Sequence[str], source_meta_columns: Sequence[tuple[str, str, str, bool]]
) -> tuple[list[str], str]:
    """``(the __ fields a flattened row lacks for ordering and deletes, the add.fields setting that has them)``."""
    added = _added(columns)
    needed = ["op", *(f for _, f, _, required in source_meta_columns if required)]
    lacking = [ADDED_PREFIX + f for f in needed if _source_column(added, f) is None]
    if "deleted" not in added:
        lacking.append(ADDED_PREFIX + "deleted")
    return lacking, ",".join(needed + [f"source.{f}" for f in _OPTIONAL_SOURCE[:1]])


def unflatten(part: BatchPart, source_meta_columns: Sequence[tuple[str, str, str, bool]], where: str) -> BatchPart:
    """The part's flattened rows as envelopes, with an envelope schema around the row's own."""
    from dataclasses import replace

    from pyspark.sql import functions as F

    frame = part.envelopes
    added = _added(frame.columns)
    lacking, settings = lacking_fields(frame.columns, source_meta_columns)
    if lacking:
        raise DecodeError(
            f"{where}: a flattened topic (ExtractNewRecordState) without {', '.join(lacking)}: the order of the "
            f"changes to a row cannot be known, or deletes never arrive. Set transforms.<name>.add.fields={settings} "
            "and transforms.<name>.delete.tombstone.handling.mode=rewrite on the connector"
        )
    values = [c for c in frame.columns if not c.startswith(ADDED_PREFIX)]
    internal = [c for c in frame.columns if c.startswith(INTERNAL_PREFIX)]
    row = F.struct(*[F.col(f"`{c}`") for c in values])
    deleted = F.lower(F.col(added["deleted"]).cast("string")) == F.lit("true")
    source_fields = [f for _, f, _, _ in source_meta_columns] + list(_OPTIONAL_SOURCE)
    source = F.struct(
        *[F.col(_source_column(added, f)).alias(f) for f in dict.fromkeys(source_fields) if _source_column(added, f)]  # type: ignore[arg-type]
    )
    envelopes = frame.select(
        F.when(deleted, row).alias("before"),
        F.when(~deleted, row).alias("after"),
        source.alias("source"),
        F.when(deleted, F.lit("d")).otherwise(F.col(added["op"])).alias("op"),
        *internal,
    )
    return replace(part, envelopes=envelopes, avro_schema=_envelope_schema(part.avro_schema))


def _envelope_schema(flat: dict[str, Any] | None) -> dict[str, Any] | None:
    """The flat record's Avro schema as the ``before``/``after`` of an envelope (for the type conversions)."""
    if flat is None or flat.get("type") != "record":
        return None
    value = copy.deepcopy(flat)
    value["fields"] = [f for f in value["fields"] if not f["name"].startswith(ADDED_PREFIX)]
    full = ".".join(p for p in (value.get("namespace"), value["name"]) if p)
    return {
        "type": "record",
        "name": "Envelope",
        "namespace": "hudi_cdc.unflattened",
        "fields": [
            {"name": "before", "type": ["null", value], "default": None},
            {"name": "after", "type": ["null", full], "default": None},
            {"name": "op", "type": "string"},
        ],
    }
