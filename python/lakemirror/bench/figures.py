"""Which figures `lakemirror bench` measures besides the contenders, and at what size."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Figures:
    """Each figure is off at 0 (or with no widths); sizes are those of the full bench, or of
    `smoke()`."""

    freshness: bool = True
    staging: bool = True  # lakemirror's staging phase against pyarrow reading and writing
    idle_runs: int = 3  # cold `lakemirror run --json` with nothing new
    memory_gb: float = 2.0  # one Parquet file staged
    csv_memory_gb: float = 2.0  # one CSV file staged
    wide_columns: tuple[int, ...] = (300, 1_000)  # against a 10-column table
    wide_rows: int = 50_000
    wide_changes: int = 5_000
    storage_files: int = 100  # change files, one run each, then `maintain`
    storage_rows: int = 100_000
    storage_changes: int = 1_000
    object_warehouse: bool = True  # the zone into a warehouse on moto's S3 and on disk
    landing_zone: str | None = None  # an object-store URL to publish the zone under
    merge_growth_rows: tuple[int, ...] = ()  # table sizes; off by default (100M rows: minutes)
    merge_growth_changes: int = 100_000
    merge_growth_copy_on_write: bool = True  # also without deletion vectors
    verify_cost_rows: tuple[int, ...] = ()  # table sizes; off by default (10M rows: minutes)
    verify_cost_changes: int = 100_000
    downstream_rows: tuple[int, ...] = ()  # table sizes; off by default (10M rows: minutes)
    downstream_changes: int = 1_000

    @classmethod
    def smoke(cls) -> Figures:
        """Tiny sizes: each figure is measured, quickly."""
        return cls(idle_runs=1, memory_gb=0.01, csv_memory_gb=0.01, wide_columns=(40,),
                   wide_rows=1_000, wide_changes=100, storage_files=3, storage_rows=2_000,
                   storage_changes=100, merge_growth_changes=100,
                   verify_cost_changes=100, downstream_changes=100)

    @classmethod
    def chosen(cls, *, smoke: bool, **options: Any) -> Figures:
        """The full (or smoke) figures with the options that are not None."""
        base = cls.smoke() if smoke else cls()
        return dataclasses.replace(
            base, **{name: value for name, value in options.items() if value is not None})
