"""docs/tutorial.md, run as a reader runs it: its fenced ``sh`` blocks, in order, in one bash (-euo pipefail)
with the venv's bin first on PATH and a fresh working folder; nothing else runs (but the clean-up
step, again, when a step fails). The assertions read what the
tutorial's own commands print: the masked column, the scd2 versions, verify's verdicts, the clean-up."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.stack, pytest.mark.kafka, pytest.mark.postgres, pytest.mark.hudi]

TUTORIAL = Path(__file__).resolve().parents[2] / "docs" / "tutorial.md"
_BLOCK = re.compile(r"^```sh\n(.*?)^```$", re.S | re.M)


def sh_blocks(markdown: str) -> list[str]:
    """The fenced ``sh`` blocks of a markdown text, in order (other fences, ``toml`` or ``python``, are prose)."""
    return _BLOCK.findall(markdown)


def test_the_blocks_are_found_in_order() -> None:
    blocks = sh_blocks(TUTORIAL.read_text())
    assert len(blocks) >= 9
    assert blocks[0].startswith("export ID=") and "DROP SCHEMA" in blocks[-1]
    assert any(b.startswith("hudi-cdc init ") for b in blocks)
    assert sh_blocks("x\n```sh\necho a\n```\n```toml\nb = 1\n```\n```sh\necho c\n```\n") == ["echo a\n", "echo c\n"]


def test_the_tutorial_runs_to_equal_tables(tmp_path: Path) -> None:
    blocks = sh_blocks(TUTORIAL.read_text())
    # The prelude: what a reader who followed "You need" has (the venv active), and an empty folder to start in;
    # if a step fails, the tutorial's own clean-up step (its last block) runs, so the stack keeps no connector,
    # slot or schema of a failed run.
    venv_bin = str(Path(sys.executable).parent)
    prelude = (
        f'export PATH="{venv_bin}:$PATH"\ncd "{tmp_path}"\n'
        f"clean_up() {{\n{blocks[-1]}}}\n"
        "trap 'rc=$?; if [ $rc -ne 0 ] && [ -n \"${PREFIX:-}\" ]; then (set +e; clean_up) >&2; fi; exit $rc' EXIT\n"
    )
    script = prelude + "".join(blocks)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HUDI_CDC__", "PG"))}
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    out = done.stdout
    print(out)  # what a reader sees: `pytest -rP` shows it for a passed run
    assert done.returncode == 0, f"exit {done.returncode}\n--- stdout\n{out[-6000:]}\n--- stderr\n{done.stderr[-6000:]}"

    # step 4 prints the pipeline file init wrote: every table of the schema, and the two sections added
    schema = re.search(r"^\[tables\.\"(shop_\d+)\.customers\"\]$", out, re.M)
    assert schema, out[:3000]
    schema_name = schema.group(1)
    listed = re.findall(rf"^\s*\"tut_\d+\.{schema_name}\.(\w+)\",$", out, re.M)
    assert sorted(listed) == ["customers", "orders", "products"], out[:3000]

    # step 7 (and 9): the masked column reads [redacted] and the addresses are nowhere in what was printed
    assert re.search(r"\|\s*1\|\s*Ann\|\[redacted\]\|\s*basic\|", out), out
    assert "@example." not in out

    # step 9: order 100 has its first version closed and its second current; 101 and 102 one current version
    versions = re.findall(r"^\|(\d+)\s*\|(\w+)\s*\|([^|]+)\|([^|]+)\|(true|false)\s*\|$", out, re.M)
    last = versions[-4:]
    assert [(v[0], v[1], v[4]) for v in last] == [
        ("100", "new", "false"),
        ("100", "shipped", "true"),
        ("101", "new", "true"),
        ("102", "new", "true"),
    ], versions
    assert last[0][3].strip() == last[1][2].strip()  # the old version ends where the new one starts
    assert last[0][3].strip().lower() != "null"
    assert last[1][3].strip().lower() == "null"  # the current version is open

    # step 8: status saw the changes waiting; step 9: each table equals its source
    assert re.search(rf"{schema_name}\.orders: .*behind [1-9]", out), out
    verdicts = re.findall(rf"^{schema_name}\.(\w+): source (\d+) rows, hudi (\d+) rows: (\w+)$", out, re.M)
    assert verdicts == [  # one command for every table, in the order of their names
        ("customers", "2", "2", "EQUAL"),
        ("orders", "3", "3", "EQUAL"),
        ("products", "1", "1", "EQUAL"),
    ], out[-4000:]
    assert re.search(r"^shop: 3 table\(s\) verified: 3 equal, 0 different, 0 failed$", out, re.M), out[-4000:]
