"""The documentation site (docs/): it builds with every link and anchor resolved, the README
stays a short entry page, and every `dbt_project.yml` example the pages give is accepted by
dbt in a project made by `lakemirror init`."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from lakemirror.codegen.models import MirrorModel, write_model
from lakemirror.project import init_project

from conftest import REPO

PAGES = REPO / "docs/pages"
# Put right before a ```yaml block that is (part of) a user's dbt_project.yml: this module
# pastes each such block into a `lakemirror init` project.
EXAMPLE_MARKER = "<!-- example: dbt_project.yml of my_project -->"
BIN = Path(sys.executable).parent


def mkdocs_build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    pytest.importorskip("mkdocs", reason="mkdocs is in the dev extra: pip install -e '.[dev]'")
    pytest.importorskip("material", reason="mkdocs-material is in the dev extra")
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f",
                           str(config), "-d", str(site)], capture_output=True, text=True,
                          timeout=300)


def test_the_site_builds_with_every_link_and_anchor_resolved(tmp_path):
    built = mkdocs_build(REPO / "docs/mkdocs.yml", tmp_path / "site")
    assert built.returncode == 0, built.stderr
    assert (tmp_path / "site/bench.png").is_file()


@pytest.mark.parametrize("link", ["[a page](no-such-page.md)",
                                  "[an anchor](running.md#no-such-section)"])
def test_a_broken_link_fails_the_build(tmp_path, link):
    docs = tmp_path / "docs"
    shutil.copytree(REPO / "docs", docs)
    page = docs / "pages/getting-started.md"
    page.write_text(page.read_text() + f"\nSee {link}.\n")
    built = mkdocs_build(docs / "mkdocs.yml", tmp_path / "site")
    assert built.returncode != 0
    assert link.split("(")[1].rstrip(")").split("#")[-1] in built.stderr


def test_the_readme_is_short_and_starts_with_the_two_commands():
    readme = (REPO / "README.md").read_text().splitlines()
    assert len(readme) <= 250
    first_screen = "\n".join(readme[:25])
    assert "make demo" in first_screen and "make test" in first_screen
    for target in re.findall(r"\]\((docs/[^)#]+)", "\n".join(readme)):
        assert (REPO / target).is_file(), target


def dbt_project_examples() -> list[tuple[str, dict[str, Any]]]:
    """Every yaml block the pages mark as part of a user's dbt_project.yml."""
    found = []
    for page in sorted(PAGES.glob("*.md")):
        for block in re.findall(re.escape(EXAMPLE_MARKER) + r"\n```yaml\n(.*?)```",
                                page.read_text(), re.DOTALL):
            found.append((page.name, yaml.safe_load(block)))
    return found


def merged(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        both = isinstance(value, dict) and isinstance(out.get(key), dict)
        out[key] = merged(out[key], value) if both else value
    return out


@pytest.mark.slow
def test_every_dbt_project_example_configures_a_users_own_project(tmp_path, monkeypatch):
    examples = dbt_project_examples()
    assert {page for page, _ in examples} >= {"dbt-project.md", "landing-zone.md",
                                              "table-settings.md", "history.md"}
    project = tmp_path / "my_project"
    monkeypatch.setenv("LAKEMIRROR_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("LAKEMIRROR_WAREHOUSE", str(tmp_path / "warehouse"))
    monkeypatch.delenv("DBT_PROFILES_DIR", raising=False)
    init_project(project)
    # what a user's project holds: a mirror model, a seed and a snapshot of its own
    write_model(project, MirrorModel("dbo", "customers", ("id",)))
    (project / "seeds").mkdir(exist_ok=True)
    (project / "seeds/regions.csv").write_text("code,name\nfr,France\n")
    (project / "snapshots").mkdir(exist_ok=True)
    (project / "snapshots/customers.yml").write_text(
        "snapshots:\n  - name: customers_snapshot\n    relation: ref('dbo__customers')\n"
        "    config: {unique_key: id, strategy: check, check_cols: all}\n")
    config_file = project / "dbt_project.yml"
    config = yaml.safe_load(config_file.read_text())
    for _, example in examples:
        config = merged(config, example)
    config_file.write_text(yaml.safe_dump(config, sort_keys=False))
    parsed = subprocess.run([str(BIN / "dbt"), "parse", "--profiles-dir", str(project)],
                            cwd=project, capture_output=True, text=True, timeout=300)
    assert parsed.returncode == 0, parsed.stdout
    assert "unused configuration paths" not in parsed.stdout.lower(), parsed.stdout
