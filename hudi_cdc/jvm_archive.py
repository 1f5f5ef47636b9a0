"""A class-data-sharing archive of the driver JVM: a one-shot run starts faster.

``hudi-cdc jvm-archive`` runs a training round (generated Debezium files into a
COW and a MOR table, two rounds each, or one round of the user's own ``ingest``
command) in a JVM that dumps the classes it loaded
(``-XX:ArchiveClassesAtExit``). Later JVMs map that archive instead of reading,
verifying and linking the classes again: a one-shot round of 1M Kafka events
took 2.4-3.1 s less on 2 cores, since class loading and verification are a
large part of a cold JVM's first job.

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
from collections.abc import Sequence
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


def _cache_dir() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "hudi-cdc") / "jvm"


def _java() -> str:
    from hudi_cdc._jvm import java_binary

    java = java_binary()
    if java is None:
        raise ConfigError("no java found (JAVA_HOME or PATH): Spark needs Java 17")
    return os.path.realpath(java)


def _fingerprint(jars: Sequence[str]) -> str:
    """What the archive depends on: the JVM, Spark's own jars and ours (path, size, mtime), hudi-cdc."""
    import pyspark

    from hudi_cdc._version import __version__

    java = Path(_java())
    release = java.parent.parent / "release"
    spark_jars = sorted(Path(pyspark.__file__).parent.joinpath("jars").glob("*.jar"))
    files = [*spark_jars, *(Path(j) for j in jars if Path(j).exists())]
    facts = {
        "java": str(java),
        "release": release.read_text() if release.exists() else "",
        "pyspark": pyspark.__version__,
        "hudi_cdc": __version__,
        "jars": [list(jars)] + [[str(f), f.stat().st_size, f.stat().st_mtime_ns] for f in files],
    }
    return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()[:16]


def _paths(source: JarSource) -> tuple[Path, Path]:
    name = f"driver-{_fingerprint([*source.jars, *source.packages])}"
    directory = _cache_dir()
    return directory / f"{name}.jsa", directory / f"{name}.json"


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
    """The driver JVM options that map ``archive``."""
    return " ".join([f"-XX:SharedArchiveFile={archive}", "-Xshare:auto", *_SILENT])


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
        dumped = Path(work) / "driver.jsa"
        spark_submit = Path(sys.executable).parent / "spark-submit"
        command = [
            str(spark_submit) if spark_submit.exists() else "spark-submit",
            "--master", "local[2]", "--driver-memory", driver_memory,
            "--conf", "spark.ui.enabled=false",
            "--driver-java-options", " ".join([f"-XX:ArchiveClassesAtExit={dumped}", *_SILENT]),
            *source.submit_args(),
            *([str(launcher), *train] if train else [str(launcher.parent / "jvm_training.py"), work]),
        ]  # fmt: skip
        env = {**os.environ, "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON") or sys.executable}
        done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
        if done.returncode != 0 or not dumped.exists():
            tail = "\n".join((done.stderr or "").splitlines()[-15:])
            what = "hudi-cdc " + " ".join(train[:1]) if train else "the training run"
            raise ConfigError(f"{what} for the JVM archive failed (exit {done.returncode}):\n{tail}")
        # Renamed into place whole, then the manifest that makes it usable.
        staged = archive.with_suffix(f".{os.getpid()}.tmp")
        shutil.copyfile(dumped, staged)
        os.replace(staged, archive)
        staged_manifest = manifest.with_suffix(f".{os.getpid()}.tmp")
        staged_manifest.write_text(json.dumps({"size": archive.stat().st_size, "built_at": time.time()}))
        os.replace(staged_manifest, manifest)
    return archive


def remove(source: JarSource) -> bool:
    """Delete the archive that fits ``source``; True if there was one."""
    archive, manifest = _paths(source)
    found = archive.exists() or manifest.exists()
    manifest.unlink(missing_ok=True)  # first: an archive without its manifest is never used
    archive.unlink(missing_ok=True)
    return found
