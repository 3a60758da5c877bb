"""Resolve a run's scope and lock it, refusing a zone the warehouse does not mirror."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from lakemirror.binding import ZoneIdentity, check_binding, record_binding, zone_identity
from lakemirror.codegen import without_history_clashes
from lakemirror.landing import LandingTable, discover_tables, hidden_entries
from lakemirror.scope import Scope, resolve_scope
from lakemirror.staging.lifecycle import staged_tables
from lakemirror.staging.lock import control_lock, table_locks

if TYPE_CHECKING:
    from lakemirror.service import MirrorService


@contextmanager
def locked_scope(service: MirrorService, selected: Sequence[str]
                 ) -> Iterator[tuple[list[LandingTable], Scope]]:
    """Refuse a run on a zone the warehouse does not mirror (see `binding`); lock the
    run's tables (landing-zone and staged ones, or the selected ones), then yield the
    landing zone's tables as found once the locks are held (a folder that lost its name to
    a history model failing), and the scope; record the zone's binding after the run."""
    service.run_warnings = []
    known = [table.qualified_name for table in discover_tables(service.zone)]
    zone = zone_identity(service.given_zone)
    check_binding(zone, service.zone, service.warehouse,
                  rebind=service.rebind_landing_zone)
    if hidden := hidden_entries(service.zone):
        shown = ", ".join(map(repr, hidden[:5])) + (", ..." if len(hidden) > 5 else "")
        service.warn(f"ignored {len(hidden)} hidden entries of the landing zone (names "
                     f"starting with '.' are never tables): {shown}")
    known += [f"{schema}.{table}" for schema, table in staged_tables(service.layout)]
    scope = resolve_scope(selected, known)
    with table_locks(service.warehouse, sorted(scope.names), timeout=service.lock_timeout,
                     progress=service.progress):
        yield without_history_clashes(discover_tables(service.zone),
                                      staged_tables(service.layout)), scope
    _record_binding(service, zone)


def _record_binding(service: MirrorService, zone: ZoneIdentity) -> None:
    try:
        with control_lock(service.warehouse, timeout=service.lock_timeout,
                          progress=service.progress):
            record_binding(service.layout, zone)
    except Exception as error:  # the run's own status is still printed
        service.warn(f"could not record the landing zone of the warehouse: "
                     f"{type(error).__name__}: {error}")
