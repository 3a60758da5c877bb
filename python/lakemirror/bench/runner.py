"""Runs the contenders side by side on one generated landing zone, times them, measures their
peak memory and verifies every final table against the expected one."""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from lakemirror.bench.contenders import DELTARS, PHASES_FILE, PREPARATIONS, skip_reason
from lakemirror.bench.generator import GeneratedTable, generate_zone
from lakemirror.bench.key_buckets import (
    ExpectedTable,
    bucket_count,
    expected_table,
    parquet_batches,
    verify_in_buckets,
)
from lakemirror.bench.rusage import Usage, measure
from lakemirror.bench.spec import BenchSpec
from lakemirror.delta.rows import stream_table

VERIFY_SAMPLE = 1_000  # keys whose values are compared, per key bucket
IDLE_CONTENDERS = ("lakemirror-warm", "lakemirror")  # the idle figure's, by preference


@dataclass(frozen=True)
class ContenderResult:
    """One contender's run: wall time, change rows applied per second, peak RSS, verdict, and
    for lakemirror's, where the time went (bench/phases.py). Under a memory limit, whether it
    was stopped for exceeding it (then its seconds and peak are until it was stopped)."""

    name: str
    seconds: float | None = None
    rows_per_second: float | None = None
    peak_rss_mb: float | None = None
    verified: bool | None = None
    message: str = ""
    phases: dict[str, float] | None = None
    out_of_memory: bool = False
    memory_limit_gb: float | None = None


@dataclass(frozen=True)
class BenchResult:
    spec: BenchSpec
    change_rows: int
    contenders: tuple[ContenderResult, ...]
    final_rows: Mapping[str, int] = field(default_factory=dict)  # rows of each final table
    memory_limit_gb: float | None = None  # per contender (bench/memory_limit.py)

    def ratio(self, name: str, other: str) -> float | None:
        """Time of `name` over time of `other` (a contender, or BEST_DELTARS) in this run,
        when both ran and were verified."""
        times = {result.name: result.seconds for result in self.contenders if result.verified}
        if other == BEST_DELTARS:
            other = self.best_deltars() or other
        first, second = times.get(name), times.get(other)
        return first / second if first and second else None

    def best_deltars(self) -> str | None:
        """The faster of the verified delta-rs contenders of this run."""
        ran = [result for result in self.contenders
               if result.name in DELTARS and result.verified and result.seconds]
        return min(ran, key=lambda result: result.seconds or 0.0).name if ran else None


BEST_DELTARS = "best delta-rs"


def run_bench(spec: BenchSpec, directory: Path, contenders: Sequence[str],
              progress: Callable[[str], None],
              memory_limit_gb: float | None = None) -> BenchResult:
    """Generate the zone of `spec` under `directory`, then run each contender on a copy of it,
    each stopped and reported out of memory above `memory_limit_gb`. A contender's output and
    zone copy are removed once it is verified (its logs stay), but for the one the idle figure
    runs again (`IDLE_CONTENDERS`)."""
    shutil.rmtree(directory, ignore_errors=True)
    template = directory / "zone"
    progress(f"generate {spec.tables} table(s) of {spec.table_rows:,} rows and "
             f"{spec.files} x {spec.changes_per_file:,} changes (seed {spec.seed})")
    tables = generate_zone(template, spec)
    expected = {}
    for table in tables:
        count = bucket_count(table.change_rows)
        progress(f"{_name(table)}: expected state in {count} key bucket(s)")
        expected[_name(table)] = expected_table(table.files, directory / "expected" / table.name,
                                                count, VERIFY_SAMPLE)
    change_rows = sum(table.change_rows for table in tables)
    results = []
    for name in contenders:
        reason = skip_reason(name)
        if reason:
            progress(f"{name}: skipped, {reason}")
            results.append(ContenderResult(name, message=f"skipped: {reason}"))
            continue
        progress(f"{name}: running")
        results.append(_run_contender(name, template / "LandingZone", workdir(directory, name),
                                      expected, change_rows, memory_limit_gb))
        if not (results[-1].verified and name in IDLE_CONTENDERS):
            _remove_output(workdir(directory, name))
        seconds = results[-1].seconds
        progress(f"{name}: {'' if seconds is None else f'{seconds:.2f} s, '}{results[-1].message}")
    idle = idle_contender(results)
    for result in results:
        if result.name != idle:
            _remove_output(workdir(directory, result.name))
    shutil.rmtree(directory / "expected")
    return BenchResult(spec, change_rows, tuple(results),
                       {name: table.rows for name, table in expected.items()}, memory_limit_gb)


def idle_contender(results: Iterable[ContenderResult]) -> str | None:
    """The contender the idle figure runs again: the first of `IDLE_CONTENDERS` verified."""
    verified = {result.name for result in results if result.verified}
    return next((name for name in IDLE_CONTENDERS if name in verified), None)


def _name(table: GeneratedTable) -> str:
    return f"dbo.{table.name.lower()}"


def workdir(directory: Path, name: str) -> Path:
    """Where contender `name` of the run in `directory` works: its zone is `LandingZone/`, its
    output `out/`."""
    return directory / name


def _remove_output(workdir: Path) -> None:
    """Free a contender's disk: its output and zone copy go, its logs stay."""
    for folder in ("out", "LandingZone"):
        shutil.rmtree(workdir / folder, ignore_errors=True)


def _run_contender(name: str, zone: Path, workdir: Path, expected: dict[str, ExpectedTable],
                   change_rows: int, memory_limit_gb: float | None) -> ContenderResult:
    link_tree(zone, workdir / "LandingZone")
    if name in PREPARATIONS:
        prepared = workdir / "prepare"
        prepared.mkdir()
        usage, output = _measure([sys.executable, "-m", "lakemirror.bench.contenders",
                                  "--prepare", name, str(workdir / "LandingZone"),
                                  str(workdir / "out")], prepared, memory_limit_gb)
        if output is None:
            return ContenderResult(name, verified=False, message=_failure(
                "preparation ", usage, prepared, memory_limit_gb),
                out_of_memory=usage.out_of_memory, memory_limit_gb=memory_limit_gb)
        shutil.rmtree(workdir / "LandingZone")
        link_tree(zone, workdir / "LandingZone")
    usage, output = _measure([sys.executable, "-m", "lakemirror.bench.contenders", name,
                              str(workdir / "LandingZone"), str(workdir / "out")], workdir,
                             memory_limit_gb)
    seconds, peak_rss_mb = usage.seconds, usage.peak_rss_mb
    if output is None:
        return ContenderResult(name, seconds, None, peak_rss_mb, False,
                               _failure("", usage, workdir, memory_limit_gb),
                               out_of_memory=usage.out_of_memory,
                               memory_limit_gb=memory_limit_gb)
    problems = []
    for table, path in json.loads(output).items():
        verification = verify_in_buckets(expected[table], final_table_stream(Path(path)))
        if not verification.ok:
            problems.append(f"{table}: {verification.message}")
    phases = workdir / "out" / PHASES_FILE
    return ContenderResult(name, seconds, change_rows / seconds, peak_rss_mb, not problems,
                           "; ".join(problems) or "verified",
                           json.loads(phases.read_text()) if phases.is_file() else None,
                           memory_limit_gb=memory_limit_gb)


def link_tree(source: Path, target: Path) -> None:
    """A copy of the folder `source` at `target` whose files are hard links to the source's
    (a copy where links fail, e.g. across devices): no contender writes into a zone file.
    lakemirror's landing door only reads them, moves them (a rename, which leaves the other
    name's file alone; it stamps the time only on a file with a single link) and writes new
    files (control files: a new `.partial` renamed into place); delta-rs and the floor only
    read them."""
    shutil.copytree(source, target, copy_function=_link_or_copy)


def _link_or_copy(source: str, target: str) -> None:
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def _measure(command: list[str], workdir: Path,
             memory_limit_gb: float | None) -> tuple[Usage, str | None]:
    """Run `command` under the limit; its usage and its stdout (None if it failed)."""
    stdout, stderr = workdir / "stdout.log", workdir / "stderr.log"
    with stdout.open("w") as out, stderr.open("w") as err:
        usage = measure(command, workdir / "usage.json", stdout=out, stderr=err,
                        memory_limit_gb=memory_limit_gb)
    return usage, stdout.read_text() if usage.exit_code == 0 else None


def _failure(step: str, usage: Usage, workdir: Path, memory_limit_gb: float | None) -> str:
    """Why a contender's run (`step` "") or its preparation ("preparation ") gave no output."""
    if usage.out_of_memory:
        return f"{step}out of memory (limit {memory_limit_gb:g} GB)"
    return f"{step}failed; see {workdir / 'stderr.log'}"


def final_table_stream(path: Path) -> pa.RecordBatchReader:
    """A contender's final table, a Parquet file or a Delta table, read as a stream of batches
    (delta-rs's SQL engine applies deletion vectors)."""
    if path.suffix == ".parquet":
        return pa.RecordBatchReader.from_batches(pq.read_schema(path), parquet_batches(path))
    return stream_table(path)
