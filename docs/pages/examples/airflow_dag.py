"""An Airflow DAG that runs a lakemirror project in production (docs/pages/deploy.md).

Every 15 minutes: `lakemirror run --json` mirrors the landing zone and builds the project, then
the project's own `dbt build` runs, then the run fails if lakemirror reported a table failed or
degraded. The three task functions are plain Python (call them from any scheduler, or from a
test); only the block at the end is Airflow's, and it is skipped where Airflow is not installed.

The worker needs lakemirror installed (`pip install lakemirror`), the dbt project checked out at
LAKEMIRROR_PROJECT_DIR with `dbt deps` run once after each checkout, and the usual settings in its
environment: LAKEMIRROR_LANDING_ZONE, LAKEMIRROR_WAREHOUSE and, for a project that mirrors
several warehouses, LAKEMIRROR_WAREHOUSE_NAME.
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


class MirrorFailed(RuntimeError):
    """lakemirror could not mirror, or mirrored with tables failed or degraded."""


def mirror(project_dir: str = PROJECT_DIR, env: Mapping[str, str] | None = None
           ) -> dict[str, Any]:
    """`lakemirror run --json` in the project; returns its status with the exit code.

    Exit code 0: every table healthy. 1: some table failed or is degraded, and the others are
    mirrored, so the job goes on (`check` fails it at the end). 2 (configuration, e.g. a
    missing setting) or anything else: nothing to build on, so this raises at once."""
    done = _run(["lakemirror", "run", "--json"], project_dir, env)
    if done.returncode not in (0, 1):
        raise MirrorFailed(f"lakemirror run exited with {done.returncode}: "
                           f"{done.stderr.strip() or done.stdout.strip()}")
    status: dict[str, Any] = json.loads(done.stdout)
    return {"exit_code": done.returncode, **status}


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
    """Fail the job when `mirror` reported a table failed or degraded (after the build)."""
    unhealthy = [table for table in status["tables"] if table["status"] in UNHEALTHY]
    if unhealthy:
        raise MirrorFailed("; ".join(
            f"{table['schema']}.{table['table']} {table['status']}: {table['error']}"
            for table in unhealthy))


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
