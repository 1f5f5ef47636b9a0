"""``hudi-cdc config show``: a table's effective settings, each with its value (secrets redacted) and its origin.

``--pipeline FILE --table schema.table`` shows what ``hudi-cdc run`` gives that
table; without ``--pipeline``, the ingest command line given (``--config FILE``,
flags, ``HUDI_CDC__*``) shows what ``hudi-cdc ingest`` would run with. The
origin is ``default``, the file and its section (``[defaults]``,
``[tables."pattern"]``, ``[source]``, ``[catalog]``, ``[lineage]``), an
environment variable, or a flag. Nothing is written and no Spark starts (unless
the table's folder is on a Hadoop file system, to find it).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import click

from hudi_cdc.cli._common import config_options
from hudi_cdc.cli._pipeline import TableOption, ingest_option_names, lazy_session, pipeline_table_options
from hudi_cdc.cli.wrappers import Invocation, OnFailure, command

if TYPE_CHECKING:
    from hudi_cdc.config import IngestConfig

__all__ = ["config"]


@click.group("config")
def config() -> None:
    """A table's settings: what each is, and where it comes from."""


@config.command("show")
@config_options
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object: every setting's value and origin.")
@pipeline_table_options(alternative=ingest_option_names)
@command(OnFailure("hudi-cdc config show"))
def show(
    run: Invocation,
    props_file: str | None,
    config_file: str | None,
    hoodie_conf: tuple[str, ...],
    as_json: bool,
    pipeline_table: TableOption | None,
    **kw: Any,
) -> None:
    """Print every setting of a table with its value and where it came from: the built-in default, the file
    and its section, an environment variable or a flag (later wins: defaults, the file, HUDI_CDC__*, flags).

    A pipeline's table (--pipeline FILE --table schema.table) shows the sections that apply, weakest first:
    patterns in the file's order, then the table's exact name. Without --pipeline, an ingest's command line.
    """
    if pipeline_table is not None:
        table = pipeline_table.resolve(lazy_session(run))
        spec, ref = table.spec, table.ref
        settings, origins = spec.table_config_with_origins(ref)
        head: dict[str, Any] = {
            "pipeline": spec.name,
            "file": spec.origin,
            "table": ref.name,
            "topic": ref.topic,
            "sections": [s.key for s in spec.sections_for(ref)],
        }
    else:
        settings, origins = _ingest(props_file, config_file, hoodie_conf, kw)
        head = {"table": settings.target_table, "file": config_file}
    shown = effective(settings, origins)
    if as_json:
        click.echo(json.dumps({**head, "settings": shown}, sort_keys=True, default=str))
        return
    for line in _lines(head, shown):
        click.echo(line)


def _ingest(
    props_file: str | None, config_file: str | None, hoodie_conf: tuple[str, ...], options: dict[str, Any]
) -> tuple[IngestConfig, dict[str, str]]:
    from hudi_cdc.cli._common import options_config_with_origins

    return options_config_with_origins(props_file, config_file, hoodie_conf, options)


def effective(settings: IngestConfig, origins: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    """Every declared setting of ``settings``: its value as the declaration shows it (a secret redacted) and its
    origin (``default`` when nothing set it); ``hoodie_conf``'s origin is by key when known."""
    from hudi_cdc.config import IngestConfig
    from hudi_cdc.settings import declared

    out: dict[str, dict[str, Any]] = {}
    for d in declared(IngestConfig):
        value = getattr(settings, d.name)
        if d.meta.redact is not None and value:
            value = d.meta.redact(value)
        if isinstance(value, Mapping):
            value = dict(value)
        elif isinstance(value, tuple):
            value = list(value)
        origin: Any = origins.get(d.name, "default")
        if d.name == "hoodie_conf" and value:
            origin = {k: origins.get(f"hoodie_conf.{k}", origins.get("hoodie_conf", "default")) for k in value}
        out[d.name] = {"value": value, "origin": origin}
    return out


def _lines(head: Mapping[str, Any], shown: Mapping[str, Mapping[str, Any]]) -> list[str]:
    if "pipeline" in head:
        lines = [f"{head['table']} (topic {head['topic']}) of pipeline {head['pipeline']} ({head['file']})"]
        sections = ", ".join(f'[tables."{k}"]' for k in head["sections"]) or "none"
        lines.append(f"its sections, weakest first (later wins, the exact name last): {sections}")
    else:
        lines = [f"{head['table']}: the ingest settings" + (f" of {head['file']}" if head["file"] else "")]
    rows: list[tuple[str, str, str]] = []
    for name, entry in shown.items():
        value, origin = entry["value"], entry["origin"]
        if isinstance(origin, Mapping):  # hoodie_conf, key by key
            rows += [(f'{name}."{k}"', json.dumps(v), origin[k]) for k, v in value.items()]
        else:
            rows.append((name, json.dumps(value, default=str), origin))
    width = max(len(r[0]) for r in rows)
    value_width = min(max(len(r[1]) for r in rows), 40)
    return [*lines, "", *(f"{n:<{width}} = {v:<{value_width}}  # {o}" for n, v, o in rows)]
