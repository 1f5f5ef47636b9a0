"""``hudi-cdc`` command line: one module per command. Flag names follow HoodieStreamer's where one exists."""

from __future__ import annotations

import logging
import sys

import click

from hudi_cdc.cli.bootstrap import bootstrap
from hudi_cdc.cli.compact import compact
from hudi_cdc.cli.config_cmd import config
from hudi_cdc.cli.connect import connect
from hudi_cdc.cli.control import pause, remove, resume
from hudi_cdc.cli.ingest import ingest
from hudi_cdc.cli.init import init
from hudi_cdc.cli.jars import jars, version_option
from hudi_cdc.cli.jvm_archive import jvm_archive
from hudi_cdc.cli.quarantine import quarantine
from hudi_cdc.cli.run import run
from hudi_cdc.cli.status import status
from hudi_cdc.cli.tombstones import tombstones
from hudi_cdc.cli.validate import validate
from hudi_cdc.cli.verify import verify
from hudi_cdc.console import route_kafka_log

__all__ = ["ingest", "main"]


@click.group()
@version_option()
@click.option("-v", "--verbose", count=True, help="More log output, Spark's included (-v info, -vv debug).")
@click.pass_context
def main(ctx: click.Context, verbose: int) -> None:
    """Replicate relational tables into Apache Hudi from Debezium change events."""
    level = logging.WARNING if verbose == 0 else logging.INFO if verbose == 1 else logging.DEBUG
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    for handler in logging.getLogger().handlers:
        handler.setLevel(level)  # a progress line may lower hudi_cdc's logger level; the terminal keeps this one
    # librdkafka's lines: on the terminal with -v; else in the run's log file once a command names one (jvm_log)
    route_kafka_log(None, terminal=verbose > 0)
    ctx.obj = {"verbose": verbose}


for _command in (
    ingest,
    compact,
    run,
    status,
    pause,
    resume,
    remove,
    quarantine,
    tombstones,
    jars,
    jvm_archive,
    verify,
    validate,
    connect,
    bootstrap,
    init,
):
    main.add_command(_command)
main.add_command(config)
