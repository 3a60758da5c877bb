"""`lakemirror run --watch`: one warm process mirrors again whenever the landing zone changes
(the engine stays up and dbt's parsed project stays in memory)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import PurePath

from lakemirror.errors import LakemirrorError
from lakemirror.landing.incarnation import MARKER as INCARNATION_MARKER
from lakemirror.landing.zone import as_door
from lakemirror.landing.zone_door import ZoneDoor
from lakemirror.service import MirrorService
from lakemirror.status import TableStatus

Signature = frozenset[tuple[str, int, int, bool]]
TABLE_DEPTH = 2  # <Table>/ or <Schema>.schema/<Table>/


def zone_signature(landing_zone: PurePath | ZoneDoor, *, settle_seconds: float) -> Signature:
    """Name, modification time, size and whether it settled (for `settle_seconds`, see
    `readiness`) of every entry
    in the zone's table folders (not in their `_ProcessedFiles` and other `_` or `.` folders,
    nor the incarnation mark lakemirror writes itself): it changes when a file lands, and when
    a file a table waits for settles. Listed through the zone's door, so a link is seen as
    itself and never followed."""
    door = as_door(landing_zone)
    window_ns, now_ns = settle_seconds * 1e9, time.time_ns()
    entries = set()
    folders = [(door.root, 0)]
    while folders:
        folder, depth = folders.pop()
        try:
            children = door.entries(folder)
        except LakemirrorError:  # gone or unreadable: the run reports it
            continue
        for entry in children:
            if entry.kind == "folder":
                if depth < TABLE_DEPTH and not entry.name.startswith(("_", ".")):
                    folders.append((entry.path, depth + 1))
            elif entry.name != INCARNATION_MARKER:
                settled = abs(now_ns - entry.mtime_ns) >= window_ns
                entries.add((str(entry.path), entry.mtime_ns, entry.size, settled))
    return frozenset(entries)


def watch(service: MirrorService, interval: float, stop: threading.Event,
          on_run: Callable[[list[TableStatus]], None], tables: Sequence[str] = ()) -> None:
    """Run the service now and then every time the zone changes, checking every `interval`
    seconds, until `stop` is set."""
    service.settings = replace(service.settings, warm=True)
    seen: Signature | None = None
    while not stop.is_set():
        signature = zone_signature(service.settings.zone,
                                   settle_seconds=service.settings.env.settle_seconds)
        if signature != seen:
            seen = signature  # taken before the run: a file landing meanwhile runs it again
            on_run(service.run(tables))
        stop.wait(interval)
