"""The delta-rs contenders: what one would write with the `deltalake` package alone.

File 1 becomes a new Delta table. `delta-rs` then collapses each later file to its last change
per key with Arrow and applies it with one MERGE (delete on marker 2, else update or insert);
`delta-rs-batched`, what a careful user with many pending files writes, collapses all of them
into one MERGE.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq

from lakemirror.bench.columns import KEY
from lakemirror.bench.files import change_files
from lakemirror.bench.reference_state import last_change_per_key, read_changes
from lakemirror.contract import DELETE, ROW_MARKER

if TYPE_CHECKING:
    from deltalake import DeltaTable


def run_deltars(zone_table_folder: Path, table_dir: Path) -> Path:
    """Mirror the table's change files, one MERGE per file, into a Delta table at
    `table_dir` and return it."""
    first, *later = change_files(zone_table_folder)
    target = _initial_table(first, table_dir)
    for path in later:
        _merge(target, last_change_per_key(pq.read_table(path)))
    return table_dir


def run_deltars_batched(zone_table_folder: Path, table_dir: Path) -> Path:
    """Mirror the table's change files, all files after the first in one MERGE, into a Delta
    table at `table_dir` and return it. In a valid stream (no insert of a live key) the last
    change per key in (file, row) order is the key's whole effect."""
    first, *later = change_files(zone_table_folder)
    target = _initial_table(first, table_dir)
    if later:
        _merge(target, last_change_per_key(read_changes(later)))
    return table_dir


def _initial_table(path: Path, table_dir: Path) -> DeltaTable:
    from deltalake import DeltaTable, write_deltalake

    initial = pq.read_table(path)
    if ROW_MARKER in initial.column_names:
        initial = initial.drop_columns([ROW_MARKER])
    write_deltalake(table_dir, initial)
    return DeltaTable(table_dir)


def _merge(target: DeltaTable, source: pa.Table) -> None:
    """One MERGE of changes with one row per key: delete on marker 2, else update or insert."""
    (target.merge(source, predicate=f"t.{KEY} = s.{KEY}", source_alias="s", target_alias="t")
     .when_matched_delete(predicate=f"s.{ROW_MARKER} = {DELETE}")
     .when_matched_update_all(except_cols=[ROW_MARKER])
     .when_not_matched_insert_all(predicate=f"s.{ROW_MARKER} != {DELETE}",
                                  except_cols=[ROW_MARKER])
     .execute())
