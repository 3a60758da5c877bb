"""The relation registry: which relations exist where, so every new engine session can attach
them (the embedded engine's catalog lives in memory, per session). dbt registers the tables it
builds with their format (delta, parquet, ...) and the views with their SQL (format 'view');
lakemirror ingest registers its Delta staging tables."""

from __future__ import annotations


import pyarrow as pa
import pyarrow.compute as pc
from deltalake import DeltaTable

from lakemirror.delta.access import delta_table, is_delta_table, write_delta
from lakemirror.delta.rows import read_control_table
from lakemirror.staging.layout import Warehouse
from lakemirror.staging.lock import control_lock

REGISTRY_SCHEMA = pa.schema([
    pa.field("schema_name", pa.string()),
    pa.field("table_name", pa.string()),
    pa.field("location", pa.string()),
    pa.field("format", pa.string()),  # null (written before formats were kept) means delta
    pa.field("definition", pa.string()),  # a view's SQL
])


def register_relations(warehouse: Warehouse, relations: list[tuple[str, str, str]]
                       ) -> list[str]:
    """Add (schema, Delta table, location) rows the registry lacks; drop rows whose table is
    gone, and return their locations. Other lakemirror runs wait (control lock); rows dbt
    appends meanwhile survive the rewrite, which replaces only the files of the version it
    read."""
    path = warehouse.relations_path
    with control_lock(warehouse.storage):
        if not is_delta_table(path):
            write_delta(path, _rows(relations), mode="append")
            return []
        return _register(warehouse, relations)


def _register(warehouse: Warehouse, relations: list[tuple[str, str, str]]) -> list[str]:
    path = warehouse.relations_path
    registry = delta_table(path)
    current = _current(registry)
    gone = [location for location, format in
            set(zip(current["location"].to_pylist(), current["format"].to_pylist()))
            if _gone(warehouse, location, format)]
    outdated = registry.schema().to_arrow().names != REGISTRY_SCHEMA.names
    if gone or outdated:
        current = current.filter(pc.invert(pc.is_in(current["location"], pa.array(
            gone, pa.string()))))
        write_delta(registry, current, mode="overwrite", schema_mode="overwrite")
        registry = delta_table(path)
    known = set(zip(current["schema_name"].to_pylist(), current["table_name"].to_pylist()))
    new = [row for row in dict.fromkeys(relations) if (row[0], row[1]) not in known]
    if new:
        write_delta(registry, _rows(new), mode="append")
    return gone


def _current(registry: DeltaTable) -> pa.Table:
    """The registry's rows in today's schema (a registry from before formats were kept lacks
    the last columns)."""
    rows = read_control_table(registry)
    columns = [rows[field.name].cast(field.type) if field.name in rows.column_names
               else pa.nulls(rows.num_rows, field.type) for field in REGISTRY_SCHEMA]
    return pa.Table.from_arrays(columns, schema=REGISTRY_SCHEMA)


def _gone(warehouse: Warehouse, location: str | None, format: str | None) -> bool:
    """Whether a registered table's data is gone (a view has no location: it stays; so does
    a table at a URL outside the warehouse, whose settings lakemirror does not have)."""
    if format == "view" or location is None:
        return False
    where = warehouse.location_of(location)
    if where is None:
        return False
    if format in (None, "delta"):
        return not is_delta_table(where)
    return not warehouse.storage.is_folder(warehouse.key(where))


def _rows(relations: list[tuple[str, str, str]]) -> pa.Table:
    columns = list(zip(*relations)) if relations else [(), (), ()]
    count = len(relations)
    return pa.Table.from_arrays(
        [pa.array(column, pa.string()) for column in columns]
        + [pa.array(["delta"] * count, pa.string()), pa.nulls(count, pa.string())],
        schema=REGISTRY_SCHEMA)
