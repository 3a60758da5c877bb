"""The mirror service: ingest → generate models → dbt build → per-table status."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from deltalake import DeltaTable

from lakemirror.build import NodeResult, dbt_invoke
from lakemirror.codegen import MIRROR_FOLDER, MirrorModel, retire_model, write_model
from lakemirror.conflicts import Backoff, classify_conflict
from lakemirror.delta.rows import table_row_count
from lakemirror.engine import EngineAddress, InProcessEngine, background_engine
from lakemirror.errors import ConfigError, EngineError, LandingZoneError
from lakemirror.landing import LandingTable, discover_tables
from lakemirror.monitor import (
    applied_positions,
    monitor_record,
    read_monitor,
    record_partner_events,
    write_monitor,
)
from lakemirror.staging import (
    STAGING_SCHEMA,
    IngestResult,
    Warehouse,
    ingest_table,
    register_relations,
    staging_table_name,
)
from lakemirror.scope import Scope, resolve_scope
from lakemirror.staging.lifecycle import drop_table_data, find_retirements, staged_tables
from lakemirror.staging.lock import DEFAULT_LOCK_TIMEOUT, control_lock, table_locks
from lakemirror.staging.retention import DEFAULT_RETENTION_DAYS
from lakemirror.status import TableStatus

PROJECT_DIR = Path(__file__).resolve().parents[2]


@dataclass
class MirrorService:
    """Mirrors one landing zone into one warehouse with one dbt project."""

    landing_zone: Path
    warehouse: Path
    project_dir: Path = PROJECT_DIR
    target: str = "embedded"
    dbt_vars: dict[str, object] = field(default_factory=dict)
    quiet: bool = False
    retention_days: float = DEFAULT_RETENTION_DAYS
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT
    backoff: Backoff = field(default_factory=Backoff)
    warm: bool = False
    progress: Callable[[str], None] = lambda message: None

    def __post_init__(self) -> None:
        self.landing_zone = self.landing_zone.resolve()
        self.warehouse = self.warehouse.resolve()
        self.project_dir = self.project_dir.resolve()
        if not (self.project_dir / "dbt_project.yml").is_file():
            raise ConfigError(f"no dbt_project.yml in {self.project_dir}",
                              hint="pass --project-dir pointing at the lakemirror dbt project")

    def run(self, tables: Sequence[str] = ()) -> list[TableStatus]:
        """Drop tables whose folder went away, ingest new files, generate models for new
        tables, run `dbt build`; on every table, or only the named ones ('schema.table')."""
        with self._locked_scope(tables) as (landing, scope):
            dropped = self.drop_retired(landing, scope)
            ingested = self.ingest([table for table in landing if table.qualified_name in scope])
            staged = [result for result in ingested if self._is_staged(result)]
            nodes = self.build(scope) if staged else []
            statuses = [self._status(result, nodes) for result in ingested]
            self._record(ingested, statuses, scope, applied_now=bool(nodes))
            return dropped + statuses

    def ingest_only(self, tables: Sequence[str] = ()) -> list[TableStatus]:
        """Ingest and generate models without running dbt (for orchestrators that run dbt)."""
        with self._locked_scope(tables) as (landing, scope):
            dropped = self.drop_retired(landing, scope)
            ingested = self.ingest([table for table in landing if table.qualified_name in scope])
            statuses = [self._status(result, []) for result in ingested]
            self._record(ingested, statuses, scope, applied_now=False)
            return dropped + statuses

    @contextmanager
    def _locked_scope(self, selected: Sequence[str]
                      ) -> Iterator[tuple[list[LandingTable], Scope]]:
        """Lock the run's tables (landing-zone and staged ones, or the selected ones), then
        yield the landing zone's tables as found once the locks are held, and the scope."""
        known = [table.qualified_name for table in discover_tables(self.landing_zone)]
        known += [f"{schema}.{table}" for schema, table in staged_tables(self.layout)]
        scope = resolve_scope(selected, known)
        with table_locks(self.warehouse, sorted(scope.names), timeout=self.lock_timeout,
                         progress=self.progress):
            yield discover_tables(self.landing_zone), scope

    def drop_retired(self, tables: list[LandingTable],
                     scope: Scope | None = None) -> list[TableStatus]:
        """Drop every table in scope whose landing folder was deleted or recreated: from the
        engine's catalog, then its data, then (for deleted folders) its generated model.
        Returns a `dropped` status for each deleted folder; a recreated one is rebuilt by the
        ingest. `tables` are all the zone's tables: a table outside the scope is never
        dropped, whether its folder exists or not."""
        retirements = [retirement for retirement in find_retirements(tables, self.layout)
                       if scope is None or retirement.qualified_name in scope]
        if not retirements:
            return []
        if not tables:
            self.progress(f"warning: the landing zone {self.landing_zone} holds no table folder; "
                          f"not dropping the {len(retirements)} mirrored tables (an unmounted "
                          "or wrong folder looks the same). Leave one folder to drop the rest.")
            return []
        names = [retirement.qualified_name for retirement in retirements]
        self.progress(f"drop {', '.join(names)}")
        failed = [node for node in self._dbt("run-operation", "lakemirror.drop_mirrored_tables",
                                             "--args", json.dumps({"tables": names}))
                  if node.failed]
        if failed:
            raise EngineError(f"could not drop {', '.join(names)}: {failed[0].message}",
                              hint="check the engine and run again; nothing was deleted")
        dropped = []
        for retirement in retirements:
            drop_table_data(self.layout, retirement, progress=self.progress)
            if retirement.reason == "deleted":
                kept = [f"{path.relative_to(self.project_dir)} ({outcome})" for path, outcome in
                        retire_model(self.project_dir, retirement.schema,
                                     retirement.table).items() if outcome != "removed"]
                note = (f"kept your edited model files: {', '.join(kept)}; delete them when "
                        "no longer needed") if kept else None
                dropped.append(TableStatus(retirement.schema, retirement.table, "dropped", 0,
                                           None, None, note))
        return dropped

    def ingest(self, tables: list[LandingTable]) -> list[IngestResult]:
        """Stage new files of every table; register staging tables; generate missing models."""
        self._record_partner()
        ingested = []
        for table in tables:
            self.progress(f"ingest {table.qualified_name}")
            ingested.append(ingest_table(
                table, self.layout,
                retention_days=self.retention_days,
                on_file=lambda file: self.progress(f"  stage {file.path.name}")))
            for warning in ingested[-1].metadata.warnings:
                self.progress(f"  warning: {warning}")
        staged = [result for result in ingested if self._is_staged(result)]
        register_relations(self.layout, [
            (STAGING_SCHEMA, staging_table_name(r.table.schema, r.table.name),
             str(self.layout.staging_path(r.table.schema, r.table.name))) for r in staged])
        for result in staged:
            model = MirrorModel(result.table.schema, result.table.name,
                                result.metadata.key_columns, result.metadata.conditional_column)
            for path, outcome in write_model(self.project_dir, model).items():
                if outcome != "unchanged":
                    self.progress(f"model {path.relative_to(self.project_dir)}: {outcome}")
        return ingested

    def _record(self, ingested: list[IngestResult], statuses: list[TableStatus], scope: Scope,
                *, applied_now: bool) -> None:
        """Write this run's monitoring records, keeping those of tables not selected for it."""
        with control_lock(self.warehouse, timeout=self.lock_timeout, progress=self.progress):
            previous = read_monitor(self.layout)
            applied = applied_positions(self.layout)
            kept = [record for (schema, table), record in previous.items()
                    if scope.explicit and f"{schema}.{table}" not in scope]
            write_monitor(self.layout, kept + [
                monitor_record(result, status, previous.get((status.schema, status.table)),
                               applied.get(f"{status.schema}.{status.table}", 0),
                               applied_now=applied_now)
                for result, status in zip(ingested, statuses)])

    def _record_partner(self) -> None:
        try:
            with control_lock(self.warehouse, timeout=self.lock_timeout, progress=self.progress):
                record_partner_events(self.landing_zone, self.layout)
        except LandingZoneError as error:
            self.progress(f"warning: {error}")

    @property
    def layout(self) -> Warehouse:
        return Warehouse(self.warehouse)

    def _is_staged(self, result: IngestResult) -> bool:
        return DeltaTable.is_deltatable(
            str(self.layout.staging_path(result.table.schema, result.table.name)))

    def build(self, scope: Scope | None = None) -> list[NodeResult]:
        """`dbt build` on the configured target, limited to the scope's mirror models when
        tables were selected, and never building another run's tables; models that lost a
        commit conflict are built again with backoff."""
        selection = self._selection(scope) if scope is not None else []
        self.progress(f"dbt build {' '.join(selection)}".rstrip())
        return self._rebuild_conflicts(self._dbt("build", *selection))

    def _selection(self, scope: Scope) -> list[str]:
        """dbt node selection: the scope's mirror models when explicit, else all nodes but the
        mirror models of tables outside the scope (created meanwhile by another run)."""
        models = {path.stem for path in (self.project_dir / MIRROR_FOLDER).glob("*/*.sql")}
        ours = {staging_table_name(*name.split(".", 1)) for name in scope.names}
        if scope.explicit:
            return ["--select", *sorted(models & ours)]
        others = sorted(models - ours)
        return ["--exclude", *others] if others else []

    def _rebuild_conflicts(self, nodes: list[NodeResult]) -> list[NodeResult]:
        for attempt, delay in enumerate(self.backoff.delays(), start=2):
            conflicts = {node.unique_id.rsplit(".", 1)[-1]: conflict for node in nodes
                         if node.failed and node.unique_id.startswith("model.")
                         and (conflict := classify_conflict(node.message))}
            if not conflicts:
                return nodes
            self.progress(
                "commit conflict: " + ", ".join(f"{model} ({conflict.kind.value})"
                                                for model, conflict in conflicts.items())
                + f"; building again in {delay:.1f} s (attempt {attempt} of "
                  f"{self.backoff.attempts})")
            time.sleep(delay)
            again = {node.unique_id: node for node in self._dbt("build", "--select", *conflicts)}
            nodes = [again.pop(node.unique_id, node) for node in nodes] + list(again.values())
        return nodes

    def _dbt(self, command: str, *args: str) -> list[NodeResult]:
        """Run a dbt command on the configured target, with an engine for `embedded`."""
        env = {"LAKEMIRROR_WAREHOUSE": str(self.warehouse)}
        if self.target == "embedded":
            address = engine_address()
            env |= {"LAKEMIRROR_ENGINE_HOST": address.host,
                    "LAKEMIRROR_ENGINE_PORT": str(address.port)}
        return dbt_invoke(command, self.project_dir, profiles_dir=self.project_dir / "profiles",
                          target=self.target, env=env, dbt_vars=self.dbt_vars,
                          extra_args=(*args, *(("--log-level", "none") if self.quiet else ())),
                          warm=self.warm)

    def _status(self, result: IngestResult, nodes: list[NodeResult]) -> TableStatus:
        schema, name = result.table.schema, result.table.name
        model = staging_table_name(schema, name)
        model_errors = [node.message or node.status for node in nodes
                        if node.failed and node.unique_id.startswith("model.")
                        and node.unique_id.endswith(f".{model}")]
        rows = table_row_count(self.layout.mirrored_path(schema, name))
        if result.status == "failed" or not model_errors:
            return TableStatus(schema, name, result.status, result.last_sequence, rows,
                               result.error)
        conflict = classify_conflict(model_errors[0])
        reason = (f"{conflict.kind.value} after {self.backoff.attempts} attempts: "
                  if conflict else "")
        return TableStatus(schema, name, "failed", result.last_sequence, rows,
                           f"dbt model {model}: {reason}{model_errors[0]}")


_shared_engine: InProcessEngine | None = None


def engine_address() -> EngineAddress:
    """The background engine if one runs, else one in-process engine for this process."""
    running = background_engine()
    if running:
        return running
    global _shared_engine
    if _shared_engine is None:
        _shared_engine = InProcessEngine()
    return _shared_engine.address

