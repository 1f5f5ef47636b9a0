"""``hudi-cdc connect``: the Kafka Connect connectors behind the tables, and the supervisor of failed tasks."""

from __future__ import annotations

import json
import logging
import signal
import threading
from dataclasses import asdict

import click

from hudi_cdc.cli.wrappers import CANNOT_ANSWER, Invocation, OnFailure, command, stop_signals

# 1 is status's answer "a connector is not RUNNING": what stops either command is 2 (75 when a retry may fix it).
_CANNOT_RUN = OnFailure(terminal=CANNOT_ANSWER)


@click.group()
def connect() -> None:
    """Kafka Connect: connector and task states; restart failed tasks (Connect never does)."""


@connect.command()
@click.option("--connect-url", required=True, help="Connect REST URL, e.g. http://connect:8083.")
@click.option("--connector", "names", multiple=True, help="Only this connector; repeatable.")
@click.option("--json", "as_json", is_flag=True, help="Print the states as one JSON array.")
@command(_CANNOT_RUN)
def status(run: Invocation, connect_url: str, names: tuple[str, ...], as_json: bool) -> int:
    """Each connector and task with its state; exit 1 when one is not RUNNING."""
    from hudi_cdc.ops.connect import connector_states

    states = connector_states(connect_url, list(names) or None)
    if as_json:
        click.echo(json.dumps([{**asdict(s), "config": None, "running": s.running} for s in states], default=str))
    else:
        for state in states:
            click.echo(f"{state.name}: {state.state}" + (f" ({state.trace_head})" if state.trace_head else ""))
            for task in state.tasks:
                click.echo(f"  task {task.id}: {task.state}" + (f" ({task.trace_head})" if task.trace_head else ""))
    return 0 if all(s.running for s in states) else 1


@connect.command()
@click.option("--connect-url", required=True, help="Connect REST URL, e.g. http://connect:8083.")
@click.option("--interval", type=float, default=10.0, show_default=True, help="Seconds between polls.")
@click.option("--max-backoff", type=float, default=300.0, show_default=True, help="Longest wait between restarts.")
@click.option("--connector", "names", multiple=True, help="Only this connector; repeatable.")
@command(_CANNOT_RUN)
def supervise(run: Invocation, connect_url: str, interval: float, max_backoff: float, names: tuple[str, ...]) -> int:
    """Forever: restart FAILED connectors and tasks, with backoff, logging each restart (SIGTERM stops it).

    Its start line and summary are logged at info level: run it as `hudi-cdc -v connect supervise` to see them.
    """
    from hudi_cdc.ops.connect import supervise as supervise_connect

    stop = threading.Event()
    # systemd and stack/stop.sh send SIGTERM: finish the current cycle and exit 0.
    try:
        with stop_signals(stop.set, signal.SIGTERM):
            summary = supervise_connect(
                connect_url, interval_s=interval, names=list(names) or None, max_backoff_s=max_backoff, stop=stop
            )
    except KeyboardInterrupt:
        return 130
    logging.getLogger("hudi_cdc.connect").info("stopped after %d polls, %d restarts", summary.cycles, summary.restarts)
    return 0
