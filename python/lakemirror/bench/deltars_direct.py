"""The delta-rs contender: what one would write with the `deltalake` package alone.

File 1 becomes a new Delta table; each later file is collapsed to its last change per key with
Arrow and applied with one MERGE (delete on marker 2, else update or insert).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from lakemirror.bench.columns import KEY
from lakemirror.bench.files import change_files
from lakemirror.bench.reference_state import last_change_per_key
from lakemirror.reference import DELETE, ROW_MARKER


def run_deltars(zone_table_folder: Path, table_dir: Path) -> Path:
    """Mirror the table's change files into a Delta table at `table_dir` and return it."""
    from deltalake import DeltaTable, write_deltalake

    first, *later = change_files(zone_table_folder)
    initial = pq.read_table(first)
    if ROW_MARKER in initial.column_names:
        initial = initial.drop_columns([ROW_MARKER])
    write_deltalake(table_dir, initial)
    target = DeltaTable(table_dir)
    for path in later:
        source = last_change_per_key(pq.read_table(path))
        (target.merge(source, predicate=f"t.{KEY} = s.{KEY}", source_alias="s",
                      target_alias="t")
         .when_matched_delete(predicate=f"s.{ROW_MARKER} = {DELETE}")
         .when_matched_update_all(except_cols=[ROW_MARKER])
         .when_not_matched_insert_all(predicate=f"s.{ROW_MARKER} != {DELETE}",
                                      except_cols=[ROW_MARKER])
         .execute())
    return table_dir
