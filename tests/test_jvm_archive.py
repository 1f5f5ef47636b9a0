"""``hudi-cdc jvm-archive``: a real training round dumps the archive, a new JVM maps it, a torn one is left alone."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from hudi_cdc._jvm import jvm_options
from hudi_cdc.cli import main

pytestmark = pytest.mark.spark

# A JVM hudi-cdc starts: which archive options it got, and how much class data it mapped (jcmd VM.info).
PROBE = """
import json, re, subprocess
import hudi_cdc
spark = hudi_cdc.spark_session()
runtime = spark._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
info = subprocess.run(["jcmd", str(runtime.getPid()), "VM.info"], capture_output=True, text=True).stdout
mapped = re.search(r"CDS archive\\(s\\) mapped at: .*?size (\\d+)", info)
print(json.dumps({
    "options": [a for a in runtime.getInputArguments() if "SharedArchiveFile" in a or "AOTCache" in a],
    "mapped": int(mapped.group(1)) if mapped else 0,
    "rows": spark.range(3).count(),
}))
"""


def _cli(*args: str) -> dict:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output.strip().splitlines()[-1])


def _probe(env: dict[str, str]) -> dict:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    # Nothing but our line on stdout: a JVM that cannot use an archive must not say so there (--json).
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 1, done.stdout
    return json.loads(lines[0])


@pytest.mark.hudi
def test_an_archive_trains_on_a_real_round_then_is_mapped_and_a_torn_one_is_not_used(
    spark,  # noqa: ANN001
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Trained on the user's own round here; the default training (no command) runs in every CI run, in `make test`.
    from hudi_cdc.testing import envelope_schema, pg_event, write_events
    from tests.support import ingest_args, table_state

    cache = tmp_path / "cache"
    monkeypatch.setenv("HUDI_CDC_CACHE_DIR", str(cache))
    monkeypatch.delenv("HUDI_CDC_JVM_ARCHIVE", raising=False)
    env = {**os.environ, "HUDI_CDC_CACHE_DIR": str(cache)}
    schema = envelope_schema("customers", [("id", "long"), ("name", ["null", "string"])])
    events = [pg_event("c", lsn=10 + i, after={"id": i, "name": f"n{i}"}) for i in range(5)]
    events.append(pg_event("d", lsn=20, before={"id": 2, "name": None}))
    write_events(tmp_path / "events" / "a.avro", schema, events)
    base = str(tmp_path / "table")

    assert _cli("jvm-archive", "--status") == {"archive": None, "built_now": False}
    built = _cli("jvm-archive", "--driver-memory", "1g", "--", "ingest", *ingest_args(str(tmp_path / "events"), base))
    assert built["built_now"] is True
    archive = Path(built["archive"])
    assert archive.parent == cache / "jvm" and archive.stat().st_size > 10 << 20
    # The training round was a real round: committed, with its checkpoint.
    assert table_state(spark, base, ("id", "name")) == {i: (i, f"n{i}") for i in (0, 1, 3, 4)}
    assert _cli("jvm-archive") == {"archive": str(archive), "built_now": False}  # built once
    options = CliRunner().invoke(main, ["jars", "--java-options"]).output.strip()
    assert options.startswith(f"{jvm_options()} -XX:SharedArchiveFile={archive} ")

    used = _probe(env)
    assert used["options"] == [f"-XX:SharedArchiveFile={archive}"]
    # The JDK's own archive is ~14 MB; the mapped total includes ours, so the JVM really uses it.
    assert used["mapped"] >= archive.stat().st_size
    assert used["rows"] == 3

    assert _probe({**env, "HUDI_CDC_JVM_ARCHIVE": "off"})["options"] == []

    # Java 17 aborts on a truncated archive: a size that is not the recorded one keeps it out.
    with archive.open("r+b") as handle:
        handle.truncate(archive.stat().st_size // 2)
    torn = _probe(env)
    assert torn["options"] == [] and torn["rows"] == 3
    assert CliRunner().invoke(main, ["jars", "--java-options"]).output.strip() == jvm_options()

    assert _cli("jvm-archive", "--remove") == {"removed": True}
    assert not archive.exists()
    assert re.fullmatch(r"driver-[0-9a-f]{16}\.jsa", archive.name)


JAVA_25 = Path("/usr/lib/jvm/temurin-25-jdk-amd64")
JAVA_17 = Path("/usr/lib/jvm/java-17-openjdk-amd64")
# Hadoop 3.4.3's client is the first whose UGI runs on Java 24+ (HADOOP-19212); fetched into ~/.m2 by hand.
HADOOP_343 = [
    Path.home() / f".m2/repository/org/apache/hadoop/hadoop-client-{part}/3.4.3/hadoop-client-{part}-3.4.3.jar"
    for part in ("api", "runtime")
]
needs_java_25 = pytest.mark.skipif(not (JAVA_25 / "bin" / "java").exists(), reason=f"no Java 25 at {JAVA_25}")


@needs_java_25
def test_the_java_in_java_home_chooses_an_aot_cache_or_an_appcds_archive_and_spark_home_is_fingerprinted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hudi_cdc import jvm_archive
    from hudi_cdc.jars import resolve_jars

    monkeypatch.setenv("HUDI_CDC_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("SPARK_HOME", raising=False)
    source = resolve_jars()
    monkeypatch.setenv("JAVA_HOME", str(JAVA_17))
    on_17, _ = jvm_archive._paths(source)
    monkeypatch.setenv("JAVA_HOME", str(JAVA_25))
    on_25, manifest = jvm_archive._paths(source)
    assert (on_17.suffix, on_25.suffix) == (".jsa", ".aot")
    assert on_17.stem != on_25.stem and manifest.stem == on_25.stem
    assert jvm_archive.java_options(on_25).split() == [f"-XX:AOTCache={on_25}", "-Xlog:aot*=off", "-Xlog:cds*=off"]
    assert jvm_archive.java_options(on_17).startswith(f"-XX:SharedArchiveFile={on_17} -Xshare:auto")

    # Another Spark (SPARK_HOME, as pyspark's launcher picks) is another archive.
    import pyspark

    spark_home = tmp_path / "spark"
    (spark_home / "jars").mkdir(parents=True)
    for jar in sorted(Path(pyspark.__file__).parent.joinpath("jars").glob("*.jar"))[:-1]:
        (spark_home / "jars" / jar.name).symlink_to(jar)
    monkeypatch.setenv("SPARK_HOME", str(spark_home))
    assert jvm_archive._paths(source)[0] != on_25


@needs_java_25
def test_training_on_java_25_with_spark_35s_hadoop_client_fails_naming_get_subject(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HUDI_CDC_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("JAVA_HOME", str(JAVA_25))
    monkeypatch.delenv("SPARK_HOME", raising=False)
    result = CliRunner().invoke(main, ["jvm-archive", "--driver-memory", "1g"])
    assert result.exit_code == 2, result.output  # the environment's Java: a configuration error
    assert "Picked up JAVA_TOOL_OPTIONS" not in result.output
    assert "java.lang.UnsupportedOperationException: getSubject is not supported" in result.output
    assert "run it with Java 17 (JAVA_HOME)" in result.output
    assert not list((tmp_path / "jvm").glob("*.aot"))


@needs_java_25
@pytest.mark.skipif(not all(j.exists() for j in HADOOP_343), reason="Hadoop 3.4.3's client jars are not in ~/.m2")
@pytest.mark.hudi
def test_an_aot_cache_trained_on_java_25_is_mapped_by_the_next_jvm(
    spark,  # noqa: ANN001
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Java 25 with Spark 3.5.7 runs only with Hadoop 3.4.3's client in place of 3.3.4's: not supported, measured."""
    import pyspark

    from hudi_cdc.testing import envelope_schema, pg_event, write_events
    from tests.support import ingest_args, table_state

    spark_home = tmp_path / "spark"
    (spark_home / "jars").mkdir(parents=True)
    shipped = Path(pyspark.__file__).parent
    for entry in shipped.iterdir():
        if entry.name != "jars":
            (spark_home / entry.name).symlink_to(entry)
    for jar in shipped.joinpath("jars").glob("*.jar"):
        if not jar.name.startswith(("hadoop-client-api-", "hadoop-client-runtime-")):
            (spark_home / "jars" / jar.name).symlink_to(jar)
    for jar in HADOOP_343:
        (spark_home / "jars" / jar.name).symlink_to(jar)
    cache = tmp_path / "cache"
    java_25 = {"JAVA_HOME": str(JAVA_25), "SPARK_HOME": str(spark_home), "HUDI_CDC_CACHE_DIR": str(cache)}
    for key, value in java_25.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("HUDI_CDC_JVM_ARCHIVE", raising=False)
    schema = envelope_schema("customers", [("id", "long"), ("name", ["null", "string"])])
    events = [pg_event("c", lsn=10 + i, after={"id": i, "name": f"n{i}"}) for i in range(5)]
    events.append(pg_event("u", lsn=20, after={"id": 2, "name": "two"}))
    write_events(tmp_path / "events" / "a.avro", schema, events)
    base = str(tmp_path / "table")

    built = _cli("jvm-archive", "--driver-memory", "1g", "--", "ingest", *ingest_args(str(tmp_path / "events"), base))
    cached = Path(built["archive"])
    assert cached.suffix == ".aot" and cached.stat().st_size > 50 << 20
    # The round the JVM trained on was a real one, written on Java 25 and read here on Java 17.
    assert table_state(spark, base, ("id", "name")) == {i: (i, "two" if i == 2 else f"n{i}") for i in range(5)}

    used = _probe({**os.environ, **java_25})
    assert used["options"] == [f"-XX:AOTCache={cached}"]
    assert used["mapped"] > 50 << 20 and used["rows"] == 3
    assert _probe({**os.environ, **java_25, "HUDI_CDC_JVM_ARCHIVE": "off"})["options"] == []
