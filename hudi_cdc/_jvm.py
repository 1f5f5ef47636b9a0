"""Small helpers for errors that come back from the JVM through py4j."""

from __future__ import annotations

from typing import Any

__all__ = ["hadoop_conf", "java_message", "jvm"]


def java_message(exc: BaseException) -> str:
    """``Class: message`` of a py4j Java exception, else the first line of ``exc``."""
    java = getattr(exc, "java_exception", None)
    if java is not None:
        try:
            cause = java
            # The useful message is usually on the innermost cause.
            while cause.getCause() is not None and cause.getCause() != cause:
                cause = cause.getCause()
            return f"{cause.getClass().getName()}: {cause.getMessage()}"
        except Exception:  # the JVM side may be gone
            pass
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def jvm(spark: Any) -> Any:
    """The py4j view of the driver JVM of ``spark`` (a SparkSession)."""
    gateway = spark.sparkContext._jvm
    assert gateway is not None, "the SparkContext has no JVM: was it stopped?"
    return gateway


def hadoop_conf(spark: Any) -> Any:
    """The Hadoop Configuration of ``spark``'s context."""
    return spark.sparkContext._jsc.hadoopConfiguration()
