"""The relation registry: which Delta tables exist where, so every new engine session can
attach them (the embedded engine's catalog lives in memory, per session)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import DeltaTable, write_deltalake

from lakemirror.delta.rows import read_control_table
from lakemirror.staging.layout import Warehouse
from lakemirror.staging.lock import control_lock

REGISTRY_SCHEMA = pa.schema([
    pa.field("schema_name", pa.string()),
    pa.field("table_name", pa.string()),
    pa.field("location", pa.string()),
])


def register_relations(warehouse: Warehouse, relations: list[tuple[str, str, str]]) -> None:
    """Add (schema, table, location) rows the registry lacks; drop rows whose table is gone.
    Other lakemirror runs wait (control lock); rows dbt appends meanwhile survive the rewrite,
    which replaces only the files of the version it read."""
    path = str(warehouse.relations_path)
    with control_lock(warehouse.root):
        if not DeltaTable.is_deltatable(path):
            write_deltalake(path, _rows(relations), mode="append")
            return
        _register(path, relations)


def _register(path: str, relations: list[tuple[str, str, str]]) -> None:
    registry = DeltaTable(path)
    current = read_control_table(registry).select(REGISTRY_SCHEMA.names).cast(REGISTRY_SCHEMA)
    locations = current["location"].to_pylist()
    gone = [location for location in set(locations) if not DeltaTable.is_deltatable(location)]
    if gone:
        current = current.filter(pc.invert(pc.is_in(current["location"], pa.array(gone))))
        write_deltalake(registry, current.cast(REGISTRY_SCHEMA), mode="overwrite")
    known = set(zip(current["schema_name"].to_pylist(), current["table_name"].to_pylist()))
    new = [row for row in dict.fromkeys(relations) if (row[0], row[1]) not in known]
    if new:
        write_deltalake(registry, _rows(new), mode="append")


def _rows(relations: list[tuple[str, str, str]]) -> pa.Table:
    columns = list(zip(*relations)) if relations else [(), (), ()]
    return pa.Table.from_arrays([pa.array(column, pa.string()) for column in columns],
                                schema=REGISTRY_SCHEMA)
