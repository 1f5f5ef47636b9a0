"""``hudi-cdc connect``: the Kafka Connect connectors behind the tables, and the supervisor of failed tasks."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict

import click

from hudi_cdc.errors import HudiCdcError


@click.group()
def connect() -> None:
    """Kafka Connect: connector and task states; restart failed tasks (Connect never does)."""


@connect.command()
@click.option("--connect-url", required=True, help="Connect REST URL, e.g. http://connect:8083.")
@click.option("--connector", "names", multiple=True, help="Only this connector; repeatable.")
@click.option("--json", "as_json", is_flag=True, help="Print the states as one JSON array.")
def status(connect_url: str, names: tuple[str, ...], as_json: bool) -> None:
    """Each connector and task with its state; exit 1 when one is not RUNNING."""
    from hudi_cdc.upstream.connect import connector_states

    try:
        states = connector_states(connect_url, list(names) or None)
    except HudiCdcError as exc:
        click.echo(f"hudi-cdc: {'transient' if exc.transient else 'error'}: {exc}", err=True)
        sys.exit(75 if exc.transient else 2)
    if as_json:
        click.echo(json.dumps([{**asdict(s), "config": None, "running": s.running} for s in states], default=str))
    else:
        for state in states:
            click.echo(f"{state.name}: {state.state}" + (f" ({state.trace_head})" if state.trace_head else ""))
            for task in state.tasks:
                click.echo(f"  task {task.id}: {task.state}" + (f" ({task.trace_head})" if task.trace_head else ""))
    sys.exit(0 if all(s.running for s in states) else 1)


@connect.command()
@click.option("--connect-url", required=True, help="Connect REST URL, e.g. http://connect:8083.")
@click.option("--interval", type=float, default=10.0, show_default=True, help="Seconds between polls.")
@click.option("--max-backoff", type=float, default=300.0, show_default=True, help="Longest wait between restarts.")
@click.option("--connector", "names", multiple=True, help="Only this connector; repeatable.")
def supervise(connect_url: str, interval: float, max_backoff: float, names: tuple[str, ...]) -> None:
    """Forever: restart FAILED connectors and tasks, with backoff, logging each restart (SIGTERM stops it)."""
    from hudi_cdc.ops.connect import main

    argv = ["supervise", "--connect-url", connect_url, "--interval", str(interval), "--max-backoff", str(max_backoff)]
    for name in names:
        argv += ["--connector", name]
    sys.exit(main(argv))
