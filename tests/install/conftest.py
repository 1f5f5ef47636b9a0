"""A hudi-cdc installed the way users install it: the wheel ``make wheel`` builds, a fresh venv outside the checkout.

One venv per PySpark version: the project's own (constraints.txt's pins, every install test) and the oldest
of setup.cfg's range (one round). pip's cache serves both after their first build; one JVM home with its own
Ivy cache serves every test of the session, so Maven Central is asked once per session, as on a user's
machine, and never the checkout's ~/.m2 (which `make jars` filled).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
OLDEST_PYSPARK = "3.5.0"
"""The oldest PySpark of setup.cfg's ``pyspark>=3.5,<3.6``."""


def run(*command: object, **kw: object) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(c) for c in command], capture_output=True, text=True, **kw)  # type: ignore[call-overload]
    assert done.returncode == 0, f"{command}: {done.stdout[-2000:]}{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="session")
def bare_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ``bin`` folder whose ``python3`` has none of the project's packages (as on a fresh machine)."""
    bare = tmp_path_factory.mktemp("bare-python")
    venv.EnvBuilder(with_pip=False).create(bare)
    return bare / "bin"


@pytest.fixture(scope="session")
def jvm_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The JVMs' ``user.home``: an Ivy cache of the session's own, no ~/.m2."""
    return tmp_path_factory.mktemp("jvm-home")


@pytest.fixture(scope="package")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The wheel, built as ``make wheel`` builds it: our own jars required (``make jars`` built them)."""
    dist = tmp_path_factory.mktemp("dist")
    env = {**os.environ, "HUDI_CDC_WHEEL_JARS": "required"}
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", dist, REPO, env=env)
    (built,) = dist.glob("hudi_cdc-*.whl")
    yield built
    shutil.rmtree(dist, ignore_errors=True)


def constraints(tmp_path: Path, pyspark: str | None) -> Path:
    """constraints.txt, with ``pyspark`` pinned to another version of the range if given."""
    lines = (REPO / "constraints.txt").read_text().splitlines()
    if pyspark:
        lines = [line for line in lines if not line.startswith("pyspark==")] + [f"pyspark=={pyspark}"]
    path = tmp_path / "constraints.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="package")
def make_wheel_venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[str | None], Path]]:
    """A fresh venv with the wheel and its dependencies (PyPI, or pip's cache) at the project's pins, or with
    another PySpark of the range. Each holds a pyspark (~600 MB): removed when this folder's tests are done."""
    made: dict[str | None, Path] = {}

    def make(pyspark: str | None = None) -> Path:
        if pyspark not in made:
            env_dir = tmp_path_factory.mktemp(f"wheel-venv-{pyspark or 'pinned'}")
            # No pip of its own (ensurepip costs seconds): this pip installs into it. No byte-compiling of
            # pyspark's, pandas' and pyarrow's thousands of modules: Python compiles what it imports.
            venv.EnvBuilder(with_pip=False).create(env_dir)
            pins = constraints(env_dir, pyspark)
            python = env_dir / "bin" / "python"
            run(sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-compile", "-c", pins, wheel,
                timeout=1800)  # fmt: skip
            made[pyspark] = env_dir
        return made[pyspark]

    yield make
    for env_dir in made.values():
        shutil.rmtree(env_dir, ignore_errors=True)


@pytest.fixture(scope="package")
def wheel_venv(make_wheel_venv: Callable[[str | None], Path]) -> Path:
    """The wheel's venv at the project's pins."""
    return make_wheel_venv(None)


def user_env(*bin_dirs: Path) -> dict[str, str]:
    """The environment a user's shell has: these bin folders, then the system's; nothing of this checkout."""
    drop = ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "VIRTUAL_ENV", "PYTHONPATH", "HUDI_CDC_JARS_DIR", "SPARK_HOME")
    env = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("HUDI_CDC__")}
    env["PATH"] = ":".join([*map(str, bin_dirs), "/usr/bin", "/bin"])
    return env
