"""A sample Postgres ``customers`` table's Debezium stream, as Kafka Connect's storage sinks write it.

For the demo, the notebook and the install checks: each call writes one Avro
file of Debezium envelopes under ``<root>/<topic>/partition=0/`` and
updates :attr:`SampleCustomers.state`, the source table those events lead to.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from hudi_cdc.testing.envelopes import envelope_schema, pg_event, write_events

__all__ = ["PLACEHOLDER", "SampleCustomers"]

PLACEHOLDER = "__debezium_unavailable_value"
COLUMNS = [("id", "long"), ("name", ["null", "string"]), ("email", ["null", "string"]), ("notes", ["null", "string"])]


class SampleCustomers:
    """Snapshot and change rounds of ``dbserver1.public.customers``, with the state they lead to."""

    def __init__(self, root: str | Path, *, keys: int = 30, topic: str = "dbserver1.public.customers") -> None:
        self.root = Path(root)
        self.topic = topic
        self.folder = self.root / topic / "partition=0"
        self.keys = keys
        self.schema = envelope_schema("customers", COLUMNS)
        self.state: dict[int, dict[str, Any]] = {}
        self.lsn = 100
        self.deleted: dict[int, int] = {}  # key -> LSN of its delete, while it stays deleted
        self._offset = 0

    @property
    def source_path(self) -> str:
        """What ``--source-path`` takes: the folder of the topic's files."""
        return str(self.root / self.topic)

    def rows(self) -> dict[int, tuple]:
        """The source table now: each key's row as a tuple in the table's column order (as tests read tables back)."""
        return {key: tuple(row[name] for name, _ in COLUMNS) for key, row in self.state.items()}

    def write(self, events: list[dict[str, Any]]) -> int:
        """One more sink file holding ``events`` (named by its first offset, as the sinks do)."""
        write_events(self.folder / f"{self.topic}+0+{self._offset:010d}.avro", self.schema, events)
        self._offset += len(events)
        return len(events)

    def snapshot(self, rows: int = 20) -> int:
        """Debezium's initial snapshot (``op = r``) of ``rows`` customers."""
        events = []
        for key in range(rows):
            row = {"id": key, "name": f"customer {key}", "email": f"c{key}@example.com", "notes": "s" * 5000}
            self.state[key] = row
            events.append(pg_event("r", lsn=self.lsn, after=row))
        return self.write(events)

    def changes(self, seed: int) -> int:
        """Inserts, updates that leave the out-of-line ``notes`` unchanged (TOAST placeholders) and deletes.

        The file's events are shuffled: order must come from the LSN, not from arrival.
        """
        rng = random.Random(seed)
        events = []
        for _ in range(self.keys * 3):
            self.lsn += rng.randint(1, 9)
            key = rng.randrange(self.keys)
            if key not in self.state:
                self.state[key] = {
                    "id": key,
                    "name": f"customer {key}",
                    "email": f"c{key}@example.com",
                    "notes": "n" * 3000,
                }
                events.append(pg_event("c", lsn=self.lsn, after=self.state[key], txid=self.lsn))
                self.deleted.pop(key, None)
            elif rng.random() < 0.15:
                before = {"id": key, "name": None, "email": None, "notes": None}
                events.append(pg_event("d", lsn=self.lsn, before=before))
                del self.state[key]
                self.deleted[key] = self.lsn
            else:
                self.state[key] = {**self.state[key], "email": f"c{key}.{self.lsn}@example.com"}
                after = {**self.state[key], "notes": PLACEHOLDER}
                events.append(pg_event("u", lsn=self.lsn, after=after, txid=self.lsn))
        rng.shuffle(events)
        return self.write(events)

    def late_update_of_deleted_row(self) -> tuple[int, int] | None:
        """An update older than a row's delete, arriving after it: it must not bring the row back.

        Returns ``(key, lsn)`` of the late event, or None when no row has been deleted yet.
        """
        if not self.deleted:
            return None
        key, deleted_at = max(self.deleted.items(), key=lambda item: item[1])
        zombie = {"id": key, "name": "zombie", "email": "zombie@example.com", "notes": "z"}
        self.write([pg_event("u", lsn=deleted_at - 1, after=zombie)])
        return key, deleted_at - 1
