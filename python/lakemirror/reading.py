"""`lakemirror.read_table`: a table of a warehouse (a mirrored table, its history table, one of
your own models) as an Arrow table, read through delta-rs's SQL engine, which applies every
reader feature a mirror uses (deletion vectors, column mapping); delta-rs's pyarrow readers
(`DeltaTable.to_pyarrow_table()`, `to_pandas()`) refuse them."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType

import pyarrow as pa

from lakemirror.codegen.quoting import datafusion_identifier
from lakemirror.delta.access import delta_table
from lakemirror.delta.rows import query_table
from lakemirror.environment import read_storage_settings
from lakemirror.errors import ConfigError
from lakemirror.landing import POSITION
from lakemirror.monitor import require_warehouse
from lakemirror.naming import split_qualified_name
from lakemirror.staging.layout import Warehouse
from lakemirror.staging.warehouse_tables import find_tables, select_table
from lakemirror.storage.location import Location, ObjectLocation
from lakemirror.storage.warehouse import warehouse_location

BOOKKEEPING = (POSITION,)  # a mirrored table's own column: the position of the row's change
READABLE_KINDS = ("mirrored", "model")  # not lakemirror's staging and control tables
_FOLDER_NAME = re.compile(r"[^/\\]+")


def read_table(warehouse: str | Path | ObjectLocation, table: str, *,
               columns: Sequence[str] | None = None, bookkeeping: bool = False,
               storage_options: Mapping[str, str] | None = None) -> pa.Table:
    """All rows of `table` in the warehouse `lakemirror run` mirrors into (a folder or a URL,
    as `--warehouse` takes it), as an Arrow table.

    `table` is `schema.table` (`customers` alone for dbo; case-insensitive): a mirrored table
    such as `dbo.customers`, its history table `dbo.customers__history` (SCD type 2, with its
    `_lm_valid_from`, `_lm_valid_to`, `_lm_is_current` and `_lm_is_deleted` columns), or one of
    your own models, `<schema>.<model>`. `columns` picks and orders columns; without it every
    column but the bookkeeping column `_lm_position` comes back (`bookkeeping=True` keeps it).
    `storage_options` (object_store's names, as delta-rs takes them) replace those
    LAKEMIRROR_STORAGE_OPTIONS gives for a warehouse at a URL. An unknown table or column, or a
    path that is no warehouse, is a ConfigError saying what to pass instead.
    """
    layout = Warehouse(_location(warehouse, storage_options))
    opened = delta_table(_table_location(layout, table))
    present = [field.name for field in opened.schema().fields]
    chosen = ", ".join(map(datafusion_identifier, _chosen(table, present, columns, bookkeeping)))
    return query_table(opened, f"select {chosen} from delta_table")


def _location(warehouse: str | Path | ObjectLocation,
              options: Mapping[str, str] | None) -> Location:
    storage = read_storage_settings()
    if options is not None:
        storage = replace(storage, options=MappingProxyType(dict(options)))
    return warehouse_location(warehouse, storage=storage)


def _table_location(layout: Warehouse, name: str) -> Location:
    """Where the table `name` is: at once when it is at `<schema>/<table>` (one look at its
    log), else found among the warehouse's tables (which also says which exist)."""
    if layout.storage.is_folder("_delta_log"):
        raise ConfigError(f"{layout.root} is a Delta table, not a lakemirror warehouse",
                          table=name, hint="pass the warehouse the table is in (what "
                          "`lakemirror run` took as --warehouse) and the table's name, e.g. "
                          "read_table('warehouse', 'dbo.customers')")
    require_warehouse(layout)
    schema, table = split_qualified_name(name.lower()) if "." in name else ("dbo", name.lower())
    if all(_FOLDER_NAME.fullmatch(part) and part.strip(".") for part in (schema, table)) \
            and not schema.startswith("_"):
        path = layout.mirrored_path(schema, table)
        if layout.storage.is_folder(f"{layout.key(path)}/_delta_log"):
            return path
    readable = [found for found in find_tables(layout) if found.kind in READABLE_KINDS]
    return select_table(readable, name).path


def _chosen(table: str, present: list[str], columns: Sequence[str] | None,
            bookkeeping: bool) -> list[str]:
    """The columns to read: `columns` (each one the table has), else all but bookkeeping."""
    if columns is None:
        return [name for name in present if bookkeeping or name not in BOOKKEEPING]
    wanted = [columns] if isinstance(columns, str) else list(columns)
    unknown = [name for name in wanted if name not in present]
    if unknown or not wanted:
        raise ConfigError(f"no column {', '.join(unknown) or '(none named)'} in the table",
                          table=table, hint=f"name columns from: {', '.join(present)}")
    return list(dict.fromkeys(wanted))
