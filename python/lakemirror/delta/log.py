"""What a warehouse Delta table's log says: protocol, properties, recent history (the tables
themselves are found by `staging.warehouse_tables`).

Read with the `deltalake` package, so it works whichever engine wrote the tables.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Literal

from lakemirror.delta.access import delta_table
from lakemirror.delta.features import Protocol
from lakemirror.storage.location import Location

if TYPE_CHECKING:
    from deltalake import DeltaTable

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


def read_log(table: WarehouseTable, *, history: int) -> TableLog:
    """The table's protocol, properties and its last `history` commits, newest first."""
    delta = delta_table(table.path)
    return TableLog(
        table,
        _protocol(delta),
        dict(delta.metadata().configuration),
        tuple(_commit(entry) for entry in delta.history(history)) if history > 0 else (),
    )


def table_protocol(path: Location) -> Protocol:
    """The protocol of the Delta table at `path`."""
    return _protocol(delta_table(path))


def _protocol(delta: DeltaTable) -> Protocol:
    protocol = delta.protocol()
    return Protocol(protocol.min_reader_version, protocol.min_writer_version,
                    tuple(protocol.reader_features or ()), tuple(protocol.writer_features or ()))


def _commit(entry: dict[str, Any]) -> Commit:
    millis = entry.get("timestamp")
    return Commit(int(entry["version"]),
                  datetime.fromtimestamp(millis / 1000, timezone.utc) if millis else None,
                  str(entry.get("operation", "")), dict(entry.get("operationMetrics") or {}))
