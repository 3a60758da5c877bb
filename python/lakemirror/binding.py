"""A warehouse knows the landing zone it mirrors.

The first run records the zone's identity in `<warehouse>/_lakemirror/landing_zone.json`: its
location as given and resolved, and the incarnation id of every staged table (the ids of the
tables' `_lakemirror.json` marks). A later run against another folder (a typo, a folder inside
the zone, the warehouse and the zone swapped) is refused before anything is written or dropped;
`--rebind-landing-zone` binds the warehouse to the new folder deliberately. The identity is
plain strings, so a zone at a URL fits the same record.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path, PurePath
from typing import TYPE_CHECKING

from lakemirror.errors import LakemirrorError, ZoneBindingError
from lakemirror.landing.discovery import ALL_TABLES, PROCESSED_FOLDER, discover_tables
from lakemirror.landing.incarnation import MARKER, read_incarnation
from lakemirror.landing.zone import as_door, open_zone
from lakemirror.landing.zone_door import ZoneDoor
from lakemirror.naming import qualified_name
from lakemirror.staging.layout import Warehouse
from lakemirror.staging.lifecycle import staged_tables
from lakemirror.staging.opened import StagingTables
from lakemirror.storage.location import Location
from lakemirror.storage.warehouse_door import WarehouseStorage

if TYPE_CHECKING:
    from lakemirror.storage.location import ObjectLocation

RECORD = Path("_lakemirror") / "landing_zone.json"
REBIND_FLAG = "--rebind-landing-zone (LAKEMIRROR_REBIND_LANDING_ZONE=1)"
ZONE_SIGNS = (MARKER, "_metadata.json", PROCESSED_FOLDER)  # in a table folder of a zone
WAREHOUSE_SIGNS = (RECORD, Path("_lakemirror") / "staging", Path("_lakemirror") / "control")


@dataclass(frozen=True)
class ZoneIdentity:
    """Where a landing zone is: as the user gave it, and resolved (links, relative parts)."""

    given: str
    resolved: str

    def inside(self, other: ZoneIdentity) -> bool:
        """Whether this zone is a folder below `other`."""
        return self.resolved.startswith(other.resolved.rstrip("/") + "/")


@dataclass(frozen=True)
class Binding:
    """The zone a warehouse mirrors, and its tables' incarnation ids by 'schema.table'."""

    zone: ZoneIdentity
    tables: Mapping[str, str] = field(default_factory=dict)


def zone_identity(given: Path | ObjectLocation) -> ZoneIdentity:
    """The zone's identity: a folder as given and resolved; a URL (as shown, no secrets)."""
    if isinstance(given, Path):
        return ZoneIdentity(str(given), str(given.resolve()))
    return ZoneIdentity(given.url, given.url)


def read_binding(storage: WarehouseStorage) -> Binding | None:
    """The record of the warehouse of `storage`; None for a new warehouse (or one an earlier
    version made)."""
    text = storage.read_text(RECORD.as_posix())
    if text is None:
        return None
    try:
        document = json.loads(text)
        zone = document["landing_zone"]
        return Binding(ZoneIdentity(str(zone["given"]), str(zone["resolved"])),
                       {str(name): str(mark) for name, mark in document["tables"].items()})
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise ZoneBindingError(f"the warehouse's landing-zone record is damaged ({error})",
                               file=storage.location(RECORD.as_posix()),
                               hint=f"pass {REBIND_FLAG} to record the landing zone again"
                               ) from error


def recorded_binding(storage: WarehouseStorage) -> Binding | None:
    """The warehouse's record, None also when it is damaged (to be written again)."""
    try:
        return read_binding(storage)
    except ZoneBindingError:
        return None


def write_binding(storage: WarehouseStorage, binding: Binding) -> None:
    """Record the binding atomically, when it changed."""
    if recorded_binding(storage) == binding:
        return
    storage.write_text(RECORD.as_posix(), json.dumps({
        "landing_zone": {"given": binding.zone.given, "resolved": binding.zone.resolved},
        "tables": dict(sorted(binding.tables.items())),
        "recorded_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "note": "written by lakemirror: the landing zone this warehouse mirrors. Runs against "
                f"another folder are refused; {REBIND_FLAG} changes it"}, indent=2))


def record_binding(opened: StagingTables, zone: ZoneIdentity) -> None:
    """Record `zone` and the incarnation of every staged table of the run's warehouse (the
    caller holds the control lock); a table whose staging log cannot be read keeps its
    recorded one."""
    warehouse = opened.warehouse
    recorded = recorded_binding(warehouse.storage)
    tables = {}
    for schema, table in staged_tables(warehouse):
        name = qualified_name(schema, table)
        try:
            incarnation = opened.of(schema, table).incarnation()
        except Exception:  # a damaged log: its table fails with the reason
            incarnation = recorded.tables.get(name) if recorded else None
        if incarnation is not None:
            tables[name] = incarnation
    write_binding(warehouse.storage, Binding(zone, tables))


def check_binding(zone: ZoneIdentity, zone_root: PurePath | ZoneDoor, layout: Warehouse, *,
                  rebind: bool = False) -> None:
    """Refuse a run that looks like a mistake, before it writes anything: a landing zone that
    is a warehouse, a warehouse that is a landing zone (both: the folders swapped), or, unless
    `rebind`, a zone other than the one the warehouse mirrors."""
    warehouse = layout.root
    swapped = (f"if the two folders are swapped, pass --landing-zone {warehouse} "
               f"--warehouse {zone.given}")
    if looks_like_warehouse(zone_root):
        raise ZoneBindingError(
            f"the landing zone {zone.given} is a lakemirror warehouse (it holds _lakemirror/); "
            f"the warehouse given is {warehouse}; nothing was written",
            hint=f"{swapped}; else pass the publisher's folder as --landing-zone")
    if looks_like_landing_zone(layout):
        raise ZoneBindingError(
            f"the warehouse {warehouse} looks like a landing zone (its table folders hold "
            f"{', '.join(ZONE_SIGNS)}); the landing zone given is {zone.given}; nothing was "
            "written", hint=f"{swapped}; else pass an empty folder or lakemirror's "
                            "warehouse as --warehouse")
    bound = None if rebind else read_binding(layout.storage)
    if bound is None or bound.zone.resolved == zone.resolved:
        return
    raise ZoneBindingError(_refusal(zone, zone_root, bound, warehouse),
                           hint=f"pass --landing-zone {bound.zone.given}, or, to mirror "
                                f"{zone.given} into this warehouse from now on, pass "
                                f"{REBIND_FLAG}")


def _refusal(zone: ZoneIdentity, zone_root: PurePath | ZoneDoor, bound: Binding,
             warehouse: Location) -> str:
    where = (f"the warehouse {warehouse} mirrors the landing zone {bound.zone.given} "
             f"({bound.zone.resolved}), not {zone.given} ({zone.resolved})")
    if zone.inside(bound.zone):
        return f"{where}: {zone.given} is a folder inside the bound zone"
    if bound.zone.inside(zone):
        return f"{where}: {zone.given} is a folder around the bound zone"
    same = {name for name, mark in zone_marks(zone_root).items()
            if bound.tables.get(name) == mark}
    if same:
        moved = "moved" if not Path(bound.zone.resolved).exists() else "moved or was copied"
        return (f"{where}; its tables {', '.join(sorted(same))} carry the same incarnation "
                f"marks, so the zone {moved} from {bound.zone.resolved} to {zone.resolved}")
    return where


def zone_marks(zone_root: PurePath | ZoneDoor) -> dict[str, str]:
    """The incarnation id of each of the zone's marked tables ('schema.table'); unreadable
    marks are left out (this only names a likely cause in an error)."""
    marks = {}
    try:
        tables = discover_tables(zone_root)
    except LakemirrorError:
        return {}
    for table in tables:
        if table.problem is not None or table.name == ALL_TABLES:
            continue
        try:
            mark = read_incarnation(table.folder, table.door)
        except LakemirrorError:
            continue
        if mark is not None:
            marks[table.qualified_name] = mark
    return marks


def looks_like_warehouse(folder: PurePath | ZoneDoor) -> bool:
    """Whether `folder` holds what only a lakemirror warehouse holds."""
    door = as_door(folder)
    try:
        return any(door.entry(door.root / sign) is not None for sign in WAREHOUSE_SIGNS)
    except LakemirrorError:  # the run reports an unreadable zone itself
        return False


def looks_like_landing_zone(warehouse: Warehouse) -> bool:
    """Whether a table folder of the warehouse (as a zone's tables are laid out) holds a
    landing zone's files: lakemirror's incarnation mark, `_metadata.json` or
    `_ProcessedFiles/`. A warehouse URL is looked at through a zone's door, as its zone
    would be."""
    if not warehouse.storage.is_folder(""):
        return False
    door = open_zone(warehouse.root)
    if looks_like_warehouse(door):
        return False
    try:
        tables = discover_tables(door)
    except LakemirrorError:
        return False
    for table in tables:
        try:
            if any(table.door.entry(table.folder / sign) is not None for sign in ZONE_SIGNS):
                return True
        except LakemirrorError:
            continue
    return False
