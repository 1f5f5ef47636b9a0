"""A realistic Debezium Postgres change stream for benchmarks, produced into a Kafka topic.

``events`` changes over ``keys`` keys: about 30% inserts, 60% updates, 10%
deletes; updates that leave the large ``notes`` column alone carry Debezium's
TOAST placeholder (as under REPLICA IDENTITY DEFAULT); the schema gains a
column twice along the way (three writer schema versions). Messages are keyed
and partitioned by primary key like Debezium's, so each key's changes stay in
order, and framed as Confluent serializers write them. The generator also
keeps the table the stream leads to, which every benchmarked table must equal.
"""

from __future__ import annotations

import random
import string
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from hudi_cdc.testing import envelope_schema, pg_event
from hudi_cdc.testing.kafka import Framer, create_topic, produce, register_schema

PLACEHOLDER = "__debezium_unavailable_value"
BASE_COLUMNS: list[tuple[str, Any]] = [
    ("id", "long"),
    ("name", ["null", "string"]),
    ("email", ["null", "string"]),
    ("balance", ["null", {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 2,
                          "connect.name": "org.apache.kafka.connect.data.Decimal",
                          "connect.parameters": {"scale": "2", "connect.decimal.precision": "12"}}]),
    ("status", ["null", "string"]),
    ("updated_at", ["null", {"type": "long", "connect.name": "io.debezium.time.MicroTimestamp"}]),
    ("notes", ["null", "string"]),
]  # fmt: skip
VERSIONS: list[list[tuple[str, Any]]] = [
    BASE_COLUMNS,
    [*BASE_COLUMNS, ("tier", ["null", "int"])],
    [*BASE_COLUMNS, ("tier", ["null", "int"]), ("country", ["null", "string"])],
]
COLUMNS = [name for name, _ in VERSIONS[-1]]
STATUSES = ("new", "active", "suspended", "closed")


@dataclass
class Workload:
    topic: str
    events: int
    keys: int
    partitions: int
    schema_versions: int = 3
    seed: int = 42
    final: dict[int, dict[str, Any]] = field(default_factory=dict)
    # A deleted key's last row while it stays deleted (what a soft_delete table keeps, marked).
    gone: dict[int, dict[str, Any]] = field(default_factory=dict)
    # Per key, its changes and its deletes (an scd2 table's versions, and its delete markers).
    changes_per_key: Counter[int] = field(default_factory=Counter)
    deletes_per_key: Counter[int] = field(default_factory=Counter)
    counts: dict[str, int] = field(default_factory=lambda: {"c": 0, "u": 0, "d": 0, "toast": 0})

    def changes(self) -> Iterator[tuple[int, dict[str, Any], int]]:
        """``(schema version, envelope, key)`` in LSN order; fills ``final``, ``gone``, ``counts`` and the per-key counts."""
        rng = random.Random(self.seed)
        notes = ["".join(rng.choices(string.ascii_letters, k=rng.randint(2_000, 4_000))) for _ in range(64)]
        live: dict[int, dict[str, Any]] = self.final
        alive, dead = _KeyPool(), _KeyPool(range(self.keys))  # a deleted key can come back
        lsn, ts = 10_000_000, 1_790_000_000_000_000
        for n in range(self.events):
            # The stream moves through the last ``schema_versions`` versions, in equal thirds.
            first = len(VERSIONS) - self.schema_versions
            version = first + min(self.schema_versions - 1, n * self.schema_versions // self.events)
            lsn += rng.randint(40, 400)
            ts += rng.randint(50, 500)
            roll = rng.random()
            if dead and (roll < 0.30 or not alive):
                op, key = "c", dead.take(rng)
                alive.add(key)
                row = {"id": key, "name": f"customer {key}", "email": f"c{key}@example.com",
                       "balance": Decimal(rng.randint(0, 10**8)) / 100, "status": "new", "updated_at": ts,
                       "notes": rng.choice(notes), "tier": None, "country": None}  # fmt: skip
            elif roll < 0.90 or len(alive) < 2:
                op, key = "u", alive.pick(rng)
                row = dict(live[key], balance=Decimal(rng.randint(0, 10**8)) / 100,
                           status=rng.choice(STATUSES), updated_at=ts)  # fmt: skip
                if version >= 1:
                    row["tier"] = rng.randint(1, 5)
                if version >= 2:
                    row["country"] = rng.choice(("DE", "FR", "US", "JP", "BR"))
                if rng.random() < 0.2:
                    row["notes"] = rng.choice(notes)
            else:
                op, key = "d", alive.take(rng)
                dead.add(key)
                row = None
            if row is not None:
                sent = {c: row.get(c) for c, _ in VERSIONS[version]}
                if op == "u" and row["notes"] == live[key]["notes"] and rng.random() < 0.5:
                    sent["notes"] = PLACEHOLDER  # unchanged out-of-line value, as REPLICA IDENTITY DEFAULT sends it
                    self.counts["toast"] += 1
                live[key] = row
                self.gone.pop(key, None)
                event = pg_event(op, lsn=lsn, after=sent, txid=lsn // 100, ts_ms=ts // 1000, table="customers")
            else:
                self.gone[key] = live.pop(key)
                self.deletes_per_key[key] += 1
                before = {c: None for c, _ in VERSIONS[version]} | {"id": key}
                event = pg_event("d", lsn=lsn, before=before, txid=lsn // 100, ts_ms=ts // 1000, table="customers")
            self.counts[op] += 1
            self.changes_per_key[key] += 1
            yield version, event, key

    def produce(self, bootstrap: str, registry: str) -> None:
        """Create the topic, register the schemas and produce every change (plus Debezium's delete tombstones)."""
        produce(bootstrap, self.topic, self.messages(bootstrap, registry))

    def messages(self, bootstrap: str, registry: str) -> Iterator[tuple[bytes | None, bytes | None, int]]:
        """Create the topic and register the schemas; then each message, as Debezium would publish it."""
        create_topic(bootstrap, self.topic, partitions=self.partitions)
        key_schema = {"type": "record", "name": "Key", "namespace": "bench.inventory.customers",
                      "fields": [{"name": "id", "type": "long"}]}  # fmt: skip
        key_framer = Framer(register_schema(registry, f"{self.topic}-key", key_schema), key_schema)
        framers = {}
        for version in range(len(VERSIONS) - self.schema_versions, len(VERSIONS)):
            columns = VERSIONS[version]
            schema = envelope_schema("customers", columns, server="bench", schema="inventory")
            framers[version] = Framer(register_schema(registry, f"{self.topic}-value", schema), schema)
        for version, event, key in self.changes():
            framed_key = key_framer({"id": key})
            yield framed_key, framers[version](event), key % self.partitions
            if event["op"] == "d":
                yield framed_key, None, key % self.partitions

    def expected_rows(self) -> list[tuple]:
        """The final table as Spark reads it back (timestamps as UTC wall-clock datetimes)."""
        return as_read(self.final.values())

    def gone_rows(self) -> list[tuple]:
        """The last rows of the keys deleted at the end, as :meth:`expected_rows` lays them out."""
        return as_read(self.gone.values())


def as_read(rows: Iterable[dict[str, Any]]) -> list[tuple]:
    """Rows in ``COLUMNS`` order as Spark reads them back (timestamps as UTC wall-clock datetimes), sorted."""
    epoch = datetime(1970, 1, 1)
    return sorted(
        tuple(epoch + timedelta(microseconds=v) if c == "updated_at" and v is not None else v for c, v in
              ((c, row.get(c)) for c in COLUMNS))
        for row in rows
    )  # fmt: skip


class _KeyPool:
    """A set of keys with O(1) add, random pick and random removal (swap-remove)."""

    def __init__(self, keys: Iterator[int] | range = ()) -> None:
        self._keys = list(keys)
        self._at = {k: i for i, k in enumerate(self._keys)}

    def __len__(self) -> int:
        return len(self._keys)

    def add(self, key: int) -> None:
        self._at[key] = len(self._keys)
        self._keys.append(key)

    def pick(self, rng: random.Random) -> int:
        return self._keys[rng.randrange(len(self._keys))]

    def take(self, rng: random.Random) -> int:
        key = self.pick(rng)
        i, last = self._at.pop(key), self._keys.pop()
        if last != key:
            self._keys[i], self._at[last] = last, i
        return key
