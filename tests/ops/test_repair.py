"""``repair``'s refusals and its ranking, without a stack: what is refused is refused before anything is read
or written, with the reason; the position a repair writes at sorts exactly as the Postgres policy sorts events.
(The repair itself, against the real stack under a workload: tests/stack/test_repair.py.)"""

from __future__ import annotations

from dataclasses import replace

import pytest
from click.testing import CliRunner

from hudi_cdc.cli import main
from hudi_cdc.config import IngestConfig
from hudi_cdc.errors import ConfigError
from hudi_cdc.ops import repair as ops
from hudi_cdc.upstream.compare import Difference, VerifyResult
from hudi_cdc.upstream.database import SourceDatabase

CONFIG = IngestConfig(target_base_path="/nowhere/t", target_table="t", record_key_fields=("id",),
                      source="files", source_path="/nowhere/t")  # fmt: skip


def test_a_source_without_a_position_is_refused() -> None:
    sqlserver = replace(CONFIG, flavor="sqlserver")
    pg = SourceDatabase("postgresql://repair@127.0.0.1:55432/inventory", password_env="NO_SUCH_PASSWORD")
    with pytest.raises(ConfigError, match="only Postgres and MariaDB give so far; nothing was written"):
        ops.repair(None, sqlserver, pg, "inventory.t")  # type: ignore[arg-type]  # refused before any Spark


def test_a_source_of_another_flavor_than_the_table_is_refused() -> None:
    mysql = SourceDatabase("mysql://repair@127.0.0.1:53306/inventory", password_env="NO_SUCH_PASSWORD")
    with pytest.raises(ConfigError, match="is a mysql source, but /nowhere/t is written with the postgres merge"):
        ops.repair(None, CONFIG, mysql, "inventory.t")  # type: ignore[arg-type]


def test_a_bound_below_one_is_refused() -> None:
    pg = SourceDatabase("postgresql://repair@127.0.0.1:55432/inventory", password_env="NO_SUCH_PASSWORD")
    with pytest.raises(ConfigError, match="max_repair=0"):
        ops.repair(None, CONFIG, pg, "inventory.t", max_repair=0)  # type: ignore[arg-type]


def test_the_cli_refuses_repair_of_a_partial_comparison() -> None:
    result = CliRunner().invoke(
        main,
        ["verify", "--target-base-path", "/nowhere/t", "--source-url", "postgresql://u@127.0.0.1:1/db",
         "--table", "public.t", "--where", "id < 5", "--repair"],
    )  # fmt: skip
    assert result.exit_code == 2
    assert "--repair and --max-repair take a database source and whole rows" in result.output


def test_positions_sort_as_the_stream_sorts_them() -> None:
    from payloads.postgres import LSN_DIGITS

    position = ops._lsn("16/B374D848")  # noqa: SLF001
    assert position == (0x16 << 32) + 0xB374D848 and ops._lsn_text(position) == "16/B374D848"  # noqa: SLF001
    upsert, delete = ops._order(position, False), ops._order(position - 1, True)  # noqa: SLF001
    stream_at, stream_before = ops._order(position, True), ops._order(position - 8, True)  # noqa: SLF001
    assert len(upsert) == LSN_DIGITS + 1
    # A change before the position loses to both; a change at or after it wins over both.
    assert stream_before < delete < upsert < stream_at < ops._order(position + 8, True)  # noqa: SLF001


def test_binlog_positions_sort_as_the_stream_sorts_them() -> None:
    snapshot = ops._Rank("mysql", 31_799, "mariadb-bin.000024")  # noqa: SLF001
    assert snapshot.text == "mariadb-bin.000024:31799"
    upsert, delete = snapshot.order(streaming=False), snapshot.moved(-1).order(streaming=True)
    stream_at, stream_after = snapshot.order(streaming=True), snapshot.moved(220).order(streaming=True)
    stream_before = snapshot.moved(-31).order(streaming=True)  # the last transaction's commit event
    next_file = ops._Rank("mysql", 4, "mariadb-bin.000025").order(streaming=True)  # noqa: SLF001
    older_file = ops._Rank("mysql", 10**9, "mariadb-bin.000023").order(streaming=True)  # noqa: SLF001
    # A change before the position loses to both; a change at or after it (a later file too) wins over both.
    assert older_file < stream_before < delete < upsert < stream_at < stream_after < next_file


@pytest.mark.parametrize(
    ("file", "pos", "op"),
    [("mariadb-bin.000024", 31_799, "r"), ("mariadb-bin.000024", 31_798, "d"), ("mysql-bin.1234567", 4, "u"),
     ("binlog", 12, "r")],
)  # fmt: skip
def test_binlog_ranks_are_the_mysql_policys_order(spark, file: str, pos: int, op: str) -> None:  # noqa: ANN001
    from pyspark.sql import functions as F

    from payloads.mysql import MySqlPolicy

    rank = ops._Rank("mysql", pos, file)  # noqa: SLF001
    events = (
        spark.range(1)
        .select(rank.source().alias("source"))
        .select("source.file", "source.pos", "source.row", F.lit(op).alias("_source_op"))
    )
    events = events.toDF("_source_file", "_source_pos", "_source_row", "_source_op")
    policy_order = events.select(MySqlPolicy().order_expr()).first()[0]
    assert policy_order == rank.order(streaming=op != "r")


def test_mariadb_values_are_read_as_the_table_holds_them() -> None:
    import datetime as dt
    from decimal import Decimal

    value = ops._mysql_value  # noqa: SLF001
    seen = value(dt.datetime(2026, 1, 1, 12, 0, 0, 11), "timestamp")
    assert seen.tzinfo is dt.UTC and seen.hour == 12  # DATETIME: the wall-clock time, as UTC
    assert value(dt.timedelta(hours=26, seconds=5, microseconds=250_000), "string") == "26:00:05.250000"
    assert value(b"\x00\x07", "binary") == b"\x00\x07" and value("ü", "string") == "ü"
    assert value(Decimal("1.25"), "decimal(12,2)") == Decimal("1.25") and value(1, "boolean") is True
    assert value(None, "int") is None and value(7, "bigint") == 7


def test_keys_are_framed_as_verify_frames_them() -> None:
    assert ops._text(["12", "p1"]) == "2:122:p1"  # noqa: SLF001
    assert ops._text([None, "ü"]) == "~1:ü"  # noqa: SLF001


def test_a_dry_run_says_what_it_would_write() -> None:
    found = VerifyResult(table="inventory.t", source="pg", target="/t", key_fields=("id",))
    found.differences = [Difference({"id": "7"}, "changed", ("name",))]
    result = ops.RepairResult("t", "pg", "/t", found, applied=False, position="0/10")
    result.keys = [ops.RepairedKey({"id": "7"}, "changed: name", "upsert")]
    text = result.describe()
    assert "dry run: nothing written" in text and "id=7: changed: name -> would upsert" in text
    result.applied = True
    assert "id=7: changed: name -> upsert" in result.describe()


PIPELINE = """[source]
source = "kafka"
bootstrap_servers = "127.0.0.1:1"
schema_registry_url = "http://127.0.0.1:2"
tables = "dbserver1.inventory.*"
exclude = "dbserver1.inventory.audit_log"

[defaults]
target_base_path = "/lake/{table}"
target_table = "inventory_{table}"
table_type = "mor"
tombstone_path = "/tombstones/{table}"
"""


def test_a_pipeline_table_is_repaired_with_its_own_settings(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    monkeypatch.delenv("HUDI_CDC__TABLE_TYPE", raising=False)
    path = tmp_path / "inventory.toml"
    path.write_text(PIPELINE)
    config = ops.pipeline_table_config(str(path), "dbserver1.inventory.orders")
    assert (config.target_base_path, config.table_type) == ("/lake/orders", "MERGE_ON_READ")
    assert config.resolved_tombstone_path == "/tombstones/orders"  # not the default beside the table
    with pytest.raises(ConfigError, match="dbserver1.inventory.audit_log is not one of its tables"):
        ops.pipeline_table_config(str(path), "dbserver1.inventory.audit_log")
    # The CLI: --pipeline --table names the table, so a --target-base-path beside it is refused, naming both.
    args = ["verify", "--target-base-path", "/lake/orders", "--source-url", "postgresql://u@127.0.0.1:1/db",
            "--table", "inventory.orders", "--max-repair", "5", "--pipeline", str(path)]  # fmt: skip
    both = CliRunner().invoke(main, args)
    assert both.exit_code == 2 and "--pipeline/--table and --target-base-path" in both.output, both.output
    # --pipeline alone verifies every table; a repair is of one table.
    alone = ["verify", "--pipeline", str(path), "--source-url", "postgresql://u@h:1/db", "--max-repair", "5"]
    refused = CliRunner().invoke(main, alone)
    assert refused.exit_code == 2 and "--max-repair takes one table: add --table" in refused.output, refused.output
    # The old form (--pipeline-topic, with --table the source table) still runs, with a warning naming --table;
    # the pipeline must write the table --target-base-path names.
    old = ["verify", "--target-base-path", "/lake/other", "--source-url", "postgresql://u@127.0.0.1:1/db",
           "--table", "inventory.orders", "--pipeline", str(path), "--pipeline-topic", "dbserver1.inventory.orders"]  # fmt: skip
    legacy = CliRunner().invoke(main, old)
    assert legacy.exit_code == 2, legacy.output
    assert "--pipeline-topic is deprecated and goes in the next release: use --table" in legacy.output
