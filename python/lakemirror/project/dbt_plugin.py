"""lakemirror's dbt plugin for the project's package link (see `package_link`): dbt sets up its
plugins after it has read the project and before the command runs, `dbt deps` included."""

from __future__ import annotations

from pathlib import Path

from dbt.plugins.manager import dbtPlugin

from lakemirror.engine.plain_dbt import invocation_state
from lakemirror.project.package_link import link_dbt_package, names_package_link


class PackageLink(dbtPlugin):
    """Before a dbt command in a project whose packages.yml names lakemirror's package link,
    the link points at the package installed with this dbt."""

    def initialize(self) -> None:
        project = invocation_state().get("project")
        if project is None:
            return
        packages = getattr(project.packages, "packages", None) or []
        if names_package_link(str(getattr(package, "local", "")) for package in packages):
            link_dbt_package(Path(project.project_root))
