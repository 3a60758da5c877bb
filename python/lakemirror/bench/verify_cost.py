"""Verify's cost (`lakemirror bench --verify-cost ROWS,...`): `lakemirror verify` of a mirrored
table against one full scan of it. For each size, a table of ROWS rows and one change file is
mirrored file by file by warm runs (as `--merge-growth` does), so staging holds the initial load
and one batch of changes; then verify, a full scan of the mirrored table and one of its staging
table are each timed in a process of their own, without their imports, through the bench's
launcher (its peak RSS): `python -m lakemirror.bench.verify_cost verify WAREHOUSE TABLE` or
`... scan TABLE_PATH`, which print JSON. The same again after `lakemirror maintain` (staging
compacted, the mirror's small files rewritten). A scan is one query of delta-rs's SQL engine
(verify's) that reads every column: a count and a sum of each column's values or lengths.
A verify that does not say ok fails the figure."""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from lakemirror.bench.generator import generate_zone
from lakemirror.bench.rusage import Usage, measure
from lakemirror.bench.spec import BenchSpec

if TYPE_CHECKING:
    from deltalake import DeltaTable

TABLE = "dbo.bench1"  # the generated table's mirrored name
Done = TypeVar("Done")
NESTED = ("array", "map", "struct")  # Delta's kinds of nested type


@dataclass(frozen=True)
class Timed:
    """One step in a process of its own: its work's wall and CPU seconds (imports excluded;
    CPU seconds, all its threads', are steadier on a shared machine) and the process's peak
    RSS (bench/rusage.py)."""

    seconds: float
    cpu_seconds: float
    peak_rss_mb: float


@dataclass(frozen=True)
class StageCost:
    """Verify and the scans of one state of the table's staging."""

    stage: str
    mirrored_rows: int
    staged_rows: int
    verify: Timed
    scan: Timed  # of the mirrored table
    staging_scan: Timed
    verdict: str  # verify's line for the table

    @property
    def ratio(self) -> float:
        """Verify's seconds over one full scan's of the mirrored table."""
        return self.verify.seconds / self.scan.seconds

    @property
    def cpu_ratio(self) -> float:
        """The same of their CPU seconds."""
        return self.verify.cpu_seconds / self.scan.cpu_seconds


@dataclass(frozen=True)
class SizeCost:
    table_rows: int
    changes: int  # in the one change file
    maintain_seconds: float  # `lakemirror maintain`, a process (its imports included)
    stages: tuple[StageCost, ...]


@dataclass(frozen=True)
class VerifyCost:
    sizes: tuple[SizeCost, ...]

    def as_dict(self) -> dict[str, Any]:
        sizes = dataclasses.asdict(self)["sizes"]
        for size, measured in zip(sizes, self.sizes, strict=True):
            for stage, cost in zip(size["stages"], measured.stages, strict=True):
                stage["ratio"], stage["cpu_ratio"] = cost.ratio, cost.cpu_ratio
        return {"sizes": sizes}

    def text(self) -> str:
        lines = ["verify cost: `lakemirror verify` against one full scan of the mirrored table "
                 "(delta-rs's SQL engine, every column read), each in a process of its own, "
                 "imports excluded; one run each (noisy on a shared machine)"]
        for size in self.sizes:
            lines.append(f"  {size.table_rows:,} rows and {size.changes:,} changes "
                         f"(maintain {size.maintain_seconds:.2f} s):")
            lines.extend(
                f"    {stage.stage}: verify {_timed(stage.verify)} = {stage.ratio:.2f}x "
                f"(CPU {stage.cpu_ratio:.2f}x) a scan of the mirror's {stage.mirrored_rows:,} "
                f"rows {_timed(stage.scan)}; staging's {stage.staged_rows:,} rows "
                f"{_timed(stage.staging_scan)}; {stage.verdict}"
                for stage in size.stages)
        return "\n".join(lines)


def _timed(timed: Timed) -> str:
    return (f"{timed.seconds:.2f} s (CPU {timed.cpu_seconds:.2f} s, peak RSS "
            f"{timed.peak_rss_mb:,.0f} MB)")


def measure_verify_cost(directory: Path, spec: BenchSpec, sizes: Sequence[int], changes: int,
                        progress: Callable[[str], None],
                        memory_limit_gb: float | None = None) -> VerifyCost:
    """Each of `sizes` (table rows) with one change file of `changes` and `spec`'s seed, op mix
    and repeats (see the module); each mirroring run stopped above `memory_limit_gb`."""
    shutil.rmtree(directory, ignore_errors=True)
    measured = []
    for rows in sizes:
        sized = dataclasses.replace(spec, tables=1, table_rows=rows, files=1,
                                    changes_per_file=changes)
        measured.append(_size_cost(directory / f"rows-{rows}", sized, progress, memory_limit_gb))
    return VerifyCost(tuple(measured))


def _size_cost(workdir: Path, spec: BenchSpec, progress: Callable[[str], None],
               memory_limit_gb: float | None) -> SizeCost:
    from lakemirror.bench.idle_run import lakemirror_command
    from lakemirror.bench.merge_growth import mirror_file_by_file
    from lakemirror.staging.layout import Warehouse

    label = f"verify cost: {spec.table_rows:,} rows"
    progress(f"{label}: generating the table and {spec.changes_per_file:,} changes")
    [table] = generate_zone(workdir / "zone", spec)
    _, _, mirrored = mirror_file_by_file(workdir / "mirror", table, (), memory_limit_gb, label,
                                         progress)
    warehouse = workdir / "mirror" / "out" / "warehouse"
    staging = Path(str(Warehouse(warehouse).staging_path(*TABLE.split("."))))
    measure_stage = partial(_stage_cost, workdir, warehouse=warehouse, mirrored=mirrored,
                            staging=staging, label=label, progress=progress)
    before = measure_stage("before maintain")
    progress(f"{label}: lakemirror maintain")
    maintain = _step(workdir / "maintain",
                     [*lakemirror_command(), "maintain", "--warehouse", str(warehouse)])
    after = measure_stage("after maintain")
    return SizeCost(spec.table_rows, spec.changes_per_file, maintain.seconds, (before, after))


def _stage_cost(workdir: Path, stage: str, *, warehouse: Path, mirrored: Path, staging: Path,
                label: str, progress: Callable[[str], None]) -> StageCost:
    """A scan of the mirror, one of staging, then verify (their logs in workdir/STAGE); a
    verify that is not ok raises."""
    logs = workdir / stage.replace(" ", "-")
    worker = [sys.executable, "-m", "lakemirror.bench.verify_cost"]
    scan, scanned = _worker_step(logs / "scan", [*worker, "scan", str(mirrored)])
    staging_scan, staged = _worker_step(logs / "staging-scan", [*worker, "scan", str(staging)])
    verify, verified = _worker_step(logs / "verify", [*worker, "verify", str(warehouse), TABLE])
    if verified["status"] != "ok":
        raise RuntimeError(f"{label}, {stage}: verify did not say ok: {verified['verdict']}")
    cost = StageCost(stage, scanned["rows"], staged["rows"], verify, scan, staging_scan,
                     verified["verdict"])
    progress(f"{label}, {stage}: verify {verify.seconds:.2f} s, scan {scan.seconds:.2f} s "
             f"({cost.ratio:.2f}x)")
    return cost


def _worker_step(logs: Path, command: list[str]) -> tuple[Timed, dict[str, Any]]:
    """A worker command's measures: the seconds it printed and the launcher's peak RSS;
    and what it printed."""
    usage = _step(logs, command)
    printed = json.loads((logs / "stdout.log").read_text())
    return Timed(printed["seconds"], printed["cpu_seconds"], usage.peak_rss_mb), printed


def _step(logs: Path, command: list[str]) -> Usage:
    """`command` through the launcher (its output in `logs`): its wall seconds and peak RSS."""
    logs.mkdir(parents=True)
    with (logs / "stdout.log").open("w") as out, (logs / "stderr.log").open("w") as err:
        usage = measure(command, logs / "usage.json", stdout=out, stderr=err)
    if usage.exit_code != 0:
        raise RuntimeError(f"{' '.join(command[-3:])} failed; see {logs / 'stderr.log'}")
    return usage


def verify_table(warehouse: Path, name: str) -> dict[str, Any]:
    """`lakemirror verify WAREHOUSE NAME`, in this process: its seconds, status and line."""
    from lakemirror.proof.report import to_text
    from lakemirror.proof.verify import verify

    [proof], clock = _clocked(lambda: verify(warehouse, [name]))
    return {**clock, "status": proof.status, "verdict": to_text([proof])}


def scan_table(path: Path) -> dict[str, Any]:
    """One full scan of the Delta table at `path` by delta-rs's SQL engine: its seconds and
    rows."""
    from lakemirror.delta.access import delta_table
    from lakemirror.delta.rows import query_table

    table = delta_table(path)
    query = scan_query(table)
    scanned, clock = _clocked(lambda: query_table(table, query))
    return {**clock, "rows": scanned["lm_rows"][0].as_py()}


def _clocked(work: Callable[[], Done]) -> tuple[Done, dict[str, float]]:
    """`work`'s result, and its wall and CPU seconds (this process's, all its threads)."""
    started, cpu = time.perf_counter(), time.process_time()
    done = work()
    return done, {"seconds": time.perf_counter() - started,
                  "cpu_seconds": time.process_time() - cpu}


def scan_query(table: DeltaTable) -> str:
    """A query of the table (as `delta_table`) that reads every value: its rows (`lm_rows`)
    and per column an aggregate of it (`lm_read_<i>`)."""
    read = [_read_column(field) + f" as lm_read_{index}"
            for index, field in enumerate(table.schema().fields)]
    return f"select {', '.join(['count(*) as lm_rows', *read])} from delta_table"


def _read_column(field: Any) -> str:
    """An aggregate that reads each value of a Delta column: the sum of a text's (or binary's) lengths, or
    of the values as doubles (a date's as days); a nested column's count."""
    from lakemirror.codegen.quoting import datafusion_identifier as quoted

    kind, column = field.type.type, quoted(field.name)
    if kind in ("string", "binary"):
        return f"sum(length({column}))"
    if kind == "date":
        return f"sum(cast(cast({column} as bigint) as double))"
    if kind in NESTED:
        return f"count({column})"
    return f"sum(cast({column} as double))"


def main() -> None:
    step, *arguments = sys.argv[1:]
    if step == "verify":
        printed = verify_table(Path(arguments[0]), arguments[1])
    else:
        printed = scan_table(Path(arguments[0]))
    print(json.dumps(printed))


if __name__ == "__main__":
    main()
