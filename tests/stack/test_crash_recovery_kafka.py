"""Kill ``hudi-cdc ingest --source kafka`` during the table's first commit, then run again: the table equals Postgres.

The real chain: a workload in the stack's Postgres, Debezium, Kafka with
Apicurio; the process group (driver, JVM, Python workers) gets SIGKILL while
Hudi's first instant is pending.
"""

from __future__ import annotations

import random
import sys
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from hudi_cdc.cli import main
from hudi_cdc.testing.kafka import end_offsets
from hudi_cdc.testing.postgres import compare_table, connect, run_workload, wait_for_stream
from tests.stack.conftest import BOOTSTRAP, REGISTRY
from tests.support import kill_when_pending, pending_instants

pytestmark = [pytest.mark.kafka, pytest.mark.postgres, pytest.mark.hudi]

# documents: out-of-line values under REPLICA IDENTITY DEFAULT, so the round looks up stored rows for TOAST values.
TOPIC = "dbserver1.inventory.documents"


# A new table's first commit is a bulk insert: a commit of base files on MOR too.
@pytest.mark.parametrize(("table_type", "action"), [("cow", "commit"), ("mor", "commit")])
def test_killed_during_the_first_kafka_commit_the_next_run_finishes(
    spark, tmp_path: Path, table_type: str, action: str
) -> None:
    base = tmp_path / "documents"
    command = [
        str(Path(sys.executable).parent / "hudi-cdc"), "ingest", "--source", "kafka", "--topic", TOPIC,
        "--bootstrap-servers", BOOTSTRAP, "--schema-registry-url", REGISTRY, "--target-base-path", str(base),
        "--target-table", "documents", "--table-type", table_type,
    ]  # fmt: skip
    with connect() as conn:
        before = end_offsets(BOOTSTRAP, [TOPIC])
        run_workload(conn, random.Random(21), transactions=30, tag=f"kill{table_type}{uuid.uuid4().hex[:6]}")
        wait_for_stream(conn, BOOTSTRAP, [TOPIC], since=before)

        timeline = base / ".hoodie" / "timeline"
        assert kill_when_pending(command, timeline, action)
        # The run after the kill in this process, on the test's session: only the killed run needs its own.
        again = CliRunner().invoke(main, command[1:], catch_exceptions=False)
        assert again.exit_code == 0, again.output
        assert not pending_instants(timeline, action)
        comparison = compare_table(spark, str(base), conn, "documents")
        assert comparison.equal, comparison.describe()
