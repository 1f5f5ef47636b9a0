"""A hudi-cdc installed the way users install it: a wheel, a fresh venv outside the checkout."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _run(*command: object, **kw: object) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(c) for c in command], capture_output=True, text=True, **kw)  # type: ignore[call-overload]
    assert done.returncode == 0, f"{command}: {done.stdout[-2000:]}{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="session")
def bare_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ``bin`` folder whose ``python3`` has none of the project's packages (as on a fresh machine)."""
    bare = tmp_path_factory.mktemp("bare-python")
    venv.EnvBuilder(with_pip=False).create(bare)
    return bare / "bin"


@pytest.fixture(scope="package")
def wheel_venv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh venv with hudi-cdc installed from a wheel built from this checkout (dependencies from PyPI).

    It holds a pyspark (~600 MB): removed once this folder's tests are done, not at the session's end.
    """
    dist = tmp_path_factory.mktemp("dist")
    env_dir = tmp_path_factory.mktemp("wheel-venv")
    try:
        _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", dist, REPO)
        (wheel,) = dist.glob("hudi_cdc-*.whl")
        venv.EnvBuilder(with_pip=True).create(env_dir)
        _run(env_dir / "bin" / "python", "-m", "pip", "install", "-q", wheel)
        yield env_dir
    finally:
        for folder in (dist, env_dir):
            shutil.rmtree(folder, ignore_errors=True)


def user_env(*bin_dirs: Path) -> dict[str, str]:
    """The environment a user's shell has: these bin folders, then the system's; nothing of this checkout."""
    drop = ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "VIRTUAL_ENV", "PYTHONPATH", "HUDI_CDC_JARS_DIR", "SPARK_HOME")
    env = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("HUDI_CDC__")}
    env["PATH"] = ":".join([*map(str, bin_dirs), "/usr/bin", "/bin"])
    return env
