"""Delete processed landing files once their retention period has passed."""

from __future__ import annotations

import time
from pathlib import Path

from lakemirror.landing import LandingTable

READY_TO_DELETE_FOLDER = "_FilesReadyToDelete"
DEFAULT_RETENTION_DAYS = 7.0


def purge_processed(table: LandingTable, retention_days: float, *,
                    now: float | None = None) -> list[Path]:
    """Delete files in `_ProcessedFiles/` and `_FilesReadyToDelete/` older than the retention.

    A file's age counts from its move to `_ProcessedFiles/` (the move stamps its time), so the
    newest processed file, which stays in the table folder, is never touched.
    """
    cutoff = (time.time() if now is None else now) - retention_days * 86_400
    deleted = []
    for folder in (table.processed_folder, table.folder / READY_TO_DELETE_FOLDER):
        if not folder.is_dir():
            continue
        for path in folder.iterdir():
            if path.is_file() and path.stat().st_mtime < cutoff:
                path.unlink()
                deleted.append(path)
    return deleted
