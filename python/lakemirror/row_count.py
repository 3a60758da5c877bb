"""Rows of a mirrored Delta table, also when its features keep delta-rs's Arrow reader out."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable, QueryBuilder
from deltalake.exceptions import DeltaProtocolError


def table_row_count(path: Path) -> int | None:
    """Row count of the Delta table at `path`, or None when it is not a Delta table. Tables
    with deletion vectors or column mapping are counted by delta-rs's SQL engine, which
    applies them (its Arrow dataset refuses such tables)."""
    if not DeltaTable.is_deltatable(str(path)):
        return None
    table = DeltaTable(str(path))
    try:
        return int(table.to_pyarrow_dataset().count_rows())
    except DeltaProtocolError:
        counted = QueryBuilder().register("mirrored", table).execute(
            "select count(*) as row_count from mirrored")
        return int(pa.table(counted.read_all()).column("row_count")[0].as_py())
