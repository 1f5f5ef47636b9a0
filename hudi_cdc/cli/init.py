"""``hudi-cdc init``: write a commented pipeline file from a Connect connector, a database or a folder."""

from __future__ import annotations

from pathlib import Path

import click

from hudi_cdc.cli._common import password_options, split_list
from hudi_cdc.cli.wrappers import Invocation, command
from hudi_cdc.errors import ConfigError


@click.command()
@click.option("--connect-url", help="Kafka Connect's REST API, e.g. http://connect:8083 (with --connector).")
@click.option("--connector", help="The Debezium connector whose tables to take (with --connect-url).")
@click.option("--bootstrap-servers", help="With --connector: the Kafka brokers it writes to (Connect does not say).")
@click.option("--jdbc-url", help="A database's tables, e.g. jdbc:postgresql://db:5432/shop (no password in it).")
@click.option("--jdbc-user", help="With --jdbc-url: the user.")
@password_options
@click.option("--source-path", help="A folder of change files, one folder per table named like its topic.")
@click.option(
    "--flavor",
    type=click.Choice(["postgres", "mysql", "sqlserver", "oracle"]),
    default="postgres",
    show_default=True,
    help="With --source-path: the database the events come from.",
)
@click.option(
    "--target-base-path-template",
    help="Where each Hudi table goes, with {topic} {server} {schema} {table} "
    "(default: lake/{schema}/{table} beside the output file).",
)
@click.option("--target-table-template", default="{schema}_{table}", show_default=True, help="Each Hudi table's name.")
@click.option("--record-key-fields", help="The key column(s) of every table, comma separated (files carry none).")
@click.option("--name", help="The pipeline's name (default: the output file's name, else the connector's or 'cdc').")
@click.option("--output", "-o", type=click.Path(dir_okay=False), help="Write here (default: print it).")
@click.option("--force", is_flag=True, help="Overwrite --output if it exists.")
@command()
def init(
    run: Invocation,
    connect_url: str | None,
    connector: str | None,
    bootstrap_servers: str | None,
    jdbc_url: str | None,
    jdbc_user: str | None,
    password_file: str | None,
    password_env: str | None,
    source_path: str | None,
    flavor: str,
    target_base_path_template: str | None,
    target_table_template: str,
    record_key_fields: str | None,
    name: str | None,
    output: str | None,
    force: bool,
) -> None:
    """Write a commented pipeline file listing every table found, for `hudi-cdc validate` and `run`.

    From one of: a running Kafka Connect connector (--connect-url URL --connector NAME: the topics it writes),
    a database (--jdbc-url: its tables and primary keys), or a folder of change files (--source-path DIR).
    Each table gets a commented-out section of its own. Then: hudi-cdc validate --pipeline FILE.
    """
    from hudi_cdc.ops import init_pipeline as found_in

    given = [f for f, v in (("--connector", connector), ("--jdbc-url", jdbc_url), ("--source-path", source_path)) if v]
    if len(given) != 1:
        raise ConfigError(
            "say where the tables are: one of --connect-url URL --connector NAME, --jdbc-url URL or --source-path DIR"
            + (f" (given: {', '.join(given)})" if given else "")
        )
    if bool(connect_url) != bool(connector):
        raise ConfigError("--connect-url and --connector go together")
    out = Path(output) if output else None
    if out is not None and out.exists() and not force:
        raise ConfigError(f"{out} exists: pass --force to overwrite it, or another --output")
    if connector and connect_url:
        found = found_in.from_connect(connect_url, connector, bootstrap_servers=bootstrap_servers)
    elif jdbc_url:
        found = found_in.from_database(jdbc_url, user=jdbc_user, password_file=password_file, password_env=password_env)
    else:
        assert source_path is not None
        found = found_in.from_folder(source_path, flavor=flavor)
    base = target_base_path_template
    if base is None:
        beside = (out.resolve().parent if out is not None else Path.cwd()) / "lake"
        base = f"{beside}/{{schema}}/{{table}}"
    text = found_in.pipeline_text(
        found,
        name=name or (out.stem if out is not None else connector or "cdc"),
        target_base_path=base,
        target_table=target_table_template,
        record_key_fields=split_list(record_key_fields),
    )
    if out is None:
        click.echo(text, nl=False)
        return
    out.write_text(text)
    click.echo(f"{out}: {len(found.tables)} table(s) from {found.where}; next: hudi-cdc validate --pipeline {out}",
               err=True)  # fmt: skip
