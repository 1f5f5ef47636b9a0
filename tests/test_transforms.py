"""Column transforms and masking through ``ingest`` of Debezium Avro files, read back from the Hudi table."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from hudi_cdc.envelope.shape import hmac_hex
from hudi_cdc.testing import envelope_schema, pg_event, write_events
from tests.support import PLACEHOLDER, run_cli

pytestmark = pytest.mark.hudi

SALT = "s3cr3t-salt-5e1d"
COLUMNS = [
    ("id", "long"),
    ("email_address", ["null", "string"]),
    ("ssn", ["null", "string"]),
    ("status", ["null", "string"]),
    ("notes", ["null", "string"]),
    ("bio", ["null", "string"]),
    ("created_at", ["null", "string"]),
]
SCHEMA = envelope_schema("customers", COLUMNS)
# Values that must never reach the table, the quarantine table or a log line in the clear.
SECRETS = ("ann@example.org", "bob@example.org", "eve@example.org", "123-45-6789", "a long private bio", SALT)


def _row(id_: int, status: str, *, email: str = "x@example.org", bio: str = "b", ssn: str = "000-00-0000") -> dict:
    return {
        "id": id_,
        "email_address": email,
        "ssn": ssn,
        "status": status,
        "notes": f"internal {id_}",
        "bio": bio,
        "created_at": "2026-01-05T10:00:00",
    }


def _h(value: str) -> str:
    return hmac_hex(SALT.encode(), value)


# COW takes a bad event to quarantine; MOR is compared with verify (whose replay refuses a bad event).
@pytest.mark.parametrize(("table_type", "bad_event"), [("cow", True), ("mor", False)])
def test_transforms_and_masks_through_three_rounds(
    spark, tmp_path: Path, table_type, bad_event, monkeypatch, caplog
) -> None:  # noqa: ANN001
    monkeypatch.setenv("CUSTOMERS_SALT", SALT)
    caplog.set_level(logging.INFO, logger="hudi_cdc")
    source, base = tmp_path / "events", str(tmp_path / "table")
    write_events(
        source / "0001.avro",
        SCHEMA,
        [
            pg_event(
                "c", lsn=10, after=_row(1, "live", email="ann@example.org", ssn="123-45-6789", bio="a long private bio")
            ),
            pg_event("c", lsn=11, after=_row(2, "live", email="bob@example.org")),
            pg_event("c", lsn=12, after=_row(3, "test")),  # never passes the filter: never in the table
        ]
        + (
            [pg_event("x", lsn=13, after=_row(9, "live", email="eve@example.org", ssn="123-45-6789"))]
            if bad_event
            else []
        ),
    )
    # The CLI's options, with the settings' exact names in a TOML file for the rest.
    config = tmp_path / "ingest.toml"
    config.write_text(
        'column_renames = { email_address = "email" }\n'
        'computed_columns = { month = "substr(created_at, 1, 7)", src_ms = "_source_ts_ms" }\n'
        'mask_salt_env = "CUSTOMERS_SALT"\n'
    )
    args = [
        *("--source", "files", "--source-path", str(source), "--target-base-path", base),
        *("--target-table", "customers", "--table-type", table_type, "--record-key-fields", "id"),
        *("--partition-path-field", "month", "--on-bad-event", "quarantine", "--config", str(config)),
        *("--columns-drop", "notes", "--masks", "email=hash", "--masks", "bio=hash", "--masks", "ssn=keep_last:4"),
        *("--row-filter", "status <> 'test'"),
    ]
    result = run_cli(*args)
    assert result.exit_code == 0, result.output
    rows = _table(spark, base)
    assert sorted(rows) == [1, 2]
    assert rows[1]["email"] == _h("ann@example.org") and rows[1]["bio"] == _h("a long private bio")
    assert rows[1]["ssn"] == "*******6789" and rows[1]["month"] == "2026-01" and rows[1]["src_ms"] == 1_700_000_000_000
    assert "notes" not in rows[1] and "email_address" not in rows[1]

    # Round 2: a TOASTed bio is filled with the stored (masked) value, not hashed itself; 2 leaves the filter.
    write_events(
        source / "0002.avro",
        SCHEMA,
        [
            pg_event("u", lsn=20, after=_row(1, "gold", email="ann@example.org", bio=PLACEHOLDER)),
            pg_event("u", lsn=25, after=_row(2, "test", email="bob@example.org")),
        ],
    )
    assert run_cli(*args).exit_code == 0
    rows = _table(spark, base)
    assert sorted(rows) == [1] and rows[1]["bio"] == _h("a long private bio") and rows[1]["status"] == "gold"

    # Round 3: an older late event of 2 does not bring it back (its tombstone is newer); 3 enters the filter.
    write_events(
        source / "0003.avro",
        SCHEMA,
        [pg_event("u", lsn=22, after=_row(2, "live")), pg_event("u", lsn=30, after=_row(3, "live"))],
    )
    assert run_cli(*args).exit_code == 0
    rows = _table(spark, base)
    assert sorted(rows) == [1, 3] and rows[3]["status"] == "live"

    # Nothing in the clear: not in the quarantine table (its event, key and raw bytes), not in a log line.
    if bad_event:
        quarantined = spark.read.format("hudi").load(base + "_hudi_cdc_quarantine").collect()
        assert len(quarantined) == 1 and _h("eve@example.org") in quarantined[0]["event"]
    else:
        quarantined = []
    stored = " ".join(str(r.asDict()) + bytes(r["raw"]).decode("latin-1") for r in quarantined)
    table_text = str(spark.read.format("hudi").load(base).collect())
    logs = caplog.text + result.output
    for secret in SECRETS:
        assert secret not in stored and secret not in table_text and secret not in logs, secret

    if bad_event:
        return
    # The replay verify applies the same transforms (masks with the same salt) and says equal; with
    # another salt every hashed value differs.
    from hudi_cdc.config import load_config
    from hudi_cdc.ops.verify import verify_replay

    settings = {
        **dict(source_path=str(source), target_base_path=base, target_table="customers", table_type=table_type),
        **dict(record_key_fields="id", partition_path_field="month", columns_drop=["notes"]),
        **dict(masks={"email": "hash", "bio": "hash", "ssn": "keep_last:4"}, row_filter="status <> 'test'"),
    }
    same = verify_replay(spark, load_config(config_file=config, env={}, **settings))
    assert same.equal, same
    assert {"email", "bio", "ssn", "month", "src_ms"} <= set(same.compared_columns)
    monkeypatch.setenv("CUSTOMERS_SALT", "another salt")
    other = verify_replay(spark, load_config(config_file=config, env={}, **settings))
    assert not other.equal and {str(d.key["id"]) for d in other.differences} == {"1", "3"}


def _table(spark, base: str) -> dict[int, dict]:  # noqa: ANN001
    frame = spark.read.format("hudi").load(base)
    return {r["id"]: {k: v for k, v in r.asDict().items() if not k.startswith("_hoodie")} for r in frame.collect()}
