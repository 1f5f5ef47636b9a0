"""Small helpers for the driver JVM: finding it, and errors that come back from it through py4j."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

__all__ = ["hadoop_conf", "java_binary", "java_message", "jvm"]


def java_binary() -> str | None:
    """The ``java`` Spark's launcher starts: ``$JAVA_HOME/bin/java``, else the one on ``PATH``; None if neither."""
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    return java if java and Path(java).exists() else None


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
