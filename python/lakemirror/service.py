"""The mirror service: ingest → generate models → dbt build → per-table status."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from deltalake import DeltaTable

from lakemirror.build import NodeResult, dbt_invoke
from lakemirror.codegen import MirrorModel, retire_model, write_model
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
from lakemirror.staging.lifecycle import drop_table_data, find_retirements
from lakemirror.staging.lock import warehouse_lock
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
    progress: Callable[[str], None] = lambda message: None

    def __post_init__(self) -> None:
        self.landing_zone = self.landing_zone.resolve()
        self.warehouse = self.warehouse.resolve()
        self.project_dir = self.project_dir.resolve()
        if not (self.project_dir / "dbt_project.yml").is_file():
            raise ConfigError(f"no dbt_project.yml in {self.project_dir}",
                              hint="pass --project-dir pointing at the lakemirror dbt project")

    def run(self) -> list[TableStatus]:
        """Drop tables whose folder went away, ingest new files, generate models for new
        tables, run `dbt build`."""
        with warehouse_lock(self.warehouse):
            tables = discover_tables(self.landing_zone)
            dropped = self.drop_retired(tables)
            ingested = self.ingest(tables)
            staged = [result for result in ingested if self._is_staged(result)]
            nodes = self.build() if staged else []
            statuses = [self._status(result, nodes) for result in ingested]
            self._record(ingested, statuses, applied_now=bool(nodes))
            return dropped + statuses

    def ingest_only(self) -> list[TableStatus]:
        """Ingest and generate models without running dbt (for orchestrators that run dbt)."""
        with warehouse_lock(self.warehouse):
            tables = discover_tables(self.landing_zone)
            dropped = self.drop_retired(tables)
            ingested = self.ingest(tables)
            statuses = [self._status(result, []) for result in ingested]
            self._record(ingested, statuses, applied_now=False)
            return dropped + statuses

    def drop_retired(self, tables: list[LandingTable]) -> list[TableStatus]:
        """Drop every table whose landing folder was deleted or recreated: from the engine's
        catalog, then its data, then (for deleted folders) its generated model. Returns a
        `dropped` status for each deleted folder; a recreated one is rebuilt by the ingest."""
        retirements = find_retirements(tables, self.layout)
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
            drop_table_data(self.layout, retirement)
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

    def _record(self, ingested: list[IngestResult], statuses: list[TableStatus], *,
                applied_now: bool) -> None:
        previous = read_monitor(self.layout)
        applied = applied_positions(self.layout)
        write_monitor(self.layout, [
            monitor_record(result, status, previous.get((status.schema, status.table)),
                           applied.get(f"{status.schema}.{status.table}", 0),
                           applied_now=applied_now)
            for result, status in zip(ingested, statuses)])

    def _record_partner(self) -> None:
        try:
            record_partner_events(self.landing_zone, self.layout)
        except LandingZoneError as error:
            self.progress(f"warning: {error}")

    @property
    def layout(self) -> Warehouse:
        return Warehouse(self.warehouse)

    def _is_staged(self, result: IngestResult) -> bool:
        return DeltaTable.is_deltatable(
            str(self.layout.staging_path(result.table.schema, result.table.name)))

    def build(self) -> list[NodeResult]:
        """`dbt build` on the configured target."""
        self.progress("dbt build")
        return self._dbt("build")

    def _dbt(self, command: str, *args: str) -> list[NodeResult]:
        """Run a dbt command on the configured target, with an engine for `embedded`."""
        env = {"LAKEMIRROR_WAREHOUSE": str(self.warehouse)}
        if self.target == "embedded":
            address = engine_address()
            env |= {"LAKEMIRROR_ENGINE_HOST": address.host,
                    "LAKEMIRROR_ENGINE_PORT": str(address.port)}
        return dbt_invoke(command, self.project_dir, profiles_dir=self.project_dir / "profiles",
                          target=self.target, env=env, dbt_vars=self.dbt_vars,
                          extra_args=(*args, *(("--log-level", "none") if self.quiet else ())))

    def _status(self, result: IngestResult, nodes: list[NodeResult]) -> TableStatus:
        schema, name = result.table.schema, result.table.name
        model = staging_table_name(schema, name)
        model_errors = [node.message or node.status for node in nodes
                        if node.failed and node.unique_id.startswith("model.")
                        and node.unique_id.endswith(f".{model}")]
        mirrored = self.layout.mirrored_path(schema, name)
        rows = (DeltaTable(str(mirrored)).to_pyarrow_dataset().count_rows()
                if DeltaTable.is_deltatable(str(mirrored)) else None)
        if result.status == "failed" or not model_errors:
            return TableStatus(schema, name, result.status, result.last_sequence, rows,
                               result.error)
        return TableStatus(schema, name, "failed", result.last_sequence, rows,
                           f"dbt model {model}: {model_errors[0]}")


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

