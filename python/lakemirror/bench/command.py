"""`lakemirror bench` from its options to its output."""

from __future__ import annotations

import dataclasses
import json
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from lakemirror.bench.failures import bench_failures
from lakemirror.bench.figures import Figures
from lakemirror.bench.report import bench_document, bench_text
from lakemirror.bench.runner import BenchResult, idle_contender, run_bench, workdir
from lakemirror.bench.spec import BenchSpec
from lakemirror.errors import ConfigError

CONTENDER_NAMES = ("lakemirror", "lakemirror-warm", "delta-rs", "delta-rs-batched", "floor",
                   "spark")
Progress = Callable[[str], None]


@dataclass(frozen=True)
class BenchReport:
    """The report the options asked for (text or one JSON document), and its failures
    (bench/failures.py): the command exits 1 when there is any."""

    text: str
    failures: tuple[str, ...]


def run_bench_command(*, rows: int | None, files: int | None, changes: int | None,
                      tables: int | None, op_mix: str | None, repeat_share: float | None,
                      seed: int | None, smoke: bool, contenders: str, freshness: bool,
                      memory_gb: float | None, plot_file: Path | None, directory: Path,
                      as_json: bool, progress: Progress, scale: int = 1,
                      memory_limit_gb: float | None = None, **figures: Any) -> BenchReport:
    """Run the benchmark the options ask for, each contender under `memory_limit_gb`; returns
    the report (text or JSON). `figures` are Figures fields; those not given (or None) take the
    full or smoke defaults, but the CSV file's size follows `memory_gb` when only that is given."""
    if figures.get("csv_memory_gb") is None:
        figures["csv_memory_gb"] = memory_gb
    spec = bench_spec(smoke=smoke, scale=scale, seed=seed, table_rows=rows, files=files,
                      changes_per_file=changes, tables=tables, repeat_share=repeat_share,
                      op_mix=parse_op_mix(op_mix) if op_mix else None)
    chosen = Figures.chosen(smoke=smoke, freshness=freshness, memory_gb=memory_gb, **figures)
    names = contender_names(contenders)
    result = run_bench(spec, directory / "contenders", names, progress, memory_limit_gb)
    extra: dict[str, Any] = {}
    text = [bench_text(result)]
    for name, measure in FIGURES:
        try:
            figure = measure(result, chosen, directory, progress)
        except Exception as error:  # one figure's failure is reported, the others still run
            figure = {"error": f"{type(error).__name__}: {error}"}, f"{name}: failed: {error}"
            progress(figure[1])
        if figure is not None:
            extra[name], line = figure
            text.append(line)
    if plot_file:
        from lakemirror.bench.plot import plot_sweep

        extra["plot"] = plot_sweep(spec, names, directory / "sweep", plot_file, progress)
        text.append(f"plot: {plot_file}")
    document = bench_document(result, extra)
    failures = bench_failures(document)
    if as_json:
        return BenchReport(json.dumps({**document, "failures": failures}, indent=2),
                           tuple(failures))
    if failures:
        text.append("\n".join(["failed:", *failures]))
    return BenchReport("\n\n".join(text), tuple(failures))


Figure = tuple[Any, str] | None  # (JSON value, text) of a figure measured, None when off


def _idle(result: BenchResult, figures: Figures, directory: Path, progress: Progress) -> Figure:
    """After the warm lakemirror contender (else the cold one), when one was verified."""
    from lakemirror.bench.idle_run import measure_idle_run

    name = idle_contender(result.contenders)
    if figures.idle_runs <= 0 or name is None:
        return None
    expected = {table: (result.spec.files + 1, rows) for table, rows in result.final_rows.items()}
    idle = measure_idle_run(name, workdir(directory / "contenders", name), expected,
                            figures.idle_runs, progress)
    return {**dataclasses.asdict(idle), "median": idle.median}, idle.text()


def _landing_zone(result: BenchResult, figures: Figures, directory: Path,
                  progress: Progress) -> Figure:
    """The generated zone published in object storage, listed, read, mirrored and run idle."""
    from lakemirror.bench.zone_figure import measure_zone

    if figures.landing_zone is None:
        return None
    workdir = directory / "landing_zone"
    shutil.rmtree(workdir, ignore_errors=True)
    expected = {table: (result.spec.files + 1, rows) for table, rows in result.final_rows.items()}
    figure = measure_zone(figures.landing_zone, directory / "contenders" / "zone" / "LandingZone",
                          workdir, expected, max(figures.idle_runs, 1), progress)
    return dataclasses.asdict(figure), figure.text()


def _staging(result: BenchResult, figures: Figures, directory: Path,
             progress: Progress) -> Figure:
    """Of the first lakemirror contender verified, against pyarrow on the same zone."""
    from lakemirror.bench.staging_figure import measure_staging

    if not figures.staging:
        return None
    phases = {contender.name: contender.phases for contender in result.contenders
              if contender.verified and contender.phases}
    staging = measure_staging(phases, result.change_rows,
                              directory / "contenders" / "zone" / "LandingZone",
                              directory / "staging", progress)
    return None if staging is None else (staging.as_dict(), staging.text())


def _freshness(result: BenchResult, figures: Figures, directory: Path, progress: Progress,
               readers: tuple[str, ...] = ()) -> Figure:
    from lakemirror.bench.freshness import measure_freshness

    if not figures.freshness:
        return None
    fresh = measure_freshness(directory / _folder("freshness", readers), result.spec,
                              progress, readers=readers)
    return dataclasses.asdict(fresh), fresh.text()


def _folder(figure: str, readers: tuple[str, ...]) -> str:
    """A figure's work folder: its name, then the mirror models' declared readers
    ("freshness-delta-rs-pyarrow")."""
    return "-".join((figure, *readers))


def _memory(result: BenchResult, figures: Figures, directory: Path,
            progress: Progress) -> Figure:
    """Parquet under "memory" (as before), CSV under "memory_csv"; each with its size."""
    from lakemirror.bench.memory import measure_ingest_memory

    if figures.memory_gb <= 0:
        return None
    memory = measure_ingest_memory(directory / "memory", figures.memory_gb, progress)
    return {**dataclasses.asdict(memory), "above_idle_mb": memory.above_idle_mb}, memory.text()


def _csv_memory(result: BenchResult, figures: Figures, directory: Path,
                progress: Progress) -> Figure:
    from lakemirror.bench.memory import measure_ingest_memory

    if figures.csv_memory_gb <= 0:
        return None
    memory = measure_ingest_memory(directory / "memory", figures.csv_memory_gb, progress,
                                   file_format="csv")
    return {**dataclasses.asdict(memory), "above_idle_mb": memory.above_idle_mb}, memory.text()


def _wide(result: BenchResult, figures: Figures, directory: Path, progress: Progress) -> Figure:
    from lakemirror.bench.wide import as_dict, measure_wide_tables

    if not figures.wide_columns:
        return None
    wide = measure_wide_tables(directory / "wide", figures.wide_columns, figures.wide_rows,
                               figures.wide_changes, result.spec.seed, progress)
    return as_dict(wide), wide.text()


def _storage(result: BenchResult, figures: Figures, directory: Path, progress: Progress,
             readers: tuple[str, ...] = ()) -> Figure:
    from lakemirror.bench.storage import measure_storage

    if figures.storage_files <= 0:
        return None
    spec = dataclasses.replace(result.spec, tables=1, table_rows=figures.storage_rows,
                               files=figures.storage_files,
                               changes_per_file=figures.storage_changes)
    storage = measure_storage(directory / _folder("storage", readers), spec, progress,
                              readers=readers)
    return {**dataclasses.asdict(storage), "ratios": storage.ratios()}, storage.text()


def _object_warehouse(result: BenchResult, figures: Figures, directory: Path,
                      progress: Progress) -> Figure:
    from lakemirror.bench.object_warehouse import MISSING, measure_object_warehouse

    if not figures.object_warehouse:
        return None
    measured = measure_object_warehouse(directory / "object-warehouse", result.spec, progress)
    if measured is None:
        progress(MISSING)
        return {"missing": MISSING}, MISSING
    return {**dataclasses.asdict(measured), "ratio": measured.ratio}, measured.text()


def _merge_growth(result: BenchResult, figures: Figures, directory: Path,
                  progress: Progress) -> Figure:
    from lakemirror.bench.merge_growth import measure_merge_growth

    if not figures.merge_growth_rows:
        return None
    growth = measure_merge_growth(directory / "merge-growth", result.spec,
                                  figures.merge_growth_rows, figures.merge_growth_changes,
                                  ((), COPY_ON_WRITE) if figures.merge_growth_copy_on_write
                                  else ((),), progress,
                                  memory_limit_gb=result.memory_limit_gb)
    return growth.as_dict(), growth.text()


def _verify_cost(result: BenchResult, figures: Figures, directory: Path,
                 progress: Progress) -> Figure:
    from lakemirror.bench.verify_cost import measure_verify_cost

    return _by_size(measure_verify_cost, "verify-cost", figures.verify_cost_rows,
                    figures.verify_cost_changes, result, directory, progress)


def _downstream(result: BenchResult, figures: Figures, directory: Path,
                progress: Progress) -> Figure:
    from lakemirror.bench.downstream import measure_downstream

    return _by_size(measure_downstream, "downstream", figures.downstream_rows,
                    figures.downstream_changes, result, directory, progress)


def _by_size(measure: Callable[..., Any], name: str, rows: Sequence[int], changes: int,
             result: BenchResult, directory: Path, progress: Progress) -> Figure:
    """A figure `measure` takes at each table size of `rows` (none without sizes), with
    `changes` per change file, in the folder `name`."""
    if not rows:
        return None
    measured = measure(directory / name, result.spec, rows, changes, progress,
                       memory_limit_gb=result.memory_limit_gb)
    return measured.as_dict(), measured.text()


# New mirrored tables get deletion vectors by default (docs/pages/table-settings.md); the figures
# they change most are also measured copy-on-write, for a reader set that cannot read them.
COPY_ON_WRITE = ("delta-rs-pyarrow",)
FIGURES: tuple[tuple[str, Callable[[BenchResult, Figures, Path, Progress], Figure]], ...] = (
    ("idle_run", _idle), ("staging", _staging), ("landing_zone", _landing_zone),
    ("freshness", _freshness),
    ("freshness_copy_on_write", partial(_freshness, readers=COPY_ON_WRITE)),
    ("memory", _memory), ("memory_csv", _csv_memory), ("wide_tables", _wide),
    ("storage", _storage),
    ("storage_copy_on_write", partial(_storage, readers=COPY_ON_WRITE)),
    ("object_warehouse", _object_warehouse), ("merge_growth", _merge_growth),
    ("verify_cost", _verify_cost), ("downstream", _downstream))


def bench_spec(*, smoke: bool, scale: int = 1, **options: Any) -> BenchSpec:
    """The default (or smoke) spec, its table's rows and changes per file times `scale`, with
    the options given; bad values are a ConfigError."""
    base = BenchSpec.smoke() if smoke else BenchSpec()
    base = dataclasses.replace(base, table_rows=base.table_rows * scale,
                               changes_per_file=base.changes_per_file * scale)
    chosen = {name: value for name, value in options.items() if value is not None}
    try:
        return dataclasses.replace(base, **chosen)
    except ValueError as error:
        raise ConfigError(f"bench: {error}", hint="see lakemirror bench --help") from error


def parse_op_mix(text: str) -> dict[str, float]:
    """'update=0.4,insert=0.2,...' as a mapping; the spec checks names and sums."""
    mix = {}
    for part in text.split(","):
        name, _, share = part.partition("=")
        try:
            mix[name.strip()] = float(share)
        except ValueError as error:
            raise ConfigError(f"bench: --op-mix part '{part}' is not OP=SHARE",
                              hint="e.g. --op-mix update=0.4,insert=0.2,delete=0.2,upsert=0.2"
                              ) from error
    return mix


def contender_names(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in CONTENDER_NAMES]
    if unknown or not names:
        raise ConfigError(f"bench: unknown contender(s) {', '.join(unknown) or '(none given)'}",
                          hint=f"choose from {', '.join(CONTENDER_NAMES)}")
    return names
