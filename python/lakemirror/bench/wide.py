"""Wide tables: the incremental-run seconds of tables that differ only in their number of
columns (same rows, same changes), each `lakemirror run --table` in a cold process on a project
that already mirrored the initial loads, as a user's scheduled run finds it."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lakemirror.bench.contenders import private_project
from lakemirror.bench.generator import generate_zone
from lakemirror.bench.idle_run import lakemirror_command
from lakemirror.bench.reference_state import final_state, read_changes
from lakemirror.bench.spec import BenchSpec
from lakemirror.bench.verification import verify
from lakemirror.contract import DELETE, ROW_MARKER
from lakemirror.delta.rows import read_table
from lakemirror.staging import Warehouse

NARROW_COLUMNS = 10  # the generated rows' data columns, key included
RUN_TIMEOUT_SECONDS = 900
VERIFY_SAMPLE = 200


@dataclass(frozen=True)
class WideTable:
    """One table's incremental run: wall seconds, final status, verdict (or why it failed)."""

    columns: int
    seconds: float | None
    status: str
    verified: bool
    message: str


@dataclass(frozen=True)
class WideTables:
    rows: int
    changes: int
    tables: tuple[WideTable, ...]

    def ratio(self, columns: int) -> float | None:
        """Seconds of the `columns`-column table over the 10-column one's, both verified."""
        times = {table.columns: table.seconds for table in self.tables if table.verified}
        wide, narrow = times.get(columns), times.get(NARROW_COLUMNS)
        return wide / narrow if wide and narrow else None

    def text(self) -> str:
        lines = [f"wide tables ({self.rows:,} rows, {self.changes:,} changes; incremental "
                 "`lakemirror run --table`, cold process):"]
        for table in self.tables:
            seconds = f"{table.seconds:.2f} s" if table.seconds is not None else "-"
            ratio = self.ratio(table.columns)
            versus = f" ({ratio:.2f}x the 10-column one)" if ratio and table.columns != 10 else ""
            lines.append(f"  {table.columns:>5} columns: {seconds}{versus}, {table.status}, "
                         f"{table.message}")
        return "\n".join(lines)


def measure_wide_tables(directory: Path, widths: Sequence[int], rows: int, changes: int,
                        seed: int, progress: Callable[[str], None]) -> WideTables:
    """Generate one table per width in `widths` (plus the 10-column one) from the same spec,
    mirror their initial loads in one run, then land one change file each and time each
    table's incremental run on its own."""
    shutil.rmtree(directory, ignore_errors=True)
    zone, pending = directory / "LandingZone", directory / "pending"
    spec = BenchSpec(seed=seed, table_rows=rows, files=1, changes_per_file=changes)
    widths = sorted({NARROW_COLUMNS, *widths})
    expected = {}
    for columns in widths:
        progress(f"wide: generating a {columns}-column table")
        files = _wide_table(directory / "generated", zone / f"Wide{columns}", spec, columns)
        expected[columns] = final_state(read_changes(files))
        (pending / f"Wide{columns}").mkdir(parents=True)
        files[1].rename(pending / f"Wide{columns}" / files[1].name)
    run = lakemirror_runner(zone, directory / "warehouse",
                            private_project(directory / "project"))
    progress(f"wide: initial loads of {len(widths)} tables")
    initial = run((), reported=tuple(f"dbo.wide{columns}" for columns in widths))
    results = []
    for columns in widths:
        name = f"dbo.wide{columns}"
        if initial.get(name, {}).get("status") != "replicating":
            results.append(_failed(columns, None, initial.get(name), "initial load"))
            continue
        for path in (pending / f"Wide{columns}").iterdir():
            path.rename(zone / f"Wide{columns}" / path.name)
        started = time.perf_counter()
        statuses = run((name,))
        seconds = time.perf_counter() - started
        progress(f"wide: {columns} columns, incremental run {seconds:.2f} s")
        status = statuses.get(name)
        if not status or status.get("status") != "replicating":
            results.append(_failed(columns, seconds, status, "incremental run"))
            continue
        mirrored = Warehouse(directory / "warehouse").mirrored_path("dbo", f"wide{columns}")
        check = verify(expected[columns], read_table(mirrored), VERIFY_SAMPLE)
        results.append(WideTable(columns, seconds, "replicating", check.ok, check.message))
    return WideTables(rows, changes, tuple(results))


def _failed(columns: int, seconds: float | None, status: dict[str, object] | None,
            step: str) -> WideTable:
    if status is None:
        return WideTable(columns, seconds, "missing", False, f"{step}: not in the run's --json")
    return WideTable(columns, seconds, str(status.get("status")), False,
                     f"{step}: {status.get('error')}")


def lakemirror_runner(zone: Path, warehouse: Path, project: Path
            ) -> Callable[..., dict[str, dict[str, object]]]:
    """`lakemirror run --json` on the zone (on the given tables, or all), in a cold process;
    its tables' statuses by name, or a 'timed out' / failed-run status (the run's exit code
    and the end of its stderr) for each of the `reported` tables (by default, those asked)."""
    command = [*lakemirror_command(), "run", "--json", "--landing-zone", str(zone),
               "--warehouse", str(warehouse), "--project-dir", str(project)]

    def run(tables: tuple[str, ...], reported: tuple[str, ...] = ()
            ) -> dict[str, dict[str, object]]:
        reported = reported or tables
        selection = [argument for name in tables for argument in ("--table", name)]
        process = subprocess.Popen([*command, *selection], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            stdout, stderr = process.communicate(timeout=RUN_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            return {name: {"status": "timed out",
                           "error": f"no result after {RUN_TIMEOUT_SECONDS} s"}
                    for name in reported}
        try:
            return {f"{entry['schema']}.{entry['table']}": entry
                    for entry in json.loads(stdout)["tables"]}
        except (ValueError, KeyError, TypeError):
            error = f"exit code {process.returncode}: {stderr.strip()[-500:]}"
            return {name: {"status": "failed", "error": error} for name in reported}
    return run


def _wide_table(scratch: Path, folder: Path, spec: BenchSpec, columns: int) -> list[Path]:
    """The spec's table with `columns` data columns: the generated ten, then extra integer,
    float and text columns (null on delete rows), written to `folder`."""
    shutil.rmtree(scratch, ignore_errors=True)
    [table] = generate_zone(scratch, spec)
    folder.parent.mkdir(parents=True, exist_ok=True)
    table.folder.rename(folder)
    rng = np.random.default_rng([spec.seed, columns])
    files = [folder / path.name for path in table.files]
    for path in files:
        pq.write_table(widen(pq.read_table(path), columns, rng), path)
    return files


def widen(table: pa.Table, columns: int, rng: np.random.Generator) -> pa.Table:
    """`table` with `columns - 10` extra columns before `__rowMarker__`."""
    kept = pc.not_equal(table[ROW_MARKER], DELETE)
    extra = []
    for index in range(NARROW_COLUMNS + 1, columns + 1):
        values = rng.integers(0, 1 << 31, table.num_rows, dtype=np.int64)
        column = (pa.array(values) if index % 3 == 0 else pa.array(values / 7.0)
                  if index % 3 == 1 else pa.array(values).cast(pa.string()))
        extra.append((f"c{index:04d}", pc.if_else(kept, column, pa.scalar(None, column.type))))
    data = table.drop_columns([ROW_MARKER])
    for name, column in extra:
        data = data.append_column(name, column)
    return data.append_column(ROW_MARKER, table[ROW_MARKER])


def as_dict(result: WideTables) -> dict[str, object]:
    ratios = {f"{table.columns}/{NARROW_COLUMNS}": result.ratio(table.columns)
              for table in result.tables if table.columns != NARROW_COLUMNS}
    return {**dataclasses.asdict(result), "ratios": ratios}
