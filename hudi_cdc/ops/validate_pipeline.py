"""``hudi-cdc validate --pipeline``: the preflight checks of every table of a pipeline file, each with its own settings.

The tables are the ones ``hudi-cdc run`` would replicate: the source's
tables that match ``[source] tables``, less the excluded and the disabled
ones, each with the settings :meth:`PipelineSpec.table_config` gives it. Each
gets the report :func:`hudi_cdc.ops.validate.validate` makes for one table; a
problem of the pipeline itself (the source cannot be listed, no table
matches) is a check of its own, so it is reported beside them, never raised;
a section of the file that matches no table is refused as ``run`` refuses it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hudi_cdc.errors import ConfigError, HudiCdcError
from hudi_cdc.ops.validate import Check, ValidationReport, validate
from hudi_cdc.service.spec import PipelineSpec, TableRef, select

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from hudi_cdc.upstream.database import SourceDatabase

__all__ = ["PipelineValidation", "TableValidation", "validate_pipeline"]


@dataclass(frozen=True)
class TableValidation:
    name: str
    """The pipeline's name for the table (``schema.table``), as in ``run``, ``status`` and ``--tables``."""
    topic: str
    target_base_path: str | None
    target_table: str | None
    report: ValidationReport

    def to_dict(self) -> dict[str, Any]:
        where = {"topic": self.topic, "target_base_path": self.target_base_path, "target_table": self.target_table}
        return {**where, **self.report.to_dict()}


@dataclass(frozen=True)
class PipelineValidation:
    pipeline: str
    tables: tuple[TableValidation, ...]
    problems: tuple[Check, ...] = ()
    """Checks of the pipeline as a whole: listing the source's tables."""

    @property
    def ok(self) -> bool:
        """No check failed, of the pipeline or of any table."""
        return not any(c.status == "fail" for c in self.problems) and all(t.report.ok for t in self.tables)

    @property
    def failed(self) -> list[str]:
        return [t.name for t in self.tables if not t.report.ok]

    def to_dict(self) -> dict[str, Any]:
        return {
            "pipeline": self.pipeline,
            "ok": self.ok,
            "problems": [c.to_dict() for c in self.problems],
            "tables": {t.name: t.to_dict() for t in self.tables},
        }


def validate_pipeline(
    spec: PipelineSpec,
    *,
    spark: SparkSession | None = None,
    database: SourceDatabase | None = None,
    connect_url: str | None = None,
    connector: str | None = None,
    tables: Sequence[str] = (),
) -> PipelineValidation:
    """Run the preflight checks of each table of ``spec`` (or of the ``tables`` named); never raises for a problem.

    ``database`` and ``connect_url`` are the source database and Kafka Connect
    every table's checks ask (a pipeline reads one database). Raises
    :class:`ConfigError` only when ``tables`` names a table the source does not have, or when a
    ``[tables."…"]`` section matches no table of the source (:meth:`PipelineSpec.check_sections`, which
    ``run`` applies too).
    """
    refs, problems = _tables(spec, spark, () if spec.routes else tables)
    refs, routing = _routes(spec, refs)
    problems = (*problems, *routing)
    if spec.routes and tables:  # names of targets, after routing
        refs = select(refs, tables)
    targets: dict[str, str] = {}
    results = []
    for ref in refs:
        read = ", ".join(ref.shards) or ref.topic  # a routed table's source tables
        try:
            config = spec.table_config(ref)
        except ConfigError as exc:
            failed = Check(
                "pipeline.table_settings", "fail", str(exc), f"correct it in [tables.{ref.name!r}] or [defaults]"
            )
            results.append(TableValidation(ref.name, read, None, None, ValidationReport((failed,))))
            continue
        report = validate(config, spark=spark, database=database, connect_url=connect_url, connector=connector)
        other = targets.setdefault(config.target_base_path, ref.name)
        if other != ref.name:  # the runner refuses the second table: say so before it does
            clash = Check(
                "pipeline.target",
                "fail",
                f"tables {other} and {ref.name} would both write {config.target_base_path}",
                "put {schema} and {table} in target_base_path",
            )
            report = ValidationReport((clash, *report.checks))
        results.append(TableValidation(ref.name, read, config.target_base_path, config.target_table, report))
    return PipelineValidation(spec.name, tuple(results), problems)


def _tables(
    spec: PipelineSpec, spark: SparkSession | None, wanted: Sequence[str]
) -> tuple[list[TableRef], tuple[Check, ...]]:
    """The tables ``run`` would replicate, and a failed check when the source cannot say which they are."""
    from hudi_cdc.service.discovery import discover

    patterns = ", ".join(spec.source.tables)
    try:
        found = discover(spark, spec)
    except HudiCdcError as exc:
        # The names the file spells out still get their checks (which say why the source did not answer).
        exact = [TableRef(p) for p in spec.source.tables if not _is_pattern(p) and spec.source.matches(p)]
        exact = [r for r in exact if spec.enabled(r) and (not wanted or r.name in wanted or r.topic in wanted)]
        reason = f"cannot list the source's tables ({exc})"
        fix = "make the source reachable" + ("; the tables the file names exactly are checked below" if exact else "")
        return exact, (Check("pipeline.tables", "fail", reason, fix, transient=exc.transient, error=exc),)
    spec.check_sections(found)  # as run does: a section that matches no table is refused, before any check
    found = [r for r in found if spec.enabled(r)]
    refs = select(sorted(found, key=lambda r: r.name), wanted)
    if not refs:
        fix = "check [source] tables and exclude against the source's topics (or folders, or tables)"
        return [], (
            Check("pipeline.tables", "fail", f"no table of the source matches [source] tables = {patterns}", fix),
        )
    listed = f"{len(refs)} table(s) match [source] tables = {patterns}: {', '.join(r.name for r in refs)}"
    return refs, (Check("pipeline.tables", "ok", listed),)


def _routes(spec: PipelineSpec, refs: list[TableRef]) -> tuple[list[TableRef], tuple[Check, ...]]:
    """The tables after ``[[routes]]`` (docs/routing.md): which source goes to which target, and each refused
    target (two sources into one without shard columns, a template that renders no valid name) as a failed check."""
    if not spec.routes:
        return refs, ()
    routed, refused = spec.routed(refs)
    routed = [r for r in routed if spec.enabled(r)]  # a target's own section may disable it, as run does
    lines = []
    for ref in routed:
        if ref.route is None:
            continue
        kind = "merged" if ref.merged else "renamed"
        if ref.merged:
            assert ref.route is not None
            unique = ref.route.unique_keys
            key = "keys unique across shards" if unique else "keyed by " + ", ".join(ref.route.key_columns())
            kind = f"merged, {key}"
        lines.append(f"{', '.join(ref.shards)} -> {ref.name} ({kind})")
    checks = [Check("pipeline.routes", "ok", "; ".join(lines) or "no source table matches a route")]
    fix = "correct [[routes]] in the pipeline file (docs/routing.md)"
    checks += [Check("pipeline.routes", "fail", message, fix) for _, message in sorted(refused.items())]
    return routed, tuple(checks)


def _is_pattern(name: str) -> bool:
    return any(c in name for c in "*?[")
