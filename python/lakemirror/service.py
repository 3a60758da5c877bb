"""The mirror service: ingest → generate models → dbt build → per-table status, as the phases
of `lakemirror.run` composed."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from lakemirror.codegen import WarehouseName, checked_name, configured_name, warehouse_name
from lakemirror.conflicts import Backoff
from lakemirror.engine import DEFAULT_ENGINE_TIMEOUT
from lakemirror.errors import ConfigError
from lakemirror.idle import as_last_recorded, built_with, nothing_new, project_state, record_build
from lakemirror.landing import LandingTable
from lakemirror.monitor import read_monitor, with_recorded_folders
from lakemirror.node_result import NodeResult
from lakemirror.recovery import DEFAULT_MAX_DROP_SHARE
from lakemirror.run import build, ingest, models, record, retire
from lakemirror.run.build import embedded_engine, engine_address
from lakemirror.run.scope import locked_scope
from lakemirror.scope import Scope
from lakemirror.staging import Warehouse
from lakemirror.staging.lock import DEFAULT_LOCK_TIMEOUT
from lakemirror.staging.retention import DEFAULT_RETENTION_DAYS
from lakemirror.status import TableStatus
from lakemirror.storage.location import Location, ObjectLocation
from lakemirror.storage.warehouse import warehouse_location

__all__ = ["PROJECT_DIR", "MirrorService", "embedded_engine", "engine_address"]

PROJECT_DIR = Path(__file__).resolve().parents[2]  # the example project, in a source checkout


@dataclass
class MirrorService:
    """Mirrors one landing zone into one warehouse with one dbt project (by default the one in
    the current directory, as for dbt)."""

    landing_zone: Path
    warehouse: Location
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
    given_warehouse: Location = field(init=False, repr=False)  # before links were resolved
    given_zone: Path = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.given_zone = self.landing_zone
        self.landing_zone = self.landing_zone.resolve()
        self.given_warehouse = self.warehouse
        self.warehouse = warehouse_location(self.warehouse)
        if isinstance(self.warehouse, ObjectLocation) and self.target != "embedded":
            raise ConfigError(
                f"the warehouse {self.warehouse} is in object storage, which lakemirror mirrors "
                f"into on the embedded engine only; the {self.target} target would need the "
                "Hadoop cloud connectors set up by you (docs: Warehouse in object storage)",
                hint="run with --target embedded, or pass a local folder as --warehouse")
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
        with locked_scope(self, tables) as (landing, scope):
            dropped = self.drop_retired(landing, scope)
            healed = retire.heal_returned(self, landing, scope)
            ingested = ingest.ingest(self, _in_scope(landing, scope))
            ingested = models.generate_models(self, ingested)
            staged = [r for r in ingested if ingest.is_staged(self, r.table.schema, r.table.name)]
            previous = read_monitor(self.layout)
            idle = (not dropped and not healed and built_with(self.layout) == self._state()
                    and nothing_new(ingested, previous, lambda r: ingest.is_mirrored(self, r)))
            nodes = (self.build(scope, damaged=ingest.damaged(self, ingested))
                     if staged and not idle else [])
            if nodes and not scope.explicit:  # dbt may have written files (.user.yml)
                record_build(self.layout, self._state())
            statuses = record.statuses(self, ingested, nodes)
            if idle:
                self.progress("nothing new: no dbt build")
                statuses = as_last_recorded(statuses, previous)
            record.record_run(self, ingested, statuses, scope, applied_now=bool(nodes))
            record.maintain(self, [f"{s.schema}.{s.table}" for s in statuses if s.status !=
                                   "failed" and ingest.is_staged(self, s.schema, s.table)])
            return with_recorded_folders(dropped, previous) + statuses

    def ingest_only(self, tables: Sequence[str] = ()) -> list[TableStatus]:
        """Ingest and generate models without running dbt (for orchestrators that run dbt)."""
        with locked_scope(self, tables) as (landing, scope):
            dropped = self.drop_retired(landing, scope)
            retire.heal_returned(self, landing, scope)
            ingested = ingest.ingest(self, _in_scope(landing, scope))
            ingested = models.generate_models(self, ingested)
            statuses = record.statuses(self, ingested, [])
            dropped = with_recorded_folders(dropped, read_monitor(self.layout))
            record.record_run(self, ingested, statuses, scope, applied_now=False)
            return dropped + statuses

    def drop_retired(self, tables: list[LandingTable],
                     scope: Scope | None = None) -> list[TableStatus]:
        """Drop the tables in scope whose landing folder went away (see `run.retire`)."""
        return retire.drop_retired(self, tables, scope)

    def build(self, scope: Scope | None = None, *,
              damaged: dict[str, list[str]] | None = None) -> list[NodeResult]:
        """`dbt build` of the scope's models, but the `damaged` ones (see `run.build`)."""
        return build.build(self, scope, damaged=damaged)

    def _dbt(self, command: str, *args: str,
             extra_vars: Mapping[str, object] | None = None) -> list[NodeResult]:
        """Run a dbt command on the configured target (see `run.build.dbt`)."""
        return build.dbt(self, command, *args, extra_vars=extra_vars)

    def _state(self) -> str:
        return project_state(self.project_dir, self.target, self.dbt_vars)

    def warn(self, message: str) -> None:
        """A warning about the run as a whole: shown now, and in the run's JSON."""
        self.run_warnings.append(message)
        self.progress(f"warning: {message}")

    @property
    def warehouse_names(self) -> WarehouseName:
        """How the warehouse's generated models list it (see codegen.warehouses)."""
        given = self.given_warehouse
        return warehouse_name(self.warehouse_name, given if isinstance(given, Path)
                              and given.resolve() == self.warehouse else self.warehouse)

    @property
    def layout(self) -> Warehouse:
        return Warehouse(self.warehouse)


def _in_scope(tables: list[LandingTable], scope: Scope) -> list[LandingTable]:
    """The tables of the scope."""
    return [table for table in tables if table.qualified_name in scope]
