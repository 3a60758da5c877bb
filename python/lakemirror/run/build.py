"""`dbt build` of a run's models, with conflict rebuilds and a rebuild after an engine crash."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from pathlib import Path

from lakemirror.codegen import HISTORY_SUFFIX, MIRROR_FOLDER
from lakemirror.conflicts import classify_conflict
from lakemirror.errors import EngineCrashError, ProjectParseError
from lakemirror.naming import split_qualified_name, staging_table_name
from lakemirror.node_result import NodeResult
from lakemirror.run.dbt import Dbt
from lakemirror.run.log import RunLog
from lakemirror.run.mirror_only import mirror_only_project
from lakemirror.run.settings import RunSettings
from lakemirror.table_scope import Scope
from lakemirror.staging.lock import HeldLocks
from lakemirror.table_outcome import rebuild_after_crash

STAGING_SOURCE = "lakemirror_staging"  # the dbt source of the staging tables (codegen.models)


def build(settings: RunSettings, log: RunLog, dbt: Dbt, scope: Scope | None = None, *,
          damaged: dict[str, list[str]] | None = None,
          left_out: frozenset[str] = frozenset(),
          run_vars: Mapping[str, object] | None = None,
          locks: HeldLocks = HeldLocks({})) -> list[NodeResult]:
    """`dbt build` on the configured target, limited to the scope's mirror models when
    tables were selected, and never building another run's tables, the `damaged` ones
    (model → locations, which are not attached either) nor the `left_out` ones (models of
    tables with nothing to apply: neither they nor their tests run); models that lost a
    commit conflict are built again with backoff, and those an engine crash interrupted once
    more on a fresh engine. When dbt cannot parse the project, its mirror models build alone, and the
    parse error is a failed node of the result. `run_vars` go to dbt besides (see
    `invoke_dbt`); none of the run's `locks` may have been lost."""
    damaged = damaged or {}
    selection = (_selection(settings, scope, frozenset(damaged), left_out)
                 if scope is not None else [])
    if selection == ["--select"]:
        return []  # every table of the scope left out
    unattached = {"lakemirror_damaged_locations": sorted(
        location for locations in damaged.values() for location in locations)}
    extra_vars = {**(run_vars or {}), **(unattached if damaged else {})}
    locks.ensure_held()
    log.progress(f"dbt build {' '.join(selection)}".rstrip())
    try:
        return _build(settings, log, dbt, selection, extra_vars)
    except ProjectParseError as unparsed:
        log.progress(f"{unparsed.message}; building the mirror tables alone")
        mirror_only = dataclasses.replace(settings, project_dir=mirror_only_project(
            settings.project_dir, settings.env.home))
        try:
            nodes = _build(mirror_only, log, dbt, selection, extra_vars)
        except ProjectParseError:
            raise unparsed from None  # not the user's models: nothing builds
        return [*nodes, NodeResult(
            unparsed.node or "project", "error",
            f"{unparsed.message}. dbt cannot parse the project, so none of its own models "
            "and tests were built; the mirror tables were")]


def _build(settings: RunSettings, log: RunLog, dbt: Dbt, selection: list[str],
           extra_vars: Mapping[str, object]) -> list[NodeResult]:
    try:
        nodes = dbt(settings, "build", *selection, extra_vars=extra_vars)
    except EngineCrashError as crash:
        nodes = rebuild_after_crash(crash, lambda models: dbt(
            settings, "build", "--select", *models, extra_vars=extra_vars),
            progress=log.progress)
    return _rebuild_conflicts(settings, log, dbt, nodes)


def mirror_models(project_dir: Path) -> frozenset[str]:
    """The names of the generated mirror models (and their history models) in the project."""
    folder = project_dir / MIRROR_FOLDER
    return frozenset(path.stem for path in [*folder.glob("*/*.sql"),
                                            *folder.glob("*/history/*.sql")])


def _selection(settings: RunSettings, scope: Scope, skip: frozenset[str] = frozenset(),
               left_out: frozenset[str] = frozenset()) -> list[str]:
    """dbt node selection: the scope's mirror models (and their history models) when
    explicit, else all nodes but the mirror and history models of tables outside the scope
    (created meanwhile by another run); never those of the `skip` models, nor the models
    of the `mirror` strategy that read a `left_out` model's staging source (its mirror and
    history models, whether the history is enabled or not: a name would match no node then,
    and dbt warn of it; a model of the user's reading the source still builds).
    dbt's indirect selection leaves out the tests of every model left out."""
    models = mirror_models(settings.project_dir)
    skip = _with_history(skip)
    ours = _with_history(frozenset(staging_table_name(*split_qualified_name(name))
                                   for name in scope.names) - left_out) - skip
    if scope.explicit:
        return ["--select", *sorted(models & ours)]
    others = sorted((models - ours - _with_history(left_out)) | (models & skip))
    readers = [f"source:{STAGING_SOURCE}.{name}+1,config.incremental_strategy:mirror"
               for name in sorted(left_out)]
    return ["--exclude", *others, *readers] if others or readers else []


def _with_history(names: frozenset[str]) -> frozenset[str]:
    """The mirror models `names` and their history models."""
    return names | {name + HISTORY_SUFFIX for name in names}


def _rebuild_conflicts(settings: RunSettings, log: RunLog, dbt: Dbt,
                       nodes: list[NodeResult]) -> list[NodeResult]:
    for attempt, delay in enumerate(settings.backoff.delays(), start=2):
        conflicts = {node.name: conflict for node in nodes
                     if node.failed and node.kind == "model"
                     and (conflict := classify_conflict(node.message))}
        if not conflicts:
            return nodes
        log.progress(
            "commit conflict: " + ", ".join(f"{model} ({conflict.kind.value})"
                                            for model, conflict in conflicts.items())
            + f"; building again in {delay:.1f} s (attempt {attempt} of "
              f"{settings.backoff.attempts})")
        time.sleep(delay)
        again = {node.unique_id: node for node in dbt(settings, "build", "--select", *conflicts)}
        nodes = [again.pop(node.unique_id, node) for node in nodes] + list(again.values())
    return nodes
