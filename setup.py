"""The build's one step beyond setup.cfg: the wheel carries hudi-cdc's own jars.

``make jars`` builds ``jars/pick`` and ``jars/writer`` into ``.jars/hudi`` (with Hudi's
Java write client, the writer's one dependency outside the bundle); this copies them
into the wheel's ``hudi_cdc/_jars``, where ``hudi_cdc.jars`` finds them, so a pip
install gets the faster paths a checkout has. They are on no Maven repository, so
nothing else can bring them.

A build without them (``python -m pip wheel .`` in a checkout without ``make jars``,
or from an sdist) still works and says so (``pip wheel -v`` or ``python -m build``
shows the warning); that wheel takes the slower paths, as ``hudi-cdc jars`` then
says. ``make wheel`` sets ``HUDI_CDC_WHEEL_JARS=required``: a missing jar fails the
build instead.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
BUILT = HERE / ".jars" / "hudi"
# hudi_cdc.jars' OWN_JARS and JAVA_CLIENT_JAR (tests/test_jars.py holds them together): the build cannot
# import the package (its dependencies are not in the build's environment).
WHEEL_JARS = ("hudi-cdc-pick-1.jar", "hudi-cdc-writer-1.jar", "hudi-cdc-localfs-1.jar", "hudi-java-client-1.2.0.jar")
REQUIRED_ENV = "HUDI_CDC_WHEEL_JARS"


class build_py_with_jars(build_py):  # noqa: N801 - setuptools' command naming
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install finds .jars/hudi in the checkout itself
        target = Path(self.build_lib) / "hudi_cdc" / "_jars"
        shutil.rmtree(target, ignore_errors=True)  # build/ is reused: no jar of an earlier build rides along
        missing = [name for name in WHEEL_JARS if not (BUILT / name).is_file()]
        if missing:
            message = (
                f"hudi-cdc: this wheel lacks hudi-cdc's own jars ({', '.join(missing)} not in {BUILT}): "
                "it will take the slower paths (`hudi-cdc jars` says which). `make wheel` builds them first."
            )
            if os.environ.get(REQUIRED_ENV) == "required":
                raise SystemExit(f"error: {message}")
            print(f"WARNING: {message}", file=sys.stderr)
            return
        target.mkdir(parents=True)
        for name in WHEEL_JARS:
            shutil.copy2(BUILT / name, target / name)
        print(f"hudi-cdc: the wheel carries {', '.join(WHEEL_JARS)} in hudi_cdc/_jars", file=sys.stderr)


setup(cmdclass={"build_py": build_py_with_jars})
