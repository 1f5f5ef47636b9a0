"""Debezium messages written with Kafka Connect's ``JsonConverter``, decoded in the JVM.

With ``schemas.enable=true`` (the converter's default) each message embeds the
envelope's Connect schema, written identically each time. A few sampled
messages give the schemas' exact leading bytes: a message that begins with one
is read in one pass with ``from_json`` against that schema's Spark type. The
rest are grouped by a hash of their schema (held once) and each group read
with its own, so a column added at the source is a new schema and evolves the
table as an Avro writer schema does. With ``schemas.enable=false`` the
messages hold no schema: the user gives it (``--kafka-value-schema-file``, one
message as the converter writes it with schemas on, or its ``schema``), and an
event with a column that schema lacks is refused, never read without it.

A message in another format (the Confluent Avro wire format, plain text) is an
error row that names what was found; the round fails on it (or quarantines it).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from hudi_cdc.envelope.connect_schema import (
    avro_envelope,
    decimal_columns,
    decimal_from_bytes,
    is_envelope,
    json_read_type,
)
from hudi_cdc.envelope.flatten import ORIGIN_COLUMN
from hudi_cdc.errors import DecodeError
from payloads.base import ARRIVAL_COLUMN, ERROR_COLUMN, RAW_COLUMN

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from hudi_cdc.envelope.events import BatchPart

__all__ = ["SAMPLED", "JsonDecoder", "key_fields", "op_and_lsn", "op_and_lsn_of"]

_TEXT, _HASH = "_hudi_cdc_text", "_hudi_cdc_schema_hash"


def op_and_lsn(value: bytes | None) -> tuple[str | None, int | None]:
    """``(op, source.lsn)`` of one JSON message, with or without its embedded schema."""
    try:
        document = json.loads(value or b"null")
    except ValueError:
        return None, None
    if isinstance(document, dict) and "payload" in document and "schema" in document:
        document = document["payload"]
    return op_and_lsn_of(document)


def op_and_lsn_of(record: Any) -> tuple[str | None, int | None]:  # noqa: ANN401 - a decoded value
    """``(op, lsn)`` of a decoded envelope, or of a row flattened with ``add.fields=op,lsn``."""
    if not isinstance(record, dict):
        return None, None
    if record.get("__deleted") in ("true", True):
        return "d", record.get("__lsn")
    if "__op" in record:
        return record.get("__op"), record.get("__lsn")
    return record.get("op"), (record.get("source") or {}).get("lsn")


def key_fields(key: bytes) -> tuple[str, ...]:
    """The record key's fields from one message key (its embedded schema, else its own fields)."""
    try:
        document = json.loads(key)
    except ValueError:
        return ()  # not JSON: the values' decode names what the topic holds
    if isinstance(document, dict) and "payload" in document and "schema" in document:
        return tuple(f["field"] for f in (document["schema"] or {}).get("fields", []))
    return tuple(document) if isinstance(document, dict) else ()


def _found(value: Column, text: Column) -> Column:
    """What a message that is not the expected JSON holds, said so that the fix is plain."""
    from pyspark.sql import functions as F

    framed = (F.length(value) >= 5) & (F.substring(value, 1, 1) == F.lit(bytearray(b"\x00")))
    schema_id = F.conv(F.hex(F.substring(value, 2, 4)), 16, 10)
    return (
        F.when(
            framed,
            F.concat(
                F.lit("found the Confluent Avro wire format (magic byte 0, schema id "),
                schema_id,
                F.lit("), not JSON: use --kafka-value-format avro"),
            ),
        )
        .when(
            F.get_json_object(text, "$").isNull(),
            F.concat(F.lit("found neither JSON nor Avro: first bytes 0x"), F.hex(F.substring(value, 1, 8))),
        )
        .when(
            F.get_json_object(text, "$.op").isNotNull() | F.get_json_object(text, "$.__op").isNotNull(),
            F.lit(
                "found JSON with no embedded schema (JsonConverter schemas.enable=false): "
                "give the envelope's schema with --kafka-value-schema-file"
            ),
        )
        .otherwise(F.lit("found JSON that is not a Debezium change event"))
    )


def _unread(envelope: Column, connect: dict[str, Any]) -> Column:
    """True where PERMISSIVE ``from_json`` gave up (it leaves NULLs)."""
    return envelope.isNull() | envelope["op"].isNull() if is_envelope(connect) else envelope.isNull()


_UNREAD = (
    "the JSON payload does not read with its embedded schema (a decimal written as a number? "
    "hudi-cdc reads JsonConverter's default decimal.format=BASE64)"
)
_PAYLOAD_KEY = ',"payload":'
SAMPLED = "of the sampled messages"


def _schema_prefix(value: bytes | None) -> tuple[bytes, dict[str, Any]] | None:
    """``(the message's bytes up to its payload, its schema)`` when it is laid out as JsonConverter writes
    (``{"schema":{...},"payload":...}``, no spaces); None otherwise (then it is grouped by parsing)."""
    from hudi_cdc.envelope.connect_schema import connect_envelope

    head = '{"schema":'
    if not value or not value.startswith(head.encode()):
        return None
    try:
        text = value.decode("utf-8")
        schema, end = json.JSONDecoder().raw_decode(text, len(head))
        if not text.startswith(_PAYLOAD_KEY, end):
            return None
        return (text[:end] + _PAYLOAD_KEY).encode("utf-8"), connect_envelope(schema, "a sampled message")
    except (ValueError, DecodeError):
        return None


class JsonDecoder:
    """Messages (``value``, ``partition``, ``offset``) of one topic to envelope parts."""

    def __init__(
        self,
        topic: str,
        *,
        schema_file: str | None = None,
        reader_schema: Callable[[dict[str, Any]], dict[str, Any]] = lambda schema: schema,
    ) -> None:
        from hudi_cdc.envelope.connect_schema import connect_envelope

        self._topic = topic
        self._reader_schema = reader_schema
        self._given: dict[str, Any] | None = None
        if schema_file:
            try:
                with open(schema_file, encoding="utf-8") as handle:
                    document = json.load(handle)
            except (OSError, ValueError) as exc:
                raise DecodeError(f"--kafka-value-schema-file {schema_file}: {exc}") from None
            self._given = connect_envelope(document, f"--kafka-value-schema-file {schema_file}")

    def parts(self, frame: DataFrame, samples: Sequence[bytes] = ()) -> list[BatchPart]:
        """The messages as envelope parts; ``samples`` (a few of the batch's own messages, e.g. the first
        and last of each partition, evenly spaced) let most messages be read in one pass by their schema's exact bytes."""
        if self._given is not None:
            return [self._schemaless(frame, self._given)]
        return self._embedded(frame, samples)

    def _part(
        self, messages: DataFrame, connect: dict[str, Any], envelope: Column, error: Column, where: str
    ) -> BatchPart:
        from pyspark.sql import functions as F

        from hudi_cdc.envelope.events import BatchPart

        decoded = messages.select(
            envelope.alias("envelope"),
            F.concat(F.lit(self._topic + "-"), F.col("partition"), F.lit("@"), F.col("offset")).alias(ORIGIN_COLUMN),
            F.struct(F.col("partition"), F.col("offset")).alias(ARRIVAL_COLUMN),
            error.alias(ERROR_COLUMN),
            F.struct(
                F.col("value").alias("data"), F.lit("json").alias("format"), F.lit(None).cast("string").alias("schema")
            ).alias(RAW_COLUMN),
        )
        decimals = decimal_columns(connect)
        enveloped = is_envelope(connect)

        def field(name: str) -> Column:  # decimals came as their bytes
            value = F.col("envelope")[name]
            if enveloped and name in ("before", "after"):
                for column, (precision, scale) in decimals.items():
                    value = value.withField(f"`{column}`", decimal_from_bytes(value[column], precision, scale))
            elif not enveloped and name in decimals:
                value = decimal_from_bytes(value, *decimals[name])
            return value.alias(name)

        envelopes = decoded.select(
            *[field(f.name) for f in json_read_type(connect).fields],
            ORIGIN_COLUMN,
            ARRIVAL_COLUMN,
            ERROR_COLUMN,
            RAW_COLUMN,
        )
        return BatchPart(envelopes=envelopes, avro_schema=self._reader_schema(avro_envelope(connect)), where=where)

    def _embedded(self, frame: DataFrame, samples: Sequence[bytes]) -> list[BatchPart]:
        """Messages that begin with a sampled message's schema, byte for byte, are read with it in one
        pass (JsonConverter writes a schema identically each time); the rest are grouped by schema."""
        from pyspark.sql import functions as F
        from pyspark.sql.types import StructField, StructType

        value = F.col("value")
        known: dict[bytes, dict[str, Any]] = {}
        for sample in samples:
            found = _schema_prefix(sample)
            if found is not None:
                known.setdefault(*found)
        parts, covered = [], None
        for i, (prefix, connect) in enumerate(known.items()):
            starts = F.substring(value, 1, len(prefix)) == F.lit(bytearray(prefix))
            covered = starts if covered is None else covered | starts
            rows = frame.filter(value.isNotNull() & starts).withColumn(_TEXT, value.cast("string"))
            read_type = StructType([StructField("payload", json_read_type(connect))])
            envelope = F.from_json(F.col(_TEXT), read_type, {"mode": "PERMISSIVE"})["payload"]
            error = F.when(_unread(envelope, connect), F.lit(_UNREAD))
            parts.append(self._part(rows, connect, envelope, error, f"JSON schema {i + 1} {SAMPLED}"))
        rest = frame.filter(value.isNotNull() & ~covered) if covered is not None else frame
        return parts + self._by_schema(rest, fallback=next(iter(known.values()), None))

    def _by_schema(self, frame: DataFrame, *, fallback: dict[str, Any] | None) -> list[BatchPart]:
        """Messages grouped by their embedded schema (a hash per message), each group read with its own;
        messages with none ride as error rows with the first group's, else ``fallback``'s columns."""
        from pyspark.sql import functions as F
        from pyspark.sql.types import StructField, StructType

        from hudi_cdc.envelope.connect_schema import connect_envelope

        text = F.col("value").cast("string")
        schema = F.get_json_object(text, "$.schema")  # evaluated once per row (common subexpression)
        # The schema's hash once per message, held with it (not the text: it is the bytes again).
        held = (
            frame.filter(F.col("value").isNotNull())
            .select(
                "value",
                "partition",
                "offset",
                F.when(schema.isNotNull(), F.xxhash64(schema)).alias(_HASH),
            )
            .localCheckpoint(eager=True)
        )
        messages = held.withColumn(_TEXT, text)
        groups = (  # one parse per message (above); the schemas are read from each group's first message
            held.groupBy(_HASH)
            .agg(
                F.count(F.lit(1)).alias("n"),
                F.min(F.struct("partition", "offset")).alias("first"),
            )
            .collect()
        )
        good = sorted(
            (g for g in groups if g[_HASH] is not None), key=lambda g: (g["first"]["partition"], g["first"]["offset"])
        )
        bad = [g for g in groups if g[_HASH] is None]
        if not good:
            if not bad:
                return []
            if fallback is not None:
                read_type = StructType([StructField("payload", json_read_type(fallback))])
                envelope = F.from_json(F.col(_TEXT), read_type, {"mode": "PERMISSIVE"})["payload"]
                reason = _found(F.col("value"), F.col(_TEXT))
                return [self._part(messages, fallback, envelope, reason, "JSON messages with no schema")]
            first = bad[0]["first"]
            found = (
                messages.filter((F.col("partition") == first["partition"]) & (F.col("offset") == first["offset"]))
                .select(_found(F.col("value"), F.col(_TEXT)).alias("found"))
                .first()
            )
            raise DecodeError(
                f"{self._topic}-{first['partition']}@{first['offset']}: {found['found'] if found else 'unreadable'}"
                f" ({bad[0]['n']} such message(s) in the round, none readable)"
            )
        parts = []
        for i, group in enumerate(good):
            first = group["first"]
            where = (
                f"JSON schema {i + 1} of {len(good)} (first at {self._topic}-{first['partition']}@{first['offset']})"
            )
            at = (F.col("partition") == first["partition"]) & (F.col("offset") == first["offset"])
            sample = messages.filter(at).select(F.get_json_object(F.col(_TEXT), "$.schema")).first()
            assert sample is not None, "the group's first message is held"
            connect = connect_envelope(json.loads(sample[0]), where)
            read_type = StructType([StructField("payload", json_read_type(connect))])
            mine = F.col(_HASH) == F.lit(group[_HASH])
            if i == 0:
                mine = mine | F.col(_HASH).isNull()  # the unreadable messages ride with the first part, as errors
            rows = messages.filter(mine)
            envelope = F.from_json(F.col(_TEXT), read_type, {"mode": "PERMISSIVE"})["payload"]
            error = F.when(F.col(_HASH).isNull(), _found(F.col("value"), F.col(_TEXT))).when(
                _unread(envelope, connect), F.lit(_UNREAD)
            )
            parts.append(self._part(rows, connect, envelope, error, where))
        return parts

    def _schemaless(self, frame: DataFrame, connect: dict[str, Any]) -> BatchPart:
        from pyspark.sql import functions as F

        text = F.col(_TEXT)
        read_type = json_read_type(connect)
        # One more parse besides the typed one: the top level loosely, for the names of the columns
        # a message holds (a new one is refused) and a schema it should not embed.
        loose = "map<string,string>"
        none = F.array().cast("array<string>")
        if is_envelope(connect):
            probe = F.from_json(text, f"schema string, payload string, after {loose}, before {loose}")
            known = F.array(*[F.lit(f.name) for f in read_type["after"].dataType.fields])  # type: ignore[attr-defined]
            columns = F.array_union(
                F.coalesce(F.map_keys(probe["after"]), none), F.coalesce(F.map_keys(probe["before"]), none)
            )
            embedded = probe["schema"].isNotNull() & probe["payload"].isNotNull()
        else:  # a flattened row: its own fields are the columns
            probe = F.from_json(text, loose)
            known = F.array(*[F.lit(f.name) for f in read_type.fields])
            columns = F.coalesce(F.map_keys(probe), none)
            embedded = F.array_contains(columns, "schema") & F.array_contains(columns, "payload")
        unknown = F.array_except(columns, known)
        envelope = F.from_json(text, read_type, {"mode": "PERMISSIVE"})
        # Every condition is evaluated for a good message, so each reads the two parses above; what a bad
        # message holds is worked out only for it.
        error = (
            F.when(
                embedded,
                F.lit("found JSON with an embedded schema (schemas.enable=true): drop --kafka-value-schema-file"),
            )
            .when(
                F.size(unknown) > 0,
                F.concat(
                    F.lit("column(s) "),
                    F.array_join(unknown, ", "),
                    F.lit(" not in --kafka-value-schema-file (added at the source?): add them to the file and rerun"),
                ),
            )
            .when(
                _unread(envelope, connect),
                F.when(
                    F.get_json_object(text, "$").isNull() | (F.substring("value", 1, 1) == F.lit(bytearray(b"\x00"))),
                    _found(F.col("value"), text),
                ).otherwise(F.lit("the JSON does not read with --kafka-value-schema-file")),
            )
        )
        messages = frame.filter(F.col("value").isNotNull()).select(
            "value", "partition", "offset", F.col("value").cast("string").alias(_TEXT)
        )
        return self._part(messages, connect, envelope, error, "JSON with the schema of --kafka-value-schema-file")
