"""Consistent cuts on the real stack: multi-table transactions, ``hudi-cdc run --continuous`` killed mid-cut.

A Debezium Postgres connector of the test's own, with
``provide.transaction.metadata=true``, publishes four tables that a workload
changes only in multi-table transactions (money moved between two tables; an
order and its lines). The runner takes a cut every few seconds and is killed
(SIGKILL to its process group) twice just after it planned a cut, while the
cut's bounded rounds are under way. Every cut it recorded is then read back
with ``read_consistent``: the money total and every order's lines must hold at
each one, and a cut after the workload's last transaction must show Postgres's
final balances and order and line counts.
The same workload on the stack's MariaDB connector (GTIDs for ids) is cut
without kills.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from hudi_cdc import read_consistent
from hudi_cdc.cli import main
from hudi_cdc.service.cuts import CutStore
from hudi_cdc.testing.faults import kill_group
from hudi_cdc.testing.postgres import connect
from hudi_cdc.testing.transfers import TransferWorkload, broken_invariants
from tests.sink.test_object_storage import ACCESS_KEY, BUCKET, SECRET_KEY, s3  # noqa: F401 - the fixture
from tests.stack.conftest import BOOTSTRAP, REGISTRY, wait_until
from tests.stack.connectors import postgres_connector
from tests.support import start_runner

pytestmark = [pytest.mark.kafka, pytest.mark.postgres, pytest.mark.hudi]

RUN = f"cut_{uuid.uuid4().hex[:6]}"
PREFIX = f"cuts{RUN[4:]}"


def _pipeline(
    tmp_path: Path,
    topics: str = f"{PREFIX}.inventory.{RUN}_*",
    flavor: str = "postgres",
    run: str = RUN,
    acct_b: str = "",
) -> Path:
    """The pipeline; ``acct_b``: more settings of the acct_b table (its storage)."""
    path = tmp_path / "cuts.toml"
    path.write_text(
        f"""
[source]
source = "kafka"
bootstrap_servers = "{BOOTSTRAP}"
schema_registry_url = "{REGISTRY}"
tables = "{topics}"
flavor = "{flavor}"

[defaults]
target_base_path = "{tmp_path}/lake/{{table}}"
target_table = "{{table}}"
table_type = "mor"
min_sync_interval_seconds = 1

[tables."inventory.{run}_acct_b"]
table_type = "cow"
{acct_b}

[run]
max_concurrent_tables = 2
consistent_cut_interval_seconds = 4
# Every recorded cut is read at the end, with Hudi's default cleaner: the runner pins their commits
# (docs/consistent-cuts.md#retention); before, the defaults cleaned the oldest cut's files on a slow run.
cut_retention = 1000
"""
    )
    return path


def _mid_cut(state: Path) -> bool:
    """Whether the runner's status says a cut is planned and some of its bounded rounds have not committed."""
    try:
        underway = json.loads((state / "status.json").read_text()).get("cut_underway")
    except (OSError, ValueError):
        return False
    return bool(underway and underway["transaction"] and underway["pending"])


def _cuts(state: Path) -> list[dict]:
    return CutStore.load(str(state)).cuts


def test_every_cut_keeps_the_invariants_of_multi_table_transactions_under_kills(spark, tmp_path: Path) -> None:  # noqa: ANN001
    workload = TransferWorkload(RUN)
    with connect() as conn:
        workload.create(conn)
    try:
        _run_and_check(spark, tmp_path, workload)
    finally:
        with connect() as conn:
            workload.drop(conn)


def _run_and_check(spark, tmp_path: Path, workload: TransferWorkload) -> None:  # noqa: ANN001
    path, log, state = _pipeline(tmp_path), tmp_path / "runner.log", tmp_path / "cuts.state"
    table_list = ",".join(f"inventory.{t}" for t in workload.tables)
    with postgres_connector(
        f"cuts-{RUN}", slot=f"slot_{RUN}", topic_prefix=PREFIX, table=table_list, **{"provide.transaction.metadata": "true"}
    ), connect() as conn:  # fmt: skip
        workload.start(conn)
        try:
            for kill in range(2):  # killed just after planning a cut: its bounded rounds are under way
                runner = start_runner(path, log)
                try:
                    wait_until("a cut recorded", lambda k=kill: len(_cuts(state)) > k, timeout_s=240)
                    wait_until("a cut's bounded rounds under way", lambda: _mid_cut(state), timeout_s=240)
                finally:
                    kill_group(runner)
            runner = start_runner(path, log)
            try:
                before = len(_cuts(state))
                wait_until("two more cuts", lambda: len(_cuts(state)) >= before + 2, timeout_s=240)
            finally:
                workload.stop()
            with connect() as check:
                totals = _source_totals(check, workload)
            # The newest cut reaches the workload's last transaction: the source's final state.
            deadline = time.monotonic() + 240
            while _lake_totals(read_consistent(spark, path), RUN) != totals:
                assert time.monotonic() < deadline, "no cut reached the workload's last transaction"
                time.sleep(3)
        finally:
            workload.stop()
            kill_group(runner)

    cuts = _cuts(state)
    names = {f"inventory.{t}" for t in workload.tables}
    whole = [c for c in cuts if set(c["tables"]) == names]
    assert workload.committed > 50 and len(whole) >= 4, (workload.committed, len(cuts), len(whole))
    assert [c["id"] for c in cuts] == list(range(1, len(cuts) + 1))
    for cut in cuts:
        # Only a table without a commit yet is left out (none is paused or failed here); the pairs the cut holds
        # whole are judged.
        assert set(cut["tables"]) | set(cut["left_out"]) == names, cut
        assert set(cut["left_out"].values()) <= {"new: no commit yet"}, cut
        tables = read_consistent(spark, path, at=cut["transaction"])
        assert broken_invariants(tables, RUN) == [], (cut["id"], cut["transaction"])
    newest = read_consistent(spark, path)
    moved = read_consistent(spark, path, at=whole[0]["transaction"])
    assert _lake_totals(moved, RUN) != _lake_totals(newest, RUN)  # the cuts saw the workload move

    status = CliRunner().invoke(main, ["status", "--pipeline", str(path), "--json"], catch_exceptions=False)
    assert status.exit_code == 0, status.output
    shown = json.loads(status.output.strip().splitlines()[-1])["cut"]
    assert shown["id"] == cuts[-1]["id"] and shown["behind"] == dict.fromkeys(names, 0)


def _source_totals(conn, workload: TransferWorkload) -> tuple[int, int, int]:  # noqa: ANN001
    a, b, orders, lines = workload.tables
    with conn.cursor() as cur:
        cur.execute(
            f"select (select sum(balance) from inventory.{a}), (select count(*) from inventory.{orders}), "  # noqa: S608
            f"(select count(*) from inventory.{lines})"
        )
        row = cur.fetchone()
        cur.execute(f"select sum(abs(balance - 1000)) from inventory.{b}")  # noqa: S608
        moved = cur.fetchone()[0]
    return int(row[0]), int(row[1]) * 1000 + int(row[2]), int(moved)


def _lake_totals(tables: dict, tag: str) -> tuple[int, int, int]:
    a, b = tables[f"inventory.{tag}_acct_a"], tables[f"inventory.{tag}_acct_b"]
    orders, lines = tables[f"inventory.{tag}_orders"], tables[f"inventory.{tag}_lines"]
    total_a = sum(int(r["balance"]) for r in a.select("balance").collect())
    moved = sum(abs(int(r["balance"]) - 1000) for r in b.select("balance").collect())
    return total_a, orders.count() * 1000 + lines.count(), moved


def test_mariadb_cuts_keep_the_invariants_too(spark, tmp_path: Path, s3: str) -> None:  # noqa: ANN001, F811
    """The stack's MariaDB connector (GTIDs as transaction ids, the same in END and change events). One of its
    tables lives on s3a (the stack's S3 server): the cutter reads its head, pins and records its commits there as
    for the others, and read_consistent reads it back with the endpoint from the pipeline file."""
    from hudi_cdc.testing import mariadb

    tag = f"{RUN}m"
    workload = TransferWorkload(tag)
    with mariadb.connect() as conn:
        workload.create(conn)
    s3a = f"s3a://{BUCKET}/cuts-{tag}/acct_b"
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()  # this session's JVM has no credential of its own
    hadoop.set(f"fs.s3a.bucket.{BUCKET}.access.key", ACCESS_KEY)
    hadoop.set(f"fs.s3a.bucket.{BUCKET}.secret.key", SECRET_KEY)
    try:
        # Its acct_b section names its own table: the Postgres run's name matched nothing (now refused).
        path = _pipeline(
            tmp_path, f"mariadb1.inventory.{tag}_*", "mysql", tag, f'target_base_path = "{s3a}"\ns3_endpoint = "{s3}"'
        )
        state, log = tmp_path / "cuts.state", tmp_path / "runner.log"
        with mariadb.connect() as conn:
            workload.start(conn)
            runner = start_runner(path, log, env={"AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY})
            try:
                wait_until("three cuts", lambda: len(_cuts(state)) >= 3, timeout_s=300)
                workload.stop()
                with mariadb.connect() as check:
                    totals = _source_totals(check, workload)
                deadline = time.monotonic() + 240
                while _lake_totals(read_consistent(spark, path), tag) != totals:
                    assert time.monotonic() < deadline, "no cut reached the workload's last transaction"
                    time.sleep(3)
            finally:
                workload.stop()
                kill_group(runner)
        cuts = _cuts(state)
        assert workload.committed > 50 and any(c["left_out"] == {} for c in cuts), cuts[-1]
        assert {c["tables"][f"inventory.{tag}_acct_b"]["path"] for c in cuts if not c["left_out"]} == {s3a}
        for cut in cuts:
            tables = read_consistent(spark, path, at=cut["transaction"])
            assert broken_invariants(tables, tag) == [], (cut["id"], cut["transaction"])
    finally:
        with mariadb.connect() as conn:
            workload.drop(conn)
