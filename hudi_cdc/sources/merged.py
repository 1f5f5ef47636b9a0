"""A merged table's source: one source per shard (a topic, or a folder), read in one round, one checkpoint.

A ``[[routes]]`` route that merges (docs/routing.md) makes one Hudi table of
several source tables. :class:`MergedSource` wraps one ordinary source per shard
(``KafkaSource`` and ``FileSource`` stay single-topic), reads every shard after
its own checkpoint, and returns one batch whose checkpoint is composite::

    {"kind": "merged", "shards": {"dbserver1.shop_0.orders": {...that topic's checkpoint...}, ...}}

It commits with the round, so a killed run resumes every shard exactly where the
last commit left it. A shard not in the checkpoint (one that joined the route
since) is read from its beginning while the others go on from theirs; a shard
with nothing new keeps its checkpoint.

Each part's ``before`` and ``after`` images gain the shard identity columns
(``_source_server``, ``_source_schema`` and ``_source_table`` from the topic or
folder name ``server.schema.table``, ``_source_database`` from the envelope's
``source.db``), so from flattening on they are columns of the table like any
other, and the record key can hold them.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hudi_cdc.errors import CheckpointError, SourceError
from hudi_cdc.sources.base import json_checkpoint

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from hudi_cdc.config import IngestConfig
    from hudi_cdc.envelope.events import Batch, BatchPart
    from hudi_cdc.sources.base import Source

__all__ = ["CHECKPOINT_KIND", "MergedSource", "shard_config", "shard_identity"]

log = logging.getLogger("hudi_cdc")

CHECKPOINT_KIND = "merged"


def shard_identity(name: str) -> dict[str, str]:
    """``server``, ``schema`` and ``table`` of a shard's topic or folder name (``server.schema.table``)."""
    pieces = name.rstrip("/").rsplit("/", 1)[-1].split(".")
    return {
        "_source_server": ".".join(pieces[:-2]),
        "_source_schema": pieces[-2] if len(pieces) > 1 else "",
        "_source_table": pieces[-1],
    }


class MergedSource:
    """Every shard of a merged table (``config.shard_sources``), each read by the source ``make`` builds."""

    def __init__(self, config: IngestConfig, make: Callable[[IngestConfig], Source]) -> None:
        if not config.shard_sources:
            raise SourceError(f"{config.target_table}: a merged table needs shard_sources")
        self._config = config
        self._shards: dict[str, Source] = {s: make(shard_config(config, s)) for s in config.shard_sources}

    def parse_checkpoint(self, text: str) -> dict[str, Any]:
        if text.strip().lower() == "earliest":
            return {"kind": CHECKPOINT_KIND, "shards": {}}
        data = json_checkpoint(text, source="merged table", kind=CHECKPOINT_KIND)
        held = data.get("shards")
        if not isinstance(held, dict):
            raise CheckpointError(f"merged table checkpoint {text[:200]!r} has no shards object")
        shards = {}
        for name, checkpoint in held.items():
            source = self._shards.get(name)
            if source is None:  # the route no longer matches it: its rows stay, nothing more is read
                log.warning("%s: shard %s is no longer routed here: not read", self._config.target_table, name)
                continue
            shards[name] = source.parse_checkpoint(json.dumps(checkpoint))
        return {"kind": CHECKPOINT_KIND, "shards": shards}

    def next_batch(self, checkpoint: dict[str, Any] | None) -> Batch | None:
        from hudi_cdc.envelope.events import Batch

        held: dict[str, Any] = dict((checkpoint or {}).get("shards", {}))
        after: dict[str, Any] = dict(held)
        parts: list[BatchPart] = []
        read: list[tuple[str, Batch]] = []
        for name, source in self._shards.items():
            batch = source.next_batch(held.get(name))
            if batch is None:
                continue
            after[name] = batch.next_checkpoint
            parts += [self._tagged(part, name) for part in batch.parts]
            read.append((name, batch))
        if not read:
            return None
        details: dict[str, Any] = {"shards_read": len(read), "shards": len(self._shards)}
        for _, batch in read:
            for key, value in batch.details.items():
                if isinstance(value, int) and not isinstance(value, bool):
                    details[key] = details.get(key, 0) + value
        description = f"{len(read)} of {len(self._shards)} shard(s): " + "; ".join(b.description for _, b in read)
        return Batch(parts, {"kind": CHECKPOINT_KIND, "shards": after}, description, details, self._key_fields(read))

    def _key_fields(self, read: list[tuple[str, Batch]]) -> tuple[str, ...]:
        """The shards' own key (they must agree), then the shard columns that join it."""
        keyed = [(name, b.key_fields) for name, b in read if b.key_fields]
        if not keyed:
            return ()
        first, keys = keyed[0]
        for name, other in keyed[1:]:
            if set(other) != set(keys):
                raise SourceError(
                    f"{self._config.target_table}: shards {first} and {name} are keyed differently "
                    f"(({', '.join(keys)}) and ({', '.join(other)})): a merged table's shards share one key; "
                    "set record_key_fields in its [tables] section"
                )
        if self._config.unique_keys:
            return keys
        return (*keys, *[c for c in self._config.shard_columns if c not in keys])

    def _tagged(self, part: BatchPart, shard: str) -> BatchPart:
        """``part`` with the shard columns in its images (and in its Avro schema, for quarantined events)."""
        from pyspark.sql import functions as F

        envelopes = part.envelopes
        if not {"before", "after", "source"} <= set(envelopes.columns):
            raise SourceError(
                f"{part.where or shard}: a merged table's shards must carry Debezium envelopes (before, after, "
                "source); a flattened topic (ExtractNewRecordState) cannot be merged"
            )
        values = _identity_values(envelopes, shard, self._config.shard_columns)
        for image in ("before", "after"):
            tagged = F.col(image)
            for column, value in values.items():
                tagged = tagged.withField(column, value)
            envelopes = envelopes.withColumn(image, F.when(F.col(image).isNotNull(), tagged))
        schema = _with_fields(part.avro_schema, list(values)) if part.avro_schema else None
        return dataclasses.replace(part, envelopes=envelopes, avro_schema=schema, where=part.where or shard)


def _identity_values(envelopes: DataFrame, shard: str, columns: tuple[str, ...]) -> dict[str, Column]:
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    named = shard_identity(shard)
    source_type = envelopes.schema["source"].dataType
    has_db = isinstance(source_type, StructType) and "db" in source_type.fieldNames()
    database = F.coalesce(F.col("source")["db"].cast("string"), F.lit("")) if has_db else F.lit("")
    return {c: database if c == "_source_database" else F.lit(named[c]) for c in columns}


def _with_fields(avro_schema: dict[str, Any], names: list[str]) -> dict[str, Any]:
    """The envelope schema with the shard columns added to its row record (as optional strings)."""
    schema = copy.deepcopy(avro_schema)
    for field in schema.get("fields", []):
        if field.get("name") != "before":
            continue
        branches = field["type"] if isinstance(field["type"], list) else [field["type"]]
        for branch in branches:
            if isinstance(branch, dict) and branch.get("type") == "record":
                present = {f["name"] for f in branch["fields"]}
                branch["fields"] += [
                    {"name": n, "type": ["null", "string"], "default": None} for n in names if n not in present
                ]
    return schema


def shard_config(config: IngestConfig, shard: str) -> IngestConfig:
    """One shard's settings: the merged table's, reading that one topic or folder."""
    where = {"topic": shard} if config.source == "kafka" else {"source_path": shard}
    return dataclasses.replace(config, shard_sources=(), shard_columns=(), unique_keys=False, **where)  # type: ignore[arg-type]
