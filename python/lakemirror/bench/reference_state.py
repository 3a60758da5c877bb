"""The expected final table of a change stream, computed with vectorised Arrow operations.

For a valid stream (no insert of a live key) each key ends as its last change: gone when that
is a delete, else that change's row. This is the benchmark's expected result and its floor.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.parquet as pq

from lakemirror.bench.columns import KEY
from lakemirror.contract import DELETE, ROW_MARKER


def read_changes(files: Sequence[Path]) -> pa.Table:
    """All rows of the change files, in change order (file, then row)."""
    return pa.concat_tables([pq.read_table(path) for path in files])


def last_change_per_key(changes: pa.Table, *, key: str = KEY) -> pa.Table:
    """Each key's last row in `changes` (row order is change order), kept in change order."""
    return changes.take(_last_positions(changes, key))


def final_state(changes: pa.Table, *, key: str = KEY) -> pa.Table:
    """The table after applying `changes` in row order, without `__rowMarker__`."""
    last = _last_positions(changes, key)
    markers = changes[ROW_MARKER].to_numpy()
    return changes.take(last[markers[last] != DELETE]).drop_columns([ROW_MARKER])


def _last_positions(changes: pa.Table, key: str) -> npt.NDArray[np.intp]:
    """Ascending row numbers of each key's last row: its first row when read backwards (one
    stable sort, faster here than a hash group-by)."""
    _, from_end = np.unique(changes[key].to_numpy()[::-1], return_index=True)
    return np.sort(changes.num_rows - 1 - from_end)
