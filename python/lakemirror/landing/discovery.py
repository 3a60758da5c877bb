"""Find the tables of a landing zone, and the folders that must fail as tables.

Table folders sit at the zone root and in `<schema>.schema/` folders. Entries whose names start
with `_` (lakemirror's and the contract's own) or `.` (a tool's hidden state, e.g. `.state/`)
are not tables, nor are regular files (a README): they are skipped. A symbolic link or a FIFO,
socket or device where a table or schema folder could be is never followed or opened; as
lakemirror cannot tell what it stands for, it becomes a table with a `problem`, so that it fails
visibly instead of being mirrored, written into, or taken for a deleted folder. So do folders
with bad names and folders that map to the same table or model as another folder.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path, PurePath

from lakemirror.contract import sequence_file_name as sequence_file_name
from lakemirror.errors import ConfigError, FileNameError, LandingZoneError
from lakemirror.landing.zone import LandingZone, as_door
from lakemirror.landing.zone_door import Entry, ZoneDoor, unsafe_entry
from lakemirror.naming import qualified_name, staging_table_name

SCHEMA_SUFFIX = ".schema"
DEFAULT_SCHEMA = "dbo"
PROCESSED_FOLDER = "_ProcessedFiles"
NAME = re.compile(r"[A-Za-z0-9_]+")  # always fullmatch: `$` would let a trailing "\n" through
MAX_NAME_LENGTH = 128  # characters of a schema or table name
ALL_TABLES = "*"  # the table name of a schema folder that fails as a whole
_NAME_RULE = f"letters, digits and _ (at most {MAX_NAME_LENGTH} characters)"
LISTINGS_AT_ONCE = 8  # table folders listed at once on an object store


@dataclass(frozen=True)
class LandingTable:
    """One table folder: `<zone>/<Table>` or `<zone>/<Schema>.schema/<Table>`.

    A table with a `problem` must fail with it without being touched. Its name is ALL_TABLES
    when a whole schema folder fails (a link, a bad name, or a folder that cannot be listed):
    it stands for every table of that schema, which keep their mirrored tables meanwhile."""

    schema: str
    name: str
    folder: PurePath
    problem: LandingZoneError | None = None
    zone: ZoneDoor | None = None

    @property
    def qualified_name(self) -> str:
        return qualified_name(self.schema, self.name)

    @property
    def zone_folder(self) -> str:
        """The folder relative to the zone, as the publisher spelled it (`Sales.schema/Orders`):
        it tells apart tables whose names differ only by case."""
        return self.folder.relative_to(self.door.root).as_posix()

    @property
    def processed_folder(self) -> PurePath:
        return self.folder / PROCESSED_FOLDER

    @cached_property
    def listing(self) -> list[Entry]:
        """The folder's entries, listed for the next ingest: a run's retirement check lists
        the folder, and its ingest takes that listing (`take_listing`), so the two cost one
        request per table on an object store."""
        return self.door.entries(self.folder)

    def keep_listing(self, entries: list[Entry]) -> None:
        """Keep `entries`, listed for this table elsewhere (see `list_ahead`), as its
        `listing`."""
        self.__dict__["listing"] = entries

    def take_listing(self) -> list[Entry]:
        """The folder's entries for an ingest: the listing taken before it, once; otherwise
        (a second ingest of this table) a new one."""
        listing = self.listing
        del self.__dict__["listing"]
        return listing

    @property
    def door(self) -> ZoneDoor:
        """The zone this table is read and written through (a table made by hand without
        one is confined to the local folder holding it)."""
        return self.zone or LandingZone(Path(self.folder.parent))


def discover_tables(zone: PurePath | ZoneDoor) -> list[LandingTable]:
    """The zone's tables in name order, those that must fail carrying their problem."""
    door = as_door(zone)
    if isinstance(door, LandingZone) and not door.root.is_dir():
        raise ConfigError(f"landing zone {door.root} does not exist or is not a folder",
                          hint="pass --landing-zone DIR or set LAKEMIRROR_LANDING_ZONE")
    tables: list[LandingTable] = []
    for entry in _candidates(door.entries(door.root)):
        if entry.name.lower().endswith(SCHEMA_SUFFIX):
            tables += _schema_tables(door, entry)
        else:
            tables.append(_table(door, DEFAULT_SCHEMA, entry))
    return _without_collisions(tables)


def list_ahead(tables: Sequence[LandingTable]) -> None:
    """List the folders of `tables` several at once where each listing is a round trip to a
    server (an object store), for their next ingest (see `LandingTable.listing`). A folder
    whose listing fails is listed again when its table needs it, and fails that table."""
    pending = [table for table in tables if table.problem is None
               and table.door.calls_are_requests and "listing" not in table.__dict__]
    if len(pending) < 2:
        return
    with ThreadPoolExecutor(min(LISTINGS_AT_ONCE, len(pending))) as pool:
        listings = list(pool.map(_listing_or_none, pending))
    for table, entries in zip(pending, listings):
        if entries is not None:
            table.keep_listing(entries)


def _listing_or_none(table: LandingTable) -> list[Entry] | None:
    try:
        return table.door.entries(table.folder)
    except Exception:  # the table lists its folder again when it needs it, failing then
        return None


def hidden_entries(zone: PurePath | ZoneDoor) -> list[str]:
    """The hidden entries (names starting with '.') where tables and schemas are looked for,
    relative to the zone: they are ignored, and a run warns about them once."""
    door = as_door(zone)
    hidden, folders = [], [door.root]
    for entry in door.entries(door.root):
        if entry.name.lower().endswith(SCHEMA_SUFFIX) and entry.kind == "folder" \
                and not entry.name.startswith(("_", ".")):
            folders.append(entry.path)
    for folder in folders:
        try:
            found = door.entries(folder)
        except LandingZoneError:  # the run fails that schema's tables with the reason
            continue
        hidden += [str(entry.path.relative_to(door.root)) for entry in found
                   if entry.name.startswith(".")]
    return hidden


def _candidates(entries: Iterable[Entry]) -> list[Entry]:
    """Entries that are, or stand where there could be, table or schema folders."""
    return [entry for entry in entries
            if not entry.name.startswith(("_", ".")) and entry.kind != "file"]


def _schema_tables(door: ZoneDoor, entry: Entry) -> list[LandingTable]:
    """The tables of a `<schema>.schema` folder, or one entry for all of them when the folder
    itself fails (they keep their mirrored tables until it is fixed)."""
    written = entry.name[: -len(SCHEMA_SUFFIX)]
    problem: LandingZoneError | None = _name_problem("schema", written, entry.path)
    try:
        found = door.entries(entry.path)  # refuses a link, a FIFO, ... in place of the folder
    except LandingZoneError as error:
        problem = problem or error
    schema = written.lower()
    if problem is not None:
        return [LandingTable(schema, ALL_TABLES, entry.path,
                             _on(problem, f"{schema}.{ALL_TABLES}"), door)]
    return [_table(door, schema, sub) for sub in _candidates(found)]


def _table(door: ZoneDoor, schema: str, entry: Entry) -> LandingTable:
    problem = (unsafe_entry(entry, "a folder") if entry.kind != "folder"
               else _name_problem("table", entry.name, entry.path))
    name = entry.name.lower()
    return LandingTable(schema, name, entry.path, problem and _on(problem, qualified_name(schema, name)),
                        door)


def _name_problem(kind: str, name: str, folder: PurePath) -> FileNameError | None:
    if NAME.fullmatch(name) and len(name) <= MAX_NAME_LENGTH:
        return None
    shown = name if len(name) <= 60 else f"{name[:60]}..."
    problem = (f"is {len(name)} characters long" if NAME.fullmatch(name)
               else "has characters other than letters, digits and _")
    return FileNameError(f"{kind} name {shown!r} {problem}", file=str(folder),
                         hint=f"rename the folder using {_NAME_RULE}")


def _on(problem: LandingZoneError, table: str) -> LandingZoneError:
    """The problem, naming its table."""
    problem.table = table
    return problem


def _without_collisions(tables: list[LandingTable]) -> list[LandingTable]:
    """Folders that map to one table (names are case-insensitive) or to one model
    (`<schema>__<table>`) all fail, each naming the others, so that no folder wins by chance
    (a folder that fails for its own reason keeps that reason)."""
    claims: dict[str, list[LandingTable]] = defaultdict(list)
    for table in tables:
        for key in (table.qualified_name, staging_table_name(table.schema, table.name)):
            claims[key].append(table)
    clashes: dict[PurePath, tuple[str, list[PurePath]]] = {}
    for key, claimants in claims.items():
        if len(claimants) < 2:
            continue
        for table in claimants:
            clashes.setdefault(table.folder, (key, [other.folder for other in claimants
                                                    if other is not table]))
    return [replace(table, problem=_collision(table, *clashes[table.folder]))
            if table.folder in clashes and table.problem is None else table
            for table in tables]


def _collision(table: LandingTable, key: str, others: list[PurePath]) -> FileNameError:
    root = table.door.root
    folders = " and ".join(repr(str(path.relative_to(root))) for path in [table.folder, *others])
    target = (f"table {key} (names are case-insensitive)" if "." in key else
              f"model {key} (<schema>.schema/<table> is modelled as <schema>__<table>)")
    return FileNameError(
        f"the folders {folders} map to the same {target}", table=table.qualified_name,
        file=str(table.folder),
        hint="rename or remove all but one of these folders; none of them is mirrored until then")
