"""The mirror service: a run's phases (`lakemirror.run`) composed, read top to bottom."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from lakemirror.delta.known_states import STATES_VAR, KnownStates
from lakemirror.engine.spark import check_spark_target
from lakemirror.environment import process_environment
from lakemirror.idle import (
    as_last_recorded,
    built_with,
    left_out,
    project_state,
    record_build,
    settled_tables,
)
from lakemirror.landing import LandingTable
from lakemirror.monitor import read_monitor, with_recorded_folders
from lakemirror.run import ingest, models, record, retire
from lakemirror.run.build import build
from lakemirror.run.dbt import Dbt, embedded_engine, engine_address, invoke_dbt
from lakemirror.run.log import Progress, RunLog, silent
from lakemirror.run.maintain import maintain
from lakemirror.run.scope import locked_scope
from lakemirror.run.server_storage import check_server_storage
from lakemirror.run.settings import RunSettings
from lakemirror.staging import staging_table_name
from lakemirror.table_scope import Scope
from lakemirror.status import NodeStatus, TableStatus

__all__ = ["PROJECT_DIR", "MirrorService", "RunSettings", "embedded_engine", "engine_address"]

PROJECT_DIR = Path(__file__).resolve().parents[2]  # the example project, in a source checkout


@dataclass
class MirrorService:
    """Mirrors the settings' landing zone into their warehouse, with their dbt project."""

    settings: RunSettings
    progress: Progress = silent
    dbt: Dbt = invoke_dbt  # how the build and the drops run dbt
    run_warnings: list[str] = field(default_factory=list)  # the last run's, about the zone
    run_models: list[NodeStatus] = field(default_factory=list)  # the project's own, last run
    known_states: KnownStates = field(default_factory=KnownStates)  # read by its last run
    reached_storage: set[tuple[str, str]] = field(default_factory=set)  # see check_server_storage

    def run(self, tables: Sequence[str] = ()) -> list[TableStatus]:
        """Drop tables whose folder went away, ingest new files, generate models for new
        tables, run `dbt build`; on every table, or only the named ones ('schema.table')."""
        settings, log = self.settings, self._log()
        layout = settings.layout
        check_server_storage(settings, self.reached_storage)
        if settings.engine == "spark":  # before any work, and before its JVM prints Ivy's log
            check_spark_target(process_environment())
        with locked_scope(settings, log, tables) as (landing, scope, opened):
            dropped = retire.drop_retired(settings, log, self.dbt, landing, scope, opened)
            healed = retire.heal_returned(settings, log, landing, scope, opened)
            ingested = ingest.ingest(settings, log, _in_scope(landing, scope), opened)
            ingested = models.generate_models(settings, log, ingested, opened)
            staged = [r for r in ingested if opened.is_staged(r.table.schema, r.table.name)]
            previous = read_monitor(layout)
            retired = [status for status in dropped if status.status == "retired"]
            unchanged = built_with(layout) == _state(settings)
            settled = (settled_tables(ingested, previous, partial(ingest.is_mirrored, layout))
                       if unchanged else frozenset())
            idle = (len(dropped) == len(retired) and not healed and unchanged
                    and all((result.table.schema, result.table.name) in settled
                            for result in ingested))
            recorded = left_out(settled, previous)  # not built: as last recorded
            nodes = (build(settings, log, self.dbt, scope,
                           damaged=ingest.damaged(layout, ingested),
                           left_out=frozenset(staging_table_name(*key) for key in recorded),
                           run_vars=self._known_states_vars(), locks=opened.locks)
                     if staged and not idle else [])
            self.run_models = record.project_nodes(settings, nodes)
            if nodes and not scope.explicit:  # dbt may have written files (.user.yml)
                healthy = not any(node.failed for node in self.run_models)
                record_build(layout, _state(settings) if healthy else None)  # else: again
            statuses = as_last_recorded(record.statuses(
                settings, ingested, nodes, self.known_states, recorded), recorded)
            if idle:
                log.progress("nothing new: no dbt build")
            record.record_run(settings, log, ingested, statuses, scope, self.known_states,
                              applied_now=bool(nodes), left_out=recorded, retired=retired)
            maintain(settings, log, [f"{s.schema}.{s.table}" for s in statuses if s.status !=
                                     "failed" and opened.is_staged(s.schema, s.table)])
            return with_recorded_folders(dropped, previous) + statuses

    def ingest_only(self, tables: Sequence[str] = ()) -> list[TableStatus]:
        """Ingest and generate models without running dbt (for orchestrators that run dbt)."""
        settings, log = self.settings, self._log()
        with locked_scope(settings, log, tables) as (landing, scope, opened):
            dropped = retire.drop_retired(settings, log, self.dbt, landing, scope, opened)
            retire.heal_returned(settings, log, landing, scope, opened)
            ingested = ingest.ingest(settings, log, _in_scope(landing, scope), opened)
            ingested = models.generate_models(settings, log, ingested, opened)
            statuses = record.statuses(settings, ingested, [], self.known_states)
            dropped = with_recorded_folders(dropped, read_monitor(settings.layout))
            record.record_run(settings, log, ingested, statuses, scope, self.known_states,
                              applied_now=False, retired=dropped)
            return dropped + statuses

    def _known_states_vars(self) -> dict[str, object]:
        """The Delta states this service read, or the warehouse's runs saved, for its next
        build (warm or cold: dbt runs it on a manifest parsed without them, so they cost no
        parse)."""
        layout = self.settings.layout
        self.known_states.load(layout.storage)
        return {STATES_VAR: self.known_states.current(layout.root, layout.storage)}

    def _log(self) -> RunLog:
        """A new run's log; its warnings are the service's `run_warnings` from now on, and
        it has built none of the project's own nodes yet (`run_models`)."""
        log = RunLog(self.progress)
        self.run_warnings, self.run_models = log.warnings, []
        return log


def _state(settings: RunSettings) -> str:
    return project_state(settings.project_dir, settings.target, settings.dbt_vars)


def _in_scope(tables: list[LandingTable], scope: Scope) -> list[LandingTable]:
    """The tables of the scope."""
    return [table for table in tables if table.qualified_name in scope]
