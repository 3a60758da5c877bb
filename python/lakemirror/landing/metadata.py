"""`_metadata.json` of a landing-zone table."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from lakemirror.errors import LandingZoneError

METADATA_FILE = "_metadata.json"


@dataclass(frozen=True)
class TableMetadata:
    """What the publisher declared about a table; no keys means inserts only."""

    key_columns: tuple[str, ...] = ()


def read_metadata(folder: Path, table: str) -> TableMetadata:
    """Read `<folder>/_metadata.json`; a missing file means a keyless, insert-only table."""
    path = folder / METADATA_FILE
    if not path.exists():
        return TableMetadata()
    try:
        document = json.loads(path.read_text(encoding="utf-8-sig"))
    except json.JSONDecodeError as error:
        raise LandingZoneError(
            f"{METADATA_FILE} is not valid JSON: {error.msg} at line {error.lineno}, "
            f"column {error.colno}",
            table=table, file=str(path), hint="write valid JSON such as {\"keyColumns\": [\"id\"]}",
        ) from error
    if not isinstance(document, dict):
        raise LandingZoneError(f"{METADATA_FILE} must hold a JSON object", table=table,
                               file=str(path), hint="write {\"keyColumns\": [...]}")
    keys = document.get("keyColumns", [])
    if not isinstance(keys, list) or not all(isinstance(key, str) and key for key in keys):
        raise LandingZoneError("keyColumns must be a list of column names", table=table,
                               file=str(path), hint="write \"keyColumns\": [\"id\"]")
    if len(set(keys)) != len(keys):
        raise LandingZoneError(f"keyColumns repeats a column: {keys}", table=table,
                               file=str(path), hint="list each key column once")
    return TableMetadata(key_columns=tuple(keys))
