""".ci/cpu_by_test.py, the CI run's CPU profile: what a test started is named by its program, and the report
gives each program's CPU and JVM starts."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / ".ci" / "cpu_by_test.py"
_spec = importlib.util.spec_from_file_location("cpu_by_test", SCRIPT)
assert _spec is not None and _spec.loader is not None
profile = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(profile)

PYTEST = 100
# pytest 100 -> hudi-cdc 200 -> spark-submit's JVM 201; pytest -> python -m hudi_cdc 300 -> 301; pytest -> python -c 400 -> java 401
PARENTS = {200: PYTEST, 201: 200, 300: PYTEST, 301: 300, 400: PYTEST, 401: 400}
CMDLINES = {
    200: "/w/.venv/bin/python /w/.venv/bin/hudi-cdc run --pipeline p.toml --continuous",
    201: "/usr/bin/java -cp x org.apache.spark.deploy.SparkSubmit pyspark-shell",
    300: "/w/.venv/bin/python -m hudi_cdc --verbose --s3-endpoint http://127.0.0.1:1 verify --table a.b",
    301: "/usr/bin/java -cp x org.apache.spark.deploy.SparkSubmit pyspark-shell",
    400: "/w/.venv/bin/python -c print(1) # like hudi-cdc ingest does bucket http://127.0.0.1:1",
    401: "/usr/bin/java -jar cluster.jar",
}


def _named(pid: int) -> str:
    chain, test = profile._line(pid, PARENTS, {PYTEST})
    assert test == PYTEST
    return profile._program(chain, CMDLINES)


def test_a_started_process_is_named_by_its_nearest_program() -> None:
    assert _named(201) == "hudi-cdc run"
    assert _named(200) == "hudi-cdc run"
    assert _named(301) == "hudi-cdc verify"
    assert _named(401) == "python"  # a script naming hudi-cdc is not it


def test_a_process_no_test_started_has_no_line_to_one() -> None:
    assert profile._line(PYTEST, PARENTS, {PYTEST}) == ([], PYTEST)  # the pytest process itself
    assert profile._line(7, {7: 1}, {PYTEST}) == ([7], None)


def test_the_report_sums_programs_and_their_jvm_starts(tmp_path: Path) -> None:
    data = {
        "wall_s": 10,
        "cpu": [
            ["tests/a.py", "started JVMs", 7.0, "hudi-cdc run"],
            ["tests/b.py", "started JVMs", 5.0, "hudi-cdc run"],
            ["tests/b.py", "session JVM", 4.0, ""],
            ["-", "stack: Kafka", 2.0, ""],
        ],
        "jvms_started": [["tests/a.py", "hudi-cdc run", 2], ["tests/b.py", "hudi-cdc run", 1]],
    }
    path = tmp_path / "cpu.json"
    path.write_text(json.dumps(data))
    report = profile.report(path)
    assert "     12     3  hudi-cdc run" in report
    assert "18 CPU-s in 10 s" in report and "  9 =      4      5" in report
