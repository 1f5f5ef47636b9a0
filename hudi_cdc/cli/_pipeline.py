"""``--pipeline FILE --table NAME``: how every per-table command names a pipeline's table.

One decorator adds both options and hands the command a :class:`TableOption`
(or None when the command was given its settings another way); its
:meth:`TableOption.resolve` finds the table as ``hudi-cdc run`` does and gives
its settings (:func:`hudi_cdc.ops.pipeline_table.pipeline_table`). Where a
command also takes the table's settings itself (``--target-base-path``,
an ingest's options), ``--pipeline``/``--table`` is the alternative, and
giving both is a usage error naming both.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import click
from click.core import ParameterSource

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from hudi_cdc.cli.wrappers import Invocation
    from hudi_cdc.ops.pipeline_table import PipelineTable, Session
    from hudi_cdc.service.spec import PipelineSpec, TableRef

__all__ = ["TABLE_HELP", "TableOption", "ingest_option_names", "lazy_session", "pipeline_table_options"]

TABLE_HELP = (
    "With --pipeline: the table, as schema.table (MySQL: database.table; a routed table: its target) or its "
    "topic (folder). Found as `hudi-cdc run` finds it: a files source renders the folder from [source] tables and "
    "checks it exists (no listing); Kafka lists the topics once; JDBC and [[routes]] list the source's tables. "
    "A name that matches no table is refused with the closest names."
)

_F = TypeVar("_F", bound=Callable[..., Any])


@dataclass
class TableOption:
    """What ``--pipeline``/``--table`` gave: the file, and the table's name (None: every table, where allowed)."""

    pipeline_file: str
    table: str | None
    legacy: bool = False
    """Named with a deprecated option (verify's ``--pipeline-topic``), which took the table's settings too."""

    def __post_init__(self) -> None:
        self._spec: PipelineSpec | None = None

    @property
    def spec(self) -> PipelineSpec:
        from hudi_cdc.service.spec import load_pipeline

        if self._spec is None:
            self._spec = load_pipeline(self.pipeline_file)
        return self._spec

    def resolve(self, session: Session | None = None) -> PipelineTable:
        """The table with its settings; ``session`` starts Spark if the source must be listed through Hadoop."""
        from hudi_cdc.ops.pipeline_table import resolve_table

        assert self.table is not None
        return self.settings(resolve_table(self.spec, self.table, session=session))

    def every(self, session: Session | None = None) -> list[TableRef]:
        """Every table of the pipeline, as ``run`` finds them (``--pipeline`` without ``--table``)."""
        from hudi_cdc.ops.pipeline_table import pipeline_tables

        return pipeline_tables(self.spec, session=session)

    def settings(self, ref: TableRef) -> PipelineTable:
        """The table ``ref`` with the settings ``run`` writes it with (a ConfigError when they are wrong)."""
        from hudi_cdc.ops.pipeline_table import PipelineTable

        return PipelineTable(self.spec, ref, self.spec.table_config(ref))


def ingest_option_names() -> frozenset[str]:
    """The parameter names of the ingest options (``config_options``), whatever that set holds today."""
    from hudi_cdc.cli._common import config_options

    probe = config_options(lambda **_: None)
    return frozenset(p.name for p in getattr(probe, "__click_params__", ()) if p.name)


def pipeline_table_options(
    *,
    alternative: Iterable[str] | Callable[[], Iterable[str]] = (),
    pipeline_required: bool = False,
    table_optional: bool = False,
    table_alone: str | None = None,
    table_help: str = TABLE_HELP,
    deprecated_table_flag: str | None = None,
) -> Callable[[_F], _F]:
    """Add ``--pipeline FILE`` and ``--table NAME``; the command gets ``pipeline_table: TableOption | None``.

    ``alternative``: the command's own parameters that name the table's settings; giving one of them with
    ``--pipeline`` is a usage error naming both. ``table_optional``: ``--pipeline`` alone means every table
    (``table`` is then None). ``table_alone``: the parameter ``--table`` fills when ``--pipeline`` is not
    given (verify's source table, as before ``--pipeline``). ``deprecated_table_flag``: an old flag that
    named the table with ``--pipeline`` and still does, with a warning naming ``--table``.
    """

    def decorate(body: _F) -> _F:
        @functools.wraps(body)
        def wrapper(*args: Any, **kwargs: Any) -> Any:  # noqa: ANN401 - the command's own
            pipeline_file: str | None = kwargs.pop("pipeline_file")
            table: str | None = kwargs.pop("table")
            old = kwargs.pop("_old_table_flag", None) if deprecated_table_flag else None
            ctx = click.get_current_context()
            legacy, alone = False, table if pipeline_file is None else None
            if old is not None:
                if table is not None and table_alone is None:
                    raise click.UsageError(f"{deprecated_table_flag} is the old name of --table: give one")
                click.echo(
                    f"hudi-cdc {ctx.info_name}: {deprecated_table_flag} is deprecated and goes in the next release: "
                    "use --table schema.table (or the topic)",
                    err=True,
                )
                alone, table, legacy = table, old, True  # the old form's --table kept its old meaning
            if table_alone is not None:
                kwargs[table_alone] = alone
            if pipeline_file is None:
                if legacy:
                    raise click.UsageError(f"{deprecated_table_flag} goes with --pipeline FILE")
                if table is not None and table_alone is None:
                    raise click.UsageError("--table names a table of --pipeline FILE: give --pipeline too")
                return body(*args, **kwargs, pipeline_table=None)
            if table is None and not table_optional:
                raise click.UsageError("--pipeline FILE goes with --table schema.table: which of its tables?")
            names = alternative() if callable(alternative) else alternative
            given = [n for n in names if n in ctx.params and ctx.get_parameter_source(n) in _GIVEN]
            if given and not legacy and (table is not None or not table_optional):
                flags = ", ".join(_flag(ctx, n) for n in sorted(given))
                raise click.UsageError(
                    f"--pipeline/--table and {flags} both name the table or its settings: give one "
                    f"(--pipeline --table takes them from {pipeline_file})"
                )
            return body(*args, **kwargs, pipeline_table=TableOption(pipeline_file, table, legacy))

        options = [
            click.option(
                "--pipeline",
                "pipeline_file",
                required=pipeline_required,
                type=click.Path(dir_okay=False),
                help="The pipeline file (TOML) whose table this is: its settings are the ones `hudi-cdc run` uses.",
            ),
            click.option("--table", "table", help=table_help),
        ]
        if deprecated_table_flag:
            options.append(
                click.option(deprecated_table_flag, "_old_table_flag", hidden=True, help="Deprecated: --table.")
            )
        decorated: Any = wrapper
        for option in reversed(options):
            decorated = option(decorated)
        return decorated  # type: ignore[no-any-return]

    return decorate


def lazy_session(run: Invocation) -> Callable[[], SparkSession]:
    """``run.session`` started at most once, when first asked for (a table's name may resolve without Spark)."""
    started: list[SparkSession] = []

    def session() -> SparkSession:
        if not started:
            started.append(run.session())
        return started[0]

    return session


_GIVEN = (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)


def _flag(ctx: click.Context, name: str) -> str:
    param = next((p for p in ctx.command.params if p.name == name), None)
    return max(param.opts, key=len) if param is not None and param.opts else f"--{name.replace('_', '-')}"
