"""``hudi-cdc pause|resume|remove``: steer one table of a running pipeline; the others go on."""

from __future__ import annotations

import click

from hudi_cdc.errors import HudiCdcError


def _command(name: str, doc: str) -> click.Command:
    @click.command(name=name, help=doc)
    @click.option(
        "--pipeline", "pipeline_file", required=True, type=click.Path(dir_okay=False), help="The pipeline file."
    )
    @click.argument("tables", nargs=-1, required=True)
    def command(pipeline_file: str, tables: tuple[str, ...]) -> None:
        from hudi_cdc import service

        try:
            spec = service.load_pipeline(pipeline_file)
            for table in tables:
                getattr(service, name)(spec, table)
                click.echo(f"{table}: {name} asked for ({spec.run.state_dir}/control)")
        except HudiCdcError as exc:
            raise click.ClickException(str(exc)) from None

    return command


pause = _command("pause", "Start no new round of these tables (a round under way finishes).")
resume = _command("resume", "Undo pause or remove, and retry a failed table; it continues from its checkpoint.")
remove = _command("remove", "Stop replicating these tables; their Hudi tables and checkpoints stay.")
