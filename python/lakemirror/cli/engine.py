"""`lakemirror engine`: the embedded engine in the background, for plain dbt."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from lakemirror.cli.locations import PATH, WAREHOUSE
from lakemirror.environment import Settings

if TYPE_CHECKING:
    from lakemirror.engine import BackgroundProcess
    from lakemirror.storage import Location

Command = TypeVar("Command", bound=Callable[..., Any])


@click.group()
def engine() -> None:
    """The embedded engine (a Sail Spark Connect server) in the background.

    One background engine runs per lakemirror home (LAKEMIRROR_HOME), at one port: plain dbt
    in every project that shares the home uses it. It belongs to the dbt project it was
    started for (--project-dir, else the current directory, as for dbt): `stop` from another
    project is refused, naming that project, and `status` names it."""


project_option = click.option(
    "--project-dir", type=PATH, default=None, envvar="LAKEMIRROR_PROJECT_DIR",
    help="The dbt project the engine is for (default: the current directory, as for dbt) "
         "[env LAKEMIRROR_PROJECT_DIR].")


def start_options(command: Command) -> Command:
    """The options of `start` and `restart`."""
    for option in reversed([
        project_option,
        click.option("--port", type=int, default=None, envvar="LAKEMIRROR_ENGINE_PORT",
                     help="Port (default 50051; for restart, the engine's) "
                          "[env LAKEMIRROR_ENGINE_PORT]."),
        click.option("--warehouse", type=WAREHOUSE, default=None, envvar="LAKEMIRROR_WAREHOUSE",
                     help="The warehouse dbt will use: a URL's storage settings are given to "
                          "the engine (it reads them nowhere else) [env LAKEMIRROR_WAREHOUSE]."),
    ]):
        command = option(command)
    return command


@engine.command()
@start_options
def start(project_dir: Path | None, port: int | None, warehouse: Location | None) -> None:
    """Start the engine; then plain `dbt run` works in the dbt project. A warehouse in a
    bucket or container that does not exist is refused before the engine starts."""
    from lakemirror.engine import DEFAULT_PORT, background_process, start_background
    from lakemirror.staging.layout import Warehouse
    from lakemirror.storage.engine_settings import engine_environment
    from lakemirror.storage.location import ObjectLocation

    if isinstance(warehouse, ObjectLocation):
        Warehouse(warehouse).storage.folders("")  # one listing: its bucket answers
    environment = (engine_environment(warehouse, cli_settings().storage.variables)
                   if warehouse is not None else {})
    project = _project(project_dir)
    address = start_background(port or DEFAULT_PORT, home=_home(), environment=environment,
                               project=project)
    running = background_process(_home())
    if running is not None and running.access is not None and running.access.warning:
        click.echo(running.access.warning, err=True)
    if running is not None and running.serves_another_project(project):
        click.echo(f"the engine runs already{running.started_for} and serves this project "
                   "too; `lakemirror engine stop` in that project ends it", err=True)
    click.echo(f"engine running at sc://localhost:{address.port}\n"
               f"for dbt: export LAKEMIRROR_ENGINE_PORT={address.port} "
               f"LAKEMIRROR_WAREHOUSE={warehouse or '<absolute path>'}\n"
               + _access_text(running))


@engine.command()
@project_option
def stop(project_dir: Path | None) -> None:
    """Stop the background engine this project started (another project's is refused)."""
    from lakemirror.engine import stop_background

    stopped = stop_background(_home(), project=_project(project_dir))
    click.echo("engine stopped" if stopped else "no engine was running")


@engine.command()
@start_options
@click.pass_context
def restart(ctx: click.Context, project_dir: Path | None, port: int | None,
            warehouse: Location | None) -> None:
    """Stop the engine and start it again, at its port: for an engine that stopped answering
    (plain dbt names this command when a request outlasts LAKEMIRROR_ENGINE_TIMEOUT)."""
    from lakemirror.engine import background_process

    running = background_process(_home())
    ctx.invoke(stop, project_dir=project_dir)
    ctx.invoke(start, project_dir=project_dir, warehouse=warehouse,
               port=port or (running.address.port if running else None))


@engine.command()
def status() -> None:
    """Say whether the background engine runs (exit 0), and for which project, or not
    (exit 1)."""
    from lakemirror.engine import background_process

    running = background_process(_home())
    click.echo(f"engine running at sc://localhost:{running.address.port}{running.started_for}\n"
               + _access_text(running) if running else "engine not running")
    sys.exit(0 if running else 1)


def _access_text(running: BackgroundProcess | None) -> str:
    """Who may use the background engine, where its token is, and how a pyspark session of
    its owner's passes it."""
    from lakemirror.engine.access import pyspark_line, token_file

    if running is None:
        return ""
    port = running.address.port
    access = f"access: {running.access.describe()}\n" if running.access is not None else ""
    return (f"{access}token: {token_file(_home(), port)} (dbt and lakemirror read it there)\n"
            f"for pyspark: {pyspark_line(_home(), port)}")


def cli_settings() -> Settings:
    """The LAKEMIRROR_* settings the `lakemirror` command read when it started."""
    settings: Settings = click.get_current_context().find_root().obj
    return settings


def _home() -> Path:
    return cli_settings().home


def _project(project_dir: Path | None) -> Path:
    """The dbt project a command is for: `project_dir`, else the current directory."""
    return (project_dir or Path.cwd()).resolve()


def access_line() -> str:
    """`lakemirror doctor`'s line on who can reach the embedded engine: the background
    engine's guard while one runs, else what an engine started here would get."""
    from lakemirror.engine import background_process
    from lakemirror.engine.private_net import private_network_problem
    from lakemirror.environment import ENGINE_ISOLATION

    running = background_process(_home())
    if running is not None and running.access is not None:
        return (f"engine access: {running.access.describe()} (the background engine at port "
                f"{running.address.port})")
    settings = cli_settings()
    problem = (private_network_problem() if settings.engine_isolation != "off" else
               f"{ENGINE_ISOLATION}=off")
    guard = ("private network + token" if problem is None else
             f"token only ({problem}): other local users can reach Sail's own port directly")
    return f"engine access: an engine started here gets {guard}"
