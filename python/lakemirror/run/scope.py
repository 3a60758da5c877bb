"""Resolve a run's scope and lock it, refusing a zone the warehouse does not mirror."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from lakemirror.binding import ZoneIdentity, check_binding, record_binding, zone_identity
from lakemirror.codegen import without_history_clashes
from lakemirror.landing import LandingTable, discover_tables, hidden_entries
from lakemirror.landing.discovery import list_ahead
from lakemirror.naming import qualified_name
from lakemirror.run.log import RunLog
from lakemirror.run.settings import RunSettings
from lakemirror.table_scope import Scope, resolve_scope
from lakemirror.staging.lifecycle import staged_tables
from lakemirror.staging.lock import control_lock, table_locks
from lakemirror.staging.opened import StagingTables


@contextmanager
def locked_scope(settings: RunSettings, log: RunLog, selected: Sequence[str]
                 ) -> Iterator[tuple[list[LandingTable], Scope, StagingTables]]:
    """Refuse a run on a zone the warehouse does not mirror (see `binding`); lock the
    run's tables (landing-zone and staged ones, or the selected ones), then yield the
    landing zone's tables as found once the locks are held (a folder that lost its name to
    a history model failing; on an object store, the folders in scope listed several at
    once), the scope, and the staging tables the run reads (valid while the locks are
    held); record the zone's binding after the run, still holding them."""
    known = [table.qualified_name for table in discover_tables(settings.zone)]
    zone = zone_identity(settings.given_zone)
    check_binding(zone, settings.zone, settings.layout,
                  rebind=settings.rebind_landing_zone)
    if hidden := hidden_entries(settings.zone):
        shown = ", ".join(map(repr, hidden[:5])) + (", ..." if len(hidden) > 5 else "")
        log.warn(f"ignored {len(hidden)} hidden entries of the landing zone (names "
                 f"starting with '.' are never tables): {shown}")
    known += [qualified_name(schema, table) for schema, table in staged_tables(settings.layout)]
    scope = resolve_scope(selected, known)
    with table_locks(settings.layout.storage, sorted(scope.names), timeout=settings.lock_timeout,
                     progress=log.progress, lease_seconds=settings.env.lease_seconds) as locks:
        landing = without_history_clashes(discover_tables(settings.zone),
                                          staged_tables(settings.layout))
        list_ahead([table for table in landing if table.qualified_name in scope])
        opened = StagingTables(settings.layout, locks)
        yield landing, scope, opened
        _record_binding(settings, log, zone, opened)


def _record_binding(settings: RunSettings, log: RunLog, zone: ZoneIdentity,
                    opened: StagingTables) -> None:
    try:
        with control_lock(settings.layout.storage, timeout=settings.lock_timeout,
                          progress=log.progress, lease_seconds=settings.env.lease_seconds):
            record_binding(opened, zone)
    except Exception as error:  # the run's own status is still printed
        log.warn(f"could not record the landing zone of the warehouse: "
                 f"{type(error).__name__}: {error}")
