"""``hudi-cdc verify --source-path``: a table fed from change files, compared with what they replay to.

Real files, real ingest rounds, real Hudi tables; then the table is corrupted
straight through Hudi and verify must name every fault and nothing else.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from hudi_cdc.cli import main
from hudi_cdc.config import IngestConfig
from hudi_cdc.ops.verify import verify_replay
from hudi_cdc.testing import envelope_schema, write_events
from payloads.base import ORDER_COLUMN, is_data_column
from tests.support import CUSTOMERS, PLACEHOLDER, ingest_args, random_history, run_cli, tamper

pytestmark = pytest.mark.hudi

SCHEMA = envelope_schema("customers", CUSTOMERS)


def _config(source: Path, base: str) -> IngestConfig:
    return IngestConfig(target_base_path=base, target_table="t", source_path=str(source), record_key_fields=("id",))


def _ingested(tmp_path: Path, table_type: str) -> tuple[Path, str]:
    """Three files of a shuffled stream (each file out of LSN order); the first two ingested, the third not."""
    source, base = tmp_path / "events", str(tmp_path / "table")
    events, _ = random_history(seed=7, keys=60, lsn_start=1000)
    third = len(events) // 3
    rng = random.Random(3)
    for number, part in enumerate((events[:third], events[third : 2 * third], events[2 * third :])):
        part = list(part)
        rng.shuffle(part)
        write_events(source / f"customers+{number:04d}.avro", SCHEMA, part)
    args = ingest_args(str(source), base, table_type=table_type, extra=["--source-limit", "1"])  # one file a round
    for _ in range(2):
        assert run_cli(*args).exit_code == 0
    return source, base


def _corrupt(spark: Any, base: str, table_type: str) -> dict[int, tuple]:  # noqa: ANN401
    frame = spark.read.format("hudi").load(base)
    data = [c for c in frame.columns if is_data_column(c)]
    rows = {r["id"]: r.asDict() for r in frame.select(*data).collect()}
    changed, toasted, missing, duplicated = sorted(rows)[:4]
    top = "9" * 40  # above every stored _source_order: these upserts win
    upserts = [
        {**rows[changed], "name": "tampered", ORDER_COLUMN: top},
        {**rows[toasted], "bio": PLACEHOLDER, ORDER_COLUMN: top},
        {**rows[changed], "id": 999_999, ORDER_COLUMN: top},
    ]
    table: dict[str, Any] = {"table_name": "t_" + table_type, "table_type": table_type, "keys": ("id",)}
    # Deleted first: a COW table's own merge would fill the placeholder from the stored row (HudiTable.fills_placeholders).
    tamper(spark, base, **table, deletes=[rows[toasted]])
    tamper(spark, base, **table, upserts=upserts, deletes=[rows[missing]], duplicates=[rows[duplicated]])
    # The tampered rows also carry another _source_order than the replay's winner.
    return {
        changed: ("changed", ("name", ORDER_COLUMN), None),
        toasted: ("changed", ("bio", ORDER_COLUMN), "TOAST placeholder in bio"),
        999_999: ("extra", (), None),
        missing: ("missing", (), None),
        duplicated: ("duplicate", (), "2 rows in Hudi"),
    }


@pytest.mark.parametrize("table_type", ["cow", "mor"])
def test_replay_equal_then_every_corruption_named(spark, tmp_path: Path, table_type: str) -> None:  # noqa: ANN001
    """The Python call on both table types; on COW also ``hudi-cdc verify --source-path``, on the same table
    (its own table cost three more rounds and two tampering commits for the same states)."""
    source, base = _ingested(tmp_path, table_type)
    result = verify_replay(spark, _config(source, base))
    assert result.equal, result.describe()
    assert result.source_rows == result.target_rows > 0
    assert {"id", "name", "bio", ORDER_COLUMN, "_source_lsn"} <= set(result.compared_columns)
    assert result.notes == ["1 file(s) after the table's checkpoint, not ingested yet, were not replayed"]
    args = ["verify", "--target-base-path", base, "--source-path", str(source)]
    if table_type == "cow":
        ok = CliRunner().invoke(main, [*args, "--json"], catch_exceptions=False)
        assert ok.exit_code == 0, ok.output
        assert json.loads(ok.output.strip().splitlines()[-1])["equal"] is True
        assert run_cli(*ingest_args(str(source), base)).exit_code == 0  # the third file: still equal, no note
        ok = CliRunner().invoke(main, args, catch_exceptions=False)
        assert ok.exit_code == 0 and "EQUAL" in ok.output and "note" not in ok.output

    expected = _corrupt(spark, base, table_type)
    for fetch_limit in (50_000, 2):  # narrowing finds the same
        found = verify_replay(spark, _config(source, base), fetch_limit=fetch_limit)
        assert not found.equal
        assert {int(d.key["id"]): (d.kind, d.columns, d.note) for d in found.differences} == expected, found.describe()
    partial = verify_replay(spark, _config(source, base), columns=["bio"], where="id <> 999999")
    assert set(partial.compared_columns) == {"id", "bio"}
    assert {d.kind for d in partial.differences} == {"changed", "missing", "duplicate"}
    if table_type == "cow":
        different = CliRunner().invoke(main, args, catch_exceptions=False)
        assert different.exit_code == 1 and "999999: extra" in different.output


def test_cli_refuses_both_sources(spark, tmp_path: Path) -> None:  # noqa: ANN001
    args = ["verify", "--target-base-path", str(tmp_path / "t"), "--source-path", str(tmp_path / "events")]
    both = CliRunner().invoke(main, [*args, "--source-url", "postgresql://x@127.0.0.1:1/db", "--table", "a.b"])
    assert both.exit_code == 2 and "not both" in both.output
