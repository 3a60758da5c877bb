"""`lakemirror run --watch`: one warm process mirrors again whenever the landing zone changes
(the engine stays up and dbt's parsed project stays in memory)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import PurePath

from lakemirror.errors import LakemirrorError
from lakemirror.landing.incarnation import MARKER as INCARNATION_MARKER
from lakemirror.landing.zone import as_door
from lakemirror.landing.zone_door import ZoneDoor
from lakemirror.run.log import Progress
from lakemirror.service import MirrorService
from lakemirror.status import NodeStatus, TableStatus

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


IDLE_RUN_SECONDS = 300.0  # a quiet zone is still looked at: `status` never calls it stale


def watch(service: MirrorService, interval: float, stop: threading.Event,
          on_run: Callable[[list[TableStatus]], None], tables: Sequence[str] = (), *,
          idle_run_seconds: float = IDLE_RUN_SECONDS) -> None:
    """Run the service now and then every time the zone changes, checking every `interval`
    seconds, until `stop` is set; and at least every `idle_run_seconds`, so the warehouse
    records that a run looked at its tables (an idle run costs a listing and the run's
    record) and a monitor tells a quiet zone from a stopped watcher."""
    service.settings = replace(service.settings, warm=True)
    seen: Signature | None = None
    last_run = 0.0
    while not stop.is_set():
        signature = zone_signature(service.settings.zone,
                                   settle_seconds=service.settings.env.settle_seconds)
        if signature != seen or time.monotonic() - last_run >= idle_run_seconds:
            seen = signature  # taken before the run: a file landing meanwhile runs it again
            last_run = time.monotonic()
            on_run(service.run(tables))
        stop.wait(interval)


@dataclass
class WatchReport:
    """What `run --watch` shows of its runs: a run's report only when it differs from the last
    one shown (a table's status, last file, rows, error or warnings, or the run's warnings
    when they are part of it), and each warning line of the progress once, until a run no
    longer gives it."""

    progress: Progress
    _shown: object = None
    _warned: set[str] = field(default_factory=set)  # by the last run
    _warning: set[str] = field(default_factory=set)  # by the run going on

    def on_progress(self, message: str) -> None:
        """Show a progress line, unless it is a warning the last run gave too."""
        if message.lstrip().startswith("warning: "):
            self._warning.add(message)
            if message in self._warned:
                return
        self.progress(message)

    def changed(self, statuses: Sequence[TableStatus], warnings: Sequence[str],
                models: Sequence[NodeStatus] = ()) -> bool:
        """Whether this run's report differs from the last one shown (true for the first);
        ends the run for the warnings."""
        self._warned, self._warning = self._warning, set()
        report = ([asdict(status) for status in statuses], sorted(warnings),
                  [asdict(node) for node in models])
        if report == self._shown:
            return False
        self._shown = report
        return True


def one_line(document: str) -> str:
    """A JSON document on one line: `run --watch --json` prints one per run that changed."""
    return json.dumps(json.loads(document), separators=(",", ":"))
