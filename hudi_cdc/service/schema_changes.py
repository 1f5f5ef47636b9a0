"""Debezium's schema-change topic: which tables of a pipeline were dropped at the source.

Connectors with a schema history (MySQL, MariaDB, SQL Server, Oracle, Db2)
publish every DDL on a topic named after ``topic.prefix``; each message's
``tableChanges`` lists ``{type: CREATE|ALTER|DROP, id: "db"."table"}``.
(PostgreSQL's connector publishes none: a dropped Postgres table has no event.)

The runner reads the topic at each discovery, from where it left off, and keeps
the newest change per table: a table whose newest change is a DROP is applied
up to its end (what was published before the drop) and then stopped as
``dropped``, reported with the DDL, never silently kept current. A CREATE after
the drop (the table made again) brings it back.

Values are read in the Confluent Avro wire format (through the registry) or as
JSON (with or without the converter's ``schema``/``payload`` envelope).
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hudi_cdc.errors import DecodeError, TransientError
from hudi_cdc.sources.kafka import list_topics, new_consumer, request_timeout_s

__all__ = ["SchemaChange", "SchemaChangeWatcher", "table_name"]

log = logging.getLogger("hudi_cdc.runner")


@dataclass(frozen=True)
class SchemaChange:
    table: str  # schema.table (or db.table), as the pipeline names tables
    type: str  # CREATE | ALTER | DROP
    ddl: str | None
    ts_ms: int | None
    position: str  # topic-partition@offset

    def describe(self) -> str:
        ddl = f": {self.ddl.strip()}" if self.ddl else ""
        return f"{self.type} at {self.position}{ddl}"


def table_name(table_id: str) -> str:
    """Debezium's table id (``"db"."table"``, ``"db"."schema"."table"``) as ``schema.table``."""
    parts, current, quoted = [], "", False
    for ch in table_id:
        if ch == '"':
            quoted = not quoted
        elif ch == "." and not quoted:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    return ".".join(parts[-2:])


class SchemaChangeWatcher:
    """Reads a schema-change topic incrementally and keeps each table's newest change."""

    def __init__(
        self,
        topic: str,
        *,
        bootstrap_servers: str,
        schema_registry_url: str | None,
        client_conf: Mapping[str, str] | None = None,
        registry_login: Any = None,  # noqa: ANN401 - a hudi_cdc.sources.registry.RegistryLogin
    ) -> None:
        self.topic = topic
        self._registry_login = registry_login
        self._bootstrap = bootstrap_servers
        self._conf = dict(client_conf or {})
        self._registry_url = schema_registry_url
        self._next: dict[int, int] = {}  # partition -> next offset to read
        self._registry: Any = None
        self.newest: dict[str, SchemaChange] = {}

    def dropped(self) -> dict[str, SchemaChange]:
        return {name: change for name, change in self.newest.items() if change.type == "DROP"}

    def poll(self) -> list[SchemaChange]:
        """Read what is new on the topic; return the changes read (in order)."""
        from confluent_kafka import KafkaException, TopicPartition

        conf = {k: v for k, v in self._conf.items() if k != "basic.auth.user.info"}
        consumer = new_consumer(self._bootstrap, conf, group_id="hudi-cdc-schema-changes")
        read: list[SchemaChange] = []
        try:
            meta = list_topics(consumer, self._bootstrap, request_timeout_s(self._conf), self.topic).topics.get(
                self.topic
            )
            if meta is None or meta.error is not None:
                return read  # no DDL yet: the connector creates the topic with its first one
            for partition in sorted(meta.partitions):
                low, high = consumer.get_watermark_offsets(
                    TopicPartition(self.topic, partition), timeout=request_timeout_s(self._conf)
                )
                start = max(self._next.get(partition, low), low)
                if start >= high:
                    continue
                consumer.assign([TopicPartition(self.topic, partition, start)])
                offset = start
                while offset < high:
                    message = consumer.poll(10)
                    if message is None:
                        raise TransientError(f"{self.topic}-{partition}: no message at offset {offset} within 10 s")
                    if message.error():
                        raise TransientError(f"{self.topic}-{partition}: {message.error()}")
                    at, value = int(message.offset() or 0), message.value()
                    offset, position = at + 1, f"{self.topic}-{partition}@{at}"
                    if value:
                        read += self._changes(self._decode(value, position), position)
                self._next[partition] = offset
        except KafkaException as exc:
            raise TransientError(f"cannot read schema-change topic {self.topic}: {exc}") from None
        finally:
            consumer.close()
        for change in read:
            previous = self.newest.get(change.table)
            self.newest[change.table] = change
            if change.type == "DROP" and (previous is None or previous.type != "DROP"):
                log.warning("schema change: table %s dropped at the source (%s)", change.table, change.describe())
        return read

    def _decode(self, value: bytes, position: str) -> dict[str, Any]:
        if len(value) >= 5 and value[0] == 0:
            import fastavro

            from hudi_cdc.sources.registry import SchemaRegistry

            if not self._registry_url:
                raise DecodeError(f"{position}: an Avro schema-change event and no schema registry")
            if self._registry is None:
                self._registry = SchemaRegistry(
                    self._registry_url, basic_auth=self._conf.get("basic.auth.user.info"), login=self._registry_login
                )
            schema = fastavro.parse_schema(self._registry.schema(int.from_bytes(value[1:5], "big")))
            record: dict[str, Any] = fastavro.schemaless_reader(io.BytesIO(value[5:]), schema)  # type: ignore[call-arg,assignment]
            return record
        try:
            parsed = json.loads(value)
        except ValueError:
            raise DecodeError(f"{position}: a schema-change event neither Avro nor JSON") from None
        payload = parsed.get("payload", parsed) if isinstance(parsed, dict) else None
        if not isinstance(payload, dict):
            raise DecodeError(f"{position}: a schema-change event that is not a record")
        return payload

    @staticmethod
    def _changes(event: dict[str, Any], position: str) -> list[SchemaChange]:
        ts = event.get("ts_ms")
        changes = []
        for change in event.get("tableChanges") or []:
            if change.get("id") and change.get("type"):
                changes.append(
                    SchemaChange(
                        table_name(str(change["id"])),
                        str(change["type"]).upper(),
                        event.get("ddl"),
                        int(ts) if ts is not None else None,
                        position,
                    )
                )
        return changes
