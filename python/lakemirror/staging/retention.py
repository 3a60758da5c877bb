"""Delete processed landing files once their retention period has passed."""

from __future__ import annotations

import time
from pathlib import PurePath

from lakemirror.landing import LandingTable

READY_TO_DELETE_FOLDER = "_FilesReadyToDelete"
DEFAULT_RETENTION_DAYS = 7.0


def purge_processed(table: LandingTable, retention_days: float, *,
                    now: float | None = None) -> list[PurePath]:
    """Delete files in `_ProcessedFiles/` and `_FilesReadyToDelete/` older than the retention.

    A file's age counts from its move to `_ProcessedFiles/` (the move stamps its time), so the
    newest processed file, which stays in the table folder, is never touched. Only regular
    files inside the zone are deleted: when either folder is a link (or not a folder), the
    purge raises UnsafeEntryError and the table fails, deleting nothing through it; links and
    other entries inside the folders are left alone.
    """
    cutoff = (time.time() if now is None else now) - retention_days * 86_400
    door = table.door
    deleted = []
    for folder in (table.processed_folder, table.folder / READY_TO_DELETE_FOLDER):
        if door.entry(folder) is None:
            continue
        for entry in door.entries(folder):
            if entry.kind == "file" and entry.mtime_ns < cutoff * 1e9:
                door.delete(entry.path)
                deleted.append(entry.path)
    return deleted
