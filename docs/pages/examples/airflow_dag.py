"""An Airflow DAG that runs a lakemirror project in production (docs/pages/deploy.md).

Every 15 minutes: `lakemirror run --json` mirrors the landing zone and builds the project, then
the project's own `dbt build` runs, then the run fails if lakemirror reported a table failed or
degraded, or a model or test of the project failed. `outcome` reads each exit code as
deploy.md's "Running unattended" documents it. The task functions are plain Python (call them
from any scheduler, or from a test); only the block at the end is Airflow's, and it is skipped
where Airflow is not installed.

The worker needs lakemirror installed (the wheel you developed with, `pip install
lakemirror-0.1.0-py3-none-any.whl`, or from your own package index: lakemirror is not on PyPI),
the dbt project checked out at LAKEMIRROR_PROJECT_DIR with `dbt deps` run once after each
checkout, and the usual settings in its environment: LAKEMIRROR_LANDING_ZONE,
LAKEMIRROR_WAREHOUSE and, for a project that mirrors several warehouses,
LAKEMIRROR_WAREHOUSE_NAME.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

PROJECT_DIR = os.environ.get("LAKEMIRROR_PROJECT_DIR", "/opt/analytics")
UNHEALTHY = ("failed", "degraded")
FAILED_NODES = ("error", "fail", "skipped", "runtime error")

try:  # Airflow fails a task raising this at once, without its retries
    from airflow.exceptions import AirflowFailException as NoRetry
except ImportError:
    NoRetry = RuntimeError


class MirrorFailed(RuntimeError):
    """lakemirror could not mirror, or mirrored with tables or models failed: running it
    again may get further (Airflow retries the task)."""


class MirrorMisconfigured(NoRetry):
    """Exit code 2: a setting or the command line is wrong; retrying cannot help."""


class MirrorRefused(NoRetry):
    """Exit code 3: lakemirror refused to protect the data (a wrong landing zone, a mass
    drop); nothing was written or dropped, and a person decides what is right."""


def mirror(project_dir: str = PROJECT_DIR, env: Mapping[str, str] | None = None
           ) -> dict[str, Any]:
    """`lakemirror run --json` in the project; returns its status with the exit code (see
    `outcome`)."""
    done = _run(["lakemirror", "run", "--json"], project_dir, env)
    return outcome(done.returncode, done.stdout, done.stderr)


def outcome(exit_code: int, stdout: str, stderr: str = "") -> dict[str, Any]:
    """What the job does with `lakemirror run --json`'s exit code and document.

    0: every table and model healthy. 1 with tables and models: some failed, the others are
    mirrored, so the job goes on (`check` fails it at the end). 1 with an `error` object: the
    run itself failed (raises; retried). 2: a configuration error (raises, no retry). 3: a
    refusal to protect the data (raises, no retry). Any other code: the process was killed
    (raises; a run is safe to retry)."""
    document: dict[str, Any] = json.loads(stdout) if stdout.strip() else {}
    error = document.get("error")
    if exit_code in (0, 1) and error is None:
        return {"exit_code": exit_code, **document}
    reason = (f"{error['kind']}: {error['message']}" + (f" Fix: {error['fix']}"
                                                         if error["fix"] else "")
              if error else stderr.strip()[-2000:])
    failure = {2: MirrorMisconfigured, 3: MirrorRefused}.get(exit_code, MirrorFailed)
    raise failure(f"lakemirror run exited with {exit_code}: {reason}")


def build(project_dir: str = PROJECT_DIR, env: Mapping[str, str] | None = None,
          dbt_args: Sequence[str] = ("build",)) -> None:
    """The project's own `dbt build` (or `dbt_args`); raises when dbt exits non-zero. On the
    `embedded` target plain dbt needs the engine: started here, unless one runs already, and
    stopped after."""
    environment = {**os.environ, **(env or {})}
    embedded = environment.get("LAKEMIRROR_TARGET", "embedded") == "embedded"
    start = embedded and _run(["lakemirror", "engine", "status"], project_dir, env).returncode
    if start:
        _checked(["lakemirror", "engine", "start"], project_dir, env)
    try:
        _checked(["dbt", *dbt_args], project_dir, env)
    finally:
        if start:
            _run(["lakemirror", "engine", "stop"], project_dir, env)


def check(status: Mapping[str, Any]) -> None:
    """Fail the job when `mirror` reported a table failed or degraded, or a model or test of
    the project failed (after the build)."""
    problems = [f"{table['schema']}.{table['table']} {table['status']}: {table['error']}"
                for table in status["tables"] if table["status"] in UNHEALTHY]
    problems += [f"{node['resource_type']} {node['name']} {node['status']}: {node['error']}"
                 for node in status.get("models", []) if node["status"] in FAILED_NODES]
    if problems:
        raise MirrorFailed("; ".join(problems))


def _run(command: list[str], cwd: str, env: Mapping[str, str] | None
         ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=cwd, env={**os.environ, **(env or {})},
                          capture_output=True, text=True, check=False)


def _checked(command: list[str], cwd: str, env: Mapping[str, str] | None) -> None:
    done = _run(command, cwd, env)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited with {done.returncode}:\n"
                           f"{done.stdout[-4000:]}{done.stderr[-4000:]}")


# --- Airflow ---------------------------------------------------------------------------------
try:
    from airflow.sdk import dag, task  # Airflow 3
except ImportError:
    try:
        from airflow.decorators import dag, task  # Airflow 2
    except ImportError:
        dag = task = None

if dag is not None and task is not None:
    @dag(schedule="*/15 * * * *", start_date=datetime(2026, 1, 1), catchup=False,
         max_active_runs=1, tags=["lakemirror", "dbt"])
    def lakemirror_mirror() -> None:
        status = task(task_id="mirror", retries=2)(mirror)()  # a killed run is safe to rerun
        built = task(task_id="dbt_build")(build)()
        status >> built >> task(task_id="check_tables")(check)(status)

    lakemirror_mirror()
