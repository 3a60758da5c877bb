"""Stage the new files of a run's tables; a failure stays with its own table."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from lakemirror.build import forget_warm_sessions
from lakemirror.delta.access import is_delta_table
from lakemirror.delta.integrity import check_newest_commit
from lakemirror.errors import CorruptTableError, LandingZoneError
from lakemirror.landing import LandingTable
from lakemirror.landing.detection import Settling
from lakemirror.landing.readiness import SETTLE_SECONDS, settle_seconds
from lakemirror.monitor import record_partner_events
from lakemirror.staging import (
    STAGING_SCHEMA,
    IngestResult,
    ingest_table,
    register_relations,
    staging_table_name,
)
from lakemirror.staging.lock import control_lock, ensure_held
from lakemirror.storage.location import Location
from lakemirror.table_outcome import failed_ingest

if TYPE_CHECKING:
    from lakemirror.service import MirrorService


def ingest(service: MirrorService, tables: list[LandingTable]) -> list[IngestResult]:
    """Stage new files of every table and register the staging tables."""
    _record_partner(service)
    control_damage = _control_damage(service)
    ingested = [failed_ingest(table, control_damage, service.warehouse) if control_damage
                else _ingest_table(service, table) for table in tables]
    layout = service.layout
    if register_relations(layout, [
            (STAGING_SCHEMA, staging_table_name(r.table.schema, r.table.name),
             str(layout.staging_path(r.table.schema, r.table.name)))
            for r in ingested if is_staged(service, r.table.schema, r.table.name)]):
        forget_warm_sessions()  # a deleted mirrored table is then rebuilt, as in a new process
    return ingested


def is_staged(service: MirrorService, schema: str, table: str) -> bool:
    return is_delta_table(service.layout.staging_path(schema, table))


def is_mirrored(service: MirrorService, result: IngestResult) -> bool:
    return is_delta_table(service.layout.mirrored_path(result.table.schema, result.table.name))


def damaged(service: MirrorService, ingested: list[IngestResult]) -> dict[str, list[str]]:
    """Models of tables whose Delta log is damaged, and their tables' locations: they are
    neither built nor attached."""
    return {staging_table_name(result.table.schema, result.table.name): [
                str(path) for path, _ in _owned_tables(service, result.table)]
            for result in ingested if result.error_type == CorruptTableError.__name__}


def _ingest_table(service: MirrorService, table: LandingTable) -> IngestResult:
    """Stage one table's new files; whatever goes wrong fails this table alone."""
    service.progress(f"ingest {table.qualified_name}")
    try:
        ensure_held(service.warehouse, [table.qualified_name])
        for path, recovery in _owned_tables(service, table) if table.problem is None else ():
            check_newest_commit(path, table=table.qualified_name, recovery=recovery)
        result = ingest_table(table, service.layout, retention_days=service.retention_days,
                              on_file=lambda file: service.progress(f"  stage {file.path.name}"),
                              settle=None if service.warm
                              else lambda settling: _settle(service, settling))
    except Exception as error:  # one table's failure stays its own
        return failed_ingest(table, error, service.warehouse)
    for warning in result.metadata.warnings:
        service.progress(f"  warning: {warning}")
    return result


def _settle(service: MirrorService, settling: Settling) -> None:
    """Wait until a file that changed just before this one-shot run leaves the settle
    window (`run --watch` runs again by itself once it has)."""
    service.progress(f"  waiting {settling.seconds:.1f} s for {settling.path.name} to settle "
                     f"({SETTLE_SECONDS}={settle_seconds():g})")
    time.sleep(settling.seconds)


def _owned_tables(service: MirrorService, table: LandingTable) -> list[tuple[Location, str]]:
    """The Delta tables lakemirror keeps of a landing table, and how to recover each."""
    staging = service.layout.staging_path(table.schema, table.name)
    mirrored = service.layout.mirrored_path(table.schema, table.name)
    return [(staging, f"restore {staging}/_delta_log from a backup, or delete and recreate "
                      "the table folder in the landing zone to mirror it from scratch"),
            (mirrored, f"restore {mirrored}/_delta_log from a backup, or delete the folder "
                       f"{mirrored}: the next run rebuilds it from the staged changes")]


def _control_damage(service: MirrorService) -> CorruptTableError | None:
    """A damaged control table stops every table: it holds what each has applied."""
    layout = service.layout
    for path in map(layout.control_path, layout.storage.folders(layout.key(layout.control_root))):
        try:
            check_newest_commit(path, table=f"_lakemirror_control.{path.name}",
                                recovery=f"restore {path}/_delta_log from a backup")
        except CorruptTableError as error:
            return error
    return None


def _record_partner(service: MirrorService) -> None:
    try:
        with control_lock(service.warehouse, timeout=service.lock_timeout,
                          progress=service.progress):
            record_partner_events(service.landing_zone, service.layout)
    except (LandingZoneError, OSError, ValueError) as error:  # informational only
        service.warn(str(error))
