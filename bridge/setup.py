"""The bridge's package build carries the page: when ``static/index.html`` is
missing and the page's sources are beside (a clone), the build runs ``npm ci``
(if needed) and ``npm run build`` in ``panels/echarts-plugin`` first, so
``pip install ./bridge`` and a wheel built from a clone serve the page. An
editable install leaves that to ``make page``. Everything else is in
pyproject.toml."""

from __future__ import annotations

import pathlib
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = pathlib.Path(__file__).resolve().parent
PAGE = HERE / "src" / "curvestream_bridge" / "static" / "index.html"
PANEL = HERE.parent / "panels" / "echarts-plugin"


class BuildWithPage(build_py):
    def run(self) -> None:
        if not getattr(self, "editable_mode", False) and not PAGE.exists() and (PANEL / "package.json").exists():
            npm = shutil.which("npm")
            if npm is None:
                raise SystemExit("curvestream-bridge: the page is built with npm (Node 20) and npm is not installed; "
                                 "install Node 20, or build the page first (make page) and install again")
            if not (PANEL / "node_modules").is_dir():
                subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=PANEL, check=True)
            subprocess.run([npm, "run", "build"], cwd=PANEL, check=True)
        super().run()


setup(cmdclass={"build_py": BuildWithPage})
