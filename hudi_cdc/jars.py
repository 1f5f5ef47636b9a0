"""Where the JVM side of hudi-cdc comes from: a folder of jars, or Maven coordinates Spark resolves.

The Hudi Spark bundle, spark-avro and Spark's Kafka source are not Python
packages, so a wheel cannot carry them. As delta-spark and Hudi's own quick
start do, a session hudi-cdc builds hands Spark the coordinates
(``spark.jars.packages``); Spark's Ivy fetches them once into its cache
(``~/.ivy2``) and reuses them. A folder of pre-fetched jars (air-gapped
clusters, or ``make jars`` in a checkout) is used instead when there is one.

hudi-cdc's own jars (``jars/pick``, ``jars/writer``) are on no Maven
repository: ``make jars`` builds them into a checkout's ``.jars/hudi``, and the
wheel ``make wheel`` builds carries them (with the writer's one dependency
outside the bundle, Hudi's Java write client) in ``hudi_cdc/_jars``. Without
them every round still runs, on slower paths (:data:`OWN_JARS` says which).

The order, first match wins: the folder ``HUDI_CDC_JARS_DIR`` names (the
operator said so), a checkout's ``.jars/hudi`` (``make jars``), else the
coordinates. The wheel's own jars join a folder that lacks them and the
coordinates, so a pip install gets the checkout's paths.

Hadoop's s3a connector (``s3a://`` tables, docs/object-storage.md) is hadoop-aws with the AWS SDK
bundle it was built against, 280 MB: ``make jars`` fetches it apart, into ``.jars/s3a``
(``jars/s3a/pom.xml``); a ``HUDI_CDC_JARS_DIR`` folder may hold it too. When found it joins every
session on the driver's classpath (:attr:`JarSource.s3a`); ``HUDI_CDC_S3A=off`` leaves it out.

The coordinates here and ``jars/hudi/pom.xml`` name the same versions; a test
holds them together.
"""

from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from hudi_cdc.errors import ConfigError

__all__ = [
    "DRIVER_CLASSPATH",
    "EXCLUDES",
    "HUDI_VERSION",
    "JARS_DIR_ENV",
    "JAVA_CLIENT_JAR",
    "OWN_JARS",
    "PACKAGES",
    "S3A_ENV",
    "SPARK_SERIES",
    "SPARK_VERSION",
    "JarSource",
    "fetch_jars",
    "folder_jars",
    "own_jars",
    "packaged_folder",
    "packages",
    "resolve_jars",
    "runtime_versions",
    "s3a_jars",
    "spark_version",
]

JARS_DIR_ENV = "HUDI_CDC_JARS_DIR"

HUDI_VERSION = "1.2.0"
SPARK_SERIES = "3.5"
"""The Spark line hudi-cdc runs on (setup.cfg: ``pyspark>=3.5,<3.6``): Hudi's bundle is built for it."""
SPARK_VERSION = "3.5.7"
"""The Spark ``jars/*/pom.xml`` compile against and ``make jars`` fetches; constraints.txt pins pyspark to it."""
SCALA_BINARY = "2.12"


def _packages(spark: str) -> tuple[str, ...]:
    # spark-sql-kafka brings its own dependencies (kafka-clients, commons-pool2, the
    # token provider) through Ivy; Spark ships the rest of what these need.
    return (
        f"org.apache.hudi:hudi-spark3.5-bundle_{SCALA_BINARY}:{HUDI_VERSION}",
        f"org.apache.spark:spark-avro_{SCALA_BINARY}:{spark}",
        f"org.apache.spark:spark-sql-kafka-0-10_{SCALA_BINARY}:{spark}",
        # the jdbc source's drivers (MariaDB's also speaks to MySQL)
        "org.postgresql:postgresql:42.7.4",
        "org.mariadb.jdbc:mariadb-java-client:3.5.1",
    )


PACKAGES: tuple[str, ...] = _packages(SPARK_VERSION)
"""The coordinates for the Spark hudi-cdc is built against (``jars/hudi/pom.xml``'s); :func:`packages` gives
those for the Spark in use."""

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

OWN_JARS: dict[str, str] = {
    "hudi-cdc-pick-1.jar": "the per-key pick as one hash aggregate (payloads/base.py `_pick`); "
    "without it Spark sorts every event by key",
    "hudi-cdc-writer-1.jar": "small MERGE_ON_READ rounds through Hudi's Java write client, no Spark job "
    "(hudi_cdc/sink/small_write.py); without it every round runs Spark's datasource jobs",
    "hudi-cdc-localfs-1.jar": "a local session's files created with their permissions set in the JVM; "
    "without it Hadoop runs a chmod process per file and folder (dozens per commit)",
}
"""hudi-cdc's own jars (``make jars`` builds them from ``jars/pick``, ``jars/writer`` and ``jars/localfs``), and
the faster path each one turns on."""
JAVA_CLIENT_JAR = f"hudi-java-client-{HUDI_VERSION}.jar"
"""The writer's one dependency the bundle lacks; the wheel carries it beside the writer (Apache-2.0, as Hudi)."""
_WRITER = "hudi-cdc-writer-1.jar"

_BUNDLE = "hudi-spark3.5-bundle"

S3A_ENV = "HUDI_CDC_S3A"
"""``off``: no s3a jars on a session's classpath, even where they are found."""
_S3A_PREFIXES = ("hadoop-aws-", "aws-java-sdk-bundle-")
"""The s3a connector's jars (``jars/s3a/pom.xml``): both are needed, neither alone."""


@dataclass(frozen=True)
class JarSource:
    """What a session needs on its classpath: local jar files, or coordinates for Spark to resolve (with
    the local jars of hudi-cdc's own that the wheel carries)."""

    kind: Literal["folder", "packages"]
    jars: tuple[str, ...] = ()
    packages: tuple[str, ...] = ()
    folder: str | None = None
    s3a: tuple[str, ...] = ()
    """Hadoop's s3a connector (hadoop-aws, the AWS SDK bundle): local files, or none."""

    def spark_conf(self, *, local: bool = True) -> dict[str, str]:
        """The Spark settings that put these jars on the driver's and executors' classpath.

        When the master is local (``local``: the executors are the driver's threads) the jars go on the
        JVM's own classpath: given as ``spark.jars``, Spark streams each one into every session's scratch
        folder (the 80 MB Hudi bundle, the 280 MB SDK bundle), its executor loads their classes a second
        time from there, and the JVM's class-data archive cannot hold them. Not so where Spark resolves
        the bundle (``packages``): classes on the JVM's own classpath cannot see the bundle's, so only
        the jars that need no Hudi go there. A cluster's executors get every jar by ``spark.jars``
        (copied to each executor, as any added jar).
        """
        if not local:
            every = (*self.jars, *self.s3a)
            conf = {"spark.jars": ",".join(every)} if every else {}
        else:
            own_classpath = self.jars if self.kind == "folder" else [j for j in self.jars if _needs_no_hudi(j)]
            added = [j for j in self.jars if j not in own_classpath]
            conf = {"spark.jars": ",".join(added)} if added else {}
            if own_classpath or self.s3a:
                conf[DRIVER_CLASSPATH] = os.pathsep.join([*own_classpath, *self.s3a])
        if local and any(Path(j).name == _LOCALFS for j in self.jars):
            conf[LOCAL_FS_CONF] = LOCAL_FS_CLASS
        if self.kind == "packages":
            conf.update({"spark.jars.packages": ",".join(self.packages), "spark.jars.excludes": ",".join(EXCLUDES)})
        return conf

    def submit_args(self, *, local: bool = False) -> list[str]:
        """The same as ``spark-submit`` arguments: the s3a jars, if any, by ``--jars`` (a cluster's executors
        need them), or with ``local`` (a local master) on the driver's classpath with the local file system's
        jar and its ``fs.file.impl``, as :meth:`spark_conf`."""
        conf = self.spark_conf(local=local)
        local_args = ["--driver-class-path", conf[DRIVER_CLASSPATH]] if DRIVER_CLASSPATH in conf else []
        local_args += ["--conf", f"{LOCAL_FS_CONF}={conf[LOCAL_FS_CONF]}"] if LOCAL_FS_CONF in conf else []
        local_args += ["--jars", conf["spark.jars"]] if "spark.jars" in conf else []
        if self.kind == "folder":
            return local_args
        return ["--packages", ",".join(self.packages), "--exclude-packages", ",".join(EXCLUDES), *local_args]


DRIVER_CLASSPATH = "spark.driver.extraClassPath"
LOCAL_FS_CONF = "spark.hadoop.fs.file.impl"
LOCAL_FS_CLASS = "io.hudicdc.fs.NioLocalFileSystem"
"""``file://`` through ``jars/localfs``: permissions set in the JVM, where Hadoop without its native library runs
a ``chmod`` process per file. A local master only, with the jar on the driver's own classpath (spark-submit
reads local files before the session's jars load); a cluster's tables are on its shared storage."""
_LOCALFS = "hudi-cdc-localfs-1.jar"


def _needs_no_hudi(jar: str) -> bool:
    # Its classes load beside Spark's (the JVM's own classpath) wherever the bundle is: Hadoop's file system.
    return Path(jar).name == _LOCALFS


def _checkout_folder() -> Path:
    # A source checkout or editable install: <repo>/.jars/hudi, filled by `make jars`.
    # In an installed wheel this points into site-packages, where nothing is.
    return Path(__file__).resolve().parent.parent / ".jars" / "hudi"


def _s3a_checkout_folder() -> Path:
    # Beside it, .jars/s3a (jars/s3a/pom.xml), also filled by `make jars`.
    return Path(__file__).resolve().parent.parent / ".jars" / "s3a"


def _is_s3a(jar: str) -> bool:
    return Path(jar).name.startswith(_S3A_PREFIXES)


def s3a_jars(folder: str | os.PathLike[str] | None = None) -> tuple[str, ...]:
    """Hadoop's s3a connector jars in ``folder`` (default: a checkout's ``.jars/s3a``): both, or none when
    one is missing or ``HUDI_CDC_S3A=off``."""
    if os.environ.get(S3A_ENV, "").strip().lower() == "off":
        return ()
    where = Path(folder) if folder is not None else _s3a_checkout_folder()
    found = tuple(sorted(str(j) for j in where.glob("*.jar") if _is_s3a(str(j))))
    if {p for p in _S3A_PREFIXES if any(Path(j).name.startswith(p) for j in found)} != set(_S3A_PREFIXES):
        return ()
    return found


def packaged_folder() -> Path:
    """Where the wheel ``make wheel`` builds keeps hudi-cdc's own jars (setup.py copies them from ``.jars/hudi``)."""
    return Path(__file__).resolve().parent / "_jars"


def _packaged_jars() -> tuple[str, ...]:
    folder = packaged_folder()
    return tuple(str(folder / name) for name in (*OWN_JARS, JAVA_CLIENT_JAR) if (folder / name).is_file())


def _with_packaged(jars: tuple[str, ...]) -> tuple[str, ...]:
    # A folder fetched by `hudi-cdc jars --fetch` of an older hudi-cdc, or filled by hand, may lack our jars
    # (or the Java client): the wheel's copies join it; a jar the folder has wins over the wheel's.
    names = {Path(j).name for j in jars}
    has_client = any(n.startswith("hudi-java-client-") for n in names)
    extra = tuple(
        j
        for j in _packaged_jars()
        if Path(j).name not in names and not (has_client and Path(j).name.startswith("hudi-java-client-"))
    )
    return jars + extra


def folder_jars(directory: str | os.PathLike[str]) -> tuple[str, ...]:
    """The jar files of ``directory``, or a ConfigError when it holds no Hudi Spark bundle."""
    jars = tuple(sorted(glob.glob(os.path.join(os.fspath(directory), "*.jar"))))
    # Ivy names its copies group_artifact-version.jar, Maven artifact-version.jar.
    if not any(_BUNDLE in Path(j).name for j in jars):
        raise ConfigError(
            f"no Hudi Spark bundle ({_BUNDLE}_{SCALA_BINARY}-*.jar) in {os.fspath(directory)!r}, "
            f"the folder {JARS_DIR_ENV} names: fill it with `hudi-cdc jars --fetch {os.fspath(directory)}` "
            f"on a machine that reaches Maven Central, or unset {JARS_DIR_ENV} to let Spark resolve "
            f"{', '.join(packages())}"
        )
    return jars


def resolve_jars() -> JarSource:
    """The folder named by ``HUDI_CDC_JARS_DIR``, else a checkout's ``.jars/hudi``, else Maven coordinates;
    the wheel's own jars join a folder that lacks them, and the coordinates."""
    configured = os.environ.get(JARS_DIR_ENV)
    s3a = s3a_jars()
    if configured:
        jars = folder_jars(configured)
        # The operator's folder may hold the s3a connector too: it wins over a checkout's.
        s3a = s3a_jars(configured) or s3a
        plain = tuple(j for j in jars if not _is_s3a(j))
        return JarSource("folder", jars=_with_packaged(plain), folder=configured, s3a=s3a)
    checkout = _checkout_folder()
    if checkout.is_dir():
        try:
            return JarSource("folder", jars=_with_packaged(folder_jars(checkout)), folder=str(checkout), s3a=s3a)
        except ConfigError:
            pass  # an empty or partial `make jars` folder: fall through to resolution
    own = _packaged_jars()
    return JarSource("packages", jars=own, packages=packages(), folder=str(packaged_folder()) if own else None, s3a=s3a)


def own_jars(source: JarSource) -> dict[str, str | None]:
    """Each of hudi-cdc's own jars (:data:`OWN_JARS`): the file ``source`` puts on the classpath, or None.

    The writer counts only with Hudi's Java write client beside it (a checkout's folder or the wheel has it).
    """
    by_name = {Path(j).name: j for j in source.jars}
    found: dict[str, str | None] = {name: by_name.get(name) for name in OWN_JARS}
    if not any(name.startswith("hudi-java-client-") for name in by_name):
        found[_WRITER] = None
    return found


def spark_version() -> str:
    """The version of the Spark a session started here runs, read without starting it: ``SPARK_HOME``'s
    (as pyspark's launcher picks), else the installed pyspark's; :data:`SPARK_VERSION` if neither says."""
    home = os.environ.get("SPARK_HOME")
    if home:
        for jar in sorted(Path(home, "jars").glob(f"spark-core_{SCALA_BINARY}-*.jar")):
            return jar.name.removeprefix(f"spark-core_{SCALA_BINARY}-").removesuffix(".jar")
    from importlib import metadata

    try:
        return metadata.version("pyspark")
    except metadata.PackageNotFoundError:
        return SPARK_VERSION


def packages() -> tuple[str, ...]:
    """The coordinates for the Spark in use: spark-avro and Spark's Kafka source of its own version (they
    build on Spark's internals), the rest as :data:`PACKAGES`."""
    spark = spark_version()
    return _packages(spark) if re.fullmatch(rf"{re.escape(SPARK_SERIES)}\.\d+", spark) else PACKAGES


def runtime_versions() -> dict[str, str]:
    """What a session started here would run, read from files without starting a JVM: Spark, the Hudi
    bundle (and where it comes from), Java. A value that cannot be read says why."""
    from hudi_cdc._jvm import java_binary

    spark = spark_version()
    supported = re.fullmatch(rf"{re.escape(SPARK_SERIES)}\.\d+", spark) is not None
    versions = {"spark": spark if supported else f"{spark} (unsupported: hudi-cdc needs Spark {SPARK_SERIES}.x)"}
    try:
        source = resolve_jars()
    except ConfigError as exc:
        versions["hudi"] = f"unknown: {exc}"
    else:
        if source.kind == "folder":
            bundle = next(Path(j).name for j in source.jars if _BUNDLE in Path(j).name)
            found = re.search(r"-(\d[\w.]*)\.jar$", bundle)
            versions["hudi"] = f"{found.group(1) if found else bundle} (from {source.folder})"
        else:
            versions["hudi"] = f"{HUDI_VERSION} (Maven coordinates Spark resolves)"
    java = java_binary()
    release = Path(os.path.realpath(java)).parent.parent / "release" if java else None
    version = None
    try:
        for line in release.read_text().splitlines() if release else ():
            if line.startswith("JAVA_VERSION="):
                version = line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    if java is None:
        versions["java"] = "none found (JAVA_HOME or PATH): Spark needs Java 17"
    else:
        versions["java"] = f"{version or 'unknown (no release file)'} ({os.path.realpath(java)})"
    return versions


def fetch_jars(directory: str | os.PathLike[str]) -> tuple[str, ...]:
    """Resolve :func:`packages` with Spark's Ivy (as a session would) and copy the jars into ``directory``,
    with the wheel's own jars when it carries them.

    The folder then serves sessions and ``spark-submit --jars`` on machines
    that cannot reach Maven Central (``HUDI_CDC_JARS_DIR``). The s3a connector's jars join it when this
    machine has them (a checkout's ``make jars``).
    """
    import shutil

    from pyspark.sql import SparkSession

    from hudi_cdc.errors import TransientError

    if SparkSession.getActiveSession() is not None:
        raise ConfigError("fetch_jars starts its own Spark session: call it before any other session starts")
    coordinates = packages()
    builder = SparkSession.builder.master("local[1]").appName("hudi-cdc-fetch-jars").config("spark.ui.enabled", "false")
    for key, value in JarSource("packages", packages=coordinates).spark_conf().items():
        builder = builder.config(key, value)
    try:
        spark = builder.getOrCreate()
    except Exception as exc:
        raise TransientError(
            f"Spark could not resolve {', '.join(coordinates)} from Maven Central: {str(exc).strip().splitlines()[-1]}"
        ) from exc
    try:
        resolved = [j for j in spark.sparkContext.getConf().get("spark.jars", "").split(",") if j]
    finally:
        spark.stop()
    target = Path(directory)
    target.mkdir(parents=True, exist_ok=True)
    for jar in [*resolved, *_packaged_jars(), *s3a_jars()]:  # the s3a connector too, where this machine has it
        source = Path(jar.removeprefix("file://").removeprefix("file:"))
        shutil.copy2(source, target / source.name)
    return folder_jars(target)
