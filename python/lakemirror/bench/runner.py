"""Runs the contenders side by side on one generated landing zone, times them, measures their
peak memory and verifies every final table against the expected one."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from lakemirror.bench.contenders import skip_reason
from lakemirror.bench.generator import GeneratedTable, generate_zone
from lakemirror.bench.reference_state import final_state, read_changes
from lakemirror.bench.spec import BenchSpec
from lakemirror.bench.verify import verify
from lakemirror.delta.rows import read_table

VERIFY_SAMPLE = 1_000


@dataclass(frozen=True)
class ContenderResult:
    """One contender's run: wall time, change rows applied per second, peak RSS, verdict."""

    name: str
    seconds: float | None = None
    rows_per_second: float | None = None
    peak_rss_mb: float | None = None
    verified: bool | None = None
    message: str = ""


@dataclass(frozen=True)
class BenchResult:
    spec: BenchSpec
    change_rows: int
    contenders: tuple[ContenderResult, ...]

    def ratio(self, name: str, other: str) -> float | None:
        """Time of `name` over time of `other` in this run, when both ran."""
        times = {result.name: result.seconds for result in self.contenders}
        first, second = times.get(name), times.get(other)
        return first / second if first and second else None


def run_bench(spec: BenchSpec, directory: Path, contenders: Sequence[str],
              progress: Callable[[str], None]) -> BenchResult:
    """Generate the zone of `spec` under `directory`, then run each contender on a copy of it."""
    shutil.rmtree(directory, ignore_errors=True)
    template = directory / "zone"
    progress(f"generate {spec.tables} table(s) of {spec.table_rows:,} rows and "
             f"{spec.files} x {spec.changes_per_file:,} changes (seed {spec.seed})")
    tables = generate_zone(template, spec)
    expected = {_name(table): final_state(read_changes(table.files)) for table in tables}
    change_rows = sum(table.change_rows for table in tables)
    results = []
    for name in contenders:
        reason = skip_reason(name)
        if reason:
            progress(f"{name}: skipped, {reason}")
            results.append(ContenderResult(name, message=f"skipped: {reason}"))
            continue
        progress(f"{name}: running")
        results.append(_run_contender(name, template / "LandingZone", directory / name,
                                      expected, change_rows))
        progress(f"{name}: {results[-1].seconds:.2f} s, {results[-1].message}")
    return BenchResult(spec, change_rows, tuple(results))


def _name(table: GeneratedTable) -> str:
    return f"dbo.{table.name.lower()}"


def _run_contender(name: str, zone: Path, workdir: Path, expected: dict[str, pa.Table],
                   change_rows: int) -> ContenderResult:
    shutil.copytree(zone, workdir / "LandingZone")
    seconds, peak_rss_mb, output = _measure(
        [sys.executable, "-m", "lakemirror.bench.contenders", name,
         str(workdir / "LandingZone"), str(workdir / "out")], workdir)
    if output is None:
        return ContenderResult(name, seconds, None, peak_rss_mb, False,
                               f"failed; see {workdir / 'stderr.log'}")
    problems = []
    for table, path in json.loads(output).items():
        verification = verify(expected[table], read_final_table(Path(path)), VERIFY_SAMPLE)
        if not verification.ok:
            problems.append(f"{table}: {verification.message}")
    return ContenderResult(name, seconds, change_rows / seconds, peak_rss_mb, not problems,
                           "; ".join(problems) or "verified")


def _measure(command: list[str], workdir: Path) -> tuple[float, float, str | None]:
    """Run `command`; its wall seconds, its peak RSS in MB, and its stdout (None if it failed)."""
    stdout, stderr = workdir / "stdout.log", workdir / "stderr.log"
    with stdout.open("w") as out, stderr.open("w") as err:
        started = time.perf_counter()
        process = subprocess.Popen(command, stdout=out, stderr=err)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    output = stdout.read_text() if process.returncode == 0 else None
    return seconds, usage.ru_maxrss / 1024, output


def read_final_table(path: Path) -> pa.Table:
    """A contender's final table: a Parquet file or a Delta table."""
    return pq.read_table(path) if path.suffix == ".parquet" else read_table(path)
