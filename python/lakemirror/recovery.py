"""Undoing drops: the guard against dropping many tables at once, bringing a dropped table
back by hand (`lakemirror restore`), and by itself when its folder comes back."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import PurePath

from lakemirror.errors import ConfigError, LakemirrorError, MassDropError, RestoreError
from lakemirror.landing import LandingTable, discover_tables
from lakemirror.landing.discovery import ALL_TABLES, NAME
from lakemirror.landing.incarnation import MARKER, mark_incarnation, read_incarnation
from lakemirror.landing.zone import as_door
from lakemirror.landing.zone_door import ZoneDoor
from lakemirror.naming import split_qualified_name, staging_table_name
from lakemirror.staging.dropped import DroppedCopy, dropped_copies, restore_copy
from lakemirror.staging.layout import STAGING_SCHEMA, Warehouse
from lakemirror.staging.registry import register_relations

DEFAULT_MAX_DROP_SHARE = 0.5
CONFIRM_FLAG = "--confirm-drops (LAKEMIRROR_CONFIRM_DROPS=1)"


def check_drop_share(deleted: Sequence[str], staged: int, max_share: float, *,
                     zone: str) -> None:
    """Refuse to drop more than one table when they are more than `max_share` of the
    `staged` tables (so dropping every table of several is always refused below 1)."""
    if len(deleted) > 1 and len(deleted) > max_share * staged:
        raise MassDropError(
            f"this run would drop {len(deleted)} of the {staged} mirrored tables "
            f"({', '.join(deleted)}): their folders are not in the landing zone {zone}, "
            f"more than the {max_share:.0%} a run may drop unconfirmed; nothing was dropped",
            hint=f"check --landing-zone (a wrong or half-mounted folder looks the same); if "
                 f"the folders were deleted on purpose, run again with {CONFIRM_FLAG}")


def heal(tables: Sequence[LandingTable], warehouse: Warehouse, *,
         is_staged: Callable[[LandingTable], bool],
         progress: Callable[[str], None]) -> list[DroppedCopy]:
    """Bring back each dropped table whose folder is in the zone again, carrying the same
    incarnation mark (a positive signal that it is the same table), instead of mirroring it
    from file 1 again."""
    copies: dict[tuple[str, str], DroppedCopy] = {}
    for copy in dropped_copies(warehouse):  # oldest first: the newest of an id wins
        copies[(copy.qualified_name, copy.incarnation)] = copy
    if not copies:
        return []
    restored = []
    for table in tables:
        if table.problem is not None or table.name == ALL_TABLES or is_staged(table):
            continue
        try:
            mark = read_incarnation(table.folder, table.door)
        except LakemirrorError:  # the table's ingest fails with the reason
            continue
        found = copies.get((table.qualified_name, mark or ""))
        if found is not None:
            progress(f"restore {found.qualified_name}: its folder carries the incarnation "
                     f"mark of the table dropped on {found.dropped_on}")
            bring_back(warehouse, found)
            restored.append(found)
    return restored


def restore_table(warehouse: Warehouse, name: str, zone: PurePath | ZoneDoor | None) -> DroppedCopy:
    """Bring back the newest dropped copy of `name` ('schema.table'). Its folder in the
    `zone` (when known) must be there: one without a mark is marked as the copy's
    incarnation, so the next run goes on from it; one with another mark is refused."""
    schema, table = split_qualified_name(name)
    if not (NAME.fullmatch(schema) and NAME.fullmatch(table)):
        raise ConfigError(f"{name!r} is not a table name SCHEMA.TABLE",
                          hint="name it as `lakemirror status` or `lakemirror restore` lists "
                               "it, for example dbo.customers")
    if warehouse.storage.exists(warehouse.key(warehouse.staging_path(schema, table))):
        raise RestoreError(
            f"{name} is mirrored: a live table of that name exists, so the dropped copy "
            "cannot come back in its place", table=name,
            hint="delete its landing folder and run (the live table then moves to the "
                 "dropped area), then restore")
    copies = dropped_copies(warehouse, name)
    if not copies:
        raise RestoreError(f"no dropped copy of {name} in {warehouse.dropped_root}",
                              table=name, hint="`lakemirror restore` alone lists the copies "
                                               "kept (they are purged after the retention)")
    copy = copies[-1]
    if zone is not None:
        _adopt_folder(copy, zone)
    bring_back(warehouse, copy)
    return copy


def bring_back(warehouse: Warehouse, copy: DroppedCopy) -> None:
    """Restore the copy and register its relations for the engines' catalogs."""
    restore_copy(warehouse, copy)
    staging = warehouse.staging_path(copy.schema, copy.table)
    relations = [(STAGING_SCHEMA, staging_table_name(copy.schema, copy.table), staging),
                 (copy.schema, copy.table, warehouse.mirrored_path(copy.schema, copy.table)),
                 (copy.schema, copy.table + "__history",
                  warehouse.mirrored_path(copy.schema, copy.table + "__history"))]
    register_relations(warehouse, [(schema, table, str(path)) for schema, table, path in relations
                                   if warehouse.storage.exists(warehouse.key(path))])


def _adopt_folder(copy: DroppedCopy, zone: PurePath | ZoneDoor) -> None:
    """Check the copy's folder in the zone, and mark it as the copy's incarnation when it has
    no mark yet."""
    found = [table for table in discover_tables(zone)
             if table.qualified_name == copy.qualified_name and table.problem is None]
    if not found:
        raise RestoreError(
            f"the landing zone {as_door(zone).root} has no folder for {copy.qualified_name}: "
            "the next run would drop the restored table again", table=copy.qualified_name,
            hint="put the table's folder back first (a folder that still holds its "
                 f"{MARKER} comes back by itself on the next run)")
    [table] = found
    mark = read_incarnation(table.folder, table.door)
    if mark is None:
        mark_incarnation(table, copy.incarnation)
    elif mark != copy.incarnation:
        raise RestoreError(
            f"the folder {table.folder} is another incarnation ({mark}) than the dropped "
            f"copy ({copy.incarnation})", table=copy.qualified_name,
            file=str(table.folder / MARKER),
            hint=f"to make the folder go on from the dropped copy, delete its {MARKER} "
                 "and restore again")
