"""`lakemirror engine`: the embedded engine in the background, for plain dbt."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from lakemirror.cli.locations import WAREHOUSE
from lakemirror.environment import Settings

if TYPE_CHECKING:
    from lakemirror.storage import Location


@click.group()
def engine() -> None:
    """The embedded engine (a Sail Spark Connect server) in the background."""


@engine.command()
@click.option("--port", type=int, default=None, envvar="LAKEMIRROR_ENGINE_PORT",
              help="Port (default 50051) [env LAKEMIRROR_ENGINE_PORT].")
@click.option("--warehouse", type=WAREHOUSE, default=None, envvar="LAKEMIRROR_WAREHOUSE",
              help="The warehouse dbt will use: a URL's storage settings are given to the "
                   "engine (it reads them nowhere else) [env LAKEMIRROR_WAREHOUSE].")
def start(port: int | None, warehouse: Location | None) -> None:
    """Start the engine; then plain `dbt run` works in the dbt project."""
    from lakemirror.engine import DEFAULT_PORT, start_background
    from lakemirror.storage.engine_settings import engine_environment

    environment = (engine_environment(warehouse, cli_settings().storage.variables)
                   if warehouse is not None else {})
    address = start_background(port or DEFAULT_PORT, home=_home(), environment=environment)
    click.echo(f"engine running at {address.url}\n"
               f"for dbt: export LAKEMIRROR_ENGINE_PORT={address.port} "
               f"LAKEMIRROR_WAREHOUSE={warehouse or '<absolute path>'} (in lakemirror's "
               "repository also DBT_PROFILES_DIR=$PWD/profiles)")


@engine.command()
def stop() -> None:
    """Stop the background engine."""
    from lakemirror.engine import stop_background

    click.echo("engine stopped" if stop_background(_home()) else "no engine was running")


@engine.command()
def status() -> None:
    """Say whether the background engine runs (exit 0) or not (exit 1)."""
    from lakemirror.engine import background_engine

    address = background_engine(_home())
    click.echo(f"engine running at {address.url}" if address else "engine not running")
    sys.exit(0 if address else 1)


def cli_settings() -> Settings:
    """The LAKEMIRROR_* settings the `lakemirror` command read when it started."""
    settings: Settings = click.get_current_context().find_root().obj
    return settings


def _home() -> Path:
    return cli_settings().home
