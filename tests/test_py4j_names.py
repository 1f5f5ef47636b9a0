"""Java names resolved once: the same answers as py4j's, without asking the JVM again."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from hudi_cdc._py4j_names import CachingPackage, CachingView

_LOOKUP = "r\nu\n"  # py4j's reflection command "what is this name": the one the cache saves


@pytest.fixture
def lookups(spark: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:  # noqa: ANN401
    """The names the py4j client asks the JVM about while the test runs."""
    client = spark._jvm._gateway_client
    asked: list[str] = []
    send = client.send_command

    def counting(command: str, *args: Any, **kwargs: Any) -> Any:  # noqa: ANN401
        if command.startswith(_LOOKUP):
            asked.append(command[len(_LOOKUP) :].split("\n", 1)[0])
        return send(command, *args, **kwargs)

    monkeypatch.setattr(client, "send_command", counting)
    yield asked


def test_the_session_resolves_names_through_the_cache(spark: Any) -> None:  # noqa: ANN401
    from pyspark import SparkContext

    assert isinstance(spark._jvm, CachingView)
    assert SparkContext._jvm is spark._jvm is spark.sparkContext._jvm is SparkContext._gateway.jvm


def test_a_class_is_asked_for_once_and_answers_as_before(spark: Any, lookups: list[str]) -> None:  # noqa: ANN401
    first = spark._jvm.java.util.StringJoiner
    asked = list(lookups)
    again = spark._jvm.java.util.StringJoiner
    assert asked[-1] == "java.util.StringJoiner"
    assert lookups == asked, "the second access asked the JVM again"
    assert again is first
    assert again(", ").add("a").add("b").toString() == "a, b"


def test_pyspark_functions_ask_once(spark: Any, lookups: list[str]) -> None:  # noqa: ANN401
    from pyspark.sql import functions as F

    spark.range(3).select(F.col("id") + F.lit(1)).collect()  # "functions" resolved here at the latest
    lookups.clear()
    rows = spark.range(3).select((F.col("id") * F.lit(2)).alias("x")).collect()
    assert [r.x for r in rows] == [0, 2, 4]
    assert "functions" not in lookups


def test_imports_still_work(spark: Any) -> None:  # noqa: ANN401
    from py4j.java_gateway import java_import

    java_import(spark._jvm, "java.util.concurrent.ConcurrentSkipListSet")
    items = spark._jvm.ConcurrentSkipListSet()
    items.add("b")
    items.add("a")
    assert items.first() == "a"


def test_a_name_that_may_become_a_class_is_asked_each_time(spark: Any, lookups: list[str]) -> None:  # noqa: ANN401
    # No class by that name now; an ADD JAR could bring one, so the miss is not kept. A lower-case name is a package.
    for _ in range(2):
        missing = spark._jvm.io.hudicdc.example.NotYetLoaded
        assert isinstance(missing, CachingPackage)
    assert lookups.count("io.hudicdc.example.NotYetLoaded") == 2
    assert lookups.count("io.hudicdc.example") <= 1
