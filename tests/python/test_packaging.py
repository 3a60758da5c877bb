"""The two install paths of the docs (docs/pages/getting-started.md, dbt-project.md): the built
wheel, installed (not editable) into a fresh virtualenv, with `lakemirror init`; and lakemirror
added to an existing dbt project by its packages.yml, the docs' block and its macro file."""

import os
import re
import shutil
import socket
import subprocess
import sys
import sysconfig
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from lakemirror.landing import sequence_file_name
from lakemirror.project import dbt_package_dir
from lakemirror.reference import ROW_MARKER as M

from conftest import REPO, as_multiset, mirrored_rows

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent
SOURCES = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "dbt_project.yml", "macros",
           "profiles", "python/lakemirror", "python/dbt_lakemirror")
SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), (M, pa.int32())])


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def publish(zone, sequence, rows):
    folder = zone / "Customers"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "_metadata.json").write_text('{"keyColumns": ["id"]}')
    pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), folder / sequence_file_name(sequence))


def build_wheel(tmp_path):
    """The wheel `pip wheel` builds (in an isolated build environment, as for a release) from a
    copy of the sources: building in the checkout would write build/ into it."""
    source = tmp_path / "source"
    for item in SOURCES:
        if (REPO / item).is_dir():
            shutil.copytree(REPO / item, source / item,
                            ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            (source / item).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / item, source / item)
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet",
                            "--wheel-dir", str(tmp_path / "dist"), str(source)],
                           capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stdout + built.stderr
    [wheel] = (tmp_path / "dist").glob("lakemirror-*.whl")
    return wheel


def fresh_venv(tmp_path, wheel):
    """A new virtualenv with the wheel installed, not editable. To stay fast and offline, the
    wheel goes in without its dependencies, and a .pth file makes this test's own venv's
    site-packages visible after the fresh venv's: dbt, pyspark, pysail... come from there, while
    `lakemirror` itself (only a path entry there, never processed through a .pth) is the
    wheel's."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; "
                           "print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    (Path(site) / "_test_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    installed = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install",
                                "--no-deps", "--quiet", str(wheel)],
                               capture_output=True, text=True, timeout=300)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    return venv


def test_the_wheel_installed_in_a_fresh_venv_inits_a_project_that_lakemirror_and_dbt_run(
        tmp_path):
    wheel = build_wheel(tmp_path)
    venv = fresh_venv(tmp_path, wheel)
    python, lakemirror = str(venv / "bin" / "python"), str(venv / "bin" / "lakemirror")
    dbt = [python, "-c", "from dbt.cli.main import cli; cli()"]  # dbt of the fresh venv
    work, zone, warehouse = tmp_path / "work", tmp_path / "zone", tmp_path / "warehouse"
    work.mkdir()
    env = {**os.environ, "LAKEMIRROR_HOME": str(tmp_path / "home"),
           "LAKEMIRROR_ENGINE_PORT": str(free_port()), "LAKEMIRROR_LANDING_ZONE": str(zone),
           "LAKEMIRROR_WAREHOUSE": str(warehouse)}
    env.pop("LAKEMIRROR_PROJECT_DIR", None)
    env.pop("DBT_PROFILES_DIR", None)

    def sh(*args, cwd):
        return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=300)

    located = sh(python, "-c", "import lakemirror.project as p; print(p.dbt_package_dir())",
                 cwd=work)
    package = Path(located.stdout.strip())
    assert package == venv / "lib" / package.relative_to(venv / "lib")  # inside the fresh venv
    assert package.name == "dbt_package"
    assert sorted(path.name for path in package.iterdir()) == [
        "dbt_project.yml", "macros", "profiles"]  # no example models, seeds or tests
    assert (package / "macros/mirror/staged_changes.sql").is_file()

    init = sh(lakemirror, "init", "proj", cwd=work)
    assert init.returncode == 0, init.stdout + init.stderr
    project = work / "proj"
    assert (project / "dbt_packages" / "lakemirror").resolve() == package.resolve()

    publish(zone, 1, [{"id": 1, "name": "a", M: 0}, {"id": 2, "name": "b", M: 0}])
    first = sh(lakemirror, "run", cwd=project)
    assert first.returncode == 0, first.stdout + first.stderr
    assert re.search(r"dbo\.customers\s+Customers\s+replicating\s+1\s+2", first.stdout), (
        first.stdout)
    assert (project / "models/mirror/dbo/dbo__customers.sql").is_file()

    publish(zone, 2, [{"id": 1, "name": "a2", M: 1}, {"id": 2, "name": None, M: 2},
                      {"id": 3, "name": "c", M: 0}])
    assert sh(lakemirror, "ingest", cwd=project).returncode == 0
    no_engine = sh(*dbt, "run", cwd=project)  # the wheel's dbt plugin, dbt_lakemirror
    assert no_engine.returncode == 2 and "lakemirror engine start" in no_engine.stdout, (
        no_engine.stdout)
    assert sh(lakemirror, "engine", "start", cwd=project).returncode == 0
    try:
        dbt_run = sh(*dbt, "run", cwd=project)
        dbt_test = sh(*dbt, "test", cwd=project)
    finally:
        sh(lakemirror, "engine", "stop", cwd=project)
    assert dbt_run.returncode == 0, dbt_run.stdout
    assert dbt_test.returncode == 0, dbt_test.stdout
    assert "1 test," in dbt_test.stdout and "PASS=1" in dbt_test.stdout, dbt_test.stdout
    assert mirrored_rows(warehouse, "dbo", "customers") == as_multiset(
        [{"id": 1, "name": "a2"}, {"id": 3, "name": "c"}])
    history = [entry["operation"] for entry in DeltaTable(str(warehouse / "dbo/customers"))
               .history()]
    assert history.count("MERGE") == 1 and len([op for op in history if "CREATE" in op]) == 1


OWN_MODELS = {
    "models/marts/customer_names.sql":
        "{{ config(materialized='table') }}\n"
        "select id, upper(name) as name from {{ ref('dbo__customers') }}\n",
    "models/marts/campaigns.sql":
        "{{ config(schema='marketing', materialized='table') }}\nselect 1 as campaign_id\n",
}


def docs_code(heading, language):
    """The first `language` code block after `heading` in the docs' page on a dbt project."""
    page = (REPO / "docs/pages/dbt-project.md").read_text()
    section = page[page.index(heading):]
    return re.search(rf"```{language}\n(.*?)```", section, re.DOTALL).group(1)


def test_an_existing_dbt_project_takes_lakemirror_with_the_docs_configuration(tmp_path):
    """The docs' way for an existing project (here the package is this checkout: the same files
    a git install of lakemirror brings)."""
    project, zone, warehouse = tmp_path / "analytics", tmp_path / "zone", tmp_path / "wh"
    (project / "macros").mkdir(parents=True)
    for path, sql in OWN_MODELS.items():
        (project / path).parent.mkdir(parents=True, exist_ok=True)
        (project / path).write_text(sql)
    (project / "dbt_project.yml").write_text(
        'name: my_project\nconfig-version: 2\nversion: "1.0.0"\nprofile: my_project\n\n'
        + docs_code("the block below to your `dbt_project.yml`", "yaml"))
    (project / "macros/lakemirror.sql").write_text(
        docs_code("add this file as `macros/lakemirror.sql`", "sql"))
    (project / "packages.yml").write_text(
        f"packages:\n  - local: {dbt_package_dir()}\n")
    shutil.copy(REPO / "profiles/profiles.yml", project / "profiles.yml")
    profiles = (project / "profiles.yml").read_text().replace("\nlakemirror:", "\nmy_project:")
    (project / "profiles.yml").write_text(profiles)
    env = {**os.environ, "LAKEMIRROR_HOME": str(tmp_path / "home")}
    env.pop("DBT_PROFILES_DIR", None)
    deps = subprocess.run([str(BIN / "dbt"), "deps"], cwd=project, env=env, capture_output=True,
                          text=True, timeout=300)
    assert deps.returncode == 0, deps.stdout

    publish(zone, 1, [{"id": 1, "name": "a", M: 0}, {"id": 2, "name": "b", M: 0}])
    run = subprocess.run([str(BIN / "lakemirror"), "run", "--landing-zone", str(zone),
                          "--warehouse", str(warehouse)], cwd=project, env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert mirrored_rows(warehouse, "dbo", "customers") == as_multiset(
        [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}])
    names = DeltaTable(str(warehouse / "analytics/customer_names")).to_pyarrow_table()
    assert sorted(names["name"].to_pylist()) == ["A", "B"]
    # your own models keep dbt's schema names: lakemirror changes only the mirror models'
    assert (warehouse / "analytics_marketing/campaigns/_delta_log").is_dir()
