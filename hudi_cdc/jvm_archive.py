"""A class-data-sharing archive of the driver JVM: a one-shot run starts faster.

``hudi-cdc jvm-archive`` runs a training round (generated Debezium files into a
COW and a MOR table, two rounds each, or one round of the user's own ``ingest``
command) in a JVM that dumps the classes it loaded
(``-XX:ArchiveClassesAtExit``). Later JVMs map that archive instead of reading,
verifying and linking the classes again: a one-shot round of 1M Kafka events
took 2.4-3.1 s less on 2 cores, since class loading and verification are a
large part of a cold JVM's first job.

On Java 25 and later (the ``java`` of ``JAVA_HOME``) the same command builds
the JVM's AOT cache instead (``-XX:AOTCacheOutput``, JEP 483/514/515: classes
loaded and linked ahead of time, and method profiles), which later JVMs map
with ``-XX:AOTCache``. Spark 3.5 as released does not start on Java 24+ (its
Hadoop 3.3.4 client calls ``Subject.getSubject``, which throws there): this is
for a Spark whose Hadoop client runs there. A ``SPARK_HOME`` with Hadoop 3.4.3's
client jars ran rounds and saved as much as Java 17's archive (11.5 s either way),
but a table two of its rounds wrote then failed a later Java 17 commit (the one
that compacted the metadata table): Java 17 stays the supported JVM.

The archive only fits the Java, Spark, jars and hudi-cdc it was built with, so
its name is a hash of them; a JVM that finds it does not fit ignores it. Java 17
crashes on a truncated archive, so one is used only when its size is the one
recorded once the dump completed, and it is renamed into place only then.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from hudi_cdc.errors import ConfigError

if TYPE_CHECKING:
    from hudi_cdc.jars import JarSource

__all__ = ["ARCHIVE_ENV", "CACHE_ENV", "archive_for", "build", "java_options", "remove"]

CACHE_ENV = "HUDI_CDC_CACHE_DIR"
ARCHIVE_ENV = "HUDI_CDC_JVM_ARCHIVE"
"""``off``: never use an archive, even one that was built."""

# A JVM that cannot use (or dump) the archive says so on stdout, which is also --json's: silenced.
_SILENT = ("-Xlog:cds=off", "-Xlog:cds+dynamic=off")
# Java 25 says it under tag sets that start with aot (aot+codecache+stubs warns on stdout: a cache trained
# with another JIT setting) or cds: all of them.
_SILENT_AOT = ("-Xlog:aot*=off", "-Xlog:cds*=off")
AOT_SINCE = 25
"""The first Java whose AOT cache is built in one training run (``-XX:AOTCacheOutput``, JEP 514)."""


def _cache_dir() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "hudi-cdc") / "jvm"


def _java() -> str:
    from hudi_cdc._jvm import java_binary

    java = java_binary()
    if java is None:
        raise ConfigError("no java found (JAVA_HOME or PATH): Spark needs Java 17")
    return os.path.realpath(java)


def _aot(java: str) -> bool:
    """Whether ``java`` builds an AOT cache (Java 25+) rather than a dynamic AppCDS archive."""
    from hudi_cdc._jvm import java_feature_version

    return (java_feature_version(java) or 0) >= AOT_SINCE


def _spark_jars() -> list[Path]:
    """The jars of the Spark the JVM runs: ``SPARK_HOME``'s if set (as pyspark's launcher picks), else pyspark's."""
    import pyspark

    home = os.environ.get("SPARK_HOME")
    folder = Path(home) / "jars" if home else Path(pyspark.__file__).parent / "jars"
    return sorted(folder.glob("*.jar"))


def _fingerprint(jars: Sequence[str], placement: Mapping[str, str]) -> str:
    """What the archive depends on: the JVM and its collector, Spark's own jars and ours (path, size, mtime),
    where a local session puts ours (``placement``: an archive maps only the JVM's own classpath), hudi-cdc."""
    import pyspark

    from hudi_cdc._jvm import gc_options
    from hudi_cdc._version import __version__

    java = Path(_java())
    release = java.parent.parent / "release"
    spark_jars = _spark_jars()
    files = [*spark_jars, *(Path(j) for j in jars if Path(j).exists())]
    facts = {
        "java": str(java),
        "release": release.read_text() if release.exists() else "",
        "gc": list(gc_options()),  # an archive another collector dumped is not mapped
        "pyspark": pyspark.__version__,
        "hudi_cdc": __version__,
        "jars": [list(jars)] + [[str(f), f.stat().st_size, f.stat().st_mtime_ns] for f in files],
        "placement": dict(placement),
    }
    return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()[:16]


def _paths(source: JarSource) -> tuple[Path, Path]:
    name = f"driver-{_fingerprint([*source.jars, *source.packages, *source.s3a], source.spark_conf(local=True))}"
    directory = _cache_dir()
    return directory / f"{name}.{'aot' if _aot(_java()) else 'jsa'}", directory / f"{name}.json"


def archive_for(source: JarSource) -> Path | None:
    """The built archive that fits this Java, Spark and ``source``; None if none (or ``HUDI_CDC_JVM_ARCHIVE=off``)."""
    if os.environ.get(ARCHIVE_ENV, "").lower() == "off":
        return None
    try:
        archive, manifest = _paths(source)
        recorded = json.loads(manifest.read_text())
        if archive.stat().st_size != recorded["size"]:
            return None  # changed since the dump completed: a torn copy would crash the JVM
    except (OSError, ValueError, KeyError, ConfigError):
        return None
    return archive


def java_options(archive: Path) -> str:
    """The driver JVM options that map ``archive`` (an AOT cache if its name ends in ``.aot``)."""
    if archive.suffix == ".aot":  # a cache that does not fit is left unused (-XX:AOTMode=auto)
        return " ".join([f"-XX:AOTCache={archive}", *_SILENT_AOT])
    return " ".join([f"-XX:SharedArchiveFile={archive}", "-Xshare:auto", *_SILENT])


def _dump_options(archive: Path, dumped: Path) -> str:
    if archive.suffix == ".aot":  # the JVM records at exit, then a child JVM writes the cache
        return " ".join([f"-XX:AOTCacheOutput={dumped}", *_SILENT_AOT])
    return " ".join([f"-XX:ArchiveClassesAtExit={dumped}", *_SILENT])


def build(source: JarSource, train: Sequence[str] = (), *, launcher: Path, driver_memory: str = "2g") -> Path:
    """Run the training rounds in a JVM that dumps its classes, and put the archive in place.

    ``train``: a hudi-cdc command line to run instead (``ingest --source kafka ...``): one real
    round of the user's own table, so the archive holds what that table's rounds load.
    ``launcher``: the spark-submit script (``hudi_cdc.launcher.SCRIPT``), passed in because the
    launcher is a shell over the CLI, layers above this module.
    """
    archive, manifest = _paths(source)
    archive.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="hudi-cdc-jvm-archive-") as work:
        dumped = Path(work) / f"driver{archive.suffix}"
        spark_submit = Path(sys.executable).parent / "spark-submit"
        command = [
            str(spark_submit) if spark_submit.exists() else "spark-submit",
            "--master", "local[2]", "--driver-memory", driver_memory,
            "--conf", "spark.ui.enabled=false",
            "--driver-java-options", _dump_options(archive, dumped),
            *source.submit_args(local=True),  # the classpath of a local session (its jars on the driver's own)
            *([str(launcher), *train] if train else [str(launcher.parent / "jvm_training.py"), work]),
        ]  # fmt: skip
        env = {**os.environ, "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON") or sys.executable}
        done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
        if done.returncode != 0 or not dumped.exists():
            raise _training_failed("hudi-cdc " + " ".join(train[:1]) if train else "the training run", done)
        # Renamed into place whole, then the manifest that makes it usable.
        staged = archive.with_suffix(f".{os.getpid()}.tmp")
        shutil.copyfile(dumped, staged)
        os.replace(staged, archive)
        staged_manifest = manifest.with_suffix(f".{os.getpid()}.tmp")
        staged_manifest.write_text(json.dumps({"size": archive.stat().st_size, "built_at": time.time()}))
        os.replace(staged_manifest, manifest)
    return archive


# Spark 3.5's Hadoop client (3.3.4) asks Subject.getSubject for the user; Java 24 and later throw there
# (JEP 486), and -Djava.security.manager=allow no longer helps (the JVM refuses to start with it).
_NO_GET_SUBJECT = "getSubject is not supported"


def _without_echo(output: str | None) -> list[str]:
    # Not the JVM's echo of JAVA_TOOL_OPTIONS: a whole class path, and options may hold a secret.
    return [line for line in (output or "").splitlines() if not line.startswith("Picked up ")]


def _training_failed(what: str, done: subprocess.CompletedProcess[str]) -> ConfigError:
    lines = _without_echo(done.stderr)
    # spark-submit hands a Python script's output, its traceback too, to the JVM's stdout.
    said = _without_echo(done.stdout) + lines
    thrown = next((line.strip() for line in said if "Exception" in line and ": " in line), None)
    message = f"{what} for the JVM archive failed (exit {done.returncode})"
    if any(_NO_GET_SUBJECT in line for line in said):
        message += (
            f": {thrown}: this Spark's Hadoop client does not run on Java 24 and later "
            "(Subject.getSubject); run it with Java 17 (JAVA_HOME)"
        )
    elif thrown is not None and not any(thrown in line for line in lines[-15:]):
        message += f": {thrown}"
    return ConfigError(message + ":\n" + "\n".join(lines[-15:]))


def remove(source: JarSource) -> bool:
    """Delete the archive that fits ``source``; True if there was one."""
    archive, manifest = _paths(source)
    found = archive.exists() or manifest.exists()
    manifest.unlink(missing_ok=True)  # first: an archive without its manifest is never used
    archive.unlink(missing_ok=True)
    return found
