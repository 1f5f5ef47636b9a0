"""``hudi-cdc validate``: preflight checks before the first ingest, and the cheap ones every ingest runs first.

Each check is a small function that returns an outcome (ok, warn, fail, skip)
with what it found, where, and how to fix a problem; a problem the check is
there to find is never raised. A check whose input was not given (no database
URL, no Connect URL, no Spark session) is ``skip``, saying what to pass.

Checks share one context so each service is asked once: the Kafka watermarks,
the connector's state, the database connection, the table's checkpoint. When
one of those cannot be had, the first check that needed it fails with the
reason and the later ones are skipped pointing at it.

The checks live in one module per area (:mod:`~hudi_cdc.checks.environment`,
:mod:`~hudi_cdc.checks.target`, :mod:`~hudi_cdc.checks.files`,
:mod:`~hudi_cdc.checks.kafka`, :mod:`~hudi_cdc.checks.formats`,
:mod:`~hudi_cdc.checks.connect`, :mod:`~hudi_cdc.checks.postgres`,
:mod:`~hudi_cdc.checks.jdbc`, :mod:`~hudi_cdc.checks.catalog`); this module says which of them run for a
table's settings, in what order, and turns their outcomes into the report.

``cheap=True`` runs only what an ingest round asks anyway (the existing
table's config, the target writable, the topic's existence): it is what
:func:`hudi_cdc.pipeline.run` calls before its first round.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from hudi_cdc.checks import catalog, connect, environment, files, formats, jdbc, kafka, postgres, shape, target, types
from hudi_cdc.checks.kit import Check, Status, ValidationReport, _Context, _Outcome, _Skip
from hudi_cdc.config import IngestConfig
from hudi_cdc.errors import ConfigError, HudiCdcError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from hudi_cdc.upstream.database import SourceDatabase

__all__ = ["Check", "Status", "ValidationReport", "preflight", "validate"]

log = logging.getLogger("hudi_cdc")

_CheckFn = Callable[[_Context], _Outcome]


def _plan(config: IngestConfig, cheap: bool) -> Iterator[tuple[str, _CheckFn]]:
    """``(name, check)`` in order; an earlier check owns the inputs later ones reuse."""
    if cheap:
        yield "target.table_config", target.check_table_config
        yield "target.writable", target.check_target_writable
        if config.source == "kafka":
            yield "kafka.topic", kafka.check_topic
        return
    yield "env.java", environment.check_java
    yield "env.jars", environment.check_jars
    yield "target.writable", target.check_target_writable
    yield "target.table_config", target.check_table_config
    yield "target.checkpoint", target.check_checkpoint
    if config.catalog != "none":  # the catalog the table is synced to (issue 45)
        yield "catalog.metastore", catalog.check_metastore
        yield "catalog.database", catalog.check_catalog_database
        yield "catalog.table", catalog.check_catalog_table
    if config.source == "jdbc":
        yield "jdbc.relation", jdbc.check_jdbc_relation
        yield "jdbc.cursor_index", jdbc.check_jdbc_cursor_index
        yield "jdbc.primary_key", jdbc.check_jdbc_primary_key
        return  # no connector, topic or replication slot: the database is read as it is
    if config.source == "files":
        yield "files.folder", files.check_files_folder
        yield "files.decode", files.check_files_decode
        yield "files.envelope", files.check_files_envelope
    else:
        yield "kafka.topic", kafka.check_topic
        yield "kafka.retention", kafka.check_retention
    if config.source == "kafka" and config.kafka_value_format == "json":
        yield "kafka.json_messages", formats.check_json_messages
        yield "connect.connector", connect.check_connector
        yield "connect.converter", formats.check_json_converter
    else:
        if config.source == "kafka":
            yield "registry.subjects", kafka.check_registry
            yield "registry.key_schema", kafka.check_key_schema
            yield "registry.value_schema", kafka.check_value_schema
        yield "connect.connector", connect.check_connector
        yield "connect.converter", connect.check_converter
    if config.kafka_value_format == "avro":
        yield "shape.transforms", lambda ctx: shape.check_transforms(ctx, _envelope_schema)
        yield "types.mappings", lambda ctx: types.check_type_mappings(ctx, _envelope_schema)
    yield "connect.decimal_handling", connect.check_decimal_mode
    yield "connect.time_precision", connect.check_time_mode
    yield "connect.tombstones", connect.check_tombstones
    yield "postgres.wal_level", postgres.check_wal_level
    yield "postgres.slot", postgres.check_slot
    yield "postgres.publication", postgres.check_publication
    yield "postgres.replica_identity", postgres.check_replica_identity
    yield "postgres.primary_key", postgres.check_primary_key


def _envelope_schema(ctx: _Context) -> tuple[str, dict[str, Any]] | None:
    """The source's newest envelope schema (a file's writer schema, the registry's newest value schema)."""
    if ctx.config.source == "files":
        return next(((p, s) for p, s in files._writer_schemas(ctx) if not isinstance(s, str)), None)
    ids = ctx.subjects().get("value")
    return (f"{ctx.config.topic}-value", ctx.registry().schema(ids[-1])) if ids else None


def _run(name: str, fn: _CheckFn, ctx: _Context) -> Check:
    try:
        outcome = fn(ctx)
    except _Skip as skip:
        return Check(name, "skip", skip.detail, skip.fix)
    except HudiCdcError as exc:
        if id(exc) in ctx.blamed:
            return Check(name, "skip", f"not checked: {ctx.blamed[id(exc)]} failed")
        ctx.blamed[id(exc)] = name
        return Check(name, "fail", str(exc), None, transient=exc.transient, error=exc)
    except Exception as exc:  # a bug or an unforeseen reply must not hide the other checks
        from hudi_cdc._jvm import java_message

        log.debug("check %s failed unexpectedly", name, exc_info=True)
        return Check(name, "fail", f"the check itself failed: {java_message(exc)}", error=exc)
    return Check(name, outcome.status, outcome.detail, outcome.fix)


def validate(
    config: IngestConfig,
    *,
    spark: SparkSession | None = None,
    database: SourceDatabase | None = None,
    connect_url: str | None = None,
    connector: str | None = None,
    source_table: str | None = None,
    cheap: bool = False,
) -> ValidationReport:
    """Run the preflight checks for one table; never raises for a problem it finds.

    ``source_table`` (``schema.table``) names the database table when the
    topic (or folder) is not named ``<prefix>.<schema>.<table>``.
    """
    ctx = _Context(config, spark, database, connect_url, connector, source_table)
    try:
        return ValidationReport(tuple(_run(name, fn, ctx) for name, fn in _plan(config, cheap)))
    finally:
        ctx.close()


def preflight(config: IngestConfig, *, spark: SparkSession) -> ValidationReport:
    """The cheap checks an ingest runs before its first round.

    Raises :class:`ConfigError` listing what failed; a service that did not
    answer raises its own (transient) error, as the round itself would.
    Warnings are logged.
    """
    report = validate(config, spark=spark, cheap=True)
    for warning in report.warnings:
        log.warning("%s: %s", warning.name, warning.detail)
    terminal = [c for c in report.failed if not c.transient]
    if terminal:
        raise ConfigError(
            "preflight failed, nothing read or written: "
            + "; ".join(f"{c.name}: {c.detail}" + (f" (fix: {c.fix})" if c.fix else "") for c in terminal)
        )
    transient = next((c.error for c in report.failed if c.error is not None), None)
    if transient is not None:
        raise transient
    return report
