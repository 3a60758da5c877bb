"""`lakemirror run --watch`: one warm process mirrors again whenever the landing zone changes
(the engine stays up and dbt's parsed project stays in memory)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from lakemirror.landing.incarnation import MARKER as INCARNATION_MARKER
from lakemirror.service import MirrorService
from lakemirror.status import TableStatus

Signature = frozenset[tuple[str, int, int]]
TABLE_DEPTH = 2  # <Table>/ or <Schema>.schema/<Table>/


def zone_signature(landing_zone: Path) -> Signature:
    """Name, modification time and size of every file in the zone's table folders (not in
    their `_ProcessedFiles` and other `_` folders, nor the incarnation mark lakemirror writes
    itself): it changes when a file lands."""
    entries = set()
    folders = [(landing_zone, 0)]
    while folders:
        folder, depth = folders.pop()
        try:
            children = list(os.scandir(folder))
        except FileNotFoundError:
            continue
        for entry in children:
            if entry.name.startswith("_") and entry.is_dir():
                continue
            if entry.is_dir() and depth < TABLE_DEPTH:
                folders.append((Path(entry.path), depth + 1))
            elif entry.is_file() and entry.name != INCARNATION_MARKER:
                stat = entry.stat()
                entries.add((entry.path, stat.st_mtime_ns, stat.st_size))
    return frozenset(entries)


def watch(service: MirrorService, interval: float, stop: threading.Event,
          on_run: Callable[[list[TableStatus]], None], tables: Sequence[str] = ()) -> None:
    """Run the service now and then every time the zone changes, checking every `interval`
    seconds, until `stop` is set."""
    service.warm = True
    seen: Signature | None = None
    while not stop.is_set():
        signature = zone_signature(service.landing_zone)
        if signature != seen:
            seen = signature  # taken before the run: a file landing meanwhile runs it again
            on_run(service.run(tables))
        stop.wait(interval)
