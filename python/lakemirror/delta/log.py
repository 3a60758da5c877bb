"""The warehouse's Delta tables and what their logs say: protocol, properties, recent history.

Read with the `deltalake` package, so it works whichever engine wrote the tables.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Literal

from lakemirror.delta.access import delta_table
from lakemirror.delta.features import Protocol
from lakemirror.errors import ConfigError
from lakemirror.staging.layout import CONTROL_SCHEMA, STAGING_SCHEMA, Warehouse, staging_table_name
from lakemirror.storage.location import Location

TableKind = Literal["mirrored", "model", "staging", "control"]
KINDS: tuple[TableKind, ...] = ("mirrored", "model", "staging", "control")

ISOLATION_LEVEL = "delta.isolationLevel"
UNSET_ISOLATION_LEVEL = ("not set: the engine's default (Serializable on Delta Lake and the "
                         "embedded engine, WriteSerializable on Databricks)")


@dataclass(frozen=True)
class WarehouseTable:
    """A Delta table in the warehouse. `model` = your own dbt models and seeds."""

    kind: TableKind
    name: str
    path: Location


@dataclass(frozen=True)
class Commit:
    version: int
    time: datetime | None
    operation: str
    metrics: dict[str, Any]


@dataclass(frozen=True)
class TableLog:
    table: WarehouseTable
    protocol: Protocol
    properties: dict[str, str]
    history: tuple[Commit, ...]

    @property
    def isolation_level(self) -> str | None:
        return self.properties.get(ISOLATION_LEVEL)


def find_tables(warehouse: Warehouse) -> list[WarehouseTable]:
    """Every Delta table the layout puts in the warehouse, by kind, then name.

    A `<schema>/<table>` folder is mirrored when it has a staging table, otherwise a model.
    """
    storage, tables = warehouse.storage, []
    for schema, table in _two_levels(warehouse, warehouse.root):
        kind: TableKind = ("mirrored" if _is_delta(warehouse, warehouse.staging_path(schema, table))
                           else "model")
        tables.append(WarehouseTable(kind, f"{schema}.{table}",
                                     warehouse.mirrored_path(schema, table)))
    tables += [WarehouseTable("staging", f"{STAGING_SCHEMA}.{staging_table_name(schema, table)}",
                              warehouse.staging_path(schema, table))
               for schema, table in _two_levels(warehouse, warehouse.staging_root)]
    tables += [WarehouseTable("control", f"{CONTROL_SCHEMA}.{name}", warehouse.control_path(name))
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


def read_log(table: WarehouseTable, *, history: int) -> TableLog:
    """The table's protocol, properties and its last `history` commits, newest first."""
    from deltalake import DeltaTable

    delta = delta_table(table.path)
    protocol = delta.protocol()
    return TableLog(
        table,
        Protocol(protocol.min_reader_version, protocol.min_writer_version,
                 tuple(protocol.reader_features or ()), tuple(protocol.writer_features or ())),
        dict(delta.metadata().configuration),
        tuple(_commit(entry) for entry in delta.history(history)) if history > 0 else (),
    )


def _names_by_priority(table: WarehouseTable) -> tuple[str, str | None, str | None]:
    """Qualified name; bare name of a dbo table; bare name of a staging or control table."""
    qualified = table.name.lower()
    schema, _, bare = qualified.partition(".")
    return (qualified, bare if schema == "dbo" and table.kind in ("mirrored", "model") else None,
            bare if table.kind in ("staging", "control") else None)


def _commit(entry: dict[str, Any]) -> Commit:
    millis = entry.get("timestamp")
    return Commit(int(entry["version"]),
                  datetime.fromtimestamp(millis / 1000, timezone.utc) if millis else None,
                  str(entry.get("operation", "")), dict(entry.get("operationMetrics") or {}))


def _two_levels(warehouse: Warehouse, root: Location) -> list[tuple[str, str]]:
    """(schema, table) of Delta tables at `<root>/<schema>/<table>`; `_` folders skipped."""
    storage = warehouse.storage
    return [(schema, table) for schema in storage.folders(warehouse.key(root))
            if not schema.startswith(("_", "."))
            for table in storage.folders(warehouse.key(root / schema))
            if _is_delta(warehouse, root / schema / table)]


def _is_delta(warehouse: Warehouse, path: Location) -> bool:
    return warehouse.storage.is_folder(f"{warehouse.key(path)}/_delta_log")
