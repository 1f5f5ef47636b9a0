"""``hudi-cdc jvm-archive``: build the driver JVM's class-data archive, so one-shot runs start faster."""

from __future__ import annotations

import json
import time

import click

from hudi_cdc.cli.wrappers import Invocation, command


@click.command("jvm-archive", context_settings={"ignore_unknown_options": True})
@click.option("--remove", "drop", is_flag=True, help="Delete the archive for the current jars instead.")
@click.option("--status", "show", is_flag=True, help="Only say whether an archive fits the current jars.")
@click.option("--driver-memory", default="2g", show_default=True, help="The training run's driver memory.")
@click.argument("train", nargs=-1, type=click.UNPROCESSED)
@command()
def jvm_archive(run: Invocation, drop: bool, show: bool, driver_memory: str, train: tuple[str, ...]) -> None:
    """Build the class-data-sharing archive that a JVM hudi-cdc starts maps (about 1 minute, once per install).

    It is used by every later session hudi-cdc starts; for spark-submit, add
    --driver-java-options "$(hudi-cdc jars --java-options)". It fits only this
    Java, Spark, jars and hudi-cdc: build it again after an upgrade.
    HUDI_CDC_JVM_ARCHIVE=off leaves it unused; HUDI_CDC_CACHE_DIR moves it.

    By default it trains on generated files. `hudi-cdc jvm-archive -- ingest ARGS...`
    trains on one real round of that command instead (it commits like any round),
    and replaces an archive already there: a Kafka round's archive saved more
    (3.6 s against 3.1 s on a 1M-event Kafka round) than one trained on files.

    With Java 25 or later in JAVA_HOME it builds that JVM's AOT cache instead
    (-XX:AOTCacheOutput). Spark 3.5's own Hadoop client does not run there
    (Subject.getSubject): only a SPARK_HOME with a Hadoop client that does
    (3.4.3) can use it, and a table written so failed a later Java 17 commit
    (docs/benchmarks-rounds.md). Java 17 is the supported JVM.
    """
    from hudi_cdc import jars as jarmod
    from hudi_cdc import jvm_archive as archives
    from hudi_cdc.launcher import SCRIPT

    source = jarmod.resolve_jars()
    if drop:
        click.echo(json.dumps({"removed": archives.remove(source)}))
        return
    found = archives.archive_for(source)
    if show or (found is not None and not train):
        click.echo(json.dumps({"archive": str(found) if found else None, "built_now": False}))
        return
    started = time.monotonic()
    built = archives.build(source, train, launcher=SCRIPT, driver_memory=driver_memory)
    seconds = round(time.monotonic() - started, 1)
    click.echo(json.dumps({"archive": str(built), "built_now": True, "seconds": seconds}))
