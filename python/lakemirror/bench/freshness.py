"""Freshness: seconds from a small change file landing to its changes being visible in the
mirrored table, with a warm engine and a warm process (as `lakemirror run --watch` keeps)."""

from __future__ import annotations

import dataclasses
import shutil
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from lakemirror.bench.contenders import private_project
from lakemirror.bench.generator import generate_zone
from lakemirror.bench.spec import BenchSpec
from lakemirror.status import TableStatus
from lakemirror.watch import watch

CHANGES_PER_FILE = 1_000
SAMPLES = 3
POLL_SECONDS = 0.05
TIMEOUT_SECONDS = 300


@dataclass(frozen=True)
class Freshness:
    table_rows: int
    changes_per_file: int
    seconds: tuple[float, ...]
    readers: tuple[str, ...] = ()  # the mirror models' reader set (default: lakemirror's)
    table_features: tuple[str, ...] = ()  # the mirrored table's protocol lists at the end

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    def text(self) -> str:
        runs = ", ".join(f"{seconds:.2f}" for seconds in self.seconds)
        features = f" for {', '.join(self.readers)}" if self.readers else ""
        return (f"freshness{features}: {self.changes_per_file:,}-change file into a "
                f"{self.table_rows:,}-row table, landing to visible, warm: median "
                f"{self.median:.2f} s ({runs})")


def measure_freshness(directory: Path, spec: BenchSpec, progress: Callable[[str], None],
                      readers: tuple[str, ...] = ()) -> Freshness:
    """With `lakemirror run --watch`'s loop running, land SAMPLES files of CHANGES_PER_FILE
    changes one at a time into a table of `spec.table_rows` rows and time each from landing to
    the commit that makes it visible in the mirrored table; the mirror models
    declare `readers` (docs/pages/table-settings.md), which may keep them copy-on-write."""
    from deltalake import DeltaTable

    from lakemirror.delta.listed_features import listed_features
    from lakemirror.service import MirrorService, RunSettings

    shutil.rmtree(directory, ignore_errors=True)
    fresh_spec = dataclasses.replace(spec, tables=1, files=SAMPLES,
                                     changes_per_file=min(CHANGES_PER_FILE, spec.table_rows))
    [table] = generate_zone(directory / "zone", fresh_spec)
    pending = directory / "pending"
    pending.mkdir()
    initial, *changes = table.files
    for path in changes:
        path.rename(pending / path.name)
    service = MirrorService(RunSettings.given(
        directory / "zone" / "LandingZone", directory / "warehouse",
        private_project(directory / "project", readers=readers), quiet=True))
    progress(f"freshness: initial load of {fresh_spec.table_rows:,} rows (warm-up)")
    mirrored = str(service.settings.layout.mirrored_path("dbo", table.name.lower()))
    stop, runs, failures = threading.Event(), list[list[TableStatus]](), list[Exception]()

    def finished(statuses: list[TableStatus]) -> None:
        failures.extend(RuntimeError(f"{status.schema}.{status.table} {status.status}: "
                                     f"{status.error}") for status in statuses
                        if status.status != "replicating")
        runs.append(statuses)

    def watching() -> None:
        try:
            watch(service, POLL_SECONDS, stop, finished)
        except Exception as error:  # reported by wait_for, at once
            failures.append(error)

    watcher = threading.Thread(target=watching)
    watcher.start()

    def wait_for(condition: Callable[[], bool], what: str) -> None:
        _wait(condition, what, failures)

    try:
        wait_for(lambda: len(runs) > 0, f"the initial load of {mirrored}")
        seconds = []
        for path in changes:
            log = Path(mirrored) / "_delta_log"
            next_commit = log / f"{DeltaTable(mirrored).version() + 1:020d}.json"
            finished_runs = len(runs)
            started = time.perf_counter()
            (pending / path.name).rename(path)
            wait_for(next_commit.exists, f"{path.name}")  # cheap: no log replay per poll
            seconds.append(time.perf_counter() - started)
            progress(f"freshness: {path.name} visible after {seconds[-1]:.2f} s")
            wait_for(lambda: len(runs) > finished_runs, "the watch loop's run to finish")
    finally:
        stop.set()
        watcher.join()
    return Freshness(fresh_spec.table_rows, fresh_spec.changes_per_file, tuple(seconds),
                     readers, listed_features(DeltaTable(mirrored)))


def _wait(condition: Callable[[], bool], what: str, failures: list[Exception]) -> None:
    """Until `condition` holds; an error when the watch loop failed or after TIMEOUT_SECONDS."""
    deadline = time.perf_counter() + TIMEOUT_SECONDS
    while not condition():
        if failures:
            raise RuntimeError(f"freshness: the watch loop failed while waiting for {what}: "
                               f"{failures[0]}") from failures[0]
        if time.perf_counter() > deadline:
            raise RuntimeError(f"freshness: gave up waiting for {what}")
        time.sleep(0.01)
