"""The staging tables of one run, each read once between its commits.

A run's phases all read a table's staging log: the retirement check and the binding (its
incarnation), the ingest (its bookkeeping), the models (its accepted keys), the checks of
what is staged. They share one `StagingTable` per table, so an idle run opens each Delta log
once. Valid only while the run holds the tables' locks: no other process commits to them
meanwhile, and this run's own commits and drops reset what was read."""

from __future__ import annotations

from lakemirror.delta.access import is_delta_table
from lakemirror.staging.ingest import StagingTable
from lakemirror.staging.layout import Warehouse
from lakemirror.staging.lock import HeldLocks


class StagingTables:
    """The staging tables of `warehouse` that one run reads, with the locks it holds on them
    (none for a caller that reads outside a run)."""

    def __init__(self, warehouse: Warehouse, locks: HeldLocks = HeldLocks({})) -> None:
        self.warehouse = warehouse
        self.locks = locks
        self._tables: dict[tuple[str, str], StagingTable] = {}

    def of(self, schema: str, table: str) -> StagingTable:
        """The run's object of the staging table of `schema.table`."""
        key = (schema, table)
        if key not in self._tables:
            self._tables[key] = StagingTable(self.warehouse.staging_path(schema, table))
        return self._tables[key]

    def is_staged(self, schema: str, table: str) -> bool:
        """Whether the table has a staging Delta table (its log is not read for this)."""
        staging = self._tables.get((schema, table))
        return (staging is not None and staging.is_open) or is_delta_table(
            self.warehouse.staging_path(schema, table))

    def forget(self, schema: str, table: str) -> None:
        """The table's staging data moved away (it was dropped): read it afresh if needed."""
        self._tables.pop((schema, table), None)
