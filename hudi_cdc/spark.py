"""The Spark session factory.

A session hudi-cdc builds gets the Hudi bundle, spark-avro and Spark's Kafka
source from :mod:`hudi_cdc.jars` (a folder of jars, or Maven coordinates Spark
resolves and caches), and runs its Python workers on the driver's own
interpreter. A session the user already has (a notebook, or ``spark-submit
--packages ...`` on a cluster) is used as it is.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from hudi_cdc import jvm_archive
from hudi_cdc._jvm import jvm, jvm_conf
from hudi_cdc.errors import ConfigError
from hudi_cdc.jars import DRIVER_CLASSPATH, JarSource, resolve_jars

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["spark_session", "release", "worker_python"]

_log = logging.getLogger(__name__)

# Settings Hudi's Spark integration needs; a user's own session must carry them too.
ARROW_ENABLED = "spark.sql.execution.arrow.pyspark.enabled"

_HUDI_SESSION_CONF = {
    # Spark 3.5 can deadlock building nested cached plans under AQE (seen here: two
    # threads parked on each other's cache stage). Plain cache plans avoid it.
    "spark.sql.optimizer.canChangeCachedPlanOutputPartitioning": "false",
    "spark.serializer": "org.apache.spark.serializer.KryoSerializer",
    "spark.sql.extensions": "org.apache.spark.sql.hudi.HoodieSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.hudi.catalog.HoodieCatalog",
    "spark.kryo.registrator": "org.apache.spark.HoodieSparkKryoRegistrar",
    # A small Kafka round is read by the driver and handed to Spark as Arrow batches (sources.kafka):
    # without Arrow the rows would pass through Python workers, slower than Spark's own Kafka read.
    ARROW_ENABLED: "true",
}

# Small-machine defaults: a CDC batch is rarely worth 200 shuffle partitions.
_LOCAL_DEFAULTS = {
    "spark.sql.shuffle.partitions": "8",
    "spark.default.parallelism": "8",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    # Rows with out-of-line (TOAST) values are wide: a 4096-row Parquet batch of 6 kB values reserves 25 MB
    # and more per column vector per task; at 4096 a 1 GiB driver ran out of heap reading a 15k-row table.
    "spark.sql.parquet.columnarReaderBatchSize": "1024",
    "spark.driver.extraJavaOptions": "-Duser.timezone=UTC",
    "spark.executor.extraJavaOptions": "-Duser.timezone=UTC",
}


WAREHOUSE_DIR = "spark.sql.warehouse.dir"


def warehouse_dir() -> Path:
    """Where a session hudi-cdc starts keeps Spark's (empty) warehouse: the temp folder's ``hudi-cdc``.

    Spark's default is ``spark-warehouse`` in the working directory, made the
    first time anything asks the catalog (a MOR table's second round does): a
    folder left behind wherever a command was run. hudi-cdc's tables live at
    their own paths; nothing of ours is stored there. A warehouse the user
    set (in ``conf``, ``PYSPARK_SUBMIT_ARGS`` or ``spark-defaults.conf``) is kept.
    """
    return Path(tempfile.gettempdir()) / "hudi-cdc" / "spark-warehouse"


def _sets(key: str, conf: Mapping[str, str] | None) -> bool:
    """The user gave ``key``: in ``conf``, to PySpark's launcher (``PYSPARK_SUBMIT_ARGS``) or in spark-defaults.conf."""
    if key in (conf or {}) or key in os.environ.get("PYSPARK_SUBMIT_ARGS", ""):
        return True
    home = os.environ.get("SPARK_HOME")
    folder = os.environ.get("SPARK_CONF_DIR") or (os.path.join(home, "conf") if home else None)
    if folder is None:
        return False
    try:
        lines = (Path(folder) / "spark-defaults.conf").read_text().splitlines()
    except OSError:
        return False
    return any(re.split(r"[\s=:]", line.strip(), maxsplit=1)[0] == key for line in lines)  # a Java properties file


def worker_python() -> str:
    """The interpreter Spark's Python workers run: ``PYSPARK_PYTHON``, else this one.

    PySpark's own default is ``python3`` from ``PATH``, which on most machines is
    not the environment hudi-cdc (and pyarrow) is installed in.
    """
    return os.environ.get("PYSPARK_PYTHON") or sys.executable


def spark_session(
    *,
    master: str | None = None,
    app_name: str = "hudi-cdc",
    conf: Mapping[str, str] | None = None,
    jars: list[str] | None = None,
    jvm_log: str | os.PathLike[str] | None = None,
) -> SparkSession:
    """Return the active SparkSession, or build one with Hudi on its classpath.

    An active session (notebook, ``spark-submit``) is reused untouched apart from
    a check that Hudi is loadable; a new one gets ``local[*]`` unless ``master``
    or ``spark.master`` says otherwise. ``jars`` replaces the jars
    :func:`hudi_cdc.jars.resolve_jars` would pick. Python workers run on
    ``PYSPARK_PYTHON`` if it is set, else on the driver's interpreter; on a
    cluster whose nodes keep Python elsewhere, set ``PYSPARK_PYTHON``.
    With ``jvm_log``, a JVM started here writes its output (Spark's, Hudi's
    and Ivy's warnings) to that file instead of this process's stdout and stderr.
    A JVM started here maps the class-data archive ``hudi-cdc jvm-archive`` built, if one fits.
    """
    from pyspark.sql import SparkSession

    from hudi_cdc._py4j_names import cache_names  # py4j, like pyspark, only once a session is asked for

    active = SparkSession.getActiveSession()
    if active is not None:
        _check_hudi_loadable(active)
        cache_names(active)
        return active

    # Read by SparkContext when it starts (and only from the environment).
    os.environ["PYSPARK_PYTHON"] = worker_python()
    in_submit = "spark.master" in os.environ.get("PYSPARK_SUBMIT_ARGS", "") or bool(os.environ.get("SPARK_ENV_LOADED"))
    settings: dict[str, str] = {}
    if master:
        settings["spark.master"] = master
    elif not in_submit:
        settings.update({"spark.master": "local[*]", **_LOCAL_DEFAULTS})
    archive = None
    if not in_submit:  # under spark-submit the JVM is already running, with its classpath and options
        source = JarSource("folder", jars=tuple(jars)) if jars is not None else resolve_jars()
        local = (
            _LOCAL_MASTER.match(settings.get("spark.master") or (conf or {}).get("spark.master") or "local") is not None
        )
        jar_conf = source.spark_conf(local=local)
        _log.info("hudi-cdc jars: %s", jar_conf)
        settings.update(jar_conf)
        archive = jvm_archive.archive_for(source)
        settings.update(jvm_conf())
    settings.update(_HUDI_SESSION_CONF)
    if not in_submit and not _sets(WAREHOUSE_DIR, conf):
        settings[WAREHOUSE_DIR] = str(warehouse_dir())
    for key, value in (conf or {}).items():  # the user's driver classpath goes before the s3a jars, not instead
        joined = key == DRIVER_CLASSPATH and settings.get(key)
        settings[key] = f"{value}{os.pathsep}{settings[key]}" if joined else value
    if archive is not None:  # added to whatever driver options the settings above ended with
        key = "spark.driver.extraJavaOptions"
        settings[key] = f"{settings.get(key, '')} {jvm_archive.java_options(archive)}".strip()
        _log.info("hudi-cdc JVM archive: %s", archive)
    builder = SparkSession.builder.appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    if jvm_log is None:
        spark = builder.getOrCreate()
    else:
        from hudi_cdc.console import process_output_to

        Path(jvm_log).parent.mkdir(parents=True, exist_ok=True)
        with process_output_to(Path(jvm_log)):
            spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(os.environ.get("HUDI_CDC_SPARK_LOG_LEVEL", "ERROR"))
    _check_hudi_loadable(spark)
    cache_names(spark)
    return spark


def _check_hudi_loadable(spark: SparkSession) -> None:
    gateway = jvm(spark)
    try:
        gateway.java.lang.Class.forName(
            "org.apache.hudi.DefaultSource", True, gateway.java.lang.Thread.currentThread().getContextClassLoader()
        )
    except Exception as exc:  # py4j raises its own error type for ClassNotFoundException
        raise ConfigError(
            "the Spark session has no Hudi on its classpath: start it with "
            "hudi_cdc.spark_session(), or give spark-submit the line `hudi-cdc jars --submit-args` prints"
        ) from exc


_RESERVED_HEAP = 300 << 20  # Spark's reserved system memory
_LOCAL_MASTER = re.compile(r"local(?:\[(\d+|\*)(?:,\d+)?\])?$")


def task_heap_bytes(spark: SparkSession) -> int:
    """The heap one running task has outside Spark's memory pool: where Hudi's write handles buffer.

    Locally that is the driver's heap, shared by the master's cores; on a cluster ``spark.executor.memory``,
    shared by ``spark.executor.cores`` / ``spark.task.cpus`` tasks (1 core when unset, YARN's default: set it
    where executors take more, as standalone ones do).
    """
    context = spark.sparkContext
    conf = context._jsc.sc().conf()  # noqa: SLF001 - Spark's own size parsing ("4g", "512m")
    local = _LOCAL_MASTER.match(context.master or "")
    if local:
        heap = int(jvm(spark).java.lang.Runtime.getRuntime().maxMemory())
        cores = local.group(1)
        slots = 1 if cores is None else (os.cpu_count() or 1) if cores == "*" else int(cores)
    else:
        heap = int(conf.getSizeAsMb("spark.executor.memory", "1g")) << 20
        slots = int(conf.get("spark.executor.cores", "1")) // max(1, int(conf.get("spark.task.cpus", "1")))
    fraction = float(conf.get("spark.memory.fraction", "0.6"))
    return int(max(0, heap - _RESERVED_HEAP) * (1 - fraction) / max(1, slots))


def release(*frames: DataFrame | None) -> None:
    """Drop the blocks behind ``frames``' local checkpoints once a round is done with them.

    Checkpointed blocks sit in Spark's storage memory until the JVM garbage-collects
    their RDDs; Hudi's merge handles take plain heap outside that pool, so in a
    continuous process the leftovers of earlier rounds starved them (OutOfMemoryError
    after nine 450k-event rounds into a 500k-row table at 4 GiB).
    """
    for frame in frames:
        if frame is None:
            continue
        leaves = frame._jdf.queryExecution().logical().collectLeaves()  # noqa: SLF001 - no Python API for this
        for i in range(leaves.size()):
            leaf = leaves.apply(i)
            if leaf.getClass().getSimpleName() == "LogicalRDD":
                leaf.rdd().unpersist(False)
