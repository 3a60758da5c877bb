"""`lakemirror bench` from its options to its output."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lakemirror.bench.report import bench_json, bench_text
from lakemirror.bench.runner import run_bench
from lakemirror.bench.spec import BenchSpec
from lakemirror.errors import ConfigError

CONTENDER_NAMES = ("lakemirror", "delta-rs", "floor", "spark")


def run_bench_command(*, rows: int | None, files: int | None, changes: int | None,
                      tables: int | None, op_mix: str | None, repeat_share: float | None,
                      seed: int | None, smoke: bool, contenders: str, freshness: bool,
                      memory_gb: float, plot_file: Path | None, directory: Path,
                      as_json: bool, progress: Callable[[str], None]) -> str:
    """Run the benchmark the options ask for; returns the report (text or JSON)."""
    spec = bench_spec(smoke=smoke, seed=seed, table_rows=rows, files=files,
                      changes_per_file=changes, tables=tables, repeat_share=repeat_share,
                      op_mix=parse_op_mix(op_mix) if op_mix else None)
    names = contender_names(contenders)
    result = run_bench(spec, directory / "contenders", names, progress)
    extra: dict[str, Any] = {}
    text = [bench_text(result)]
    if freshness:
        from lakemirror.bench.freshness import measure_freshness

        fresh = measure_freshness(directory / "freshness", spec, progress)
        extra["freshness"] = dataclasses.asdict(fresh)
        text.append(fresh.text())
    if memory_gb > 0:
        from lakemirror.bench.memory import measure_ingest_memory

        memory = measure_ingest_memory(directory / "memory", memory_gb, progress)
        extra["memory"] = dataclasses.asdict(memory)
        text.append(memory.text())
    if plot_file:
        from lakemirror.bench.plot import plot_sweep

        extra["plot"] = plot_sweep(spec, names, directory / "sweep", plot_file, progress)
        text.append(f"plot: {plot_file}")
    return bench_json(result, extra) if as_json else "\n\n".join(text)


def bench_spec(*, smoke: bool, **options: Any) -> BenchSpec:
    """The default (or smoke) spec with the options given; bad values are a ConfigError."""
    base = BenchSpec.smoke() if smoke else BenchSpec()
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
