"""The floor contender: the final table computed in memory with Arrow and written once."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from lakemirror.bench.files import change_files
from lakemirror.bench.reference_state import final_state, read_changes

OUTPUT_NAME = "final.parquet"


def run_floor(zone_table_folder: Path, out_dir: Path) -> Path:
    """Read every change file of the table, apply them in memory, write one Parquet file (no
    Delta log) under `out_dir` and return its path."""
    table = final_state(read_changes(change_files(zone_table_folder)))
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / OUTPUT_NAME
    pq.write_table(table, path)
    return path
