"""tests/conftest.py's isolation: a Spark session a test starts itself goes with the test's folder.

Found when test_chaos_runners ran before test_kafka_formats on one worker: the chaos harness's verify had
started the worker's session itself (no `spark` fixture), so the session's scratch was in the test's folder,
which pytest removes when a test passes; the next test's Arrow hand-over (a file in that scratch) failed. The
two steps run here in a pytest of their own, so that no session of this worker's is active before them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[1]

STEPS = """
def test_a_session_started_inside_a_test(tmp_path):
    from hudi_cdc.spark import spark_session

    assert spark_session(app_name="started-by-a-test").sparkContext._temp_dir.startswith(str(tmp_path))


def test_the_next_test_hands_rows_over_through_arrow():
    import pandas as pd

    from hudi_cdc.spark import spark_session

    assert spark_session().createDataFrame(pd.DataFrame({"id": [1, 2, 3]})).count() == 3
"""


def test_a_session_a_test_started_itself_does_not_outlive_the_tests_folder(tmp_path: Path) -> None:
    (tmp_path / "test_steps.py").write_text(STEPS)
    # A pytest of its own with this suite's conftest, removing a passed test's folder as setup.cfg says;
    # not one of make test's workers (no worker name, no CPU marks).
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "CI_CPU_MARKS"))}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.conftest", "-p", "no:cacheprovider", "-q", "--rootdir",
         str(tmp_path), "-c", os.devnull, "-o", "tmp_path_retention_policy=failed", str(tmp_path / "test_steps.py")],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-4000:]
    assert "2 passed" in done.stdout
