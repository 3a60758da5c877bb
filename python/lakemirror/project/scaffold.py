"""`lakemirror init DIR`: a dbt project ready for lakemirror, with its package installed."""

from __future__ import annotations

import re
from pathlib import Path

from lakemirror.errors import ConfigError
from lakemirror.project.locate import dbt_package_dir
from lakemirror.project.package_link import link_dbt_package
from lakemirror.project.templates import (
    GITIGNORE,
    PACKAGES_YML,
    forwarding_macros,
    profiles_yml,
    project_yml,
)

_NAME = re.compile(r"[a-z_][a-z0-9_]*")


def project_name(folder: str) -> str:
    """A dbt project name made from a folder name: lowercase letters, digits and `_`."""
    name = re.sub(r"[^a-z0-9_]+", "_", folder.lower()).strip("_")
    return name if _NAME.fullmatch(name) else f"project_{name}".rstrip("_")


def init_project(directory: Path, *, name: str | None = None, deps: bool = True) -> list[Path]:
    """Write a dbt project into `directory` (created if needed): dbt_project.yml with
    lakemirror's block, packages.yml naming the link to the installed dbt package (see
    `package_link`), profiles.yml with lakemirror's targets, macros/lakemirror.sql,
    .gitignore; then the link, and `dbt deps` unless `deps` is false. No file holds a path of
    this machine, so the project moves. Never overwrites a file. Returns the files written."""
    directory = directory.resolve()
    name = name or project_name(directory.name)
    if not _NAME.fullmatch(name) or name == "lakemirror":
        raise ConfigError(f"'{name}' cannot name the dbt project",
                          hint="pass --name with lowercase letters, digits and _ (not "
                               "'lakemirror', the package's own name)")
    if (directory / "dbt_project.yml").exists():
        raise ConfigError(f"{directory} already holds a dbt project",
                          hint="add lakemirror to it as docs/pages/dbt-project.md says (its dbt "
                               f"package: {dbt_package_dir()})")
    package = dbt_package_dir()
    files = {
        "dbt_project.yml": project_yml(name),
        "packages.yml": PACKAGES_YML,
        "profiles.yml": profiles_yml(
            (package / "profiles" / "profiles.yml").read_text(encoding="utf-8"), name),
        "macros/lakemirror.sql": forwarding_macros(),
        ".gitignore": GITIGNORE,
    }
    if existing := [path for path in files if (directory / path).exists()]:
        raise ConfigError(f"{directory} already has {', '.join(existing)}",
                          hint="pick an empty or new folder")
    for path, text in files.items():
        (directory / path).parent.mkdir(parents=True, exist_ok=True)
        (directory / path).write_text(text, encoding="utf-8")
    link_dbt_package(directory)
    if deps:
        _dbt_deps(directory)
    return [directory / path for path in files]


def _dbt_deps(directory: Path) -> None:
    """`dbt deps` in the project: links lakemirror's package into dbt_packages/."""
    from dbt.cli.main import dbtRunner

    outcome = dbtRunner().invoke(["deps", "--project-dir", str(directory), "--quiet"])
    if not outcome.success:
        raise ConfigError(f"dbt deps failed in {directory}: {outcome.exception}",
                          hint=f"run `dbt deps` in {directory} to see why")
