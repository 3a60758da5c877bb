"""Where lakemirror's dbt package is installed, and where dbt finds a project's profiles."""

from __future__ import annotations

from pathlib import Path

from lakemirror.errors import ConfigError

_PYTHON_PACKAGE = Path(__file__).resolve().parents[1]
BUNDLED_PACKAGE = _PYTHON_PACKAGE / "dbt_package"  # in a wheel (see setup.py)
SOURCE_CHECKOUT = _PYTHON_PACKAGE.parents[1]  # a git clone, installed editable


def dbt_package_dir() -> Path:
    """The folder of lakemirror's dbt package: the copy a wheel carries, else the root of the
    source checkout this code runs from (its dbt project is the package)."""
    for folder in (BUNDLED_PACKAGE, SOURCE_CHECKOUT):
        if (folder / "dbt_project.yml").is_file() and (folder / "macros").is_dir():
            return folder
    raise ConfigError("lakemirror's dbt package is missing from this installation",
                      hint="reinstall lakemirror (its wheel, or pip install -e . in a git "
                           "clone)")


def profiles_dir(project_dir: Path, configured: Path | None) -> Path:
    """Where dbt finds the profiles of `project_dir`, looking as dbt does: `configured`
    (DBT_PROFILES_DIR), then the project's own folder (profiles.yml next to dbt_project.yml),
    then its profiles/ folder (lakemirror's repository keeps them there), then ~/.dbt."""
    if configured is not None:
        return configured
    for folder in (project_dir, project_dir / "profiles"):
        if (folder / "profiles.yml").is_file():
            return folder
    return Path.home() / ".dbt"
