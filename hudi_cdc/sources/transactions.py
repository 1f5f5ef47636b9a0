"""The connector's transaction metadata, as a consistent cut needs it: read on the driver, nothing written.

With ``provide.transaction.metadata=true`` a Debezium connector writes a
BEGIN and an END event per transaction on its transaction topic
(``<topic.prefix>.transaction``), the END with the number of events the
transaction wrote per table (``data_collections``), and gives every change
event a ``transaction`` block (``id``, ``total_order``,
``data_collection_order``). Both come in commit order. This module reads the
END events of the transaction topic and the transaction id of each message of
a table's topic, from given offsets to the topics' current ends; deciding where
a cut falls is the runner's (:mod:`hudi_cdc.service.cuts`).

Messages are decoded one by one with fastavro on the driver: a cut reads what
arrived since the previous one, not a round's worth of data.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hudi_cdc.errors import SourceError, TransientError
from hudi_cdc.sources.kafka import OffsetRange, list_topics, new_consumer, read_ranges, request_timeout_s
from hudi_cdc.sources.registry import RegistryLogin, SchemaRegistry

__all__ = [
    "TableEvent",
    "TransactionEnd",
    "TransactionReader",
    "data_collection",
    "table_event",
    "topic_collection",
    "topic_server",
    "transaction_end",
    "transaction_key",
]


@dataclass(frozen=True)
class TransactionEnd:
    """One END event of the transaction topic."""

    offset: int  # on the transaction topic (it has one partition)
    id: str
    counts: Mapping[str, int] = field(default_factory=dict)  # data collection (schema.table) -> its events
    ts_ms: int | None = None
    key: str = ""
    """What the change events' ``transaction.id`` is matched on (:func:`transaction_key`); "": ``id``."""
    undecodable: bool = False
    """A message of the transaction topic that does not decode: it may have been an END, so no cut passes it."""

    @property
    def match(self) -> str:
        return self.key or self.id


def transaction_key(raw: str, flavor: str) -> str:
    """The part of a transaction id that names the transaction in both the END and the change events.

    Postgres writes ``<txid>:<lsn>``, and the LSN is not the same in the two (measured on Debezium 3:
    END ``46925:1861286600`` for events of ``46925:1861286464``): the transaction is its txid. Other
    connectors' ids (MariaDB's GTID) are the same in both.
    """
    return raw.split(":", 1)[0] if flavor == "postgres" else raw


def transaction_end(record: Any, offset: int, flavor: str) -> TransactionEnd | None:  # noqa: ANN401
    """The END event a decoded transaction-topic message is (``record`` None: it did not decode); None for a
    BEGIN."""
    if not isinstance(record, dict):
        return TransactionEnd(offset, "", undecodable=True)
    if record.get("status") != "END":
        return None
    counts: dict[str, int] = {}
    for c in record.get("data_collections") or []:
        counts[str(c["data_collection"])] = counts.get(str(c["data_collection"]), 0) + int(c["event_count"])
    raw = str(record["id"])
    return TransactionEnd(offset, raw, counts, record.get("ts_ms"), transaction_key(raw, flavor))


@dataclass(frozen=True)
class TableEvent:
    """One message of a table's topic: where it is, and the transaction it belongs to."""

    partition: int
    offset: int
    transaction: str | None  # its transaction_key; None: no transaction block (a snapshot read), a tombstone
    tombstone: bool = False
    collection: str | None = None
    """The data collection it is a change of, named as the END events name it (:func:`data_collection`);
    None: not known (no ``source`` block)."""
    order: int | None = None
    """Its ``data_collection_order``: its place among its transaction's events of its collection, so a
    message delivered twice counts once."""
    undecodable: bool = False
    """A message that does not decode: its transaction is not known."""


_COLLECTION_FIELDS = {"postgres": ("schema", "table"), "mysql": ("db", "table")}
"""What names a data collection in the END events, per connector: Debezium's table id (catalog, schema,
table, whichever the connector fills), from the change event's ``source`` block. SQL Server and Oracle:
``db.schema.table``."""


def data_collection(source: Any, flavor: str) -> str | None:  # noqa: ANN401 - a decoded Avro record
    """The data collection a change event's ``source`` block names, as its transaction's END counts it."""
    if not isinstance(source, dict):
        return None
    parts = [source.get(f) for f in _COLLECTION_FIELDS.get(flavor, ("db", "schema", "table"))]
    return ".".join(str(p) for p in parts) if all(parts) else None


def _name_pieces(flavor: str) -> int:
    return 3 if flavor == "sqlserver" else 2  # SQL Server's topics are <topic.prefix>.<db>.<schema>.<table>


def topic_server(topic: str, flavor: str) -> str:
    """The ``topic.prefix`` of the connector a table's topic comes from, as Debezium names its topics."""
    return ".".join(topic.split(".")[: -_name_pieces(flavor)])


def topic_collection(topic: str, flavor: str) -> str:
    """The data collection a table's topic is named after (what follows the ``topic.prefix``); a topic
    renamed by a transform is matched by its events' ``source`` block instead (:func:`data_collection`)."""
    return ".".join(topic.split(".")[-_name_pieces(flavor) :])


def table_event(
    record: Any,  # noqa: ANN401 - a decoded Avro record
    partition: int,
    offset: int,
    flavor: str,
    *,
    tombstone: bool = False,
) -> TableEvent:
    """What a cut needs of one decoded message of a table's topic (``record`` None: it did not decode)."""
    if tombstone:
        return TableEvent(partition, offset, None, tombstone=True)
    if not isinstance(record, dict):
        return TableEvent(partition, offset, None, undecodable=True)
    block = record.get("transaction")
    raw = block.get("id") if isinstance(block, dict) else None
    if raw is None or not isinstance(block, dict):
        return TableEvent(partition, offset, None, collection=data_collection(record.get("source"), flavor))
    order = block.get("data_collection_order")
    return TableEvent(
        partition,
        offset,
        transaction_key(str(raw), flavor),
        collection=data_collection(record.get("source"), flavor),
        order=None if order is None else int(order),
    )


class TransactionReader:
    """Reads transaction metadata from one Kafka cluster and schema registry."""

    def __init__(
        self,
        bootstrap_servers: str,
        registry_url: str,
        conf: Mapping[str, str] | None = None,
        *,
        flavor: str,
        registry_login: RegistryLogin | None = None,
    ) -> None:
        self._flavor = flavor
        self._bootstrap = bootstrap_servers
        self._conf = dict(conf or {})
        basic_auth = self._conf.pop("basic.auth.user.info", None)
        self._registry = SchemaRegistry(registry_url, basic_auth=basic_auth, login=registry_login)
        self._parsed: dict[int, Any] = {}
        # Kept for the next plans: a new consumer spent ~50 ms connecting, and a plan asks once per table.
        self._consumer: Any = None

    def watermarks(self, topic: str) -> dict[int, tuple[int, int]]:
        """Partition -> (oldest retained, next to be written) offsets of ``topic``."""
        from confluent_kafka import KafkaException, TopicPartition

        if self._consumer is None:
            self._consumer = new_consumer(self._bootstrap, self._conf, group_id="hudi-cdc-cuts")
        consumer = self._consumer
        wait_s = request_timeout_s(self._conf)
        try:
            meta = list_topics(consumer, self._bootstrap, wait_s, topic).topics.get(topic)
            if meta is None or meta.error is not None or not meta.partitions:
                raise SourceError(f"topic {topic!r} does not exist on {self._bootstrap}: is the connector's "
                                  "provide.transaction.metadata on?")  # fmt: skip
            return {
                p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=wait_s, cached=False)
                for p in sorted(meta.partitions)
            }
        except KafkaException as exc:
            self.close()  # the next plan connects afresh
            raise TransientError(f"cannot reach Kafka at {self._bootstrap}: {exc}") from None

    def close(self) -> None:
        """Let go of the kept consumer (the next request connects again)."""
        consumer, self._consumer = self._consumer, None
        if consumer is not None:
            consumer.close()

    def ends(self, topic: str, after: int | None) -> list[TransactionEnd]:
        """The END events of the transaction topic past offset ``after`` (None: from the oldest retained)."""
        marks = self.watermarks(topic)
        if len(marks) != 1:
            raise SourceError(f"transaction topic {topic} has {len(marks)} partitions: commit order needs one")
        low, high = marks[0]
        start = low if after is None else max(low, after + 1)
        found = []
        for _, value, _, offset in read_ranges(self._bootstrap, topic, [OffsetRange(0, start, high)], self._conf,
                                               what=topic):  # fmt: skip
            if value and (end := transaction_end(self._decode(value), offset, self._flavor)) is not None:
                found.append(end)
        return found

    def events(self, topic: str, starts: Mapping[int, int]) -> tuple[list[TableEvent], dict[int, int]]:
        """The messages of ``topic`` from ``starts`` (partition -> offset; missing: the oldest retained) to
        its current end, with their transaction; and the end offsets read to."""
        marks = self.watermarks(topic)
        ranges = [OffsetRange(p, max(low, starts.get(p, low)), high) for p, (low, high) in marks.items()]
        found = []
        for _, value, partition, offset in read_ranges(self._bootstrap, topic, ranges, self._conf, what=topic):
            record = self._decode(value) if value else None
            found.append(table_event(record, partition, offset, self._flavor, tombstone=not value))
        return found, {r.partition: r.end for r in ranges}

    def _decode(self, value: bytes | None) -> Any:  # noqa: ANN401 - a decoded Avro value
        import fastavro

        if not value or len(value) < 5 or value[0] != 0:
            return None
        schema_id = int.from_bytes(value[1:5], "big")
        if schema_id not in self._parsed:
            self._parsed[schema_id] = fastavro.parse_schema(self._registry.schema(schema_id))
        try:
            return fastavro.schemaless_reader(io.BytesIO(value[5:]), self._parsed[schema_id])
        except Exception:  # noqa: BLE001 - the table's own round reports a message that does not decode
            return None
