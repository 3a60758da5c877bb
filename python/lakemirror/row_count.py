"""Rows of a mirrored Delta table, also when delta-rs cannot read its data."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import DeltaTable
from deltalake.exceptions import DeltaProtocolError

DELETED_ROWS = "deletionVector.cardinality"


def table_row_count(path: Path) -> int | None:
    """Row count of the Delta table at `path`; None when it is not a Delta table, or when its
    reader features (deletion vectors, column mapping...) keep delta-rs from reading it and its
    log lacks per-file row counts."""
    if not DeltaTable.is_deltatable(str(path)):
        return None
    table = DeltaTable(str(path))
    try:
        return table.to_pyarrow_dataset().count_rows()
    except DeltaProtocolError:
        pass
    files = pa.table(table.get_add_actions(flatten=True))
    records = files.column("num_records")
    if records.null_count:
        return None
    deleted = (pc.sum(files.column(DELETED_ROWS)).as_py() or 0
               if DELETED_ROWS in files.column_names else 0)
    return int(pc.sum(records).as_py() or 0) - int(deleted)
