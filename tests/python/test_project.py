"""The user's dbt project: `lakemirror init`, the project lakemirror uses by default, where
dbt's profiles and lakemirror's dbt package are, and the configuration block of the docs."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from lakemirror.cli.main import cli
from lakemirror.project import (
    dbt_package_dir,
    forwarding_macros,
    init_project,
    lakemirror_block,
    profiles_dir,
    project_name,
)
from lakemirror.environment import read_settings

from conftest import REPO


def run_cli(*args, env=None):
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)


def test_init_writes_a_project_configured_for_lakemirror(tmp_path):
    written = init_project(tmp_path / "Sales Mirror", deps=False)
    project = tmp_path / "Sales Mirror"
    assert sorted(path.relative_to(project).as_posix() for path in written) == [
        ".gitignore", "dbt_project.yml", "macros/lakemirror.sql", "packages.yml", "profiles.yml"]
    config = yaml.safe_load((project / "dbt_project.yml").read_text())
    assert (config["name"], config["profile"]) == ("sales_mirror", "sales_mirror")
    assert config["dispatch"] == [{"macro_namespace": "dbt",
                                   "search_order": ["sales_mirror", "lakemirror", "dbt"]}]
    assert config["vars"]["lakemirror_warehouse"] == "{{ env_var('LAKEMIRROR_WAREHOUSE', '') }}"
    models = config["models"]["sales_mirror"]
    assert models["mirror"] == {"+pre-hook": "{{ lakemirror.claim_mirror_batch() }}",
                                "+post-hook": "{{ lakemirror.record_mirror_batch() }}"}
    assert "{{ lakemirror.register_relation() }}" in models["+post-hook"]
    assert "{{ lakemirror.register_relation() }}" in config["seeds"]["sales_mirror"]["+post-hook"]
    [package] = yaml.safe_load((project / "packages.yml").read_text())["packages"]
    assert package == {"local": ".lakemirror/dbt_package"}  # the same on every machine
    assert (project / ".lakemirror/dbt_package").resolve() == dbt_package_dir().resolve()
    assert ".lakemirror/" in (project / ".gitignore").read_text().splitlines()
    profiles = yaml.safe_load((project / "profiles.yml").read_text())
    assert list(profiles) == ["sales_mirror"]
    assert set(profiles["sales_mirror"]["outputs"]) == {"embedded", "spark", "connect"}
    assert (project / "macros/lakemirror.sql").read_text() == forwarding_macros()


def test_init_never_overwrites_and_refuses_an_existing_project(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "profiles.yml").write_text("mine: {}\n")
    result = run_cli("init", str(tmp_path / "a"), "--no-deps")
    assert result.exit_code == 2 and "already has profiles.yml" in result.output
    assert (tmp_path / "a" / "profiles.yml").read_text() == "mine: {}\n"
    assert not (tmp_path / "a" / "dbt_project.yml").exists()
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "dbt_project.yml").write_text("name: b\n")
    result = run_cli("init", str(tmp_path / "b"), "--no-deps")
    assert result.exit_code == 2 and "already holds a dbt project" in result.output
    assert "docs/pages/dbt-project.md" in result.output
    result = run_cli("init", str(tmp_path / "c"), "--no-deps", "--name", "lakemirror")
    assert result.exit_code == 2 and "--name" in result.output


@pytest.mark.parametrize(("folder", "name"), [
    ("proj", "proj"), ("Sales-Mirror 2", "sales_mirror_2"), ("2024", "project_2024"),
    ("---", "project")])
def test_project_names_are_made_from_the_folder(folder, name):
    assert project_name(folder) == name


def test_run_uses_the_project_in_the_current_directory_and_says_when_there_is_none(
        tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "zone").mkdir()
    result = run_cli("ingest", "--landing-zone", "zone", "--warehouse", "wh",
                     env={"LAKEMIRROR_PROJECT_DIR": None})
    assert result.exit_code == 2
    assert f"no dbt_project.yml in {tmp_path}" in result.output
    assert "lakemirror init" in result.output and "--project-dir" in result.output
    init_project(tmp_path / "proj", deps=False)
    monkeypatch.chdir(tmp_path / "proj")
    result = run_cli("ingest", "--landing-zone", "../zone", "--warehouse", "../wh",
                     env={"LAKEMIRROR_PROJECT_DIR": None})
    assert result.exit_code == 0, result.output


def test_profiles_are_found_as_dbt_finds_them(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    project = tmp_path / "project"
    (project / "profiles").mkdir(parents=True)
    assert profiles_dir(project, None) == tmp_path / "home" / ".dbt"
    (project / "profiles" / "profiles.yml").write_text("{}")  # lakemirror's repository
    assert profiles_dir(project, None) == project / "profiles"
    (project / "profiles.yml").write_text("{}")  # next to dbt_project.yml, as dbt looks
    assert profiles_dir(project, None) == project
    configured = read_settings({"DBT_PROFILES_DIR": str(tmp_path / "elsewhere")})
    assert profiles_dir(project, configured.dbt_profiles_dir) == tmp_path / "elsewhere"


def test_the_dbt_package_is_found_and_its_path_printed():
    result = run_cli("package-path")
    assert result.exit_code == 0
    package = Path(result.output.strip())
    assert package == dbt_package_dir()
    assert yaml.safe_load((package / "dbt_project.yml").read_text())["name"] == "lakemirror"
    assert (package / "macros").is_dir() and (package / "profiles/profiles.yml").is_file()


def test_the_docs_show_exactly_the_configuration_init_writes():
    page = (REPO / "docs/pages/dbt-project.md").read_text()
    assert lakemirror_block("my_project") in page
    assert forwarding_macros() in page


def test_the_demo_needs_the_example_project_of_a_clone(tmp_path, monkeypatch):
    import lakemirror.service

    monkeypatch.setattr(lakemirror.service, "PROJECT_DIR", tmp_path)
    result = run_cli("demo", "--dir", str(tmp_path / "demo"))
    assert result.exit_code == 2 and "--project-dir" in result.output
    assert os.listdir(tmp_path) == []


def test_any_dbt_command_mends_a_package_link_into_another_environment(tmp_path):
    """The link of a project moved from another machine (or virtualenv) points at a package
    that is not there: lakemirror's dbt plugin points it at this one before dbt deps runs."""
    from dbt.cli.main import dbtRunner

    project = tmp_path / "moved"
    init_project(project, deps=False)
    link = project / ".lakemirror/dbt_package"
    link.unlink()
    link.symlink_to(tmp_path / "elsewhere/venv/lib/lakemirror/dbt_package")
    result = dbtRunner().invoke(["deps", "--project-dir", str(project), "--quiet"])
    assert result.success, result.exception
    assert link.resolve() == dbt_package_dir().resolve()
    assert (project / "dbt_packages/lakemirror/dbt_project.yml").is_file()
    lock = yaml.safe_load((project / "package-lock.yml").read_text())
    assert lock["packages"] == [{"local": ".lakemirror/dbt_package", "name": "lakemirror"}]


@pytest.mark.slow
def test_a_fresh_project_warns_of_nothing_and_keeps_dbts_own_files_out_of_git(
        tmp_path, monkeypatch):
    """dbt's first commands in a project fresh from `lakemirror init` (no model, seed or
    snapshot yet), then with its first mirror model, warn of no unused configuration; what
    dbt writes there for one machine (.user.yml next to profiles.yml, target/, logs/) and the
    package link stay out of git."""
    from lakemirror.codegen.models import MirrorModel, write_model

    project = tmp_path / "my_project"
    monkeypatch.setenv("LAKEMIRROR_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("LAKEMIRROR_WAREHOUSE", str(tmp_path / "warehouse"))
    monkeypatch.delenv("DBT_PROFILES_DIR", raising=False)
    init_project(project)

    def dbt_parse():
        parsed = subprocess.run([str(Path(sys.executable).parent / "dbt"), "parse"],
                                cwd=project, capture_output=True, text=True, timeout=300)
        assert parsed.returncode == 0, parsed.stdout
        return parsed.stdout.lower()

    assert "unused configuration paths" not in dbt_parse()
    write_model(project, MirrorModel("dbo", "customers", ("id",)))
    assert "unused configuration paths" not in dbt_parse()

    (project / ".user.yml").write_text("id: a-machine\n")  # where dbt keeps its user id
    subprocess.run(["git", "init", "--quiet"], cwd=project, check=True)
    listed = subprocess.run(["git", "ls-files", "--others", "--exclude-standard"], cwd=project,
                            capture_output=True, text=True, check=True).stdout.split()
    assert sorted(listed) == [".gitignore", "dbt_project.yml", "macros/lakemirror.sql",
                              "models/mirror/dbo/dbo__customers.sql",
                              "models/mirror/dbo/dbo__customers.yml", "package-lock.yml",
                              "packages.yml", "profiles.yml"]
