"""One exit-code table for every command (``wrappers.EXIT_CODES``, docs/cli.md): each command with a bad
configuration exits 2, an unreachable service 75, and the cheap ones 0 when all is well. No JVM starts."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from hudi_cdc.cli import main
from hudi_cdc.cli.wrappers import EXIT_CODES, EXIT_CONFIG, EXIT_OK, EXIT_TRANSIENT

MISSING = "/nonexistent/hudi-cdc-test/pipeline.toml"
TABLE = ["--pipeline", MISSING, "--table", "public.orders"]
DOCS = Path(__file__).resolve().parents[2] / "docs" / "cli.md"

# Each command with a configuration error it meets before any session starts.
BAD_CONFIGURATION: dict[str, list[str]] = {
    "ingest": ["ingest", "--source", "files", "--source-path", "/x", "--target-table", "t"],  # no target path
    "compact": ["compact", "--source", "files", "--source-path", "/x", "--target-table", "t"],  # as ingest's
    "run": ["run", "--pipeline", MISSING],
    "status": ["status", "--pipeline", MISSING],
    "pause": ["pause", "--pipeline", MISSING, "public.orders"],
    "resume": ["resume", "--pipeline", MISSING, "public.orders"],
    "remove": ["remove", "--pipeline", MISSING, "public.orders"],
    "quarantine list": ["quarantine", "list", *TABLE],
    "quarantine reapply": ["quarantine", "reapply", *TABLE],
    "tombstones": ["tombstones", *TABLE],
    "jars": ["jars", "--fetch"],  # a usage error: --fetch needs a folder
    "jvm-archive": ["jvm-archive", "--driver-memory"],  # a usage error: no value
    "verify": ["verify", *TABLE],
    "validate": ["validate", "--pipeline", MISSING],
    "connect status": ["connect", "status"],  # a usage error: no --connect-url
    "connect supervise": ["connect", "supervise"],
    "bootstrap": ["bootstrap", *TABLE, "--source-url", "postgresql://u@127.0.0.1:1/db", "--slot", "s"],
    "init": ["init"],  # says where the tables are: nothing given
    "config show": ["config", "show", *TABLE],
}


def _leaves(group: click.Group, prefix: str = "") -> list[str]:
    found = []
    for name, sub in group.commands.items():
        found += _leaves(sub, f"{prefix}{name} ") if isinstance(sub, click.Group) else [f"{prefix}{name}"]
    return found


def test_every_command_has_a_bad_configuration_case() -> None:
    assert sorted(_leaves(main)) == sorted(k for k in BAD_CONFIGURATION if k.split()[0] in main.commands)


@pytest.mark.parametrize("name", sorted(BAD_CONFIGURATION))
def test_a_configuration_error_exits_2_from_every_command(name: str) -> None:
    if name.split()[0] not in main.commands:
        pytest.skip(f"{name} is not a command of this build")
    done = CliRunner().invoke(main, BAD_CONFIGURATION[name])
    assert done.exit_code == EXIT_CONFIG == 2, done.output
    assert done.output.strip(), "a refusal says why"
    assert "Traceback" not in done.output


def test_an_unreachable_service_exits_75() -> None:
    done = CliRunner().invoke(main, ["connect", "status", "--connect-url", "http://127.0.0.1:1"])
    assert done.exit_code == EXIT_TRANSIENT == 75, done.output
    assert "cannot be reached" in done.output


def test_the_cheap_commands_exit_0(tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    (landing / "dbserver1.public.orders").mkdir(parents=True)
    pipeline = tmp_path / "shop.toml"
    written = CliRunner().invoke(main, ["init", "--source-path", str(landing), "--output", str(pipeline)])
    assert written.exit_code == EXIT_OK, written.output
    for args in (["pause", "--pipeline", str(pipeline), "public.orders"],
                 ["resume", "--pipeline", str(pipeline), "public.orders"], ["jars", "--packages"]):  # fmt: skip
        done = CliRunner().invoke(main, args)
        assert done.exit_code == EXIT_OK, (args, done.output)
    assert "hudi-spark3.5-bundle" in CliRunner().invoke(main, ["jars", "--packages"]).output


def test_the_documented_table_is_the_code_s() -> None:
    table = DOCS.read_text().split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    documented = {int(code) for code in re.findall(r"^\| (\d+) \|", table, flags=re.MULTILINE)}
    assert documented == set(EXIT_CODES)
