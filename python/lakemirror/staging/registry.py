"""The relation registry: which Delta tables exist where, so every new engine session can
attach them (the embedded engine's catalog lives in memory, per session)."""

from __future__ import annotations

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from lakemirror.staging.layout import Warehouse

REGISTRY_SCHEMA = pa.schema([
    pa.field("schema_name", pa.string()),
    pa.field("table_name", pa.string()),
    pa.field("location", pa.string()),
])


def register_relations(warehouse: Warehouse, relations: list[tuple[str, str, str]]) -> None:
    """Append (schema, table, location) rows that the registry does not hold yet."""
    path = warehouse.relations_path
    known: set[tuple[str, str]] = set()
    if DeltaTable.is_deltatable(str(path)):
        rows = DeltaTable(str(path)).to_pyarrow_table(columns=["schema_name", "table_name"])
        known = set(zip(rows["schema_name"].to_pylist(), rows["table_name"].to_pylist()))
    new = [row for row in dict.fromkeys(relations) if (row[0], row[1]) not in known]
    if new or not path.exists():
        columns = list(zip(*new)) if new else [[], [], []]
        table = pa.Table.from_arrays([pa.array(column, pa.string()) for column in columns],
                                     schema=REGISTRY_SCHEMA)
        write_deltalake(str(path), table, mode="append")
