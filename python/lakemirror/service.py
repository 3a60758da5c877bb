"""The mirror service: ingest → generate models → dbt build → per-table status."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from deltalake import DeltaTable

from lakemirror.binding import ZoneIdentity, check_binding, record_binding, zone_identity
from lakemirror.build import close_connect_sessions, dbt_invoke, forget_warm_sessions
from lakemirror.codegen import (
    HISTORY_SUFFIX,
    MIRROR_FOLDER,
    MirrorModel,
    WarehouseName,
    checked_name,
    configured_name,
    retire_history_model,
    retire_model,
    warehouse_name,
    without_history_clashes,
    write_history_model,
    write_model,
)
from lakemirror.conflicts import Backoff, classify_conflict
from lakemirror.delta.integrity import check_newest_commit
from lakemirror.delta.rows import table_row_count
from lakemirror.engine import (
    DEFAULT_ENGINE_TIMEOUT,
    ChildEngine,
    EngineAddress,
    WatchedEngine,
    background_process,
    watchdog,
)
from lakemirror.errors import (
    ConfigError,
    CorruptTableError,
    EngineCrashError,
    LakemirrorError,
    LandingZoneError,
)
from lakemirror.idle import (
    as_last_recorded,
    built_with,
    nothing_new,
    project_state,
    record_build,
)
from lakemirror.landing import LandingTable, discover_tables, hidden_entries
from lakemirror.landing.detection import Settling
from lakemirror.landing.readiness import SETTLE_SECONDS, settle_seconds
from lakemirror.monitor import (
    applied_positions,
    monitor_record,
    read_monitor,
    read_records,
    record_partner_events,
    with_recorded_folders,
    write_monitor,
)
from lakemirror.node_result import NodeResult
from lakemirror.staging import (
    STAGING_SCHEMA,
    IngestResult,
    StagingTable,
    Warehouse,
    ingest_table,
    register_relations,
    staging_table_name,
)
from lakemirror.project import profiles_dir
from lakemirror.recovery import DEFAULT_MAX_DROP_SHARE, check_drop_share, heal
from lakemirror.scope import Scope, resolve_scope
from lakemirror.staging.lifecycle import (
    Retirement,
    drop_table_data,
    find_retirements,
    staged_tables,
)
from lakemirror.staging.dropped import DroppedCopy, purge_dropped
from lakemirror.staging.lock import DEFAULT_LOCK_TIMEOUT, control_lock, table_locks
from lakemirror.staging.retention import DEFAULT_RETENTION_DAYS
from lakemirror.status import TableStatus
from lakemirror.table_outcome import failed_ingest, rebuild_after_crash, table_status

PROJECT_DIR = Path(__file__).resolve().parents[2]  # the example project, in a source checkout


@dataclass
class MirrorService:
    """Mirrors one landing zone into one warehouse with one dbt project (by default the one in
    the current directory, as for dbt)."""

    landing_zone: Path
    warehouse: Path
    project_dir: Path = field(default_factory=Path.cwd)
    target: str = "embedded"
    dbt_vars: dict[str, object] = field(default_factory=dict)
    quiet: bool = False
    retention_days: float = DEFAULT_RETENTION_DAYS
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT
    backoff: Backoff = field(default_factory=Backoff)
    warm: bool = False
    warehouse_name: str = field(default_factory=configured_name)  # generated models know it by
    engine_timeout: float = DEFAULT_ENGINE_TIMEOUT
    progress: Callable[[str], None] = lambda message: None
    rebind_landing_zone: bool = False  # mirror this zone even if the warehouse mirrors another
    confirm_drops: bool = False  # drop however many tables' folders are gone
    max_drop_share: float = DEFAULT_MAX_DROP_SHARE
    run_warnings: list[str] = field(default_factory=list)  # the last run's, about the zone
    _given_warehouse: Path = field(init=False, repr=False)  # before links were resolved
    _given_zone: Path = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._given_zone = self.landing_zone
        self.landing_zone = self.landing_zone.resolve()
        self._given_warehouse = self.warehouse
        self.warehouse = self.warehouse.resolve()
        self.project_dir = self.project_dir.resolve()
        self.warehouse_name = checked_name(self.warehouse_name)  # before any table
        if not (self.project_dir / "dbt_project.yml").is_file():
            raise ConfigError(f"no dbt_project.yml in {self.project_dir}",
                              hint="run lakemirror in your dbt project's folder, or pass "
                                   "--project-dir (LAKEMIRROR_PROJECT_DIR); `lakemirror init "
                                   "DIR` creates a project")

    def run(self, tables: Sequence[str] = ()) -> list[TableStatus]:
        """Drop tables whose folder went away, ingest new files, generate models for new
        tables, run `dbt build`; on every table, or only the named ones ('schema.table')."""
        with self._locked_scope(tables) as (landing, scope):
            dropped = self.drop_retired(landing, scope)
            healed = self._heal(landing, scope)
            ingested = self.ingest([table for table in landing if table.qualified_name in scope])
            staged = [result for result in ingested if self._is_staged(result)]
            previous = read_monitor(self.layout)
            idle = (not dropped and not healed and built_with(self.layout) == self._project_state()
                    and nothing_new(ingested, previous, self._is_mirrored))
            nodes = (self.build(scope, damaged=self._damaged(ingested))
                     if staged and not idle else [])
            if nodes and not scope.explicit:  # dbt may have written files (.user.yml)
                record_build(self.layout, self._project_state())
            statuses = [self._status(result, nodes) for result in ingested]
            if idle:
                self.progress("nothing new: no dbt build")
                statuses = as_last_recorded(statuses, previous)
            self._record(ingested, statuses, scope, applied_now=bool(nodes))
            self._maintain([f"{s.schema}.{s.table}" for s in statuses if s.status != "failed"
                            and self._is_staged_name(s.schema, s.table)])
            return with_recorded_folders(dropped, previous) + statuses

    def _maintain(self, names: list[str]) -> None:
        """Maintain the healthy tables whose maintenance is due (their locks are held)."""
        from lakemirror.maintenance import due_tables, maintain_tables

        try:
            due = due_tables(self.warehouse, names)
            if due:
                maintain_tables(self.layout, due, progress=self.progress)
        except Exception as error:  # maintenance is housekeeping: the run's outcome stands
            self._warn(f"maintenance did not finish: {type(error).__name__}: {error}; "
                       "run `lakemirror maintain` to see why")

    def _project_state(self) -> str:
        return project_state(self.project_dir, self.target, self.dbt_vars)

    def _is_mirrored(self, result: IngestResult) -> bool:
        return DeltaTable.is_deltatable(
            str(self.layout.mirrored_path(result.table.schema, result.table.name)))

    def _is_staged_name(self, schema: str, table: str) -> bool:
        return DeltaTable.is_deltatable(str(self.layout.staging_path(schema, table)))

    def ingest_only(self, tables: Sequence[str] = ()) -> list[TableStatus]:
        """Ingest and generate models without running dbt (for orchestrators that run dbt)."""
        with self._locked_scope(tables) as (landing, scope):
            dropped = self.drop_retired(landing, scope)
            self._heal(landing, scope)
            ingested = self.ingest([table for table in landing if table.qualified_name in scope])
            statuses = [self._status(result, []) for result in ingested]
            dropped = with_recorded_folders(dropped, read_monitor(self.layout))
            self._record(ingested, statuses, scope, applied_now=False)
            return dropped + statuses

    @contextmanager
    def _locked_scope(self, selected: Sequence[str]
                      ) -> Iterator[tuple[list[LandingTable], Scope]]:
        """Refuse a run on a zone the warehouse does not mirror (see `binding`); lock the
        run's tables (landing-zone and staged ones, or the selected ones), then yield the
        landing zone's tables as found once the locks are held (a folder that lost its name to
        a history model failing), and the scope; record the zone's binding after the run."""
        self.run_warnings = []
        known = [table.qualified_name for table in discover_tables(self.landing_zone)]
        zone = zone_identity(self._given_zone)
        check_binding(zone, self.landing_zone, self.warehouse, rebind=self.rebind_landing_zone)
        if hidden := hidden_entries(self.landing_zone):
            shown = ", ".join(map(repr, hidden[:5])) + (", ..." if len(hidden) > 5 else "")
            self._warn(f"ignored {len(hidden)} hidden entries of the landing zone (names "
                       f"starting with '.' are never tables): {shown}")
        known += [f"{schema}.{table}" for schema, table in staged_tables(self.layout)]
        scope = resolve_scope(selected, known)
        with table_locks(self.warehouse, sorted(scope.names), timeout=self.lock_timeout,
                         progress=self.progress):
            yield without_history_clashes(discover_tables(self.landing_zone),
                                          staged_tables(self.layout)), scope
        self._record_binding(zone)

    def _record_binding(self, zone: ZoneIdentity) -> None:
        try:
            with control_lock(self.warehouse, timeout=self.lock_timeout,
                              progress=self.progress):
                record_binding(self.layout, zone)
        except Exception as error:  # the run's own status is still printed
            self._warn(f"could not record the landing zone of the warehouse: "
                       f"{type(error).__name__}: {error}")

    def _heal(self, tables: list[LandingTable], scope: Scope) -> list[str]:
        """Bring back the dropped tables whose folders are back (see `recovery.heal`)."""
        restored = heal([table for table in tables if table.qualified_name in scope],
                        self.layout, progress=self.progress,
                        is_staged=lambda table: self._is_staged_name(table.schema, table.name))
        if restored:
            forget_warm_sessions()  # sessions attach the restored tables again
        return [copy.qualified_name for copy in restored]

    def drop_retired(self, tables: list[LandingTable],
                     scope: Scope | None = None) -> list[TableStatus]:
        """Drop every table in scope whose landing folder was deleted or recreated: from the
        engine's catalog, then its data moves to the dropped area (kept for the retention
        period), then (for deleted folders) its generated model goes. Returns a `dropped`
        status for each deleted folder; a recreated one is rebuilt by the ingest. `tables`
        are all the zone's tables: a table outside the scope is never dropped, whether its
        folder exists or not. Refuses (MassDropError) to drop more than the allowed share of
        the tables unless drops are confirmed."""
        purge_dropped(self.layout, self.retention_days)
        retirements = [retirement for retirement in find_retirements(tables, self.layout)
                       if scope is None or retirement.qualified_name in scope]
        if not retirements:
            return []
        if not tables:
            self._warn(f"the landing zone {self.landing_zone} holds no table folder; not "
                       f"dropping the {len(retirements)} mirrored tables (an unmounted or wrong "
                       "folder looks the same). Leave one folder to drop the rest.")
            return []
        if not self.confirm_drops:
            check_drop_share([r.qualified_name for r in retirements if r.reason == "deleted"],
                             len(staged_tables(self.layout)), self.max_drop_share,
                             zone=str(self._given_zone))
        names = [retirement.qualified_name for retirement in retirements]
        self.progress(f"drop {', '.join(names)}")
        notes = {retirement: self._retire_model(retirement) for retirement in retirements
                 if retirement.reason == "deleted"}  # first: dbt must parse without them
        try:
            failed = [node for node in self._dbt(
                "run-operation", "lakemirror.drop_mirrored_tables",
                "--args", json.dumps({"tables": names})) if node.failed]
        except LakemirrorError as error:  # the engine was lost, or dbt could not start
            failed = [NodeResult("operation.drop_mirrored_tables", "error", str(error))]
        if failed:
            reason = (f"could not drop the table: {failed[0].message} Fix: check the engine "
                      "and run again; nothing was deleted")
            return [TableStatus(retirement.schema, retirement.table, "failed", 0, None, reason,
                                error_class="system") for retirement in notes]  # the
            # recreated ones fail in their ingest, which finds the folder's new incarnation
        kept = {retirement: drop_table_data(self.layout, retirement)
                for retirement in retirements}
        for copy in kept.values():
            self.progress(f"  kept {copy.qualified_name} in {copy.path}")
        return [TableStatus(retirement.schema, retirement.table, "dropped", 0, None, None,
                            "; ".join(filter(None, [self._kept_note(kept[retirement]), note])))
                for retirement, note in notes.items()]

    def _kept_note(self, copy: DroppedCopy) -> str:
        until = time.strftime("%Y-%m-%d", time.gmtime(
            copy.dropped_at + self.retention_days * 86_400))
        return (f"kept in {copy.path} until {until}: `lakemirror restore "
                f"{copy.qualified_name}` brings it back")

    def _retire_model(self, retirement: Retirement) -> str | None:
        """Remove a deleted table's generated model (or only this warehouse from the model's
        list, while other warehouses mirror the table); a note names the files kept as
        edited."""
        outcomes = retire_model(self.project_dir, retirement.schema, retirement.table,
                                warehouse=self.warehouse_names)
        outcomes |= retire_history_model(self.project_dir, retirement.schema, retirement.table)
        kept = [f"{path.relative_to(self.project_dir)} ({outcome})"
                for path, outcome in outcomes.items() if outcome in ("kept-edited", "disabled")]
        return (f"kept your edited model files: {', '.join(kept)}; delete them when no "
                "longer needed") if kept else None

    def ingest(self, tables: list[LandingTable]) -> list[IngestResult]:
        """Stage new files of every table; register staging tables; generate missing models."""
        self._record_partner()
        control_damage = self._control_damage()
        ingested = [failed_ingest(table, control_damage, self.warehouse) if control_damage
                    else self._ingest_table(table) for table in tables]
        staged = [result for result in ingested if self._is_staged(result)]
        if register_relations(self.layout, [
                (STAGING_SCHEMA, staging_table_name(r.table.schema, r.table.name),
                 str(self.layout.staging_path(r.table.schema, r.table.name))) for r in staged]):
            forget_warm_sessions()  # a deleted mirrored table is then rebuilt, as in a new process
        return [self._generate_model(result) if result in staged and self._applies(result)
                else result for result in ingested]

    def _ingest_table(self, table: LandingTable) -> IngestResult:
        """Stage one table's new files; whatever goes wrong fails this table alone."""
        self.progress(f"ingest {table.qualified_name}")
        try:
            for path, recovery in self._owned_tables(table) if table.problem is None else ():
                check_newest_commit(path, table=table.qualified_name, recovery=recovery)
            result = ingest_table(table, self.layout, retention_days=self.retention_days,
                                  on_file=lambda file: self.progress(f"  stage {file.path.name}"),
                                  settle=None if self.warm else self._settle)
        except Exception as error:  # one table's failure stays its own
            return failed_ingest(table, error, self.warehouse)
        for warning in result.metadata.warnings:
            self.progress(f"  warning: {warning}")
        return result

    def _settle(self, settling: Settling) -> None:
        """Wait until a file that changed just before this one-shot run leaves the settle
        window (`run --watch` runs again by itself once it has)."""
        self.progress(f"  waiting {settling.seconds:.1f} s for {settling.path.name} to settle "
                      f"({SETTLE_SECONDS}={settle_seconds():g})")
        time.sleep(settling.seconds)

    def _owned_tables(self, table: LandingTable) -> list[tuple[Path, str]]:
        """The Delta tables lakemirror keeps of a landing table, and how to recover each."""
        staging = self.layout.staging_path(table.schema, table.name)
        mirrored = self.layout.mirrored_path(table.schema, table.name)
        return [(staging, f"restore {staging}/_delta_log from a backup, or delete and recreate "
                          "the table folder in the landing zone to mirror it from scratch"),
                (mirrored, f"restore {mirrored}/_delta_log from a backup, or delete the folder "
                           f"{mirrored}: the next run rebuilds it from the staged changes")]

    def _damaged(self, ingested: list[IngestResult]) -> dict[str, list[str]]:
        """Models of tables whose Delta log is damaged, and their tables' locations: they are
        neither built nor attached."""
        return {staging_table_name(result.table.schema, result.table.name): [
                    str(path) for path, _ in self._owned_tables(result.table)]
                for result in ingested if result.error_type == CorruptTableError.__name__}

    def _control_damage(self) -> CorruptTableError | None:
        """A damaged control table stops every table: it holds what each has applied."""
        for path in sorted(self.layout.control_root.glob("*")):
            if not path.is_dir():
                continue
            try:
                check_newest_commit(path, table=f"_lakemirror_control.{path.name}",
                                    recovery=f"restore {path}/_delta_log from a backup")
            except CorruptTableError as error:
                return error
        return None

    @staticmethod
    def _applies(result: IngestResult) -> bool:
        """Whether the table's staged files are applied: a failed table's too (it stops at its
        bad file, not before), unless its Delta log is damaged or its folder is never touched
        (a `problem` of the folder itself)."""
        return result.status != "failed" or (result.error_type != CorruptTableError.__name__
                                             and result.table.problem is None)

    def _generate_model(self, result: IngestResult) -> IngestResult:
        """Write the table's model from metadata its ingest accepted (a failed table's from
        the metadata its staged files were staged with, never from a changed
        `_metadata.json`); a failure to write it fails this table alone, and a failed table
        keeps its first error."""
        staging = StagingTable(self.layout.staging_path(result.table.schema, result.table.name))
        try:
            metadata = (result.metadata if result.status != "failed"
                        else staging.accepted_metadata())
            if metadata is None:
                return result
            model = MirrorModel(result.table.schema, result.table.name,
                                metadata.key_columns, metadata.conditional_column)
            outcomes = write_model(self.project_dir, model, warehouse=self.warehouse_names)
            for path, outcome in (outcomes | write_history_model(self.project_dir,
                                                                 model)).items():
                if outcome != "unchanged":
                    self.progress(f"model {path.relative_to(self.project_dir)}: {outcome}")
        except Exception as error:  # one table's failure stays its own
            return (result if result.status == "failed"
                    else failed_ingest(result.table, error, self.warehouse, result))
        return result

    def _record(self, ingested: list[IngestResult], statuses: list[TableStatus], scope: Scope,
                *, applied_now: bool) -> None:
        """Write this run's monitoring records, keeping those of tables not selected for it."""
        with control_lock(self.warehouse, timeout=self.lock_timeout, progress=self.progress):
            try:
                records = read_records(self.layout)  # of each folder, whatever its case
                previous = {(record.schema, record.table): record for record in records}
                applied = applied_positions(self.layout)
                kept = [record for record in records if scope.explicit
                        and f"{record.schema}.{record.table}" not in scope]
                write_monitor(self.layout, kept + [
                    monitor_record(result, status, previous.get((status.schema, status.table)),
                                   applied.get(f"{status.schema}.{status.table}", 0),
                                   applied_now=applied_now)
                    for result, status in zip(ingested, statuses)], previous)
            except Exception as error:  # the run's own status is still printed
                self.progress(f"warning: could not record this run for `lakemirror status`: "
                              f"{type(error).__name__}: {error}")

    def _record_partner(self) -> None:
        try:
            with control_lock(self.warehouse, timeout=self.lock_timeout, progress=self.progress):
                record_partner_events(self.landing_zone, self.layout)
        except (LandingZoneError, OSError, ValueError) as error:  # informational only
            self._warn(str(error))

    def _warn(self, message: str) -> None:
        """A warning about the run as a whole: shown now, and in the run's JSON."""
        self.run_warnings.append(message)
        self.progress(f"warning: {message}")

    @property
    def warehouse_names(self) -> WarehouseName:
        """How the warehouse's generated models list it (see codegen.warehouses)."""
        given = self._given_warehouse
        return warehouse_name(self.warehouse_name,
                              given if given.resolve() == self.warehouse else self.warehouse)

    @property
    def layout(self) -> Warehouse:
        return Warehouse(self.warehouse)

    def _is_staged(self, result: IngestResult) -> bool:
        return DeltaTable.is_deltatable(
            str(self.layout.staging_path(result.table.schema, result.table.name)))

    def build(self, scope: Scope | None = None, *,
              damaged: dict[str, list[str]] | None = None) -> list[NodeResult]:
        """`dbt build` on the configured target, limited to the scope's mirror models when
        tables were selected, and never building another run's tables nor the `damaged` ones
        (model → locations, which are not attached either); models that lost a commit conflict
        are built again with backoff, and those an engine crash interrupted once more on a
        fresh engine."""
        damaged = damaged or {}
        selection = self._selection(scope, frozenset(damaged)) if scope is not None else []
        unattached = {"lakemirror_damaged_locations": sorted(
            location for locations in damaged.values() for location in locations)}
        extra_vars = unattached if damaged else {}
        self.progress(f"dbt build {' '.join(selection)}".rstrip())
        try:
            nodes = self._dbt("build", *selection, extra_vars=extra_vars)
        except EngineCrashError as crash:
            nodes = rebuild_after_crash(crash, lambda models: self._dbt(
                "build", "--select", *models, extra_vars=extra_vars), progress=self.progress)
        return self._rebuild_conflicts(nodes)

    def _selection(self, scope: Scope, skip: frozenset[str] = frozenset()) -> list[str]:
        """dbt node selection: the scope's mirror models (and their history models) when
        explicit, else all nodes but the mirror and history models of tables outside the scope
        (created meanwhile by another run)."""
        folder = self.project_dir / MIRROR_FOLDER
        models = {path.stem for path in [*folder.glob("*/*.sql"), *folder.glob("*/history/*.sql")]}
        skip = skip | {name + HISTORY_SUFFIX for name in skip}
        ours = {staging_table_name(*name.split(".", 1)) for name in scope.names}
        ours = (ours | {name + HISTORY_SUFFIX for name in ours}) - skip
        if scope.explicit:
            return ["--select", *sorted(models & ours)]
        others = sorted((models - ours) | (models & skip))
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

    def _dbt(self, command: str, *args: str,
             extra_vars: Mapping[str, object] | None = None) -> list[NodeResult]:
        """Run a dbt command on the configured target (with `extra_vars` besides the service's
        own), with a watched engine for `embedded`; raises EngineCrashError, carrying the
        nodes dbt finished, when the engine was lost."""
        env = {"LAKEMIRROR_WAREHOUSE": str(self.warehouse),
               "LAKEMIRROR_WAREHOUSE_NAME": self.warehouse_names.name}
        dbt_vars = {**self.dbt_vars, **(extra_vars or {})}
        if self.target != "embedded":
            return self._dbt_invoke(command, args, env, dbt_vars)
        address, engine = embedded_engine()
        env |= {"LAKEMIRROR_ENGINE_HOST": address.host,
                "LAKEMIRROR_ENGINE_PORT": str(address.port)}
        with watchdog(engine, self.engine_timeout) as watch:
            nodes = self._dbt_invoke(command, args, env, dbt_vars)
        if watch.reason is None:
            return nodes
        engine.kill()
        close_connect_sessions()  # a warm session would talk to the lost engine
        raise EngineCrashError(watch.reason, nodes=nodes, at=watch.at,
                               hint="the next run starts a fresh engine; if the same table "
                                    "brings it down again, run it alone with --table and "
                                    "report it")

    def _dbt_invoke(self, command: str, args: tuple[str, ...], env: dict[str, str],
                    dbt_vars: Mapping[str, object]) -> list[NodeResult]:
        return dbt_invoke(command, self.project_dir,
                          profiles_dir=profiles_dir(self.project_dir), target=self.target,
                          env=env, dbt_vars=dbt_vars,
                          extra_args=(*args, *(("--log-level", "none") if self.quiet else ())),
                          warm=self.warm)

    def _status(self, result: IngestResult, nodes: list[NodeResult]) -> TableStatus:
        schema, name = result.table.schema, result.table.name
        try:
            rows = table_row_count(self.layout.mirrored_path(schema, name))
        except Exception:  # a damaged table: its status already says why
            rows = None
        return table_status(result, nodes, rows, attempts=self.backoff.attempts)


_child_engine: ChildEngine | None = None


def embedded_engine() -> tuple[EngineAddress, WatchedEngine]:
    """The background engine if one runs, else this process's own engine in a child process
    (a fresh one once the last was lost)."""
    running = background_process()
    if running:
        return running.address, running
    global _child_engine
    if _child_engine is None or not _child_engine.alive():
        _child_engine = ChildEngine()
    return _child_engine.address, _child_engine


def engine_address() -> EngineAddress:
    """The address of the embedded engine dbt runs on (see `embedded_engine`)."""
    return embedded_engine()[0]

