"""A downstream model's build (`lakemirror bench --downstream ROWS,...`): a model of the
user's on `lakemirror.mirror_changes(ref(...))` with `incremental_strategy='apply_changes'`
takes only the changes since its last build, so its cost should follow the changes, while the
same SQL rebuilt as a `table` over the whole mirror follows the table. For each table size,
the same number of changes per file: the initial load (the mirror and both models' first
builds) untimed, then ROUNDS rounds, each landing one change file and running a warm
`lakemirror run` (the mirror, then both models), from whose dbt run results each model's
execution time is taken (the mirror model's too). After each round the incremental model's
rows are compared in full with the rebuild's: a difference fails the figure. Each size is
measured in a worker process of its own, `python -m lakemirror.bench.downstream DIR REQUEST`,
which writes its result to DIR/result.json."""

from __future__ import annotations

import dataclasses
import json
import shutil
import statistics
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lakemirror.bench.columns import KEY
from lakemirror.bench.generator import generate_zone
from lakemirror.bench.merge_growth import (
    RESULT_FILE, TimedRun, mirror_file_by_file, run_worker, spec_fields, worker_progress)
from lakemirror.bench.spec import BenchSpec
from lakemirror.bench.verification import verify

ROUNDS = 5  # change files, each applied by a timed run
MIRROR_MODEL = "dbo__bench1"  # the generated table's mirror model
INCREMENTAL, REBUILD = "downstream_incremental", "downstream_rebuild"
SCHEMA = "analytics"  # the profile's schema, where a user's models are written
# A projection, computed columns and a filter: over the changes, and over the whole mirror.
SELECT = """select id, quantity * 2 as doubled, upper(code) as code, price{extra}
from {source}
where quantity % 10 <> 0
"""
MODELS = {
    INCREMENTAL: "{{ config(materialized='incremental', incremental_strategy='apply_changes', "
                 "unique_key='id') }}\n" + SELECT.format(
                     extra=", _lm_change, _lm_position",
                     source=f"{{{{ lakemirror.mirror_changes(ref('{MIRROR_MODEL}')) }}}}"),
    REBUILD: "{{ config(materialized='table') }}\n" + SELECT.format(
        extra="", source=f"{{{{ ref('{MIRROR_MODEL}') }}}}"),
}
COMPARED = (KEY, "doubled", "code", "price")


@dataclass(frozen=True)
class Round:
    """One change file applied by a warm `lakemirror run`: each model's dbt execution time,
    the run's wall time, and the incremental model against the rebuild."""

    incremental_seconds: float
    rebuild_seconds: float
    mirror_seconds: float
    run_seconds: float
    model_rows: int  # the rebuild's rows
    verified: bool
    message: str

    @property
    def ratio(self) -> float:
        """The rebuild's seconds over the incremental build's."""
        return self.rebuild_seconds / self.incremental_seconds


def spread(values: Sequence[float]) -> dict[str, float]:
    """The median of `values`, and their least and largest."""
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


@dataclass(frozen=True)
class SizeBuilds:
    table_rows: int
    changes_per_file: int
    initial_load_seconds: float  # the first run: the mirror's initial load, both first builds
    rounds: tuple[Round, ...]

    def spreads(self) -> dict[str, dict[str, float]]:
        """Median, min and max of each model's seconds, and of the rebuild over incremental."""
        return {name: spread([getattr(built, field) for built in self.rounds])
                for name, field in (("incremental", "incremental_seconds"),
                                    ("rebuild", "rebuild_seconds"),
                                    ("mirror", "mirror_seconds"), ("run", "run_seconds"),
                                    ("ratio", "ratio"))}


@dataclass(frozen=True)
class DownstreamCost:
    changes_per_file: int
    sizes: tuple[SizeBuilds, ...]  # smallest first

    def as_dict(self) -> dict[str, Any]:
        sizes = [{**dataclasses.asdict(size), **size.spreads(),
                  "every_round_verified": all(built.verified for built in size.rounds),
                  "rounds": [{**dataclasses.asdict(built), "ratio": built.ratio}
                             for built in size.rounds]} for size in self.sizes]
        return {"changes_per_file": self.changes_per_file, "sizes": sizes}

    def text(self) -> str:
        lines = [f"downstream: {ROUNDS} change files of {self.changes_per_file:,} changes, each "
                 "applied by a warm `lakemirror run`; each model's dbt execution time, an "
                 "apply_changes model against the same SQL rebuilt (medians, min-max; noisy on "
                 "a shared machine)"]
        for size in self.sizes:
            spreads = size.spreads()
            failed = [built.message for built in size.rounds if not built.verified]
            check = (f"NOT verified: {failed[0]}" if failed else
                     f"incremental = rebuild every round ({size.rounds[-1].message})")
            lines.append(
                f"  {size.table_rows:,} rows: incremental {_spread(spreads['incremental'])}, "
                f"rebuild {_spread(spreads['rebuild'])}, rebuild/incremental "
                f"{_spread(spreads['ratio'], 'x')}; mirror model "
                f"{_spread(spreads['mirror'])}, run {_spread(spreads['run'])}; initial load "
                f"{size.initial_load_seconds:.2f} s; {check}")
        return "\n".join(lines)


def _spread(values: dict[str, float], unit: str = " s") -> str:
    return f"{values['median']:.2f}{unit} ({values['min']:.2f}-{values['max']:.2f})"


def measure_downstream(directory: Path, spec: BenchSpec, sizes: Sequence[int], changes: int,
                       progress: Callable[[str], None],
                       memory_limit_gb: float | None = None) -> DownstreamCost:
    """Each of `sizes` (table rows) with `changes` per file and `spec`'s seed, op mix and
    repeats, each size in a worker process (see the module); each run stopped above
    `memory_limit_gb` (None: no limit)."""
    shutil.rmtree(directory, ignore_errors=True)
    measured = []
    for rows in sizes:
        sized = dataclasses.replace(spec, tables=1, table_rows=rows, files=ROUNDS,
                                    changes_per_file=changes)
        found = run_worker("lakemirror.bench.downstream", directory / f"rows-{rows}",
                           {"spec": spec_fields(sized), "memory_limit_gb": memory_limit_gb},
                           f"downstream at {rows:,} rows", progress)
        measured.append(SizeBuilds(**{**found, "rounds": tuple(
            Round(**built) for built in found["rounds"])}))
    return DownstreamCost(changes, tuple(measured))


def measure_size(directory: Path, spec: BenchSpec, memory_limit_gb: float | None) -> SizeBuilds:
    """The worker: generate `spec`'s zone, mirror it with both models, round by round."""
    directory.mkdir(parents=True)
    label = f"downstream: {spec.table_rows:,} rows"
    worker_progress(f"{label}: generating the table and {spec.files} files of "
                    f"{spec.changes_per_file:,} changes")
    [table] = generate_zone(directory / "zone", spec)
    out = directory / "mirror" / "out"
    rounds: list[Round] = []

    def after_run(run: TimedRun) -> None:
        built = measured_round(out / "project", out / "warehouse", run.seconds)
        rounds.append(built)
        worker_progress(f"{label}, round {len(rounds)}: incremental "
                        f"{built.incremental_seconds:.2f} s, rebuild "
                        f"{built.rebuild_seconds:.2f} s; {built.message}")

    initial, _, _ = mirror_file_by_file(directory / "mirror", table, (), memory_limit_gb, label,
                                        worker_progress, models=MODELS, after_run=after_run)
    return SizeBuilds(spec.table_rows, spec.changes_per_file, initial.seconds, tuple(rounds))


def measured_round(project: Path, warehouse: Path, run_seconds: float) -> Round:
    """The last run's models' execution times (dbt's run results; a model that did not
    succeed raises), and the incremental model compared in full with the rebuild."""
    from lakemirror.reading import read_table

    seconds = model_seconds(project / "target" / "run_results.json")
    rebuilt = read_table(warehouse, f"{SCHEMA}.{REBUILD}", columns=COMPARED)
    incremental = read_table(warehouse, f"{SCHEMA}.{INCREMENTAL}", columns=COMPARED)
    check = verify(rebuilt, incremental, sample=None)
    return Round(seconds[INCREMENTAL], seconds[REBUILD], seconds[MIRROR_MODEL], run_seconds,
                 rebuilt.num_rows, check.ok, check.message)


def model_seconds(run_results: Path) -> dict[str, float]:
    """Each model's execution time in dbt's run results; raises if one did not succeed."""
    results = json.loads(run_results.read_text())["results"]
    models = {result["unique_id"].split(".")[-1]: result for result in results
              if result["unique_id"].startswith("model.")}
    for name in (MIRROR_MODEL, INCREMENTAL, REBUILD):
        if models.get(name, {}).get("status") != "success":
            found = models.get(name, {"status": "not built", "message": ""})
            raise RuntimeError(f"model {name}: {found['status']}: {found.get('message')}")
    return {name: float(result["execution_time"]) for name, result in models.items()}


def main() -> None:
    directory, request = Path(sys.argv[1]), json.loads(sys.argv[2])
    measured = measure_size(directory, BenchSpec(**request["spec"]),
                            request["memory_limit_gb"])
    (directory / RESULT_FILE).write_text(json.dumps(dataclasses.asdict(measured)))


if __name__ == "__main__":
    main()
