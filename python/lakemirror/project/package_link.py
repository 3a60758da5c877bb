"""The project's way to lakemirror's dbt package, the same on every machine.

packages.yml names `.lakemirror/dbt_package`, a path inside the project; that path is a link
(not committed: `.gitignore`) to the copy of the package installed with lakemirror on this
machine. `lakemirror init` makes it, and lakemirror's dbt plugin (`dbt_lakemirror`) makes or
mends it at the start of every dbt command in a project that names it, `dbt deps` included. So
packages.yml and the package-lock.yml dbt writes from it (dbt locks a local package by the
path packages.yml gives) hold no machine's path, and once lakemirror is installed on any
machine, `dbt deps` links the package as for any dbt project.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from lakemirror.project.locate import dbt_package_dir

PACKAGE_LINK = ".lakemirror/dbt_package"


def names_package_link(locals_: Iterable[str]) -> bool:
    """Whether one of packages.yml's `local:` paths (as dbt rendered them) is the link."""
    return any(os.path.normpath(local) == PACKAGE_LINK for local in locals_)


def link_dbt_package(project_dir: Path) -> Path:
    """Point the project's link at the installed dbt package (a link elsewhere, e.g. into
    another machine's or an old virtualenv, is replaced at once; a real folder there is the
    user's own copy and stays)."""
    link = project_dir / PACKAGE_LINK
    package = dbt_package_dir()
    if link.is_symlink() and Path(os.readlink(link)) == package:
        return link
    if link.exists() and not link.is_symlink():
        return link
    link.parent.mkdir(parents=True, exist_ok=True)
    partial = link.with_name(f"{link.name}.{os.getpid()}.partial")
    partial.unlink(missing_ok=True)
    partial.symlink_to(package, target_is_directory=True)
    os.replace(partial, link)  # dbt commands running at the same time see one link or another
    return link
