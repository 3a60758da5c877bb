"""`lakemirror bench --plot`: time of each contender against table size and against changes per
file (each point a full, verified benchmark run), drawn with matplotlib."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from lakemirror.bench.runner import run_bench
from lakemirror.bench.spec import BenchSpec

# Table sizes around the chosen one (smaller ones run out of live keys for the deletes);
# changes per file up to the chosen number.
SWEEPS = (("table rows", "table_rows", (0.5, 1.0, 1.5)),
          ("changes per file", "changes_per_file", (0.25, 0.5, 1.0)))


def plot_sweep(spec: BenchSpec, contenders: Sequence[str], directory: Path, plot_file: Path,
               progress: Callable[[str], None]) -> dict[str, Any]:
    """Run the sweeps, draw them into `plot_file`; returns the points for the JSON report."""
    sweeps: dict[str, Any] = {}
    for axis, field, factors in SWEEPS:
        points: dict[str, list[tuple[int, float]]] = {}
        for factor in factors:
            size = max(1, int(getattr(spec, field) * factor))
            progress(f"plot: {axis} = {size:,}")
            sized: dict[str, Any] = {field: size}
            result = run_bench(dataclasses.replace(spec, **sized), directory, contenders,
                               progress)
            for contender in result.contenders:
                if contender.seconds is not None and contender.verified:
                    points.setdefault(contender.name, []).append((size, contender.seconds))
        sweeps[axis] = points
    draw_sweep(sweeps, plot_file)
    return sweeps


def draw_sweep(sweeps: dict[str, Any], plot_file: Path) -> None:
    """The sweeps' points, as `plot_sweep` returns them (and the bench's JSON holds them under
    "plot"), drawn into `plot_file`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, len(sweeps), figsize=(10, 4))
    for axis, (label, points) in zip(axes, sweeps.items()):
        for name, values in points.items():
            axis.plot([size for size, _ in values], [seconds for _, seconds in values],
                      marker="o", label=name)
        axis.set_xlabel(label)
        axis.set_ylabel("seconds")
        axis.set_ylim(bottom=0)
        axis.grid(True, alpha=0.3)
        axis.legend()
    figure.tight_layout()
    plot_file.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(plot_file, dpi=80)
    plt.close(figure)
