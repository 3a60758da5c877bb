"""Freshness: seconds from a small change file landing to its changes being visible in the
mirrored table, with a warm engine and a warm process (as `lakemirror run --watch` keeps)."""

from __future__ import annotations

import dataclasses
import shutil
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from lakemirror.bench.contenders import private_project
from lakemirror.bench.generator import generate_zone
from lakemirror.bench.spec import BenchSpec

CHANGES_PER_FILE = 1_000
SAMPLES = 3


@dataclass(frozen=True)
class Freshness:
    table_rows: int
    changes_per_file: int
    seconds: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    def text(self) -> str:
        runs = ", ".join(f"{seconds:.2f}" for seconds in self.seconds)
        return (f"freshness: {self.changes_per_file:,}-change file into a {self.table_rows:,}-row "
                f"table, landing to visible, warm: median {self.median:.2f} s ({runs})")


def measure_freshness(directory: Path, spec: BenchSpec,
                      progress: Callable[[str], None]) -> Freshness:
    """Mirror the initial load, then land SAMPLES files of CHANGES_PER_FILE changes one at a
    time and time each from landing to the commit that makes it visible."""
    from deltalake import DeltaTable

    from lakemirror.service import MirrorService

    shutil.rmtree(directory, ignore_errors=True)
    fresh_spec = dataclasses.replace(spec, tables=1, files=SAMPLES,
                                     changes_per_file=min(CHANGES_PER_FILE, spec.table_rows))
    [table] = generate_zone(directory / "zone", fresh_spec)
    pending = directory / "pending"
    pending.mkdir()
    initial, *changes = table.files
    for path in changes:
        path.rename(pending / path.name)
    service = MirrorService(directory / "zone" / "LandingZone", directory / "warehouse",
                            private_project(directory / "project"), quiet=True)
    progress(f"freshness: initial load of {fresh_spec.table_rows:,} rows (warm-up)")
    service.run()
    mirrored = str(service.layout.mirrored_path("dbo", table.name.lower()))
    seconds = []
    for path in changes:
        version = DeltaTable(mirrored).version()
        started = time.perf_counter()
        (pending / path.name).rename(path)
        service.run()
        if DeltaTable(mirrored).version() <= version:
            raise RuntimeError(f"freshness: {path.name} was not applied to {mirrored}")
        seconds.append(time.perf_counter() - started)
        progress(f"freshness: {path.name} visible after {seconds[-1]:.2f} s")
    return Freshness(fresh_spec.table_rows, fresh_spec.changes_per_file, tuple(seconds))
