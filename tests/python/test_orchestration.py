"""The orchestrated job of docs/pages/deploy.md: the task functions of
docs/pages/examples/airflow_dag.py, called without a scheduler, and its DAG wired up by a
stand-in for Airflow's decorators."""

import importlib.util
import os
import sys
import types
from pathlib import Path

import pytest

from lakemirror.project import init_project
from lakemirror.reference import ROW_MARKER as M
from lakemirror.reference import apply_changes

from conftest import REPO, as_multiset, mirrored_rows
from test_packaging import BIN, free_port, publish

EXAMPLE = REPO / "docs/pages/examples/airflow_dag.py"


def load_example(name="airflow_dag"):
    spec = importlib.util.spec_from_file_location(name, EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_dag_file_loads_without_airflow_and_wires_three_tasks_with_it(monkeypatch):
    assert load_example().dag is None  # no Airflow here: the task functions alone
    made = []

    class Output:
        def __init__(self, task_id):
            self.task_id, self.downstream = task_id, []

        def __rshift__(self, other):
            self.downstream.append(other.task_id)
            return other

    def task(task_id, **options):
        def decorate(function):
            def call(*args):
                made.append((task_id, function.__name__, args, options))
                return Output(task_id)
            return call
        return decorate

    def dag(**options):
        assert options["catchup"] is False and options["max_active_runs"] == 1
        return lambda function: function

    sdk = types.ModuleType("airflow.sdk")
    sdk.dag, sdk.task = dag, task
    monkeypatch.setitem(sys.modules, "airflow", types.ModuleType("airflow"))
    monkeypatch.setitem(sys.modules, "airflow.sdk", sdk)
    example = load_example("airflow_dag_wired")
    assert [(task_id, name) for task_id, name, _, _ in made] == [
        ("mirror", "mirror"), ("dbt_build", "build"), ("check_tables", "check")]
    assert made[2][2][0].task_id == "mirror"  # the check reads the mirror's status
    assert example.mirror.__module__ == "airflow_dag_wired"


@pytest.mark.slow
def test_the_jobs_tasks_mirror_build_and_fail_on_an_unhealthy_table(tmp_path):
    example = load_example()
    project, zone, warehouse = tmp_path / "project", tmp_path / "zone", tmp_path / "wh"
    init_project(project)
    env = {"PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
           "LAKEMIRROR_HOME": str(tmp_path / "home"), "LAKEMIRROR_ENGINE_PORT": str(free_port()),
           "LAKEMIRROR_LANDING_ZONE": str(zone), "LAKEMIRROR_PROJECT_DIR": str(project)}
    with pytest.raises(example.MirrorMisconfigured, match="(?s)exited with 2.*'--warehouse'"):
        example.mirror(str(project), env)  # no warehouse: a configuration error
    env["LAKEMIRROR_WAREHOUSE"] = str(warehouse)

    files = [[{"id": 1, "name": "a", M: 0}, {"id": 2, "name": "b", M: 0}],
             [{"id": 1, "name": "a2", M: 1}, {"id": 3, "name": "c", M: 0}]]
    publish(zone, 1, files[0])
    status = example.mirror(str(project), env)
    assert status["exit_code"] == 0 and status["tables"][0]["status"] == "replicating"
    example.check(status)

    publish(zone, 2, files[1])
    (zone / "Customers" / "00000000000000000003.parquet").write_bytes(b"not parquet")
    status = example.mirror(str(project), env)
    assert status["exit_code"] == 1 and status["tables"][0]["status"] == "failed"
    example.build(str(project), env)  # the project's own dbt build still runs
    assert mirrored_rows(warehouse, "dbo", "customers") == as_multiset(
        apply_changes(files, ["id"]))
    with pytest.raises(example.MirrorFailed, match=r"dbo\.customers failed: .*00000000000000000003"):
        example.check(status)
    assert example._run(["lakemirror", "engine", "status"], str(project), env).returncode == 1
    with pytest.raises(example.MirrorRefused, match="exited with 3: ZoneBindingError: .*Fix: "):
        example.mirror(str(project), {**env, "LAKEMIRROR_LANDING_ZONE": str(tmp_path)})

    with pytest.raises(RuntimeError, match="dbt build --select nothing_here exited"):
        example.build(str(project), {**env, "LAKEMIRROR_TARGET": "nope"},
                      ("build", "--select", "nothing_here"))
