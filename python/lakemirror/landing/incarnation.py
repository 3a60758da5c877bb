"""Which incarnation of a table folder this is.

The first time lakemirror stages a table it writes `_lakemirror.json` with a new id into the
table folder (next to `_ProcessedFiles/`), and records the id with every staged file. A folder
deleted and created again has no such file (or another id), so lakemirror knows the table was
recreated: the old mirrored table is dropped and rebuilt from the new folder's files only.

Only a positive signal counts as recreated: a readable mark holding another id, or no mark in a
folder lakemirror never moved files out of (no `_ProcessedFiles/`). A mark that cannot be read
(permissions, a link or FIFO in its place, garbled JSON) is an error, never a new folder; a
mark deleted from a folder that still has `_ProcessedFiles/` is written again.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from pathlib import Path, PurePath

from lakemirror.errors import MetadataError, ZoneAccessError
from lakemirror.landing.control_copy import ControlCopy
from lakemirror.landing.discovery import LandingTable
from lakemirror.landing.zone import LandingZone
from lakemirror.landing.zone_door import ZoneDoor, parse_json

MARKER = "_lakemirror.json"


@dataclass(frozen=True)
class FolderMark:
    """What a table folder says about its incarnation."""

    incarnation: str | None  # the id in the mark; None when the folder has none
    lost: bool = False  # no mark, but `_ProcessedFiles/` shows lakemirror staged from here

    def recreated(self, recorded: str | None) -> bool:
        """Whether the folder is another incarnation than the staged one (`recorded`)."""
        return recorded is not None and not self.lost and self.incarnation != recorded


def read_mark(table: LandingTable, mark: ControlCopy | None = None) -> FolderMark:
    """The table folder's mark (`mark`: as already read); raises a LandingZoneError when it
    cannot be read."""
    path = table.folder / MARKER
    incarnation = (read_incarnation(table.folder, table.door) if mark is None
                   else incarnation_in(path, mark.data))
    if incarnation is not None:
        return FolderMark(incarnation)
    return FolderMark(None, lost=table.door.entry(table.processed_folder) is not None)


def read_incarnation(folder: PurePath, zone: ZoneDoor | None = None) -> str | None:
    """The id in the folder's mark, read through `zone` (by default the folder's parent);
    None when the folder holds no mark. Raises a LandingZoneError when the mark cannot be
    read or is not lakemirror's."""
    path = folder / MARKER
    return incarnation_in(path, (zone or LandingZone(Path(folder.parent))).read_control(path))


def incarnation_in(path: PurePath, data: bytes | None) -> str | None:
    """The id in the mark at `path` holding `data` (None: there is none)."""
    if data is None:
        return None
    try:
        document = parse_json(data)
    except ValueError as error:
        raise _garbled(path, str(error)) from error
    incarnation = document.get("incarnation") if isinstance(document, dict) else None
    if not isinstance(incarnation, str) or not incarnation:
        raise _garbled(path, "it holds no incarnation id")
    return incarnation


def mark_incarnation(table: LandingTable, incarnation: str | None = None) -> str:
    """Mark the folder, which has no mark, with its incarnation id (a new one unless given),
    created atomically and only if absent (a conditional put on an object store), so two
    runners cannot both mark it; returns the id the folder carries then (the other runner's,
    when it was first)."""
    return create_mark(table, incarnation)[0]


def create_mark(table: LandingTable, incarnation: str | None = None
                ) -> tuple[str, ControlCopy | None]:
    """`mark_incarnation`'s id, and the mark as written when this runner wrote it."""
    incarnation = incarnation or uuid.uuid4().hex
    path = table.folder / MARKER
    data = json.dumps({
        "incarnation": incarnation,
        "note": "written by lakemirror: the id of this table folder's incarnation. A new "
                "folder (without this file and without _ProcessedFiles/) is mirrored from "
                "scratch"},
        indent=2).encode("utf-8")
    etag = table.door.create_control(path, data)
    if etag is not None:
        return incarnation, ControlCopy(data, etag or None)
    found = read_incarnation(table.folder, table.door)
    if found is None:
        raise ZoneAccessError(f"{MARKER} appeared and vanished while lakemirror marked the "
                              "folder", table=table.qualified_name, file=str(path),
                              hint="another process deletes it: stop it, then run again")
    return found, None


def _garbled(path: PurePath, detail: str) -> MetadataError:
    return MetadataError(
        f"{MARKER} is not lakemirror's incarnation mark ({detail})", file=str(path),
        hint=f"delete {MARKER}: lakemirror writes it again when the folder has _ProcessedFiles/, "
             "otherwise it rebuilds the table from the files in the folder")
