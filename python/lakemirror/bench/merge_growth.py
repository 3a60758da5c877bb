"""The MERGE at scale (`lakemirror bench --merge-growth ROWS,...`): with deletion vectors a
MERGE writes the rows it changes, so its cost should follow the changes, not the table. For
each table size, the same number of changes per file: the initial load is mirrored untimed,
then two warm `lakemirror run`s (the project as a user's second run finds it) each apply one
change file, each in a process of its own (its seconds, phases, and peak RSS: its own, and
its engine included, under the bench's --memory-limit if given). Measured with
deletion vectors (the default) and copy-on-write (a reader set that cannot read them); each
size is measured in a worker process of its own, `python -m lakemirror.bench.merge_growth DIR
REQUEST`, which writes its result to DIR/result.json.

The mirrored table is verified against the reference: in full up to FULL_VERIFY_ROWS rows;
above, its row count and a sample of keys (the reference of a whole large table does not fit
in memory), which the report says."""

from __future__ import annotations

import dataclasses
import json
import shutil
import statistics
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lakemirror.bench.columns import KEY
from lakemirror.bench.contenders import private_project
from lakemirror.bench.generator import GeneratedTable, generate_zone
from lakemirror.bench.reference_state import final_state, last_change_per_key, read_changes
from lakemirror.bench.rusage import measure
from lakemirror.bench.spec import BenchSpec
from lakemirror.bench.verification import Verification, verify
from lakemirror.contract import DELETE, ROW_MARKER

FULL_VERIFY_ROWS = 10_000_000
VERIFY_SAMPLE = 1_000
CHANGE_FILES = 2  # each applied by a timed run
RESULT_FILE = "result.json"


@dataclass(frozen=True)
class TimedRun:
    """One warm `lakemirror run` applying one change file, in a process of its own."""

    seconds: float  # the process's wall time
    peak_rss_mb: float  # the run's processes, its engine included (bench/rusage.py)
    phases: dict[str, float]  # bench/phases.py


@dataclass(frozen=True)
class SizeRuns:
    """One table size in one storage mode: its initial load and its timed runs."""

    table_rows: int
    changes_per_file: int
    readers: tuple[str, ...]  # the mirror models' reader set; () is lakemirror's default
    table_features: tuple[str, ...]  # the mirrored table's protocol lists after the runs
    initial_load_seconds: float
    runs: tuple[TimedRun, ...]
    verified: bool
    verification: str
    verified_in_full: bool  # else: the row count and a sample of keys

    @property
    def median_seconds(self) -> float:
        return statistics.median(run.seconds for run in self.runs)

    @property
    def median_merge(self) -> float:
        return statistics.median(run.phases["merge"] for run in self.runs)

    def median_phases(self) -> dict[str, float]:
        return {phase: round(statistics.median(run.phases[phase] for run in self.runs), 4)
                for phase in self.runs[0].phases}

    @property
    def mode(self) -> str:
        return f"copy-on-write ({', '.join(self.readers)})" if self.readers else \
            "deletion vectors"


@dataclass(frozen=True)
class MergeGrowth:
    changes_per_file: int
    sizes: tuple[SizeRuns, ...]  # by mode, then by table size, smallest first

    def growth(self) -> list[dict[str, Any]]:
        """Each size's rows, run seconds and merge seconds over its mode's smallest size's."""
        ratios = []
        for measured in self.sizes:
            smallest = next(size for size in self.sizes if size.readers == measured.readers)
            ratios.append({
                "mode": measured.mode, "table_rows": measured.table_rows,
                "rows": measured.table_rows / smallest.table_rows,
                "seconds": measured.median_seconds / smallest.median_seconds,
                "merge": (measured.median_merge / smallest.median_merge
                          if smallest.median_merge else None)})
        return ratios

    def as_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "growth": self.growth(),
                "medians": [{"mode": size.mode, "table_rows": size.table_rows,
                             "seconds": size.median_seconds, "merge": size.median_merge,
                             "phases": size.median_phases()} for size in self.sizes]}

    def text(self) -> str:
        lines = [f"merge growth: {CHANGE_FILES} change files of {self.changes_per_file:,} "
                 "changes, each applied by a warm `lakemirror run` (medians; noisy on a shared "
                 "machine)"]
        for size, growth in zip(self.sizes, self.growth(), strict=True):
            runs = ", ".join(f"{run.seconds:.2f}" for run in size.runs)
            merge = f"{growth['merge']:.1f}x" if growth["merge"] is not None else "-"
            phases = ", ".join(f"{phase} {seconds:.2f}"
                               for phase, seconds in size.median_phases().items())
            rss = max(run.peak_rss_mb for run in size.runs)
            how = "in full" if size.verified_in_full else "by row count and sampled keys"
            check = f"{'verified' if size.verified else 'NOT verified'} {how}"
            lines.append(
                f"  {size.mode}, {size.table_rows:,} rows ({growth['rows']:g}x rows: merge "
                f"{merge}, run {growth['seconds']:.1f}x): run {size.median_seconds:.2f} s "
                f"({runs}), merge {size.median_merge:.2f} s, peak RSS {rss:,.0f} MB "
                f"(its engine included); "
                f"{check}: {size.verification}")
            lines.append(f"    phases (s): {phases}")
        return "\n".join(lines)


def measure_merge_growth(directory: Path, spec: BenchSpec, sizes: Sequence[int], changes: int,
                         modes: Sequence[tuple[str, ...]], progress: Callable[[str], None],
                         full_verify_rows: int | None = None,
                         memory_limit_gb: float | None = None) -> MergeGrowth:
    """Each of `sizes` (table rows) with `changes` per file and `spec`'s seed, op mix and
    repeats, mirrored once per reader set of `modes` (() for deletion vectors), each size in a
    worker process; verified in full up to `full_verify_rows` [FULL_VERIFY_ROWS]; each run
    stopped above `memory_limit_gb` (None: no limit)."""
    shutil.rmtree(directory, ignore_errors=True)
    measured: list[SizeRuns] = []
    for rows in sizes:
        sized = dataclasses.replace(spec, tables=1, table_rows=rows, files=CHANGE_FILES,
                                    changes_per_file=changes)
        request = {"spec": spec_fields(sized), "modes": [list(readers) for readers in modes],
                   "full_verify_rows": full_verify_rows or FULL_VERIFY_ROWS,
                   "memory_limit_gb": memory_limit_gb}
        found = run_worker("lakemirror.bench.merge_growth", directory / f"rows-{rows}",
                           request, f"merge growth at {rows:,} rows", progress)
        measured.extend(_size_runs(size) for size in found)
    by_mode = sorted(measured, key=lambda size: (modes.index(size.readers), size.table_rows))
    return MergeGrowth(changes, tuple(by_mode))


def spec_fields(spec: BenchSpec) -> dict[str, Any]:
    """`spec` as JSON values, for a worker's request (`BenchSpec(**fields)` again)."""
    fields = {field.name: getattr(spec, field.name) for field in dataclasses.fields(spec)}
    return {**fields, "op_mix": dict(spec.op_mix)}


def run_worker(module: str, workdir: Path, request: dict[str, Any], what: str,
               progress: Callable[[str], None]) -> Any:
    """`python -m MODULE WORKDIR REQUEST` (a figure's worker for one size), its stderr lines
    passed to `progress`: what it wrote to WORKDIR/result.json; raises if it failed."""
    worker = subprocess.Popen([sys.executable, "-m", module, str(workdir), json.dumps(request)],
                              stderr=subprocess.PIPE, text=True)
    last = ""
    for line in worker.stderr or ():
        last = line.rstrip()
        progress(last)
    if worker.wait() != 0:
        raise RuntimeError(f"{what} failed: {last}")
    return json.loads((workdir / RESULT_FILE).read_text())


def _size_runs(found: dict[str, Any]) -> SizeRuns:
    return SizeRuns(**{**found, "readers": tuple(found["readers"]),
                       "table_features": tuple(found["table_features"]),
                       "runs": tuple(TimedRun(**run) for run in found["runs"])})


def measure_size(directory: Path, spec: BenchSpec, modes: Sequence[tuple[str, ...]],
                 full_verify_rows: int, memory_limit_gb: float | None) -> list[SizeRuns]:
    """The worker: generate `spec`'s zone, then mirror it once per mode (see the module)."""
    directory.mkdir(parents=True)
    worker_progress(f"merge growth: generating {spec.table_rows:,} rows and {spec.files} "
                    f"files of {spec.changes_per_file:,} changes")
    [table] = generate_zone(directory / "zone", spec)
    return [_mirror_changes(directory / ("-".join(readers) or "deletion-vectors"), table,
                            readers, spec.table_rows <= full_verify_rows, memory_limit_gb)
            for readers in modes]


def _mirror_changes(workdir: Path, table: GeneratedTable, readers: tuple[str, ...],
                    in_full: bool, memory_limit_gb: float | None) -> SizeRuns:
    """The initial load, then each change file landed and applied by its own timed run."""
    from deltalake import DeltaTable

    from lakemirror.delta.listed_features import listed_features

    rows = pq.ParquetFile(table.files[0]).metadata.num_rows
    changes_per_file = pq.ParquetFile(table.files[1]).metadata.num_rows
    mode = f"merge growth: {rows:,} rows, {'-'.join(readers) or 'deletion vectors'}"
    initial, runs, mirrored = mirror_file_by_file(workdir, table, readers, memory_limit_gb,
                                                  mode, worker_progress)
    check = verify_mirrored(table.files, mirrored, in_full=in_full)
    return SizeRuns(rows, changes_per_file, readers,
                    tuple(listed_features(DeltaTable(str(mirrored)))), initial.seconds,
                    tuple(runs), check.ok, check.message, in_full)


def mirror_file_by_file(workdir: Path, table: GeneratedTable, readers: tuple[str, ...],
                        memory_limit_gb: float | None, label: str,
                        progress: Callable[[str], None], *,
                        models: Mapping[str, str] | None = None,
                        after_run: Callable[[TimedRun], None] | None = None
                        ) -> tuple[TimedRun, list[TimedRun], Path]:
    """`table`'s zone linked into `workdir`, its initial load mirrored by a warm `lakemirror
    run` (the project, with the user's `models`, and the warehouse in workdir/out), then each
    change file landed and applied by a run of its own, `after_run` called after each: the
    initial run, the change runs and the mirrored table's path."""
    from lakemirror.bench.runner import link_tree

    zone = workdir / "LandingZone"
    link_tree(table.folder.parent, zone)
    pending = workdir / "pending"
    pending.mkdir()
    changes = [zone / table.name / path.name for path in table.files[1:]]
    for path in changes:
        path.rename(pending / path.name)
    private_project(workdir / "out" / "project", readers=readers, models=models)
    progress(f"{label}: initial load")
    initial, mirrored = _warm_run(workdir, zone, "initial", memory_limit_gb)
    runs = []
    for number, path in enumerate(changes, start=1):
        (pending / path.name).rename(path)
        run, mirrored = _warm_run(workdir, zone, f"change-{number}", memory_limit_gb)
        runs.append(run)
        if after_run is not None:
            after_run(run)
        progress(f"{label}: change file {number} in {run.seconds:.2f} s, merge "
                 f"{run.phases['merge']:.2f} s")
    return initial, runs, mirrored


def _warm_run(workdir: Path, zone: Path, name: str,
              memory_limit_gb: float | None) -> tuple[TimedRun, Path]:
    """`lakemirror run` of the zone with the project in workdir/out (the bench's
    lakemirror-warm contender); its measures (its engine's memory included) and the
    mirrored table's path."""
    from lakemirror.bench.contenders import PHASES_FILE

    logs = workdir / name
    logs.mkdir()
    with (logs / "stdout.log").open("w") as out, (logs / "stderr.log").open("w") as err:
        usage = measure([sys.executable, "-m", "lakemirror.bench.contenders", "lakemirror-warm",
                         str(zone), str(workdir / "out")], logs / "usage.json",
                        stdout=out, stderr=err,
                        memory_limit_gb=memory_limit_gb)
    if usage.exit_code != 0:
        how = (f"out of memory (limit {memory_limit_gb:g} GB)" if usage.out_of_memory
               else f"failed; see {logs / 'stderr.log'}")
        raise RuntimeError(f"lakemirror run ({name}) {how}")
    [mirrored] = json.loads((logs / "stdout.log").read_text()).values()
    phases = json.loads((workdir / "out" / PHASES_FILE).read_text())
    return (TimedRun(usage.seconds, usage.peak_rss_mb, phases),
            Path(mirrored))


def verify_mirrored(files: Sequence[Path], mirrored: Path, *, in_full: bool,
                    sample: int = VERIFY_SAMPLE) -> Verification:
    """The mirrored table against the reference of `files` (the initial load first): in full
    (every key, the values of `sample` keys), or its row count and `sample` keys' rows."""
    from lakemirror.delta.rows import read_table

    changes = read_changes(files[1:])
    if in_full:
        return verify(final_state(read_changes(files)), read_table(mirrored), sample,
                      changed_keys=changes[KEY].combine_chunks())
    return _verify_sampled(files[0], changes, mirrored, sample)


def _verify_sampled(initial: Path, changes: pa.Table, mirrored: Path,
                    sample: int) -> Verification:
    """Row count (the initial load's distinct keys, less those changed, plus the changed ones
    alive at the end) and the rows of `sample` keys, half of them changed, with only the
    initial load's key column in memory."""
    from lakemirror.delta.rows import query_table, table_row_count

    last = last_change_per_key(changes)
    initial_keys = pq.read_table(initial, columns=[KEY])[KEY]
    expected_rows = (len(initial_keys)
                     - pc.sum(pc.is_in(initial_keys, value_set=last[KEY])).as_py()
                     + pc.sum(pc.not_equal(last[ROW_MARKER], DELETE)).as_py())
    actual_rows = table_row_count(mirrored)
    if actual_rows != expected_rows:
        return Verification(False, f"expected {expected_rows} rows, got {actual_rows}")
    rng = np.random.default_rng(7)
    changed, kept = last[KEY].to_numpy(), initial_keys.to_numpy()
    picked = pa.array(np.unique(np.concatenate([
        rng.choice(changed, min(sample // 2, len(changed)), replace=False),
        rng.choice(kept, min(sample - sample // 2, len(kept)), replace=False)])))
    picked_rows = pq.read_table(initial, filters=pc.field(KEY).isin(picked))
    expected = final_state(pa.concat_tables([
        picked_rows, changes.filter(pc.is_in(changes[KEY], value_set=picked))]))
    listed = ", ".join(picked.cast(pa.string()).to_pylist())  # integers, not zone text
    actual = query_table(mirrored, f"select * from delta_table where `{KEY}` in ({listed})")
    check = verify(expected, actual, sample=None)
    return Verification(check.ok, f"{actual_rows} rows counted; {len(picked)} sampled keys: "
                                  f"{check.message}", check.compared_rows)


def worker_progress(message: str) -> None:
    """A worker's progress line, which `run_worker` passes on."""
    print(message, file=sys.stderr, flush=True)


def main() -> None:
    directory, request = Path(sys.argv[1]), json.loads(sys.argv[2])
    measured = measure_size(directory, BenchSpec(**request["spec"]),
                            [tuple(readers) for readers in request["modes"]],
                            request["full_verify_rows"], request["memory_limit_gb"])
    (directory / RESULT_FILE).write_text(json.dumps([dataclasses.asdict(size)
                                                     for size in measured]))


if __name__ == "__main__":
    main()
