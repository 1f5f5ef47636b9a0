"""Where the JVM side of hudi-cdc comes from: a folder of jars, or Maven coordinates Spark resolves.

The Hudi Spark bundle, spark-avro and Spark's Kafka source are not Python
packages, so a wheel cannot carry them. As delta-spark and Hudi's own quick
start do, a session hudi-cdc builds hands Spark the pinned coordinates
(``spark.jars.packages``); Spark's Ivy fetches them once into its cache
(``~/.ivy2``) and reuses them. A folder of pre-fetched jars (air-gapped
clusters, or ``make jars`` in a checkout) is used instead when there is one.

The coordinates here and ``jars/hudi/pom.xml`` name the same versions; a test
holds them together.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from hudi_cdc.errors import ConfigError

__all__ = [
    "HUDI_VERSION",
    "JARS_DIR_ENV",
    "EXCLUDES",
    "PACKAGES",
    "SPARK_VERSION",
    "JarSource",
    "fetch_jars",
    "folder_jars",
    "resolve_jars",
]

JARS_DIR_ENV = "HUDI_CDC_JARS_DIR"

HUDI_VERSION = "1.2.0"
SPARK_VERSION = "3.5.7"  # the pyspark pin in setup.cfg
SCALA_BINARY = "2.12"

# spark-sql-kafka brings its own dependencies (kafka-clients, commons-pool2, the
# token provider) through Ivy; Spark ships the rest of what these need.
PACKAGES: tuple[str, ...] = (
    f"org.apache.hudi:hudi-spark3.5-bundle_{SCALA_BINARY}:{HUDI_VERSION}",
    f"org.apache.spark:spark-avro_{SCALA_BINARY}:{SPARK_VERSION}",
    f"org.apache.spark:spark-sql-kafka-0-10_{SCALA_BINARY}:{SPARK_VERSION}",
    # the jdbc source's drivers (MariaDB's also speaks to MySQL)
    "org.postgresql:postgresql:42.7.4",
    "org.mariadb.jdbc:mariadb-java-client:3.5.1",
)

# What Ivy would fetch beside them that Spark's own jars/ folder already holds (same
# versions): excluded so the cache and the classpath carry one copy.
EXCLUDES: tuple[str, ...] = (
    "org.apache.hadoop:hadoop-client-api",
    "org.apache.hadoop:hadoop-client-runtime",
    "org.apache.hive:hive-storage-api",
    "org.slf4j:slf4j-api",
    "org.lz4:lz4-java",
    "org.xerial.snappy:snappy-java",
    "org.tukaani:xz",
    "com.google.code.findbugs:jsr305",
    "commons-logging:commons-logging",
)

_BUNDLE = "hudi-spark3.5-bundle"


@dataclass(frozen=True)
class JarSource:
    """What a session needs on its classpath: local jar files, or coordinates for Spark to resolve."""

    kind: Literal["folder", "packages"]
    jars: tuple[str, ...] = ()
    packages: tuple[str, ...] = ()
    folder: str | None = None

    def spark_conf(self) -> dict[str, str]:
        """The Spark settings that put these jars on the driver's and executors' classpath."""
        if self.kind == "folder":
            return {"spark.jars": ",".join(self.jars)}
        return {"spark.jars.packages": ",".join(self.packages), "spark.jars.excludes": ",".join(EXCLUDES)}

    def submit_args(self) -> list[str]:
        """The same as ``spark-submit`` arguments."""
        if self.kind == "folder":
            return ["--jars", ",".join(self.jars)]
        return ["--packages", ",".join(self.packages), "--exclude-packages", ",".join(EXCLUDES)]


def _checkout_folder() -> Path:
    # A source checkout or editable install: <repo>/.jars/hudi, filled by `make jars`.
    # In an installed wheel this points into site-packages, where nothing is.
    return Path(__file__).resolve().parent.parent / ".jars" / "hudi"


def folder_jars(directory: str | os.PathLike[str]) -> tuple[str, ...]:
    """The jar files of ``directory``, or a ConfigError when it holds no Hudi Spark bundle."""
    jars = tuple(sorted(glob.glob(os.path.join(os.fspath(directory), "*.jar"))))
    # Ivy names its copies group_artifact-version.jar, Maven artifact-version.jar.
    if not any(_BUNDLE in Path(j).name for j in jars):
        raise ConfigError(
            f"no Hudi Spark bundle ({_BUNDLE}_{SCALA_BINARY}-*.jar) in {os.fspath(directory)!r}, "
            f"the folder {JARS_DIR_ENV} names: fill it with `hudi-cdc jars --fetch {os.fspath(directory)}` "
            f"on a machine that reaches Maven Central, or unset {JARS_DIR_ENV} to let Spark resolve "
            f"{', '.join(PACKAGES)}"
        )
    return jars


def resolve_jars() -> JarSource:
    """The folder named by ``HUDI_CDC_JARS_DIR``, else a checkout's ``.jars/hudi``, else Maven coordinates."""
    configured = os.environ.get(JARS_DIR_ENV)
    if configured:
        return JarSource("folder", jars=folder_jars(configured), folder=configured)
    checkout = _checkout_folder()
    if checkout.is_dir():
        try:
            return JarSource("folder", jars=folder_jars(checkout), folder=str(checkout))
        except ConfigError:
            pass  # an empty or partial `make jars` folder: fall through to resolution
    return JarSource("packages", packages=PACKAGES)


def fetch_jars(directory: str | os.PathLike[str]) -> tuple[str, ...]:
    """Resolve :data:`PACKAGES` with Spark's Ivy (as a session would) and copy the jars into ``directory``.

    The folder then serves sessions and ``spark-submit --jars`` on machines
    that cannot reach Maven Central (``HUDI_CDC_JARS_DIR``).
    """
    import shutil

    from pyspark.sql import SparkSession

    from hudi_cdc.errors import TransientError

    if SparkSession.getActiveSession() is not None:
        raise ConfigError("fetch_jars starts its own Spark session: call it before any other session starts")
    builder = SparkSession.builder.master("local[1]").appName("hudi-cdc-fetch-jars").config("spark.ui.enabled", "false")
    for key, value in JarSource("packages", packages=PACKAGES).spark_conf().items():
        builder = builder.config(key, value)
    try:
        spark = builder.getOrCreate()
    except Exception as exc:
        raise TransientError(
            f"Spark could not resolve {', '.join(PACKAGES)} from Maven Central: {str(exc).strip().splitlines()[-1]}"
        ) from exc
    try:
        resolved = [j for j in spark.sparkContext.getConf().get("spark.jars", "").split(",") if j]
    finally:
        spark.stop()
    target = Path(directory)
    target.mkdir(parents=True, exist_ok=True)
    for jar in resolved:
        source = Path(jar.removeprefix("file://").removeprefix("file:"))
        shutil.copy2(source, target / source.name)
    return folder_jars(target)
