"""Builds lakemirror with its dbt package inside the wheel.

The repository root is lakemirror's dbt project (dbt_project.yml, macros/, profiles/), and with
its example models, seeds and tests also the example project. A wheel carries only the package
part, as `lakemirror/dbt_package/`: `lakemirror init` points a project's packages.yml at it,
and copies its profiles. An editable install uses the checkout itself (lakemirror.project).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
DBT_PACKAGE = ("dbt_project.yml", "macros", "profiles/profiles.yml")


class BuildWithDbtPackage(build_py):
    """build_py, then the dbt package copied into the built `lakemirror` package."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        target = Path(self.build_lib) / "lakemirror" / "dbt_package"
        shutil.rmtree(target, ignore_errors=True)
        for item in DBT_PACKAGE:
            source, destination = ROOT / item, target / item
            destination.parent.mkdir(parents=True, exist_ok=True)
            if source.is_dir():
                shutil.copytree(source, destination)
            else:
                shutil.copy2(source, destination)


setup(cmdclass={"build_py": BuildWithDbtPackage})
