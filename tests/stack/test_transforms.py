"""Transforms and masks on the real stack: Postgres changes through Debezium and Kafka into a MOR table with a
rename, masks (one on a TOASTed column), a dropped column, computed columns and a row filter; compared with
Postgres by ``verify_transformed`` (equal, then a difference once a row is corrupted)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from hudi_cdc.config import load_config
from hudi_cdc.envelope.shape import hmac_hex
from hudi_cdc.ops.verify import verify_transformed
from hudi_cdc.testing.kafka import end_offsets
from hudi_cdc.testing.postgres import connect, wait_for_stream
from hudi_cdc.upstream.database import SourceDatabase
from payloads.base import ORDER_COLUMN, is_data_column
from tests.stack.conftest import BOOTSTRAP, REGISTRY
from tests.support import PLACEHOLDER, tamper

pytestmark = [pytest.mark.stack, pytest.mark.kafka, pytest.mark.postgres, pytest.mark.hudi]

DATABASE = SourceDatabase("postgresql://debezium@127.0.0.1:55432/inventory", password_env="TRANSFORMS_TEST_PASSWORD")
SALT = "stack-salt-91c2"
BIG = "repeat(md5(id::text), 200)"  # 6.4 kB: TOASTed, so an update that leaves it alone sends a placeholder


def test_masked_transformed_table_verifies_equal_and_a_corrupted_row_differs(
    spark, tmp_path: Path, monkeypatch
) -> None:  # noqa: ANN001
    monkeypatch.setenv("TRANSFORMS_TEST_PASSWORD", "dbz")
    monkeypatch.setenv("TRANSFORMS_SALT", SALT)
    name = f"tr_{uuid.uuid4().hex[:8]}"
    topic, base = f"dbserver1.inventory.{name}", str(tmp_path / name)
    config = load_config(
        env={}, source="kafka", topic=topic, bootstrap_servers=BOOTSTRAP, schema_registry_url=REGISTRY,
        target_base_path=base, target_table=name, table_type="mor", on_bad_event="quarantine",
        column_renames={"email": "contact"}, masks={"contact": "hash", "ssn": "keep_last:4", "big": "hash"},
        mask_salt_env="TRANSFORMS_SALT", columns_drop=["notes"], row_filter="status <> 'test'",
        computed_columns={"status_len": "length(status)", "source_ms": "_source_ts_ms"},
    )  # fmt: skip
    with connect() as conn:
        conn.execute(
            f"create table inventory.{name} (id int primary key, email text, ssn text, status text, notes text, big text)"
        )
        conn.execute(f"alter table inventory.{name} alter column big set storage external")
        conn.execute(
            f"insert into inventory.{name} select id, 'user' || id || '@example.org', '123-45-' || (6780 + id), "  # noqa: S608
            f"case when id = 5 then 'test' else 'live' end, 'note ' || id, {BIG} from generate_series(1, 8) id"
        )
        try:
            wait_for_stream(conn, BOOTSTRAP, [topic], since={})
            _ingest(spark, config)
            since = end_offsets(BOOTSTRAP, [topic])
            conn.execute(f"update inventory.{name} set status = 'gold' where id <= 2")  # big: a TOAST placeholder
            conn.execute(f"update inventory.{name} set status = 'test' where id = 3")  # leaves the filter
            conn.execute(f"update inventory.{name} set status = 'live' where id = 5")  # enters it
            wait_for_stream(conn, BOOTSTRAP, [topic], since=since)
            _ingest(spark, config)

            # 5 entered the filter with its TOASTed value left alone: the table never held the row, so the
            # placeholder has no value to take. Set aside, masked (a Kafka message is encoded again, masked).
            quarantined = spark.read.format("hudi").load(base + "_hudi_cdc_quarantine").collect()
            assert [q["record_key"] for q in quarantined] == ['{"id":5}'] and "TOAST" in quarantined[0]["reason"]
            assert quarantined[0]["raw_format"] == "avro"
            text = str(quarantined[0].asDict()) + bytes(quarantined[0]["raw"]).decode("latin-1")
            assert "user5@example.org" not in text and "123-45-6785" not in text
            assert hmac_hex(SALT.encode(), "user5@example.org") in text
            since = end_offsets(BOOTSTRAP, [topic])
            conn.execute(f"update inventory.{name} set big = big || '!' where id = 5")  # noqa: S608
            # 3 comes back into the filter (a full row: its TOASTed value changes too)
            conn.execute(f"update inventory.{name} set status = 'back', big = big || '?' where id = 3")  # noqa: S608
            wait_for_stream(conn, BOOTSTRAP, [topic], since=since)
            _ingest(spark, config)

            rows = {r["id"]: r for r in spark.read.format("hudi").load(base).collect()}
            assert sorted(rows) == [1, 2, 3, 4, 5, 6, 7, 8] and rows[3]["status"] == "back"
            big_1 = conn.execute(f"select {BIG} from (select 1 as id) x").fetchone()[0]  # noqa: S608
            assert rows[1]["big"] == hmac_hex(SALT.encode(), big_1) and rows[1]["status"] == "gold"
            assert (
                rows[1]["contact"] == hmac_hex(SALT.encode(), "user1@example.org") and rows[1]["ssn"] == "*******6781"
            )
            assert "notes" not in rows[1] and "email" not in rows[1] and rows[1]["source_ms"] > 0
            assert not any(PLACEHOLDER in str(r) or "@example.org" in str(r) for r in rows.values())

            same = verify_transformed(spark, config, DATABASE, f"inventory.{name}")
            assert same.equal, same
            assert {"contact", "ssn", "big", "status_len"} <= set(same.compared_columns)
            assert "source_ms" not in same.compared_columns and any("source_ms" in n for n in same.notes)

            _cli_verify_needs_the_settings_and_repair_refuses(tmp_path, topic, base, name, config)

            stored = _stored(spark, base, 4)
            tamper(spark, base, table_name=name, table_type="mor", keys=("id",),
                   upserts=[{**stored, "ssn": "*******0000", ORDER_COLUMN: stored[ORDER_COLUMN] + "z"}])  # fmt: skip
            corrupted = verify_transformed(spark, config, DATABASE, f"inventory.{name}")
            assert not corrupted.equal and [(d.key, d.columns) for d in corrupted.differences] == [
                ({"id": "4"}, ("ssn",))
            ]
        finally:
            conn.execute(f"drop table inventory.{name}")


def _cli_verify_needs_the_settings_and_repair_refuses(
    tmp_path: Path,
    topic: str,
    base: str,
    name: str,
    config: Any,  # noqa: ANN401
) -> None:
    """``hudi-cdc verify``: a shaped table is compared shaped with its pipeline's settings, refused without
    them (never reported different row by row); ``--repair`` refuses it (it would write unshaped rows)."""
    import json

    from click.testing import CliRunner

    from hudi_cdc.cli import main

    pipeline = tmp_path / "shaped.toml"
    renames = ", ".join(f'{k} = "{v}"' for k, v in config.column_renames.items())
    masks = ", ".join(f'{k} = "{v}"' for k, v in config.masks.items())
    computed = ", ".join(f'{k} = "{v}"' for k, v in config.computed_columns.items())
    pipeline.write_text(
        f"""
[source]
source = "kafka"
bootstrap_servers = "{BOOTSTRAP}"
schema_registry_url = "{REGISTRY}"
tables = ["{topic}"]

[defaults]
target_base_path = "{base}"
target_table = "{name}"
table_type = "mor"
on_bad_event = "quarantine"
column_renames = {{ {renames} }}
masks = {{ {masks} }}
mask_salt_env = "TRANSFORMS_SALT"
columns_drop = ["notes"]
row_filter = "status <> 'test'"
computed_columns = {{ {computed} }}
"""
    )
    source = [
        "--source-url",
        DATABASE.url,
        "--password-env",
        "TRANSFORMS_TEST_PASSWORD",
        "--table",
        f"inventory.{name}",
    ]
    verify = ["verify", "--target-base-path", base, *source]
    refused = CliRunner().invoke(main, verify)
    assert refused.exit_code != 0 and "written with transforms" in refused.output, refused.output
    assert "--pipeline" in refused.output
    by_name = ["verify", *source[:-2], "--pipeline", str(pipeline), "--table", f"inventory.{name}", "--json"]
    shaped = CliRunner().invoke(main, by_name)  # the target, the settings and the source table from the pipeline
    assert shaped.exit_code == 0, shaped.output
    result = json.loads(shaped.output.strip().splitlines()[-1])
    assert result["equal"] and "contact" in result["compared_columns"], result
    assert SALT not in shaped.output and SALT not in refused.output
    repair = CliRunner().invoke(main, [*verify, "--repair", "--no-recheck"])
    assert repair.exit_code != 0 and "repair of a shaped table is not built" in repair.output, repair.output


def _ingest(spark: Any, config: Any) -> None:  # noqa: ANN401
    from hudi_cdc.pipeline import ingest_once

    assert ingest_once(config, spark=spark).committed


def _stored(spark: Any, path: str, key: int) -> dict[str, Any]:  # noqa: ANN401
    frame = spark.read.format("hudi").load(path)
    return frame.select(*[c for c in frame.columns if is_data_column(c)]).where(f"id = {key}").first().asDict()
