"""The Delta tables the warehouse's layout holds (mirrored tables, your own models, staging and
control tables), found by their `_delta_log` folders, and the one a user names."""

from __future__ import annotations

from lakemirror.delta.log import KINDS, TableKind, WarehouseTable
from lakemirror.errors import ConfigError
from lakemirror.naming import qualified_name, split_qualified_name, staging_table_name
from lakemirror.staging.layout import CONTROL_SCHEMA, STAGING_SCHEMA, Warehouse
from lakemirror.storage.location import Location


def find_tables(warehouse: Warehouse) -> list[WarehouseTable]:
    """Every Delta table the layout puts in the warehouse, by kind, then name.

    A `<schema>/<table>` folder is mirrored when it has a staging table, otherwise a model.
    """
    storage, tables = warehouse.storage, []
    for schema, table in _two_levels(warehouse, warehouse.root):
        kind: TableKind = ("mirrored" if _is_delta(warehouse, warehouse.staging_path(schema, table))
                           else "model")
        tables.append(WarehouseTable(kind, qualified_name(schema, table),
                                     warehouse.mirrored_path(schema, table)))
    tables += [WarehouseTable("staging",
                              qualified_name(STAGING_SCHEMA, staging_table_name(schema, table)),
                              warehouse.staging_path(schema, table))
               for schema, table in _two_levels(warehouse, warehouse.staging_root)]
    tables += [WarehouseTable("control", qualified_name(CONTROL_SCHEMA, name),
                              warehouse.control_path(name))
               for name in storage.folders(warehouse.key(warehouse.control_root))
               if _is_delta(warehouse, warehouse.control_path(name))]
    return sorted(tables, key=lambda table: (KINDS.index(table.kind), table.name))


def select_table(tables: list[WarehouseTable], name: str) -> WarehouseTable:
    """The table called `Schema.Table`, `Table` (schema dbo), or a staging or control table's
    name with or without its schema; case-insensitive."""
    wanted = name.lower()
    for priority in range(3):
        found = [table for table in tables if _names_by_priority(table)[priority] == wanted]
        if found:
            return found[0]
    known = ", ".join(table.name for table in tables) or "none (run lakemirror first)"
    raise ConfigError(f"no Delta table {name!r} in the warehouse", table=name,
                      hint=f"pass one of the known tables: {known}")


def _names_by_priority(table: WarehouseTable) -> tuple[str, str | None, str | None]:
    """Qualified name; bare name of a dbo table; bare name of a staging or control table."""
    qualified = table.name.lower()
    schema, bare = split_qualified_name(qualified)
    return (qualified, bare if schema == "dbo" and table.kind in ("mirrored", "model") else None,
            bare if table.kind in ("staging", "control") else None)


def _two_levels(warehouse: Warehouse, root: Location) -> list[tuple[str, str]]:
    """(schema, table) of Delta tables at `<root>/<schema>/<table>`; `_` folders skipped."""
    storage = warehouse.storage
    return [(schema, table) for schema in storage.folders(warehouse.key(root))
            if not schema.startswith(("_", "."))
            for table in storage.folders(warehouse.key(root / schema))
            if _is_delta(warehouse, root / schema / table)]


def _is_delta(warehouse: Warehouse, path: Location) -> bool:
    return warehouse.storage.is_folder(f"{warehouse.key(path)}/_delta_log")
