"""Shared fixtures: one SparkSession for the whole run, and an isolated environment."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch) -> None:
    # Settings from the developer's shell must not leak into a test.
    for key in list(os.environ):
        if key.startswith("HUDI_CDC__"):
            monkeypatch.delenv(key)


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    from hudi_cdc.spark import spark_session

    session = spark_session(
        app_name="hudi-cdc-tests",
        conf={
            "spark.sql.shuffle.partitions": "4",
            "spark.default.parallelism": "4",
            "spark.driver.memory": "2g",
        },
    )
    yield session
    session.stop()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Anything that asks for the spark fixture is a Spark test, marked so `-m "not spark"` works.
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.spark)
