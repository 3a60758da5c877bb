"""dbt's adapter conformance suite (dbt-tests-adapter) on a user's dbt project that installs
lakemirror as a package, as docs/pages/dbt-project.md says: packages.yml with
a local path to lakemirror's dbt package (as its wheel ships it), lakemirror's block of
dbt_project.yml (its `dispatch:`; snapshots registered as well) and the forwarding macros of
`lakemirror init`.

Every dbt command starts on a fresh engine session, as when users run dbt from a shell: the
embedded engine's catalog lives per session, so whatever a later command finds it found through
lakemirror's registry, never through a session an earlier command left behind.
"""

from __future__ import annotations

import copy
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from dbt.adapters.factory import FACTORY, reset_adapters
from dbt.cli.main import dbtRunner
from dbt.tests.fixtures.project import *  # noqa: F401,F403 - dbt-tests-adapter's fixtures
from dbt.tests.util import run_dbt, write_file

from lakemirror.engine import (
    ChildEngine,
    close_connect_sessions,
    prepare_spark_session,
    spark_unavailable,
)
from lakemirror.engine.spark import make_delta_jars_absolute
from lakemirror.environment import read_settings
from lakemirror.project.templates import forwarding_macros, lakemirror_block

REPO = Path(__file__).resolve().parents[2]
PROFILES = yaml.safe_load((REPO / "profiles" / "profiles.yml").read_text())
make_delta_jars_absolute(os.environ)  # dbt's test fixtures run in the test project's folder
SPARK_UNAVAILABLE = spark_unavailable()
PACKAGE_ITEMS = ("dbt_project.yml", "macros", "profiles/profiles.yml")  # as setup.py's
# Configs lakemirror's block sets for the whole project that a test class may set otherwise:
# the class's setting wins, as it would in a user's project.
FOLDERS = ("models", "seeds", "snapshots")


@pytest.fixture(scope="module")
def test_data_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Where a test copies its data files: a temporary folder, not this repository."""
    return str(tmp_path_factory.mktemp("data") / "data")


@pytest.fixture(scope="class")
def logs_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """dbt's log folder of a test class: a temporary folder, not this repository."""
    path = str(tmp_path_factory.mktemp("logs"))
    os.environ["DBT_LOG_PATH"] = path
    yield path
    del os.environ["DBT_LOG_PATH"]


@pytest.fixture(scope="session")
def embedded_engine() -> Iterator[str]:
    """One embedded engine (a Sail server in a child process) for the suite: its sessions
    share no catalog, so each dbt command still starts from nothing."""
    if os.environ.get("LAKEMIRROR_TEST_ENGINE"):  # sc://host:port of an engine started by hand
        yield os.environ["LAKEMIRROR_TEST_ENGINE"]
        return
    # Its token in the home, where dbt's plugin looks, and in the URL: the adapter tests' setup
    # connects through dbt-spark's session alone, without the plugin.
    engine = ChildEngine(home=read_settings().home)
    try:
        yield engine.url_with_token
    finally:
        engine.kill()


@pytest.fixture(scope="class")
def lakemirror_target() -> str:
    """The profile's target: `embedded` (Sail); test modules for Spark override this."""
    return "embedded"


def new_warehouse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A new warehouse folder, LAKEMIRROR_WAREHOUSE for every dbt command until it ends."""
    path = tmp_path_factory.mktemp("warehouse")
    saved = os.environ.get("LAKEMIRROR_WAREHOUSE")
    os.environ["LAKEMIRROR_WAREHOUSE"] = str(path)
    yield path
    if saved is None:
        os.environ.pop("LAKEMIRROR_WAREHOUSE", None)
    else:
        os.environ["LAKEMIRROR_WAREHOUSE"] = saved


@pytest.fixture(scope="class")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The class's warehouse."""
    yield from new_warehouse(tmp_path_factory)


@pytest.fixture(scope="class")
def dbt_profile_target(lakemirror_target: str, warehouse: Path,
                       request: pytest.FixtureRequest) -> dict[str, Any]:
    """lakemirror's output for the target, as profiles/profiles.yml has it, env vars resolved."""
    output = copy.deepcopy(PROFILES["lakemirror"]["outputs"][lakemirror_target])
    output["threads"] = 1
    parameters = output["server_side_parameters"]
    if lakemirror_target == "embedded":
        parameters["spark.remote"] = request.getfixturevalue("embedded_engine")
    elif lakemirror_target == "connect":
        parameters["spark.remote"] = request.getfixturevalue("spark_cluster").connect_url
    else:
        jars = os.environ.get("LAKEMIRROR_DELTA_JARS", "")
        parameters.update({
            "spark.master": "local[2]", "spark.driver.memory": "2g",
            # The full JIT, as tests/python's conftest gives the suite's long-lived JVM.
            "spark.driver.extraJavaOptions": "-XX:+UseSerialGC",
            "spark.driver.extraClassPath": f"{jars}/*", "spark.jars.packages": "",
            "spark.sql.warehouse.dir": f"{warehouse}/_lakemirror/spark-warehouse",
            "spark.lakemirror.warehouse": str(warehouse),
            "spark.sql.shuffle.partitions": "4",
            "spark.databricks.delta.snapshotPartitions": "1", "spark.log.level": "ERROR"})
    return dict(output)


@pytest.fixture(scope="class")
def dbt_profile_data(unique_schema: str, dbt_profile_target: dict[str, Any]) -> dict[str, Any]:
    """The profile `test` with lakemirror's target under dbt's usual name `dev`: the macros
    know the engine by the target's mark, not by its name."""
    target = dict(dbt_profile_target, schema=unique_schema)
    return {"test": {"outputs": {"dev": target}, "target": "dev"}}


def _merged(block: dict[str, Any], update: dict[str, Any], name: str) -> dict[str, Any]:
    """The test class's project config over lakemirror's block: a class's folder-wide `+`
    config (for all its models, seeds or snapshots) beats the block's, as in a user project."""
    config = copy.deepcopy(block)
    for key, value in (update or {}).items():
        if key in FOLDERS and isinstance(value, dict):
            ours = config.setdefault(key, {}).setdefault(name, {})
            for item, setting in value.items():
                if item == name and isinstance(setting, dict):
                    ours.update(setting)
                else:
                    ours[item] = setting
        elif key == "vars":
            config.setdefault("vars", {}).update(value)
        else:
            config[key] = value
    return config


@pytest.fixture(scope="class")
def dbt_project_yml(project_root: Any, project_config_update: Any) -> dict[str, Any]:
    """dbt_project.yml of the user's project `test`: lakemirror's block, less its project-wide
    `+materialized: table` (each test picks its materializations), and snapshots as Delta."""
    update = (yaml.safe_load(project_config_update) if isinstance(project_config_update, str)
              else project_config_update) or {}
    name = update.get("name", "test")
    block = yaml.safe_load(lakemirror_block(name))
    block["models"][name].pop("+materialized", None)
    block["snapshots"] = {name: {"+file_format": "delta",
                                 "+post-hook": ["{{ lakemirror.register_relation() }}"]}}
    config = {"name": name, "profile": "test", "flags": {"send_anonymous_usage_stats": False},
              **_merged(block, update, name)}
    write_file(yaml.safe_dump(config), project_root, "dbt_project.yml")
    return config


@pytest.fixture(scope="session")
def lakemirror_package(tmp_path_factory: pytest.TempPathFactory) -> str:
    """lakemirror's dbt package as its wheel ships it (setup.py's DBT_PACKAGE: no example or
    generated models of this checkout); LAKEMIRROR_PACKAGE_DIR names another copy, e.g. an
    older version to compare with."""
    if os.environ.get("LAKEMIRROR_PACKAGE_DIR"):
        return os.environ["LAKEMIRROR_PACKAGE_DIR"]
    package = tmp_path_factory.mktemp("lakemirror_package")
    for item in PACKAGE_ITEMS:
        source, destination = REPO / item, package / item
        destination.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, destination)
        else:
            shutil.copy2(source, destination)
    return str(package)


@pytest.fixture(scope="class")
def project(project_setup: Any, project_files: Any, adapter: Any, warehouse: Path,
            lakemirror_package: str) -> Any:
    """The project, with lakemirror's package installed and its forwarding macros."""
    root = project_setup.project_root
    os.makedirs(os.path.join(root, "macros"), exist_ok=True)
    write_file(forwarding_macros(), root, "macros", "lakemirror.sql")
    write_file(yaml.safe_dump({"packages": [{"local": lakemirror_package}]}), root,
               "packages.yml")
    run_dbt(["deps"])
    FACTORY.adapters[adapter.type()] = adapter  # `deps` forgets the adapter the tests use
    return project_setup


@pytest.fixture(scope="module", autouse=True)
def fresh_engine_session_per_dbt_command() -> Iterator[None]:
    """Each dbt invocation starts a new engine session, as a new process would. The module's
    changes to the environment (DBT_PROFILES_DIR, which dbt-tests-adapter sets) end with it."""
    invoke = dbtRunner.invoke
    saved = {name: os.environ.get(name) for name in ("DBT_PROFILES_DIR", "LAKEMIRROR_WAREHOUSE")}

    def fresh_session() -> None:
        close_connect_sessions()
        prepare_spark_session(os.environ.get("LAKEMIRROR_WAREHOUSE"), warm=False)

    # dbt keeps the adapters it registered for the process: one a lakemirror run of an earlier
    # test left (its profile's, on that run's engine) would serve this module's classes instead
    # of the adapter made from their profile.
    reset_adapters()

    def fresh_invoke(self: dbtRunner, args: list[str], **kwargs: Any) -> Any:
        fresh_session()
        return invoke(self, args, **kwargs)

    fresh_session()  # the classes' setup talks to the engine before any dbt command
    dbtRunner.invoke = fresh_invoke  # type: ignore[method-assign]
    yield
    dbtRunner.invoke = invoke  # type: ignore[method-assign]
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
