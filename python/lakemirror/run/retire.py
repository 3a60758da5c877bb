"""Retire the tables whose landing folder went away or was recreated; heal returned ones."""

from __future__ import annotations

import json
import time

from lakemirror.dbt_runner import forget_warm_sessions
from lakemirror.codegen import retire_history_model, retire_model
from lakemirror.errors import LakemirrorError
from lakemirror.landing import LandingTable
from lakemirror.node_result import NodeResult
from lakemirror.recovery import check_drop_share, heal
from lakemirror.run.dbt import Dbt
from lakemirror.run.log import RunLog
from lakemirror.run.settings import RunSettings
from lakemirror.table_scope import Scope
from lakemirror.staging.dropped import DroppedCopy, purge_dropped
from lakemirror.staging.lifecycle import (
    Retirement,
    drop_table_data,
    find_retirements,
    staged_tables,
)
from lakemirror.staging.opened import StagingTables
from lakemirror.status import TableStatus


def heal_returned(settings: RunSettings, log: RunLog, tables: list[LandingTable],
                  scope: Scope, opened: StagingTables) -> list[str]:
    """Bring back the dropped tables whose folders are back (see `recovery.heal`)."""
    restored = heal([table for table in tables if table.qualified_name in scope],
                    settings.layout, progress=log.progress,
                    is_staged=lambda table: opened.is_staged(table.schema, table.name))
    if restored:
        forget_warm_sessions()  # sessions attach the restored tables again
    return [copy.qualified_name for copy in restored]


def drop_retired(settings: RunSettings, log: RunLog, dbt: Dbt, tables: list[LandingTable],
                 scope: Scope | None = None, opened: StagingTables | None = None
                 ) -> list[TableStatus]:
    """Drop every table in scope whose landing folder was deleted or recreated: from the
    engine's catalog, then its data moves to the dropped area (kept for the retention
    period), then (for deleted folders) its generated model goes. Returns a `dropped`
    status for each deleted folder; a recreated one is rebuilt by the ingest. `tables`
    are all the zone's tables: a table outside the scope is never dropped, whether its
    folder exists or not. Refuses (MassDropError) to drop more than the allowed share of
    the tables unless drops are confirmed. `opened`: the run's staging tables."""
    layout = settings.layout
    purge_dropped(layout, settings.retention_days)
    retirements = find_retirements(tables, layout, opened=opened, scope=scope)
    if not retirements:
        return []
    if not tables:
        log.warn(f"the landing zone {settings.landing_zone} holds no table folder; not "
                 f"dropping the {len(retirements)} mirrored tables (an unmounted or wrong "
                 "folder looks the same). Leave one folder to drop the rest.")
        return []
    if not settings.confirm_drops:
        check_drop_share([r.qualified_name for r in retirements if r.reason == "deleted"],
                         len(staged_tables(layout)), settings.max_drop_share,
                         zone=str(settings.given_zone))
    names = [retirement.qualified_name for retirement in retirements]
    log.progress(f"drop {', '.join(names)}")
    notes = {retirement: _retire_model(settings, retirement) for retirement in retirements
             if retirement.reason == "deleted"}  # first: dbt must parse without them
    try:
        failed = [node for node in dbt(
            settings, "run-operation", "lakemirror.drop_mirrored_tables",
            "--args", json.dumps({"tables": names})) if node.failed]
    except LakemirrorError as error:  # the engine was lost, or dbt could not start
        failed = [NodeResult("operation.drop_mirrored_tables", "error", str(error))]
    if failed:
        reason = (f"could not drop the table: {failed[0].message} Fix: check the engine "
                  "and run again; nothing was deleted")
        return [TableStatus(retirement.schema, retirement.table, "failed", 0, None, reason,
                            error_class="system") for retirement in notes]  # the
        # recreated ones fail in their ingest, which finds the folder's new incarnation
    kept = {retirement: drop_table_data(layout, retirement, opened=opened)
            for retirement in retirements}
    for copy in kept.values():
        log.progress(f"  kept {copy.qualified_name} in {copy.path}")
    return [TableStatus(retirement.schema, retirement.table, "dropped", 0, None, None,
                        "; ".join(filter(None, [_kept_note(settings, kept[retirement]), note])))
            for retirement, note in notes.items()]


def _kept_note(settings: RunSettings, copy: DroppedCopy) -> str:
    until = time.strftime("%Y-%m-%d", time.gmtime(
        copy.dropped_at + settings.retention_days * 86_400))
    return (f"kept in {copy.path} until {until}: `lakemirror restore "
            f"{copy.qualified_name}` brings it back")


def _retire_model(settings: RunSettings, retirement: Retirement) -> str | None:
    """Remove a deleted table's generated model (or only this warehouse from the model's
    list, while other warehouses mirror the table); a note names the files kept as
    edited."""
    project_dir = settings.project_dir
    outcomes = retire_model(project_dir, retirement.schema, retirement.table,
                            warehouse=settings.warehouse_name)
    outcomes |= retire_history_model(project_dir, retirement.schema, retirement.table)
    kept = [f"{path.relative_to(project_dir)} ({outcome})"
            for path, outcome in outcomes.items() if outcome in ("kept-edited", "disabled")]
    return (f"kept your edited model files: {', '.join(kept)}; delete them when no "
            "longer needed") if kept else None
