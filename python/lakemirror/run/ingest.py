"""Stage the new files of a run's tables; a failure stays with its own table."""

from __future__ import annotations

import time

from lakemirror.dbt_runner import forget_warm_sessions
from lakemirror.delta.access import is_delta_table
from lakemirror.delta.integrity import check_newest_commit
from lakemirror.errors import CorruptTableError, LandingZoneError
from lakemirror.landing import LandingTable
from lakemirror.landing.detection import Settling
from lakemirror.monitor import applied_positions, record_partner_events
from lakemirror.run.log import RunLog
from lakemirror.run.settings import RunSettings
from lakemirror.environment import SETTLE_SECONDS
from lakemirror.staging import (
    STAGING_SCHEMA,
    IngestResult,
    Warehouse,
    ingest_table,
    register_relations,
    staging_table_name,
)
from lakemirror.staging.batches_log import create_mirror_batches
from lakemirror.staging.lock import control_lock
from lakemirror.staging.opened import StagingTables
from lakemirror.storage.location import Location
from lakemirror.table_outcome import failed_ingest


def ingest(settings: RunSettings, log: RunLog, tables: list[LandingTable],
           opened: StagingTables) -> list[IngestResult]:
    """Stage new files of every table (`opened`: the run's staging tables), register the
    staging tables, and create the log of mirror batches before dbt's threads would."""
    _record_partner(settings, log)
    layout = settings.layout
    control_damage = _control_damage(layout)
    ingested = [failed_ingest(table, control_damage, settings.warehouse,
                              debug=settings.env.debug) if control_damage
                else _ingest_table(settings, log, table, opened) for table in tables]
    create_mirror_batches(layout)
    if register_relations(layout, [
            (STAGING_SCHEMA, staging_table_name(r.table.schema, r.table.name),
             str(layout.staging_path(r.table.schema, r.table.name)))
            for r in ingested if opened.is_staged(r.table.schema, r.table.name)]):
        forget_warm_sessions()  # a deleted mirrored table is then rebuilt, as in a new process
    return ingested


def is_mirrored(layout: Warehouse, result: IngestResult) -> bool:
    """Whether the table's mirrored table is there, holding the changes a resync staged after
    its last file (then its applied position is read: the file's number does not show them)."""
    if not is_delta_table(layout.mirrored_path(result.table.schema, result.table.name)):
        return False
    applied = 0 if result.resynced_through is None else applied_positions(layout).get(
        result.table.qualified_name, 0)
    return applied >= (result.resynced_through or 0)


def damaged(layout: Warehouse, ingested: list[IngestResult]) -> dict[str, list[str]]:
    """Models of tables whose Delta log is damaged, and their tables' locations: they are
    neither built nor attached."""
    return {staging_table_name(result.table.schema, result.table.name): [
                str(path) for path, _ in _owned_tables(layout, result.table)]
            for result in ingested if result.damaged}


def _ingest_table(settings: RunSettings, log: RunLog, table: LandingTable,
                  opened: StagingTables) -> IngestResult:
    """Stage one table's new files; whatever goes wrong fails this table alone."""
    log.progress(f"ingest {table.qualified_name}")
    layout = settings.layout
    try:
        opened.locks.ensure_held([table.qualified_name])
        for path, recovery in _owned_tables(layout, table) if table.problem is None else ():
            check_newest_commit(layout.storage, layout.key(path), table=table.qualified_name,
                                recovery=recovery)
        result = ingest_table(table, layout, retention_days=settings.retention_days,
                              on_file=lambda file: log.progress(f"  stage {file.path.name}"),
                              settle=None if settings.warm
                              else lambda settling: _settle(log, settling, settings),
                              staging=opened.of(table.schema, table.name),
                              settle_seconds=settings.env.settle_seconds,
                              max_text_bytes=settings.env.max_text_bytes,
                              debug=settings.env.debug)
    except Exception as error:  # one table's failure stays its own
        return failed_ingest(table, error, settings.warehouse, debug=settings.env.debug)
    for warning in result.metadata.warnings:
        log.progress(f"  warning: {warning}")
    return result


def _settle(log: RunLog, settling: Settling, settings: RunSettings) -> None:
    """Wait until a file that changed just before this one-shot run leaves the settle
    window (`run --watch` runs again by itself once it has)."""
    log.progress(f"  waiting {settling.seconds:.1f} s for {settling.path.name} to settle "
                     f"({SETTLE_SECONDS}={settings.env.settle_seconds:g})")
    time.sleep(settling.seconds)


def _owned_tables(layout: Warehouse, table: LandingTable) -> list[tuple[Location, str]]:
    """The Delta tables lakemirror keeps of a landing table, and how to recover each."""
    staging = layout.staging_path(table.schema, table.name)
    mirrored = layout.mirrored_path(table.schema, table.name)
    return [(staging, f"restore {staging}/_delta_log from a backup, or delete and recreate "
                      "the table folder in the landing zone to mirror it from scratch"),
            (mirrored, f"restore {mirrored}/_delta_log from a backup, or delete the folder "
                       f"{mirrored}: the next run rebuilds it from the staged changes")]


def _control_damage(layout: Warehouse) -> CorruptTableError | None:
    """A damaged control table stops every table: it holds what each has applied."""
    for path in map(layout.control_path, layout.storage.folders(layout.key(layout.control_root))):
        try:
            check_newest_commit(layout.storage, layout.key(path),
                                table=f"_lakemirror_control.{path.name}",
                                recovery=f"restore {path}/_delta_log from a backup")
        except CorruptTableError as error:
            return error
    return None


def _record_partner(settings: RunSettings, log: RunLog) -> None:
    try:
        with control_lock(settings.layout.storage, timeout=settings.lock_timeout,
                          progress=log.progress, lease_seconds=settings.env.lease_seconds):
            record_partner_events(settings.zone, settings.layout)
    except (LandingZoneError, OSError, ValueError) as error:  # informational only
        log.warn(str(error))
