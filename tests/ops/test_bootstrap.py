"""``bootstrap``'s guard: what it cannot hand over is refused before Spark, the database or the table is touched."""

from __future__ import annotations

import re

import pytest

from hudi_cdc.config import IngestConfig
from hudi_cdc.errors import ConfigError
from hudi_cdc.ops.bootstrap import bootstrap
from hudi_cdc.upstream.database import SourceDatabase

PG = SourceDatabase("postgresql://postgres@127.0.0.1:1/inventory")


def _config(**changes: str) -> IngestConfig:
    settings = {
        "source": "kafka",
        "topic": "dbserver1.inventory.customers",
        "bootstrap_servers": "127.0.0.1:1",
        "schema_registry_url": "http://127.0.0.1:1",
        "flavor": "postgres",
        "target_base_path": "/nowhere/customers",
        "target_table": "customers",
        "record_key_fields": ("id",),
        **changes,
    }
    return IngestConfig(**settings)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("config", "database", "slot", "refusal"),
    [
        (_config(flavor="mysql"), PG, "s", "--source kafka, --flavor postgres"),
        (_config(), SourceDatabase("mysql://root@127.0.0.1:1/inventory"), "s", "MySQL/MariaDB: not yet"),
        (_config(), PG, "Bad-Slot", "slot name 'Bad-Slot'"),
    ],
)
def test_what_cannot_be_handed_over_is_refused_first(
    config: IngestConfig, database: SourceDatabase, slot: str, refusal: str
) -> None:
    # spark=None: a refusal after the guard would start a session and fail differently.
    with pytest.raises(ConfigError, match=re.escape(refusal)):
        bootstrap(config, database, "inventory.customers", slot=slot, spark=None)
