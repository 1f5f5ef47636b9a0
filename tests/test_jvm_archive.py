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
    "options": [a for a in runtime.getInputArguments() if "SharedArchiveFile" in a],
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
