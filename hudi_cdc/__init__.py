"""hudi-cdc: keep Apache Hudi tables in step with relational tables from Debezium change events.

Everything named in ``__all__`` is the public API; the rest may change.
Importing this package starts nothing: no Spark session, no logging handlers.

The modules sit in twelve layers, each importing only from its own layer or the
ones below, with no loops (``hudi_cdc/ARCHITECTURE.md`` names them; bottom to top:
ground, the JVM and the session, settings and policies, pure data, the sink,
upstream of the table, sources, checks, one table's round, many tables, operator
commands, shells). This module is the top: the Python API's shell.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

from hudi_cdc._version import __version__
from hudi_cdc.config import Flavor, IngestConfig, TableType, load_config
from hudi_cdc.errors import (
    CheckpointError,
    ConfigError,
    DecodeError,
    HudiCdcError,
    MergeError,
    SinkError,
    SourceError,
    TerminalError,
    TransientError,
)
from hudi_cdc.ops.repair import repair
from hudi_cdc.pipeline import IngestResult, run
from hudi_cdc.service.cuts import read_consistent
from hudi_cdc.spark import spark_session

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "CheckpointError",
    "ConfigError",
    "DecodeError",
    "Flavor",
    "HudiCdcError",
    "IngestConfig",
    "IngestResult",
    "MergeError",
    "SinkError",
    "SourceError",
    "TableType",
    "TerminalError",
    "TransientError",
    "__version__",
    "ingest",
    "load_config",
    "read_consistent",
    "repair",
    "run",
    "spark_session",
]


def ingest(
    config: IngestConfig | None = None,
    *,
    spark: SparkSession | None = None,
    **options: Any,
) -> IngestResult:
    """Run one ingest round and return what it did.

    Pass an :class:`IngestConfig`, or the settings as keywords by their names
    (docs/settings.md: ``source_path=..., target_base_path=..., target_table=...,
    record_key_fields=["id"], table_type="mor", masks={"email": "hash"},
    hoodie_conf={...}``; also ``config_file`` and ``props_file``), which go over
    the file and the ``HUDI_CDC__*`` environment variables as the CLI's options
    do. An unknown keyword is refused with the closest names; an old name warns.

    As a one-shot ``hudi-cdc ingest``: on a MERGE_ON_READ table with
    ``compaction = "async"`` (the default) the table's pending compaction plans,
    the one this round's commit scheduled included, run before it returns, under
    the table's writer lease.
    """
    from hudi_cdc.pipeline import compactions, ingest_once, writer_lease

    if config is None:
        config = load_config(**options)
    elif options:
        raise TypeError("pass either an IngestConfig or keyword options, not both")
    spark = spark or spark_session()
    with writer_lease(config, spark), compactions(config, spark):
        return ingest_once(config, spark=spark)


def _ingest_signature() -> inspect.Signature:
    """``ingest``'s signature as help() and editors show it: each declared setting a keyword."""
    from hudi_cdc.settings import declared

    kw = inspect.Parameter.KEYWORD_ONLY
    params = [
        inspect.Parameter("config", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None),
        inspect.Parameter("spark", kw, default=None),
        *(inspect.Parameter(name, kw, default=None) for name in ("config_file", "props_file", "env")),
        *(inspect.Parameter(d.name, kw, default=None) for d in declared(IngestConfig) if "python" in d.where),
    ]
    return inspect.Signature(params, return_annotation="IngestResult")


ingest.__signature__ = _ingest_signature()  # type: ignore[attr-defined]
