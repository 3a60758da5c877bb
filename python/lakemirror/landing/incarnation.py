"""Which incarnation of a table folder this is.

The first time lakemirror stages a table it writes `_lakemirror.json` with a new id into the
table folder (next to `_ProcessedFiles/`), and records the id with every staged file. A folder
deleted and created again has no such file (or another id), so lakemirror knows the table was
recreated: the old mirrored table is dropped and rebuilt from the new folder's files only.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

MARKER = "_lakemirror.json"


def read_incarnation(folder: Path) -> str | None:
    """The folder's incarnation id; None when lakemirror has not marked it (or the mark is
    unreadable, which counts as a new folder)."""
    try:
        return str(json.loads((folder / MARKER).read_text(encoding="utf-8"))["incarnation"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def mark_incarnation(folder: Path, incarnation: str | None = None) -> str:
    """Write the folder's incarnation id (a new one unless given) atomically; returns it."""
    incarnation = incarnation or uuid.uuid4().hex
    partial = folder / f"{MARKER}.partial"
    partial.write_text(json.dumps({
        "incarnation": incarnation,
        "note": "written by lakemirror: the id of this table folder's incarnation; deleting "
                "this file makes lakemirror rebuild the table from the files in the folder"},
        indent=2), encoding="utf-8")
    os.replace(partial, folder / MARKER)
    return incarnation
