"""The chaos suite's short form (``make chaos`` runs the long one): kills and a broker restart, then verify.

A live workload on a table of its own; ``hudi-cdc ingest --continuous`` into a
COW and a MOR table, each SIGKILLed (process group: Python and its JVM) three
times: during its very first commit, at a random moment, then inside a later
commit; then the Kafka broker restarts under both running ingests, which
must ride through it by themselves. At the end both tables must equal Postgres.
Three kills are the fewest that land in each of those places; ``make chaos``
kills twenty times and restarts the registry and Connect too.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from chaos.run import run_chaos

pytestmark = [
    pytest.mark.kafka,
    pytest.mark.postgres,
    pytest.mark.hudi,
    pytest.mark.exclusive,
]  # exclusive: it stops a service the other tests use


def test_kills_and_a_broker_restart_lose_and_double_nothing(tmp_path: Path) -> None:
    report = run_chaos(kills=3, restarts=("kafka",), work=tmp_path, seed=20261123)
    assert report.changes > 500, "the workload must really run while the ingests are killed"
    for table in report.tables:
        summary = f"{table.table_type}: {table}"
        assert table.kills == 3, summary
        assert table.kills_in_commit >= 2 and table.kills_before_first_commit >= 1, summary
        assert table.exits == [], f"the ingest ended by itself (it must ride through restarts): {summary}"
        assert table.recovery_s["kafka"] == table.recovery_s["kafka"], f"no commit after the broker restart: {summary}"
        assert table.equal and table.rows > 0, "\n".join(table.differences)
    assert report.ok
