"""Rows of a Delta table, also when its features (deletion vectors, column mapping) keep
delta-rs's Arrow reader out: delta-rs's SQL engine then reads it and applies them."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable, QueryBuilder
from deltalake.exceptions import DeltaProtocolError


def table_row_count(path: Path) -> int | None:
    """Row count of the Delta table at `path`, or None when it is not a Delta table."""
    if not DeltaTable.is_deltatable(str(path)):
        return None
    table = DeltaTable(str(path))
    try:
        return int(table.to_pyarrow_dataset().count_rows())
    except DeltaProtocolError:
        counted = _sql(table, "select count(*) as row_count from delta_table")
        return int(counted.column("row_count")[0].as_py())


def read_table(path: Path) -> pa.Table:
    """All rows of the Delta table at `path`."""
    table = DeltaTable(str(path))
    try:
        return table.to_pyarrow_table()
    except DeltaProtocolError:
        return _sql(table, "select * from delta_table")


def _sql(table: DeltaTable, query: str) -> pa.Table:
    return pa.table(QueryBuilder().register("delta_table", table).execute(query).read_all())
