"""One table of a pipeline file, by the name every per-table command takes: ``--pipeline FILE --table NAME``.

``NAME`` is the table's ``schema.table`` (MySQL: ``database.table``; a routed
table: its target), as ``run``, ``status`` and the file's ``[tables."..."]``
sections name it, or its topic (folder, database table). It resolves to the
table ``hudi-cdc run`` would replicate, with the settings ``run`` gives it, in
the cheapest way that is still sure the table exists:

- a files source without ``[[routes]]``: the folder is rendered from the name
  and ``[source] tables`` (``dbserver1.inventory.*`` and ``inventory.customers``
  give ``dbserver1.inventory.customers``) and looked up: one existence check,
  no listing;
- otherwise (Kafka: one metadata request listing the topics; JDBC: the
  database's tables and keys; ``[[routes]]``): the source's tables as ``run``
  discovers them. When Kafka cannot be reached, a name that renders to one
  topic is taken as rendered (with a warning): the command may not need Kafka.

A name that matches no table is refused with the closest names. Pure of
the command line: the CLI's ``--pipeline``/``--table`` options and the
Python API share it.
"""

from __future__ import annotations

import difflib
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from hudi_cdc.errors import ConfigError, TransientError
from hudi_cdc.service.spec import PipelineSpec, TableRef, load_pipeline

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from hudi_cdc.config import IngestConfig

__all__ = ["PipelineTable", "pipeline_table", "pipeline_tables", "resolve_table", "source_kind"]

log = logging.getLogger(__name__)

Session = Callable[[], "SparkSession"]
"""Starts (or returns) the Spark session; called only when the source must be listed through Hadoop."""


@dataclass(frozen=True)
class PipelineTable:
    """A pipeline's table: its file's settings, how ``run`` names it, and the settings ``run`` writes it with."""

    spec: PipelineSpec
    ref: TableRef
    config: IngestConfig

    @property
    def name(self) -> str:
        return self.ref.name

    @property
    def source_table(self) -> str:
        """The table in the source database, ``schema.table``: the one a routed (not merged) table reads."""
        return TableRef(self.ref.source_topic).name


def pipeline_table(path: str | os.PathLike[str], name: str, *, session: Session | None = None) -> PipelineTable:
    """The table ``name`` of the pipeline file at ``path`` (see the module's doc), with its settings."""
    spec = load_pipeline(path)
    ref = resolve_table(spec, name, session=session)
    return PipelineTable(spec, ref, spec.table_config(ref))


def resolve_table(spec: PipelineSpec, name: str, *, session: Session | None = None) -> TableRef:
    """The table of ``spec`` that ``name`` names (its ``schema.table`` or its topic); a ConfigError with the
    closest names when it names none, or several (the same ``schema.table`` under two topic prefixes)."""
    name = name.strip()
    if not name:
        raise ConfigError(f"{spec.origin}: --table is empty: give schema.table or the topic")
    if source_kind(spec) == "files" and not spec.routes:
        found = [t for t in _rendered(spec, name) if _folder_exists(spec, t, session)]
        if len(found) == 1:
            return TableRef(found[0])
    try:
        refs = _listed(spec, session)
    except TransientError as exc:
        # Kafka (or the database) is not there: a name the patterns render to one topic is taken as rendered.
        rendered = _rendered(spec, name) if source_kind(spec) == "kafka" and not spec.routes else []
        if len(rendered) != 1:
            raise
        log.warning("%s: %s; taking --table %s as topic %s, rendered from [source] tables", spec.origin, exc,
                    name, rendered[0])  # fmt: skip
        return TableRef(rendered[0])
    if spec.routes:
        refs, _ = spec.routed(refs)
    matches = [r for r in refs if name in (r.name, r.topic)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise ConfigError(
            f"{spec.origin}: {name} names {len(matches)} tables ({', '.join(r.topic for r in matches)}): "
            "give the topic with --table"
        )
    raise ConfigError(_unknown(spec, name, refs))


def pipeline_tables(spec: PipelineSpec, *, session: Session | None = None) -> list[TableRef]:
    """Every table ``hudi-cdc run`` replicates, by name: the source's tables as ``run`` discovers them,
    ``[[routes]]`` applied (a routed table by its target, a merged one with its shards), disabled ones and
    the targets a route refuses left out. A command over every table (``verify --pipeline``) takes these."""
    refs = [r for r in _listed(spec, session) if spec.enabled(r)]
    if spec.routes:
        refs = [r for r in spec.routed(refs)[0] if spec.enabled(r)]  # a target's own section may disable it
    return sorted(refs, key=lambda r: r.name)


def _unknown(spec: PipelineSpec, name: str, refs: list[TableRef]) -> str:
    names = sorted({r.name for r in refs})
    pool = sorted({r.topic for r in refs}) if name.count(".") >= 2 else names  # a topic is compared with topics
    close = difflib.get_close_matches(name, pool, n=3, cutoff=0.6)
    message = f"{spec.origin}: no table {name!r} among the pipeline's tables ([source] tables = "
    message += ", ".join(spec.source.tables) + ")"
    if close:
        message += f": did you mean {' or '.join(close)}?"
    shown = ", ".join(names[:20]) + (f" and {len(names) - 20} more" if len(names) > 20 else "")
    return message + f" Its tables: {shown or '(none found)'}."


def _rendered(spec: PipelineSpec, name: str) -> list[str]:
    """The folder names ``name`` can be without listing: itself, or each ``[source] tables`` pattern's fixed
    prefix (``dbserver1`` of ``dbserver1.inventory.*``) before a ``schema.table``; those the patterns take."""
    candidates = [name] if spec.source.matches(name) else []
    if name.count(".") == 1:
        for pattern in spec.source.tables:
            pieces = pattern.split(".")
            prefix = ".".join(pieces[:-2])
            if len(pieces) < 3 or any(c in prefix for c in "*?["):
                continue
            topic = f"{prefix}.{name}"
            if topic not in candidates and spec.source.matches(topic):
                candidates.append(topic)
    return candidates


def _folder_exists(spec: PipelineSpec, topic: str, session: Session | None) -> bool:
    """Whether the table's folder is there: a local path by the OS, any other URI through Hadoop (the session)."""
    path = str(spec.table_config(TableRef(topic)).source_path)  # the folder run reads, as run renders it
    local = _local(path)
    if local is not None:
        return os.path.isdir(local)
    if session is None:
        return False  # listed below, which says why it cannot
    from hudi_cdc._jvm import hadoop_conf, jvm

    spark = session()
    folder = jvm(spark).org.apache.hadoop.fs.Path(path)
    fs = folder.getFileSystem(hadoop_conf(spark))
    return bool(fs.exists(folder) and fs.getFileStatus(folder).isDirectory())


def _local(path: str) -> str | None:
    scheme = urlsplit(path).scheme
    if scheme == "file":
        return urlsplit(path).path
    return path if not scheme or len(scheme) == 1 else None  # a Windows drive letter is no scheme


def _listed(spec: PipelineSpec, session: Session | None) -> list[TableRef]:
    """The source's tables as ``run`` discovers them; only a files source off the local disk needs Spark."""
    from hudi_cdc.service.discovery import discover

    if source_kind(spec) == "files" and _local(_files_root(spec)) is None:
        if session is None:
            raise ConfigError(f"{spec.origin}: listing the folders of {_files_root(spec)} needs a Spark session")
        return discover(session(), spec)
    return discover(None, spec)  # Kafka, JDBC and a local folder are listed without Spark


def source_kind(spec: PipelineSpec) -> str:
    """``[source]``'s kind: kafka, files or jdbc (read under its new name ``source`` or its old one ``kind``)."""
    return str(getattr(spec.source, "source", None) or getattr(spec.source, "kind", ""))


def _files_root(spec: PipelineSpec) -> str:
    """A files source's folder of table folders (``source_path``, formerly ``path``)."""
    return str(getattr(spec.source, "source_path", None) or getattr(spec.source, "path", None))
