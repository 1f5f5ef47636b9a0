"""``validate``'s checks of the machine Spark runs on: the Java version, and where Hudi's jars come from.

With a Spark session they ask its JVM; without one, the Java on ``JAVA_HOME``
or ``PATH`` and the jars an ingest would resolve. Nothing is downloaded.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from hudi_cdc.checks.kit import _Context, _fail, _ok, _Outcome, _warn
from hudi_cdc.errors import ConfigError

__all__ = ["MIN_JAVA", "check_jars", "check_java"]


MIN_JAVA = 17


def check_java(ctx: _Context) -> _Outcome:
    if ctx.spark is not None:
        from hudi_cdc._jvm import jvm

        system = jvm(ctx.spark).java.lang.System
        version, where = str(system.getProperty("java.version")), str(system.getProperty("java.home"))
    else:
        from hudi_cdc._jvm import java_binary

        java = java_binary()
        if java is None:
            return _fail(
                "no java: JAVA_HOME is not set and there is no java on PATH", f"install Java {MIN_JAVA} or later"
            )
        try:
            shown = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30).stderr
        except (OSError, subprocess.TimeoutExpired) as exc:
            return _fail(f"{java} -version failed: {exc}", f"install Java {MIN_JAVA} or later")
        found = re.search(r'version "([^"]+)"', shown)
        version, where = (found.group(1) if found else shown.strip()[:80]), java
    major = _java_major(version)
    if major is None or major < MIN_JAVA:
        return _fail(
            f"Java {version} ({where}); Spark 3.5 with Hudi 1.2 here needs {MIN_JAVA}+",
            f"install Java {MIN_JAVA} and point JAVA_HOME at it",
        )
    return _ok(f"Java {version} ({where})")


def _java_major(version: str) -> int | None:
    found = re.match(r"(\d+)(?:\.(\d+))?", version)
    if not found:
        return None
    first = int(found.group(1))
    return int(found.group(2) or 0) if first == 1 else first  # 1.8.0_x is Java 8


def check_jars(ctx: _Context) -> _Outcome:
    if ctx.spark is not None:
        from hudi_cdc._jvm import jvm

        gateway = jvm(ctx.spark)
        try:
            loader = gateway.java.lang.Thread.currentThread().getContextClassLoader()
            gateway.java.lang.Class.forName("org.apache.hudi.DefaultSource", True, loader)
        except Exception:  # py4j's error for ClassNotFoundException
            return _fail(
                "the Spark session has no Hudi on its classpath",
                "start it with hudi_cdc.spark_session(), or give spark-submit `hudi-cdc jars --submit-args`",
            )
        return _ok("the Spark session loads Hudi's Spark datasource")
    from hudi_cdc.jars import PACKAGES, resolve_jars

    try:
        source = resolve_jars()
    except ConfigError as exc:
        return _fail(str(exc))
    if source.kind == "folder":
        return _ok(f"{len(source.jars)} jar(s) from {source.folder}")
    bundle = PACKAGES[0].split(":")
    cached = Path.home() / ".ivy2" / "jars" / f"{bundle[0]}_{bundle[1]}-{bundle[2]}.jar"
    if cached.exists():
        return _ok(f"Maven coordinates, already in Spark's Ivy cache ({cached.parent})")
    return _warn(
        f"Spark downloads {', '.join(PACKAGES)} from Maven Central when the first session starts",
        "on a machine without Maven Central: `hudi-cdc jars --fetch DIR` elsewhere, copy DIR, set HUDI_CDC_JARS_DIR",
    )
