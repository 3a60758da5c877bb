"""Running dbt for a run, on its target: with a watched engine for the embedded engine, and a
watched server for `connect`."""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

from lakemirror.dbt_runner import dbt_invoke
from lakemirror.dbt_vars import (
    ENGINE_HOME_VAR,
    ENGINE_HOST_VAR,
    ENGINE_PORT_VAR,
    WAREHOUSE_NAME_VAR,
)
from lakemirror.engine import (
    ChildEngine,
    EngineAddress,
    RemoteServer,
    WatchedEngine,
    background_process,
    background_storage,
    close_connect_sessions,
    watchdog,
)
from lakemirror.engine.connect import connect_server
from lakemirror.engine.sail import storage_fingerprint
from lakemirror.errors import EngineCrashError, UnreachableServerError
from lakemirror.node_result import NodeResult
from lakemirror.project import profiles_dir
from lakemirror.run.server_storage import explain_storage_errors
from lakemirror.run.settings import RunSettings
from lakemirror.environment import CONNECT_URL, Settings
from lakemirror.storage.engine_settings import engine_environment
from lakemirror.storage.hadoop import spark_url
from lakemirror.storage.location import ObjectLocation


class Dbt(Protocol):
    """How the phases that run dbt (build, retire) run it: `invoke_dbt`, or a stand-in."""

    def __call__(self, settings: RunSettings, command: str, *args: str,
                 extra_vars: Mapping[str, object] | None = None) -> list[NodeResult]: ...


def invoke_dbt(settings: RunSettings, command: str, *args: str,
               extra_vars: Mapping[str, object] | None = None) -> list[NodeResult]:
    """Run a dbt command on the configured target (with `extra_vars`, which only the nodes'
    execution reads, besides the settings' own), watching its server on the embedded and
    connect engines: raises EngineCrashError, carrying the nodes dbt finished, when the
    embedded engine was lost, and UnreachableServerError when the Connect server stopped
    answering (a cluster lakemirror cannot restart)."""
    run_vars = dict(extra_vars or {})
    engine: WatchedEngine
    if settings.engine == "embedded":
        address, engine = embedded_engine(engine_environment(settings.warehouse,
                                                             settings.env.storage.variables),
                                          env=settings.env)
        run_vars |= engine_vars(address, engine.home if isinstance(engine, ChildEngine)
                                and engine.home is not None else settings.env.home)
        timeout = settings.engine_timeout
    elif (settings.engine == "connect"
          and (remote := connect_server(settings.env.connect_url)) is not None):
        engine, timeout = remote, math.inf  # a busy cluster is not lakemirror's to stop
    else:
        return _dbt_invoke(settings, command, args, run_vars)
    with watchdog(engine, timeout) as watch:
        nodes = _dbt_invoke(settings, command, args, run_vars)
    if isinstance(engine, RemoteServer):
        nodes = explain_storage_errors(settings, nodes)
    if watch.reason is None:
        return nodes
    engine.kill()
    close_connect_sessions()  # a warm session would talk to the lost engine
    if isinstance(engine, RemoteServer):
        raise UnreachableServerError(
            f"{engine.exit_reason()} while dbt worked on this run ({CONNECT_URL})",
            hint="start the server again: the next run builds the tables this one left, and "
                 "mirrors the files it staged")
    raise EngineCrashError(watch.reason, nodes=nodes, at=watch.at,
                           hint="the next run starts a fresh engine; if the same table "
                                "brings it down again, run it alone with --table and "
                                "report it")


def _dbt_invoke(settings: RunSettings, command: str, args: tuple[str, ...],
                run_vars: Mapping[str, object]) -> list[NodeResult]:
    return dbt_invoke(command, settings.project_dir,
                      profiles_dir=profiles_dir(settings.project_dir,
                                                settings.env.dbt_profiles_dir),
                      target=settings.target, engine=settings.engine,
                      warehouse=dbt_warehouse(settings),
                      dbt_vars={**settings.dbt_vars, WAREHOUSE_NAME_VAR: settings.warehouse_name},
                      run_vars=run_vars,
                      extra_args=(*args, *(("--log-level", "none") if settings.quiet else ())),
                      warm=settings.warm)


def dbt_warehouse(settings: RunSettings) -> str:
    """The warehouse as dbt is given it: Spark's URL of an object store on a Spark engine."""
    warehouse = settings.warehouse
    if isinstance(warehouse, ObjectLocation) and settings.engine in ("spark", "connect"):
        return spark_url(warehouse)
    return str(warehouse)


def engine_vars(address: EngineAddress, home: Path) -> dict[str, object]:
    """The dbt vars that point a profile's embedded target at the engine at `address`, whose
    token is kept in the lakemirror home `home` (read by lakemirror's dbt plugin): read by the
    profile and the plugin alone, never by a parse, so a warm caller's kept manifest outlives
    the engine."""
    return {ENGINE_HOST_VAR: address.host, ENGINE_PORT_VAR: address.port,
            ENGINE_HOME_VAR: str(home)}


# The embedded engines this process started, one per set of storage settings. Process-wide on
# purpose: an engine is a child process bound to a port (LAKEMIRROR_ENGINE_PORT's for the first),
# which every run of the process with those settings shares; a pool per run would start an
# engine per run and fight over the port. Runs still never see each other's state through it: a
# warehouse's catalog lives in its own Connect session (see dbt_runner's `_release_sessions`).
_child_engines: dict[tuple[tuple[str, str], ...], ChildEngine] = {}
_starting = threading.Lock()


def embedded_engine(environment: Mapping[str, str] | None = None, *, env: Settings
                    ) -> tuple[EngineAddress, WatchedEngine]:
    """The background engine (in `env.home`) if one runs with the storage settings asked for
    (`environment`, those of the warehouse it serves), else this process's own engine in a
    child process started with them (one engine per set of settings), a fresh one once the
    last was lost. A child takes LAKEMIRROR_ENGINE_PORT's port unless another child holds it:
    then any; it shows its log with `--debug` or LAKEMIRROR_LOG."""
    running = background_process(env.home)
    if running and background_storage(env.home) == storage_fingerprint(environment or {}):
        return running.address, running
    key = tuple(sorted((environment or {}).items()))
    with _starting:  # two runs' threads share the engine one of them starts
        engine = _child_engines.get(key)
        if engine is None or not engine.alive():
            if engine is not None:
                engine.kill()  # reaped, so its port is free again
            port = env.engine_port
            taken = any(other.alive() and other.address.port == port
                        for other in _child_engines.values())
            engine = _child_engines[key] = ChildEngine(home=env.home, environment=environment,
                                                       port=0 if taken else port,
                                                       show_log=env.engine_log or env.debug)
    return engine.address, engine


def engine_address(env: Settings) -> EngineAddress:
    """The address of the embedded engine dbt runs on (see `embedded_engine`)."""
    return embedded_engine(env=env)[0]
