"""A project moves: made and mirrored on one machine, committed, and run on another machine
(other paths, another virtualenv with the wheel installed, another warehouse) with the one
deployment step, `dbt deps`, then `lakemirror run` and plain `dbt build` (docs/pages/deploy.md)."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lakemirror.reference import ROW_MARKER as M
from lakemirror.reference import apply_changes

from conftest import REPO, as_multiset, mirrored_rows
from test_packaging import BIN, build_wheel, free_port, fresh_venv, publish

pytestmark = pytest.mark.slow

FILES = [[{"id": 1, "name": "a", M: 0}, {"id": 2, "name": "b", M: 0}],
         [{"id": 1, "name": "a2", M: 1}, {"id": 2, "name": None, M: 2},
          {"id": 3, "name": "c", M: 0}],
         [{"id": 3, "name": "c3", M: 4}, {"id": 4, "name": "d", M: 0}]]


def committed_files(project: Path) -> list[Path]:
    """What git would commit of the project: every file but those its .gitignore names."""
    ignored = {line.strip().rstrip("/") for line in
               (project / ".gitignore").read_text().splitlines() if line.strip()}
    return [path.relative_to(project) for path in project.rglob("*")
            if path.is_file() and path.relative_to(project).parts[0] not in ignored]


def commit_and_clone(project: Path, destination: Path) -> None:
    for file in committed_files(project):
        (destination / file).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(project / file, destination / file)


def machine_paths(project: Path, paths: list[Path]) -> dict[str, list[str]]:
    """The project's committed files that name one of `paths`."""
    found = {}
    for file in committed_files(project):
        text = (project / file).read_text(errors="replace")
        if named := [str(path) for path in paths if str(path) in text]:
            found[str(file)] = named
    return found


class Machine:
    """Commands as one machine runs them: its python environment, paths and engine."""

    def __init__(self, root: Path, bin_dir: Path, *, sources: bool):
        self.bin, self.zone, self.warehouse = bin_dir, root / "zone", root / "warehouse"
        self.env = {**os.environ, "LAKEMIRROR_HOME": str(root / "home"),
                    "LAKEMIRROR_ENGINE_PORT": str(free_port()),
                    "LAKEMIRROR_LANDING_ZONE": str(self.zone),
                    "LAKEMIRROR_WAREHOUSE": str(self.warehouse)}
        for variable in ("LAKEMIRROR_PROJECT_DIR", "DBT_PROFILES_DIR", "LAKEMIRROR_WAREHOUSE_NAME",
                         *(() if sources else ("PYTHONPATH",))):
            self.env.pop(variable, None)

    def sh(self, *args: str, cwd: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
        """`lakemirror ...` or `dbt ...` (this environment's dbt, the fresh venv has no
        `dbt` script: its dependencies come from the test's venv)."""
        command = ([str(self.bin / "python"), "-c", "from dbt.cli.main import cli; cli()"]
                   if args[0] == "dbt" else [str(self.bin / args[0])])
        done = subprocess.run([*command, *args[1:]], cwd=cwd, env=self.env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0 or not check, (args, done.stdout, done.stderr)
        return done


def test_a_project_made_on_one_machine_runs_on_another_with_dbt_deps(tmp_path):
    a = Machine(tmp_path / "a", BIN, sources=True)  # this checkout, as a developer has it
    (tmp_path / "a").mkdir()
    a.sh("lakemirror", "init", "project", cwd=tmp_path / "a")
    publish(a.zone, 1, FILES[0])
    a.sh("lakemirror", "run", cwd=tmp_path / "a/project")
    assert mirrored_rows(a.warehouse, "dbo", "customers") == as_multiset(
        apply_changes(FILES[:1], ["id"]))

    venv = fresh_venv(tmp_path, build_wheel(tmp_path))
    b = Machine(tmp_path / "b", venv / "bin", sources=False)
    project = tmp_path / "b/project"
    commit_and_clone(tmp_path / "a/project", project)
    here = [tmp_path / "a", REPO, Path(sys.prefix)]
    assert machine_paths(project, here) == {}
    assert (project / "models/mirror/dbo/dbo__customers.yml").is_file()

    b.sh("dbt", "deps", cwd=project)  # the one deployment step
    assert (project / "dbt_packages/lakemirror").resolve().is_relative_to(venv)
    for sequence, rows in enumerate(FILES[:2], start=1):
        publish(b.zone, sequence, rows)
    status = json.loads(b.sh("lakemirror", "run", "--json", cwd=project).stdout)
    assert [(t["table"], t["status"]) for t in status["tables"]] == [("customers", "replicating")]
    assert mirrored_rows(b.warehouse, "dbo", "customers") == as_multiset(
        apply_changes(FILES[:2], ["id"]))

    publish(b.zone, 3, FILES[2])
    b.sh("lakemirror", "ingest", cwd=project)
    b.sh("lakemirror", "engine", "start", cwd=project)
    try:
        build = b.sh("dbt", "build", cwd=project, check=False)
    finally:
        b.sh("lakemirror", "engine", "stop", cwd=project)
    assert build.returncode == 0 and "dbo__customers" in build.stdout, build.stdout
    assert mirrored_rows(b.warehouse, "dbo", "customers") == as_multiset(
        apply_changes(FILES, ["id"]))
    assert machine_paths(project, [*here, tmp_path / "b"]) == {}
