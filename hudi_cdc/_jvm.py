"""Small helpers for the driver JVM: finding it, and errors that come back from it through py4j."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from hudi_cdc.errors import ConfigError

__all__ = [
    "GC_ENV",
    "JIT_ENV",
    "JOL_OPTIONS",
    "gc_options",
    "hadoop_conf",
    "java_binary",
    "java_message",
    "jit_options",
    "jvm",
    "jvm_alive",
    "jvm_conf",
    "jvm_options",
]

# G1 before JDK 23 fails an allocation with OutOfMemoryError when two GCs in a row were held off by
# threads in JNI critical sections (Snappy, LZ4, zlib), however much heap a GC would free (JDK-8192647).
# A MOR round died so while growing a Hudi log block's buffer to 136 MB ("Retried waiting for GCLocker
# too often" in Spark's log). More retries make it wait; JDK 23 fixed the bug and removed the flag.
GC_LOCKER_RETRIES = 100


def java_binary() -> str | None:
    """The ``java`` Spark's launcher starts: ``$JAVA_HOME/bin/java``, else the one on ``PATH``; None if neither."""
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    return java if java and Path(java).exists() else None


def java_feature_version(java: str | None = None) -> int | None:
    """The feature version (17, 21, ...) of ``java`` (default: :func:`java_binary`), from its JDK's ``release``
    file; None if that cannot be read."""
    java = java or java_binary()
    if java is None:
        return None
    release = Path(os.path.realpath(java)).parent.parent / "release"
    try:
        for line in release.read_text().splitlines():
            if line.startswith("JAVA_VERSION="):
                version = line.split("=", 1)[1].strip().strip('"')
                major = version.split(".")[0]
                # Java 8 names itself 1.8.0_x.
                return int(version.split(".")[1]) if major == "1" else int(major)
    except (OSError, ValueError, IndexError):
        return None
    return None


JIT_ENV = "HUDI_CDC_JIT"
"""``quick``: the JVMs compile with the JIT's first tier only (``-XX:TieredStopAtLevel=1``); ``full`` (the
default): Java's own tiered compilation. See :func:`jit_options`."""
# With the first tier alone Java reserves 48 MB of code cache, not the 240 MB of its tiered JIT. A continuous
# runner's Spark and Hudi code filled it in one to two minutes; then compiling stops and, worse, the JVM cannot
# make a method handle's adapter: a task fails with VirtualMachineError ("Out of space in CodeCache"), which
# Spark takes as fatal and ends the driver JVM (the run exits 2, "the Spark driver's JVM is gone"). Reserved
# address space only: the JVM commits what it fills.
QUICK_CODE_CACHE = "240m"
_JIT_MODES = {"full": (), "quick": ("-XX:TieredStopAtLevel=1", f"-XX:ReservedCodeCacheSize={QUICK_CODE_CACHE}")}


def jit_options() -> tuple[str, ...]:
    """The JIT options of ``HUDI_CDC_JIT``.

    A short-lived JVM on few cores spends much of its CPU in the optimizing compiler (C2) on code it
    will not run long enough to gain from: ``quick`` leaves C2 out, for one-shot rounds of small
    batches and test suites. A long or large run wants C2's code: ``full``. ``quick`` keeps the code
    cache of the full JIT (``QUICK_CODE_CACHE``): Java's own for the first tier alone is too small for Spark.
    """
    mode = os.environ.get(JIT_ENV, "full").strip().lower() or "full"
    if mode not in _JIT_MODES:
        raise ConfigError(f"{JIT_ENV}={mode!r}: expected one of {', '.join(_JIT_MODES)}")
    return _JIT_MODES[mode]


# Hudi's object-size estimator (its shaded JOL), the first time a JVM uses it, tries to attach an agent to the
# JVM itself and then starts a second JVM to attach Java's serviceability agent; all fail here (no
# self-attach), cost CPU and print warnings on the JVM's stdout, which is also ours (--json). Its estimates
# need none of them.
JOL_OPTIONS = ("-Djol.skipDynamicAttach=true", "-Djol.skipInstallAttach=true", "-Djol.skipHotspotSAAttach=true")


GC_ENV = "HUDI_CDC_GC"
"""``parallel``: the JVMs collect garbage with the parallel collector (``-XX:+UseParallelGC``); ``default``:
Java's own choice (G1 on two cores or more). See :func:`gc_options`."""
_GC_MODES = {"default": (), "parallel": ("-XX:+UseParallelGC",)}


def gc_options() -> tuple[str, ...]:
    """The collector options of ``HUDI_CDC_GC``.

    On few cores G1's concurrent marking and write barriers cost a busy JVM CPU that its short pauses do
    not pay back in batch work: the 16 payload-scenario tests in one session took 198 CPU-s with the
    parallel collector against 242 with G1 (docs/tuning.md). A long-lived runner with a big heap may prefer
    G1's short pauses: ``default``.
    """
    mode = os.environ.get(GC_ENV, "default").strip().lower() or "default"
    if mode not in _GC_MODES:
        raise ConfigError(f"{GC_ENV}={mode!r}: expected one of {', '.join(_GC_MODES)}")
    return _GC_MODES[mode]


def jvm_options(java: str | None = None) -> str:
    """The options every JVM of a hudi-cdc job runs with, driver and executors: ``GC_LOCKER_RETRIES``
    before Java 23 (which no longer has the option and would refuse to start with it), :data:`JOL_OPTIONS`,
    :func:`gc_options` and :func:`jit_options`. A Java whose version cannot be read is taken to be one Spark
    3.5 supports (8 to 21).
    """
    options: list[str] = []
    if (java_feature_version(java) or 17) < 23:
        options += ["-XX:+UnlockDiagnosticVMOptions", f"-XX:GCLockerRetryAllocationCount={GC_LOCKER_RETRIES}"]
    return " ".join([*options, *JOL_OPTIONS, *gc_options(), *jit_options()])


DRIVER_OPTIONS_KEY = "spark.driver.defaultJavaOptions"
EXECUTOR_OPTIONS_KEY = "spark.executor.defaultJavaOptions"


def jvm_conf() -> dict[str, str]:
    """:func:`jvm_options` for the driver and the executors, as Spark settings (none if there are no options).

    Spark's ``defaultJavaOptions``: a user's ``extraJavaOptions`` (``--driver-java-options``) add to them
    instead of replacing them.
    """
    options = jvm_options()
    return {DRIVER_OPTIONS_KEY: options, EXECUTOR_OPTIONS_KEY: options} if options else {}


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


def jvm_alive(spark: Any) -> bool:
    """Whether ``spark``'s driver JVM still answers (py4j fails at once once its gateway is gone)."""
    try:
        jvm(spark).java.lang.System.nanoTime()
    except Exception:  # noqa: BLE001 - Py4JNetworkError, or a stopped context's assertion
        return False
    return True


def hadoop_conf(spark: Any) -> Any:
    """The Hadoop Configuration of ``spark``'s context."""
    return spark.sparkContext._jsc.hadoopConfiguration()
