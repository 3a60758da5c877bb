"""`dbt build` of a run's models, with conflict rebuilds and a rebuild after an engine crash."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from lakemirror.build import close_connect_sessions, dbt_invoke
from lakemirror.codegen import HISTORY_SUFFIX, MIRROR_FOLDER
from lakemirror.conflicts import classify_conflict
from lakemirror.engine import (
    ChildEngine,
    EngineAddress,
    WatchedEngine,
    background_process,
    watchdog,
)
from lakemirror.errors import EngineCrashError
from lakemirror.node_result import NodeResult
from lakemirror.project import profiles_dir
from lakemirror.scope import Scope
from lakemirror.staging import staging_table_name
from lakemirror.staging.lock import ensure_held
from lakemirror.storage.engine_settings import engine_environment
from lakemirror.table_outcome import rebuild_after_crash

if TYPE_CHECKING:
    from lakemirror.service import MirrorService


def build(service: MirrorService, scope: Scope | None = None, *,
          damaged: dict[str, list[str]] | None = None) -> list[NodeResult]:
    """`dbt build` on the configured target, limited to the scope's mirror models when
    tables were selected, and never building another run's tables nor the `damaged` ones
    (model → locations, which are not attached either); models that lost a commit conflict
    are built again with backoff, and those an engine crash interrupted once more on a
    fresh engine."""
    damaged = damaged or {}
    selection = _selection(service, scope, frozenset(damaged)) if scope is not None else []
    unattached = {"lakemirror_damaged_locations": sorted(
        location for locations in damaged.values() for location in locations)}
    extra_vars = unattached if damaged else {}
    ensure_held(service.warehouse)
    service.progress(f"dbt build {' '.join(selection)}".rstrip())
    try:
        nodes = service._dbt("build", *selection, extra_vars=extra_vars)
    except EngineCrashError as crash:
        nodes = rebuild_after_crash(crash, lambda models: service._dbt(
            "build", "--select", *models, extra_vars=extra_vars), progress=service.progress)
    return _rebuild_conflicts(service, nodes)


def _selection(service: MirrorService, scope: Scope,
               skip: frozenset[str] = frozenset()) -> list[str]:
    """dbt node selection: the scope's mirror models (and their history models) when
    explicit, else all nodes but the mirror and history models of tables outside the scope
    (created meanwhile by another run)."""
    folder = service.project_dir / MIRROR_FOLDER
    models = {path.stem for path in [*folder.glob("*/*.sql"), *folder.glob("*/history/*.sql")]}
    skip = skip | {name + HISTORY_SUFFIX for name in skip}
    ours = {staging_table_name(*name.split(".", 1)) for name in scope.names}
    ours = (ours | {name + HISTORY_SUFFIX for name in ours}) - skip
    if scope.explicit:
        return ["--select", *sorted(models & ours)]
    others = sorted((models - ours) | (models & skip))
    return ["--exclude", *others] if others else []


def _rebuild_conflicts(service: MirrorService, nodes: list[NodeResult]) -> list[NodeResult]:
    for attempt, delay in enumerate(service.backoff.delays(), start=2):
        conflicts = {node.unique_id.rsplit(".", 1)[-1]: conflict for node in nodes
                     if node.failed and node.unique_id.startswith("model.")
                     and (conflict := classify_conflict(node.message))}
        if not conflicts:
            return nodes
        service.progress(
            "commit conflict: " + ", ".join(f"{model} ({conflict.kind.value})"
                                            for model, conflict in conflicts.items())
            + f"; building again in {delay:.1f} s (attempt {attempt} of "
              f"{service.backoff.attempts})")
        time.sleep(delay)
        again = {node.unique_id: node for node in service._dbt("build", "--select", *conflicts)}
        nodes = [again.pop(node.unique_id, node) for node in nodes] + list(again.values())
    return nodes


def dbt(service: MirrorService, command: str, *args: str,
        extra_vars: Mapping[str, object] | None = None) -> list[NodeResult]:
    """Run a dbt command on the configured target (with `extra_vars` besides the service's
    own), with a watched engine for `embedded`; raises EngineCrashError, carrying the
    nodes dbt finished, when the engine was lost."""
    env = {"LAKEMIRROR_WAREHOUSE": str(service.warehouse),
           "LAKEMIRROR_WAREHOUSE_NAME": service.warehouse_names.name}
    dbt_vars = {**service.dbt_vars, **(extra_vars or {})}
    if service.target != "embedded":
        return _dbt_invoke(service, command, args, env, dbt_vars)
    address, engine = embedded_engine(engine_environment(service.warehouse))
    env |= {"LAKEMIRROR_ENGINE_HOST": address.host,
            "LAKEMIRROR_ENGINE_PORT": str(address.port)}
    with watchdog(engine, service.engine_timeout) as watch:
        nodes = _dbt_invoke(service, command, args, env, dbt_vars)
    if watch.reason is None:
        return nodes
    engine.kill()
    close_connect_sessions()  # a warm session would talk to the lost engine
    raise EngineCrashError(watch.reason, nodes=nodes, at=watch.at,
                           hint="the next run starts a fresh engine; if the same table "
                                "brings it down again, run it alone with --table and "
                                "report it")


def _dbt_invoke(service: MirrorService, command: str, args: tuple[str, ...],
                env: dict[str, str], dbt_vars: Mapping[str, object]) -> list[NodeResult]:
    return dbt_invoke(command, service.project_dir,
                      profiles_dir=profiles_dir(service.project_dir), target=service.target,
                      env=env, dbt_vars=dbt_vars,
                      extra_args=(*args, *(("--log-level", "none") if service.quiet else ())),
                      warm=service.warm)


_child_engines: dict[tuple[tuple[str, str], ...], ChildEngine] = {}


def embedded_engine(environment: Mapping[str, str] | None = None
                    ) -> tuple[EngineAddress, WatchedEngine]:
    """The background engine if one runs and no storage settings are asked for, else this
    process's own engine in a child process started with `environment` (the storage
    settings of the warehouse it serves: one engine per set of settings), a fresh one once
    the last was lost."""
    running = background_process() if not environment else None
    if running:
        return running.address, running
    key = tuple(sorted((environment or {}).items()))
    engine = _child_engines.get(key)
    if engine is None or not engine.alive():
        engine = _child_engines[key] = ChildEngine(environment=environment)
    return engine.address, engine


def engine_address() -> EngineAddress:
    """The address of the embedded engine dbt runs on (see `embedded_engine`)."""
    return embedded_engine()[0]
