"""``hudi-cdc jars``: where the Spark jars come from, and the spark-submit line that uses them; and
``hudi-cdc --version``: hudi-cdc's version and the Spark, Hudi and Java a session would run."""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from hudi_cdc.cli.wrappers import Invocation, command

if TYPE_CHECKING:
    from hudi_cdc.jars import JarSource

_F = TypeVar("_F", bound=Callable[..., Any])


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from hudi_cdc._version import __version__
    from hudi_cdc.jars import runtime_versions

    # Read from files (pyspark's metadata, the jar folder, the JDK's release file): no JVM starts.
    versions = runtime_versions()
    click.echo(f"hudi-cdc {__version__}")
    click.echo(f"Spark {versions['spark']}")
    click.echo(f"Hudi {versions['hudi']}")
    click.echo(f"Java {versions['java']}")
    ctx.exit()


def version_option() -> Callable[[_F], _F]:
    """``--version``, as click's ``version_option`` but with the versions a session would run beside ours."""
    return click.option(
        "--version",
        is_flag=True,
        expose_value=False,
        is_eager=True,
        callback=_print_version,
        help="Print hudi-cdc's version and the Spark, Hudi bundle and Java a session would run, and exit.",
    )


@click.command()
@click.option("--packages", "show", flag_value="packages", help="Print only the Maven coordinates, comma separated.")
@click.option(
    "--submit-args",
    "show",
    flag_value="submit-args",
    help="Print only the spark-submit arguments that put the jars on the classpath.",
)
@click.option("--launcher", "show", flag_value="launcher", help="Print only the path of the spark-submit script.")
@click.option(
    "--java-options",
    "show",
    flag_value="java-options",
    help="Print only the driver's JVM options for spark-submit's --driver-java-options: hudi-cdc's own, and "
    "those that map `hudi-cdc jvm-archive`'s archive if there is one.",
)
@click.option(
    "--executor-java-options",
    "show",
    flag_value="executor-java-options",
    help="Print only the executors' JVM options (on a cluster, for spark.executor.defaultJavaOptions).",
)
@click.option(
    "--fetch",
    "fetch_dir",
    type=click.Path(file_okay=False),
    help="Resolve the coordinates with Spark's Ivy and copy the jars into this folder (for air-gapped clusters).",
)
@click.option("--json", "as_json", is_flag=True, help="Print everything as one JSON object.")
@command()
def jars(run: Invocation, show: str | None, fetch_dir: str | None, as_json: bool) -> None:
    """Where hudi-cdc's Spark jars come from, and the spark-submit line that uses them."""
    from hudi_cdc import jars as jarmod
    from hudi_cdc import jvm_archive
    from hudi_cdc._jvm import EXECUTOR_OPTIONS_KEY, jvm_conf, jvm_options
    from hudi_cdc.launcher import SCRIPT

    if fetch_dir:
        fetched = jarmod.fetch_jars(fetch_dir)
        click.echo(f"{len(fetched)} jars in {fetch_dir}; use them with {jarmod.JARS_DIR_ENV}={fetch_dir}", err=True)
    source = jarmod.resolve_jars()
    submit = " ".join(shlex.quote(a) for a in source.submit_args())

    def java_options() -> str:
        archive = jvm_archive.archive_for(source)
        return " ".join(filter(None, [jvm_options(), jvm_archive.java_options(archive) if archive else ""]))

    coordinates = jarmod.packages()
    if show == "packages":
        click.echo(",".join(coordinates))
    elif show == "submit-args":
        click.echo(submit)
    elif show == "launcher":
        click.echo(str(SCRIPT))
    elif show == "java-options":
        click.echo(java_options())
    elif show == "executor-java-options":
        click.echo(jvm_options())
    elif as_json:
        info = {
            "source": source.kind,
            "folder": source.folder,
            "jars": list(source.jars),
            "packages": list(coordinates),
            "own_jars": jarmod.own_jars(source),
            "s3a": list(source.s3a),
            "submit_args": source.submit_args(),
            "launcher": str(SCRIPT),
            "java_options": java_options(),
            "executor_java_options": jvm_options(),
        }
        click.echo(json.dumps(info, sort_keys=True))
    else:
        _describe(source, coordinates)
        click.echo("spark-submit:")
        click.echo(f'  PYSPARK_PYTHON="$(command -v python)" spark-submit {submit} \\')
        driver = java_options()  # once: finding the archive hashes every Spark jar's size and time
        if driver:
            click.echo(f"    --driver-java-options {shlex.quote(driver)} \\")
        executor = jvm_conf().get(EXECUTOR_OPTIONS_KEY)
        if executor:
            click.echo(f"    --conf {shlex.quote(f'{EXECUTOR_OPTIONS_KEY}={executor}')} \\")
        click.echo(f"    {shlex.quote(str(SCRIPT))} ingest ...")


def _describe(source: JarSource, coordinates: Sequence[str]) -> None:
    """Where a session's jars come from, which of hudi-cdc's own jars are there (and what is off without one),
    the s3a connector and the Maven coordinates, for a reader."""
    from hudi_cdc import jars as jarmod

    def origin(path: str) -> str:
        if Path(path).parent == jarmod.packaged_folder():
            return "from the wheel"
        if source.folder == os.environ.get(jarmod.JARS_DIR_ENV):
            return f"from {jarmod.JARS_DIR_ENV}"
        return "from the checkout's `make jars`"

    where = f"the jars in {source.folder}" if source.kind == "folder" else "Maven coordinates Spark resolves"
    click.echo(f"A session hudi-cdc builds uses {where}.")
    click.echo("hudi-cdc's own jars:")
    own = jarmod.own_jars(source)
    for name, path in own.items():
        if path:
            click.echo(f"  {name}: {path} ({origin(path)})")
        else:
            lacks = (
                "Hudi's Java write client (hudi-java-client-*.jar) is not beside it"
                if any(Path(j).name == name for j in source.jars)
                else "missing"
            )
            click.echo(f"  {name}: {lacks}, so this faster path is off: {jarmod.OWN_JARS[name]}")
    if not all(own.values()):
        click.echo(
            "  (`make jars` builds them in a checkout; the wheel `make wheel` builds carries them, "
            "a wheel built without them does not)"
        )
    if source.s3a:
        click.echo("Hadoop's s3a connector (s3a:// tables): " + ", ".join(source.s3a))
    else:
        click.echo(f"Hadoop's s3a connector (s3a:// tables): none (`make jars`; {jarmod.S3A_ENV}=off leaves it out)")
    click.echo("Maven coordinates:")
    for coordinate in coordinates:
        click.echo(f"  {coordinate}")
