"""``hudi-cdc pause|resume|remove``: steer one table of a running pipeline; the others go on."""

from __future__ import annotations

import click

from hudi_cdc.cli.wrappers import Invocation, OnFailure, command

# click's own "Error: ..." line, as these commands printed before they ran in the wrapper.
_ERROR = OnFailure("Error", kinds=False)


def _command(name: str, doc: str) -> click.Command:
    @click.command(name=name, help=doc)
    @click.option(
        "--pipeline", "pipeline_file", required=True, type=click.Path(dir_okay=False), help="The pipeline file."
    )
    @click.argument("tables", nargs=-1, required=True)
    @command(_ERROR)
    def steer(run: Invocation, pipeline_file: str, tables: tuple[str, ...]) -> None:
        from hudi_cdc import service

        spec = service.load_pipeline(pipeline_file)
        for table in tables:
            base_path = getattr(service, name)(spec, table)
            click.echo(
                f"{table}: {name} asked for ({spec.run.state_dir}/control and {base_path}/.hudi_cdc/control: "
                "every runner of the pipeline)"
            )

    return steer


pause = _command("pause", "Start no new round of these tables (a round under way finishes).")
resume = _command("resume", "Undo pause or remove, and retry a failed table; it continues from its checkpoint.")
remove = _command("remove", "Stop replicating these tables; their Hudi tables and checkpoints stay.")
