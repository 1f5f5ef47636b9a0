"""A wheel built from a checkout without ``make jars``: it works, lacks our jars and says so; ``make wheel``'s
setting makes that a failure."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.install.conftest import REPO

pytestmark = [pytest.mark.install]


@pytest.fixture
def checkout_without_jars(tmp_path: Path) -> Path:
    """What a source build reads, without ``.jars`` (a clone before ``make jars``, or an sdist)."""
    copy = tmp_path / "checkout"
    copy.mkdir()
    for name in ("setup.py", "setup.cfg", "pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(REPO / name, copy / name)
    for package in ("hudi_cdc", "payloads"):
        shutil.copytree(REPO / package, copy / package, ignore=shutil.ignore_patterns("__pycache__", "_jars"))
    return copy


def _build(source: Path, dist: Path, **env: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "-w", str(dist), str(source)]
    return subprocess.run(command, capture_output=True, text=True, env={**os.environ, **env}, timeout=600)


def test_a_source_build_without_the_jars_works_and_says_the_wheel_lacks_them(
    checkout_without_jars: Path, tmp_path: Path
) -> None:
    done = _build(checkout_without_jars, tmp_path / "dist")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "WARNING: hudi-cdc: this wheel lacks hudi-cdc's own jars" in done.stdout + done.stderr
    (wheel,) = (tmp_path / "dist").glob("hudi_cdc-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "hudi_cdc/jars.py" in names and not [n for n in names if n.endswith(".jar")]


def test_make_wheels_setting_refuses_a_wheel_without_the_jars(checkout_without_jars: Path, tmp_path: Path) -> None:
    done = _build(checkout_without_jars, tmp_path / "dist", HUDI_CDC_WHEEL_JARS="required")
    assert done.returncode != 0
    assert "error: hudi-cdc: this wheel lacks hudi-cdc's own jars (hudi-cdc-pick-1.jar, hudi-cdc-writer-1.jar" in (
        done.stdout + done.stderr
    )
    assert not list((tmp_path / "dist").glob("*.whl"))
