"""lakemirror's dbt plugins for the project's package link (see `package_link`) and for dbt's
compiled templates (see `compiled_templates`): dbt sets up its plugins after it has read the
project and before the command runs (and parses), `dbt deps` included."""

from __future__ import annotations

from pathlib import Path

from dbt.plugins.manager import dbtPlugin

from lakemirror.compiled_templates import reuse_compiled_templates
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


class CompiledTemplates(dbtPlugin):
    """Plain `dbt` commands too reuse the code of a jinja string compiled before in the
    process (a plain `dbt parse` compiles the same hooks and configs once per node)."""

    def initialize(self) -> None:
        reuse_compiled_templates()
