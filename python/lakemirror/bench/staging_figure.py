"""Staging: change rows per second of lakemirror's staging phase against a read+write floor.

The floor reads every change file of the zone with pyarrow and writes it back as one Parquet
file (snappy, no dictionary, no statistics: pyarrow as fast as it goes), a row group at a time
(as staging, in bounded memory: read whole, the 100,000,000-row file of `--scale 100` took
23 GB), in a process of its own, timed without its imports as the staging phase is (`python -m
lakemirror.bench.staging_figure ZONE OUT` prints {"seconds", "rows"}). Staging does that and
more: it validates and positions the rows, commits each file and moves it, and generates the
models; its target is within `TARGET` times the floor's time.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

TARGET = 1.5  # staging's seconds over the floor's, at most
STAGING_CONTENDERS = ("lakemirror", "lakemirror-warm")  # whose staging phase is taken, in order


@dataclass(frozen=True)
class StagingFigure:
    contender: str  # whose staging phase
    rows: int  # change rows staged
    staging_seconds: float
    floor_seconds: float
    floor_rows: int  # rows the floor read and wrote

    @property
    def staging_rows_per_second(self) -> float:
        return self.rows / self.staging_seconds

    @property
    def floor_rows_per_second(self) -> float:
        return self.floor_rows / self.floor_seconds

    @property
    def ratio(self) -> float:
        """Staging's time per row over the floor's (1.0: at the floor)."""
        return self.floor_rows_per_second / self.staging_rows_per_second

    def as_dict(self) -> dict[str, object]:
        return {"contender": self.contender, "rows": self.rows,
                "staging_seconds": self.staging_seconds,
                "staging_rows_per_second": self.staging_rows_per_second,
                "floor_seconds": self.floor_seconds, "floor_rows": self.floor_rows,
                "floor_rows_per_second": self.floor_rows_per_second, "ratio": self.ratio,
                "target": TARGET}

    def text(self) -> str:
        return (f"staging: {self.contender} staged {self.rows:,} rows in "
                f"{self.staging_seconds:.2f} s ({self.staging_rows_per_second:,.0f} rows/s); "
                f"pyarrow reading and writing them {self.floor_seconds:.2f} s "
                f"({self.floor_rows_per_second:,.0f} rows/s): {self.ratio:.2f}x the floor "
                f"(target {TARGET:g}x)")


def measure_staging(phases: dict[str, dict[str, float]], rows: int, zone: Path, out: Path,
                    progress: Callable[[str], None]) -> StagingFigure | None:
    """The figure for the first of `STAGING_CONTENDERS` with `phases` (a contender's phases by
    its name) that staged the `rows` of `zone`; None when none did."""
    contender = next((name for name in STAGING_CONTENDERS if name in phases), None)
    if contender is None:
        return None
    progress("staging: reading and writing the change files with pyarrow")
    floor = subprocess.run([sys.executable, "-m", "lakemirror.bench.staging_figure", str(zone),
                            str(out)], check=True, capture_output=True, text=True)
    measured = json.loads(floor.stdout)
    figure = StagingFigure(contender, rows, phases[contender]["staging"],
                           measured["seconds"], measured["rows"])
    progress(figure.text())
    return figure


def read_and_write(zone: Path, out: Path) -> tuple[float, int]:
    """Seconds and rows of reading every change file of `zone` and writing it under `out`."""
    import pyarrow.parquet as pq

    from lakemirror.bench.contenders import table_folders
    from lakemirror.bench.files import change_files

    files = [path for folder in table_folders(zone) for path in change_files(folder)]
    out.mkdir(parents=True, exist_ok=True)
    rows = 0
    started = time.perf_counter()
    for number, path in enumerate(files):
        source = pq.ParquetFile(path)
        with pq.ParquetWriter(out / f"{number}.parquet", source.schema_arrow,
                              compression="snappy", use_dictionary=False,
                              write_statistics=False) as written:
            for group in range(source.num_row_groups):
                written.write_table(source.read_row_group(group))
        rows += source.metadata.num_rows
    return time.perf_counter() - started, rows


def main() -> None:
    seconds, rows = read_and_write(Path(sys.argv[1]), Path(sys.argv[2]))
    print(json.dumps({"seconds": seconds, "rows": rows}))


if __name__ == "__main__":
    main()
