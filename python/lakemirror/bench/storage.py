"""Storage after many files: one warm `lakemirror run` per landed change file (as `run --watch`
or a frequent schedule does), then `lakemirror maintain`; staging and mirrored bytes against the
live data, and a rebuild from the maintained staging checked against the reference. Measured
as lakemirror mirrors by default (deletion vectors: a MERGE writes the changed rows, not the
whole table), and copy-on-write, for a reader set that cannot read deletion vectors. After
`maintain`, the bench vacuums its own tables (never a user's) as if the retention window had
elapsed, so storage on disk is what it will be once vacuum may remove the rest."""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, cast

import pyarrow.parquet as pq

from lakemirror.bench.contenders import private_project
from lakemirror.bench.generator import generate_zone
from lakemirror.bench.reference_state import final_state, read_changes
from lakemirror.bench.spec import BenchSpec
from lakemirror.bench.verification import verify
from lakemirror.delta.listed_features import listed_features
from lakemirror.delta.rows import read_table

if TYPE_CHECKING:
    from lakemirror.service import MirrorService

PROGRESS_EVERY = 10


@dataclass(frozen=True)
class TableBytes:
    """A Delta table's bytes: everything on disk now (files kept for the retention window
    included), and those of its current version plus its log (what stays once vacuum may
    delete the rest)."""

    on_disk: int
    current: int
    rows: int


@dataclass(frozen=True)
class Storage:
    files: int
    table_rows: int
    changes_per_file: int
    live_bytes: int  # the final table as one Parquet file (pyarrow defaults)
    live_rows: int
    staging_before: TableBytes  # after the runs, before `maintain`
    staging: TableBytes
    mirrored_before: TableBytes
    mirrored: TableBytes
    maintenance: dict[str, object]
    rebuild_verified: bool
    rebuild_message: str
    readers: tuple[str, ...] = ()  # the mirror models' reader set (default: lakemirror's)
    table_features: tuple[str, ...] = ()  # the mirrored table's protocol lists after the runs

    def ratios(self) -> dict[str, float]:
        """Bytes over the live data's, after `maintain`."""
        return {"staging on disk/live": self.staging.on_disk / self.live_bytes,
                "staging current/live": self.staging.current / self.live_bytes,
                "mirrored on disk/live": self.mirrored.on_disk / self.live_bytes,
                "mirrored current/live": self.mirrored.current / self.live_bytes}

    def text(self) -> str:
        ratios = ", ".join(f"{name} {ratio:.2f}" for name, ratio in self.ratios().items())
        features = f" for {', '.join(self.readers)}" if self.readers else ""
        return (f"storage{features} after {self.files} change files and `lakemirror maintain`: "
                f"live data {self.live_bytes / 1e6:,.1f} MB; staging "
                f"{self.staging.on_disk / 1e6:,.1f} MB "
                f"on disk ({self.staging_before.on_disk / 1e6:,.1f} before), mirrored "
                f"{self.mirrored.on_disk / 1e6:,.1f} MB on disk "
                f"({self.mirrored_before.on_disk / 1e6:,.1f} before); ratios: {ratios}; "
                f"rebuild from staging: {self.rebuild_message}")


def measure_storage(directory: Path, spec: BenchSpec, progress: Callable[[str], None],
                    readers: tuple[str, ...] = ()) -> Storage:
    """Mirror `spec`'s table file by file with a warm service, run `maintain`, measure, then
    delete the mirrored table and rebuild it from staging; the mirror models
    declare `readers` (docs/pages/table-settings.md), which may keep them copy-on-write."""
    from deltalake import DeltaTable

    from lakemirror.maintenance import maintain
    from lakemirror.service import MirrorService, RunSettings

    shutil.rmtree(directory, ignore_errors=True)
    spec = dataclasses.replace(spec, tables=1)
    [table] = generate_zone(directory / "zone", spec)
    expected = final_state(read_changes(table.files))
    pending = directory / "pending"
    pending.mkdir()
    for path in table.files[1:]:
        path.rename(pending / path.name)
    settings = RunSettings.given(
        directory / "zone" / "LandingZone", directory / "warehouse",
        private_project(directory / "project", readers=readers),
        quiet=True, warm=True)
    service = MirrorService(settings)
    staging = cast(Path, settings.layout.staging_path("dbo", table.name.lower()))  # on disk
    mirrored = cast(Path, settings.layout.mirrored_path("dbo", table.name.lower()))
    _run(service, "initial load")
    for number, path in enumerate(table.files[1:], start=1):
        (pending / path.name).rename(path)
        _run(service, path.name)
        if number % PROGRESS_EVERY == 0 or number == spec.files:
            progress(f"storage: {number} of {spec.files} change files mirrored")
    staging_before, mirrored_before = table_bytes(staging), table_bytes(mirrored)
    features = listed_features(DeltaTable(str(mirrored)))
    progress("storage: lakemirror maintain")
    [maintained] = maintain(settings.warehouse)
    for path in (staging, mirrored):  # delta.deletedFileRetentionDuration elapsed
        DeltaTable(str(path)).vacuum(retention_hours=0, enforce_retention_duration=False,
                                     dry_run=False)
    staging_after, mirrored_after = table_bytes(staging), table_bytes(mirrored)
    live = directory / "live.parquet"
    pq.write_table(expected, live)
    progress("storage: rebuilding the mirrored table from staging")
    shutil.rmtree(mirrored)
    cold = dataclasses.replace(settings, warm=False)  # as a scheduled run would
    _run(MirrorService(cold), "the rebuild")
    check = verify(expected, read_table(mirrored), sample=None)
    return Storage(spec.files, spec.table_rows, spec.changes_per_file, live.stat().st_size,
                   expected.num_rows, staging_before, staging_after, mirrored_before,
                   mirrored_after, dataclasses.asdict(maintained), check.ok, check.message,
                   readers, features)


def _run(service: MirrorService, what: str) -> None:
    failed = [status for status in service.run() if status.status != "replicating"]
    if failed:
        raise RuntimeError(f"storage: {what}: {failed[0].schema}.{failed[0].table} "
                           f"{failed[0].status}: {failed[0].error}")


def table_bytes(path: Path) -> TableBytes:
    """`path`'s bytes on disk, and those its current version needs (data files and log)."""
    from deltalake import DeltaTable

    table = DeltaTable(str(path))
    actions = table.get_add_actions(flatten=True)
    data = sum(actions.column("size_bytes").to_pylist())
    rows = sum(actions.column("num_records").to_pylist())
    log = sum(file.stat().st_size for file in (path / "_delta_log").rglob("*") if file.is_file())
    on_disk = sum(file.stat().st_size for file in path.rglob("*") if file.is_file())
    return TableBytes(on_disk, data + log, rows)
