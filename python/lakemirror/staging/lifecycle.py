"""Tables whose landing folder was deleted or recreated, and dropping what lakemirror keeps of
them: the mirrored table, its batch bookkeeping, its registry rows and its staging table move
to the warehouse's dropped area."""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass
from typing import Literal

from lakemirror.landing import LandingTable
from lakemirror.landing.discovery import ALL_TABLES
from lakemirror.landing.incarnation import read_mark
from lakemirror.naming import qualified_name
from lakemirror.staging.dropped import DroppedCopy, keep_dropped
from lakemirror.staging.ingest import listed_mark
from lakemirror.staging.layout import Warehouse
from lakemirror.staging.opened import StagingTables
from lakemirror.staging.registry import register_relations

Reason = Literal["deleted", "recreated"]


@dataclass(frozen=True)
class Retirement:
    """A staged table to drop, and why."""

    schema: str
    table: str
    reason: Reason

    @property
    def qualified_name(self) -> str:
        return f"{self.schema}.{self.table}"


def find_retirements(tables: list[LandingTable], warehouse: Warehouse, *,
                     opened: StagingTables | None = None,
                     scope: Container[str] | None = None) -> list[Retirement]:
    """Staged tables (of `scope`, 'schema.table' names, when given) whose folder is gone
    (deleted) or is another incarnation (recreated).

    Only a positive signal retires a table: the zone's listing (`tables`) lacks its folder,
    or the folder's mark says it is another incarnation. A table with a problem (or in a
    schema folder that fails as a whole), or whose mark cannot be read, is kept: its ingest
    fails with the reason, and it goes on once that is fixed. `opened`: the run's staging
    tables."""
    opened = opened or StagingTables(warehouse)
    present = {(table.schema, table.name): table for table in tables}
    retirements = []
    for schema, name in staged_tables(warehouse):
        if scope is not None and qualified_name(schema, name) not in scope:
            continue  # its folder is not even listed
        table = present.get((schema, name)) or present.get((schema, ALL_TABLES))
        if table is None:
            retirements.append(Retirement(schema, name, "deleted"))
        elif table.problem is None and _recreated(table, opened):
            retirements.append(Retirement(schema, name, "recreated"))
    return retirements


def _recreated(table: LandingTable, opened: StagingTables) -> bool:
    try:
        staging = opened.of(table.schema, table.name)
        recorded = staging.incarnation()
        return recorded is not None and \
            read_mark(table, listed_mark(staging, table, table.listing)).recreated(recorded)
    except Exception:  # an unreadable mark or staging log is not a positive signal: the
        return False   # table's ingest fails with the reason


def staged_tables(warehouse: Warehouse) -> list[tuple[str, str]]:
    """(schema, table) of every staging folder, even a half-dropped one."""
    storage, root = warehouse.storage, warehouse.key(warehouse.staging_root)
    return [(schema, table) for schema in storage.folders(root)
            for table in storage.folders(f"{root}/{schema}")]


def drop_table_data(warehouse: Warehouse, retirement: Retirement, *,
                    opened: StagingTables | None = None) -> DroppedCopy:
    """Move the table's data into the warehouse's dropped area (see `staging.dropped`), where
    it is kept for the retention period, and forget its relations (and, in `opened`, what
    the run read of it)."""
    opened = opened or StagingTables(warehouse)
    schema, name = retirement.schema, retirement.table
    incarnation = opened.of(schema, name).incarnation()
    opened.forget(schema, name)
    copy = keep_dropped(warehouse, schema, name, incarnation, retirement.reason)
    register_relations(warehouse, [])  # forgets tables whose folders are gone
    return copy
