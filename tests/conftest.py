"""Shared fixtures: one SparkSession for the whole run, and an isolated environment."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    # Settings from the developer's shell must not leak into a test.
    for key in list(os.environ):
        if key.startswith("HUDI_CDC__"):
            monkeypatch.delenv(key)
    # A Spark JVM a test starts keeps its scratch (an 85 MB copy of the jars, shuffle files) in the test's
    # folder, removed when the test passes: one the test kills would leave it in /tmp for good.
    monkeypatch.setenv("SPARK_LOCAL_DIRS", str(tmp_path / "spark-scratch"))
    before = _active_spark_context()
    yield
    # A session this test started in this process itself (not the `spark` fixture's: a chaos harness's
    # verify, a CLI run in-process) keeps its scratch in the folder pytest removes now: the next test of the
    # worker would find it gone (Arrow's hand-over to the JVM is a file there). Stopped with its folder.
    made = _active_spark_context()
    if made is not None and made is not before and made is not _SESSION.get("context"):
        from pyspark.sql import SparkSession

        SparkSession.builder.getOrCreate().stop()


def _active_spark_context() -> object | None:
    pyspark = sys.modules.get("pyspark")
    return pyspark.SparkContext._active_spark_context if pyspark is not None else None  # type: ignore[attr-defined]


_SESSION: dict[str, object] = {}


# Spark's switches for evaluating plans without generated code (whole-stage and per-expression).
INTERPRETED = {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN"}


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    from hudi_cdc.spark import spark_session

    # Asked for inside a test (request.getfixturevalue), the session would otherwise keep its scratch in that
    # test's folder (_isolated_env), which goes when the test passes.
    with pytest.MonkeyPatch.context() as env:
        env.setenv("SPARK_LOCAL_DIRS", str(tmp_path_factory.mktemp("spark")))
        # The session takes make test's HUDI_CDC_JIT=quick like the JVMs the tests start. Its full JIT was
        # faster alone (the payload scenarios: 176 s against 209 s, wall) but cost more CPU (239 against 201
        # CPU-s of the session's JVM, 2026-11-28; five in-session files 460 against 437, 2026-11-30), and make
        # test's three workers share two cores: CPU is what the run waits on. (quick's 48 MB code cache, full
        # before 368c1c2, had made quick look slower still.)
        session = spark_session(
            app_name="hudi-cdc-tests",
            conf={
                "spark.sql.shuffle.partitions": "4",
                "spark.default.parallelism": "4",
                "spark.driver.memory": "2g",
                "spark.scheduler.mode": "FAIR",  # as `hudi-cdc run` starts it; one thread's jobs run as under FIFO
                # Spark evaluates the tests' plans without generating code: a suite of small plans, most run
                # once, spends more CPU compiling than running them (the payload scenarios: 206 -> 183 CPU-s).
                # Spark holds both paths to the same results; the JVMs the tests start (`hudi-cdc run`, the
                # wheel, the tutorial) keep Spark's default, so the product's own path stays tested.
                **INTERPRETED,
            },
        )
    _SESSION["context"] = session.sparkContext
    yield session
    session.stop()


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A Spark standalone cluster (a master, a worker) for the whole run: its URL and its folder.

    Started once for the cluster tests and the Airflow cluster DAG; each finds its
    own executors by the application folders that appear under ``worker/``.
    """
    from hudi_cdc.testing.cluster import standalone_cluster

    work = tmp_path_factory.mktemp("standalone")
    try:
        with standalone_cluster(work) as url:
            yield url, work
    finally:
        shutil.rmtree(work, ignore_errors=True)  # each app's executor folder holds a copy of the jars


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 96 MiB tmpfs for the test, to fill up (root only; skipped otherwise)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=96m", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Anything that asks for the spark fixture is a Spark test, marked so `-m "not spark"` works.
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.spark)
    _needs_stack([item for item in items if "tests/stack/" in item.nodeid or item.get_closest_marker("stack")])
    if os.environ.get("PYTEST_XDIST_WORKER"):
        _longest_first(items)


# .ci/run's CPU profile (.ci/cpu_by_test.py): each pytest process that runs tests writes its pid and the test
# it is running into a file of the CI_CPU_MARKS folder; the sampler gives every process's CPU to the test its
# pytest ancestor runs.
_CPU_MARK: list[Path] = []


def pytest_configure(config: pytest.Config) -> None:
    marks, worker = os.environ.get("CI_CPU_MARKS"), os.environ.get("PYTEST_XDIST_WORKER")
    if marks and (worker or not getattr(config.option, "numprocesses", None)):  # xdist's controller runs none
        _CPU_MARK.append(Path(marks) / (worker or "main"))


def pytest_runtest_logstart(nodeid: str) -> None:
    for mark in _CPU_MARK:
        mark.write_text(f"{os.getpid()}\t{nodeid}")


# Seconds per test file of the last measured run (.ci/durations.py --hints writes it): make test's workers take
# the longest files first, so that no long file starts last and runs on alone (the makespan's tail).
FILE_SECONDS = Path(__file__).with_name("file_seconds.json")


def _longest_first(items: list[pytest.Item]) -> None:
    """Sort ``items`` by the seconds their worker group took last time, longest first (a file's own order
    kept; unknown files after the known ones, in collection order). Every worker sorts alike."""
    import json

    try:
        seconds: dict[str, float] = json.loads(FILE_SECONDS.read_text())
    except (OSError, ValueError):
        return
    groups = {_group(item.nodeid) for item in items}
    weight = {g: sum(v for f, v in seconds.items() if _group(f + "::") == g) for g in groups}
    items.sort(key=lambda item: -weight[_group(item.nodeid)])


# The files that change the stack's sample tables (or start the standalone cluster) and compare whole tables
# with the database: make test's workers run them one after another, on one worker.
SHARED_SAMPLE_TABLES = frozenset(
    {
        "tests/examples/test_airflow.py",
        "tests/stack/test_crash_recovery_kafka.py",
        "tests/stack/test_replication.py",
        "tests/stack/test_replication_mariadb.py",
        "tests/stack/test_standalone_cluster.py",
    }
)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:  # noqa: ANN401 - xdist's types
    """make test's workers (pytest-xdist) take a test file at a time, so that its module fixtures run once, and
    the ``SHARED_SAMPLE_TABLES`` files as one unit. (xdist's own loadgroup reads marks that pytest 9.2's node ids
    no longer carry, and the scheduler sees only node ids, so the files are named here.)"""
    from xdist.scheduler import LoadScopeScheduling

    class FileGroups(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _group(nodeid)

    # xdist's scope scheduler would otherwise re-sort the units by their number of tests, putting a long
    # one-test file (the chaos runners, 214 s) last, to run on alone at the end (2026-11-30, 43-minute run).
    config.option.loadscopereorder = False
    return FileGroups(config, log)


def _group(nodeid: str) -> str:
    """The unit a worker takes: a test file, or all of the ``SHARED_SAMPLE_TABLES`` files."""
    path = nodeid.split("::", 1)[0]
    return "shared_sample_tables" if path in SHARED_SAMPLE_TABLES else path


def _needs_stack(mine: list[pytest.Item]) -> None:
    from tests.stack.conftest import stack_down

    for item in mine:
        item.add_marker(pytest.mark.spark)  # all of them run Spark, in process or through spark-submit
    down = stack_down() if mine else []
    if not down:
        return
    if os.environ.get("CI") == "true":
        raise pytest.UsageError(f"CI=true but the local stack is down ({', '.join(down)}): run `make stack-up` first")
    for item in mine:
        item.add_marker(pytest.mark.skip(reason=f"the local CDC stack is down ({', '.join(down)}): make stack-up"))
