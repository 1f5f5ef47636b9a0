"""Java names resolved once per process: py4j views that keep what the JVM answered.

py4j asks the JVM what a name is on every attribute access. PySpark's ``F.col`` looks up ``functions`` on
each call, and the JVM first tries a class named just ``functions``: that miss searches every jar on the
driver's classpath (about 300) before the view's imports find it. ``org.apache.hadoop.fs.Path`` is four
misses and a hit. Those lookups were 14% of a test worker JVM's CPU samples (JFR, 2026-11-29). What a name
is cannot change while the JVM lives, with one exception never kept: a name that is not a class yet and
starts upper-case, which a later ``ADD JAR`` may make one.
"""

from __future__ import annotations

import os
from typing import Any

from py4j.java_gateway import JavaClass, JavaPackage, JVMView

__all__ = ["TEST_HOOK", "cache_names"]

TEST_HOOK = "HUDI_CDC_TEST_PY4J_NAMES"
"""``off``: every name resolved again, as py4j does (bench/py4j_names.py's before); not a setting."""


def cache_names(spark: Any) -> None:  # noqa: ANN401 - a SparkSession
    """Give ``spark``'s process a py4j view that resolves each class or package name once (idempotent)."""
    if os.environ.get(TEST_HOOK, "").lower() == "off":
        return
    from pyspark import SparkContext

    gateway = SparkContext._gateway  # noqa: SLF001 - the one py4j gateway of this process
    if gateway is None or isinstance(gateway.jvm, CachingView):
        return
    view = CachingView(gateway.jvm)
    gateway.jvm = view
    SparkContext._jvm = view  # noqa: SLF001 - what PySpark's functions read
    spark.sparkContext._jvm = view  # noqa: SLF001
    spark._jvm = view  # noqa: SLF001


def _cached(names: dict[str, Any], key: str, lookup: Any) -> Any:  # noqa: ANN401 - py4j's objects
    """``names[key]``, else what ``lookup()`` resolves, kept when that answer cannot change."""
    found = names.get(key)
    if found is not None:
        return found
    found = lookup()
    if isinstance(found, JavaPackage):  # py4j's own: its sub-names resolve through this cache too
        found = CachingPackage(found._fqn, found._gateway_client, found._jvm_id, names)  # noqa: SLF001
        if key.rsplit(".", 1)[-1][:1].islower():  # a package; a capitalised miss may become a class
            names[key] = found
    elif isinstance(found, JavaClass):
        names[key] = found
    return found


class CachingPackage(JavaPackage):
    """A py4j package whose sub-names are resolved once (shared with its view)."""

    def __init__(self, fqn: str, client: Any, jvm_id: str, names: dict[str, Any]) -> None:  # noqa: ANN401
        self._names = names
        super().__init__(fqn, client, jvm_id)

    def __getattr__(self, name: str) -> Any:  # noqa: ANN401
        if name.startswith("_"):  # py4j's and Python's own members: never cached
            return JavaPackage.__getattr__(self, name)
        return _cached(self._names, f"{self._fqn}.{name}", lambda: JavaPackage.__getattr__(self, name))


class CachingView(JVMView):
    """A py4j view (the same JVM-side view: its id and imports) whose names are resolved once."""

    def __init__(self, view: JVMView) -> None:
        self._names: dict[str, Any] = {}
        super().__init__(view._gateway_client, view._jvm_name, id=view._id)  # noqa: SLF001
        if hasattr(view, "_jvm_object"):
            self._jvm_object = view._jvm_object  # noqa: SLF001 - keeps a Java-side view alive

    def __getattr__(self, name: str) -> Any:  # noqa: ANN401
        if name.startswith("_"):
            return JVMView.__getattr__(self, name)
        return _cached(self._names, name, lambda: JVMView.__getattr__(self, name))
