"""The chaos harness's short form on s3a:// (``make chaos-s3a`` runs the long one): ``hudi-cdc ingest`` into a
new table on the stack's S3 server, SIGKILLed with its JVM inside the table's very first commit, then run
again: the table read back equals the source, no key twice, nothing pending, the killed writer's lease taken
over (generation 2). Reuses tests/sink/test_object_storage.py's fixtures: the S3 server, the reading session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from chaos.object_store import run_s3a_chaos
from tests.sink.test_object_storage import ACCESS_KEY, BUCKET, SECRET_KEY, reader, s3  # noqa: F401

pytestmark = [pytest.mark.spark, pytest.mark.hudi]


def test_killed_inside_the_first_commit_on_s3a_the_next_run_finishes(
    reader: Any,  # noqa: ANN401, F811
    s3: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    report = run_s3a_chaos(
        reader, tmp_path, kills=1, table_type="cow", endpoint=s3, bucket=BUCKET,
        env={"AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY},
    )  # fmt: skip
    assert len(report.kills) == 1 and ".commit." in report.kills[0], report  # killed inside a commit
    assert report.equal and report.rows > 0, report
    assert report.doubled == 0 and report.pending_after == [], report
    assert report.lease_generation == 2, report  # the killed writer's lease, taken by the next run
    assert report.ok
    log = (tmp_path / "killed.log").read_text()
    assert SECRET_KEY not in log  # no secret is ever printed
