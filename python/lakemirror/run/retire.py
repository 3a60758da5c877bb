"""Retire the tables whose landing folder went away or was recreated; heal returned ones."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Mapping, Sequence

from lakemirror.dbt_runner import forget_warm_sessions
from lakemirror.codegen import retire_history_model, retire_model
from lakemirror.delta.access import delta_table, is_delta_table
from lakemirror.delta.rows import loaded_row_count
from lakemirror.errors import LakemirrorError
from lakemirror.landing import LandingTable
from lakemirror.monitor import TableMonitor
from lakemirror.naming import staging_table_name
from lakemirror.node_result import NodeResult
from lakemirror.recovery import check_drop_share, heal
from lakemirror.run.dbt import Dbt
from lakemirror.run.log import RunLog
from lakemirror.run.settings import RunSettings
from lakemirror.run.users import tables_in_use
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
    status for each deleted folder; a recreated one is rebuilt by the ingest. A deleted
    table that models of the project's own still use is kept as it is, `retired` (with a
    warning naming them), until they no longer use it: dropping its model would stop dbt
    from compiling any model of the project. `tables`
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
    in_use = _in_use(settings, retirements)
    kept = [_retired(settings, log, retirement, users, opened)
            for retirement, users in in_use.items()]
    retirements = [retirement for retirement in retirements if retirement not in in_use]
    if not retirements:
        return kept
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
        return kept + [TableStatus(retirement.schema, retirement.table, "failed", 0, None,
                                   reason, error_class="system") for retirement in notes]  # the
        # recreated ones fail in their ingest, which finds the folder's new incarnation
    copies = {retirement: drop_table_data(layout, retirement, opened=opened)
              for retirement in retirements}
    for copy in copies.values():
        log.progress(f"  kept {copy.qualified_name} in {copy.path}")
    return kept + [TableStatus(
        retirement.schema, retirement.table, "dropped", 0, None, None,
        "; ".join(filter(None, [_kept_note(settings, copies[retirement]), note])))
        for retirement, note in notes.items()]


def _in_use(settings: RunSettings, retirements: list[Retirement]
            ) -> dict[Retirement, list[str]]:
    """The deleted tables that models of the project's own still use, with those models:
    dropping one would remove the model they ref(), and dbt would then compile no model of
    the project. When dbt cannot parse the project, none (the drop goes on as before)."""
    deleted = {(r.schema, r.table): r for r in retirements if r.reason == "deleted"}
    used = tables_in_use(settings, deleted) or {}
    return {deleted[table]: users for table, users in used.items()}


def _retired(settings: RunSettings, log: RunLog, retirement: Retirement, users: list[str],
             opened: StagingTables | None) -> TableStatus:
    """The `retired` status of a deleted table still in use, kept as last mirrored."""
    schema, name = retirement.schema, retirement.table
    opened = opened or StagingTables(settings.layout)
    path = settings.layout.mirrored_path(schema, name)
    try:
        rows = loaded_row_count(delta_table(path)) if is_delta_table(path) else None
    except Exception:  # a damaged table is still kept, its rows unknown
        rows = None
    note = (f"its landing folder is gone, but your project still uses its model "
            f"{staging_table_name(schema, name)} in {'; '.join(users)}; kept as last "
            "mirrored and no longer updated. Remove those ref()s and the next run drops "
            "it (`lakemirror restore` can bring it back), or put the folder back to go on")
    log.warn(f"{retirement.qualified_name} is retired: {note}")
    return TableStatus(schema, name, "retired", opened.of(schema, name).staged_files(
        with_names=False).last_sequence, rows, None, note)


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


def retired_records(statuses: Sequence[TableStatus],
                    previous: Mapping[tuple[str, str], TableMonitor]) -> list[TableMonitor]:
    """The monitoring records of the `retired` tables among `statuses`: their last ones, now
    retired, with the reason as a warning."""
    return [dataclasses.replace(record, status=status.status, rows=status.rows,
                                files_pending=0, error=None, error_class=None,
                                warnings=(status.note or "",))
            for status in statuses if status.status == "retired"
            and (record := previous.get((status.schema, status.table))) is not None]
