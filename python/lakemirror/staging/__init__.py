"""Staging: append-only change logs in Delta, the warehouse layout and the relation registry."""

from typing import TYPE_CHECKING

from lakemirror.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from lakemirror.staging.ingest import (
        IngestResult, StagingTable, Status, ingest_table, move_processed,
    )
    from lakemirror.staging.layout import (
        CONTROL_SCHEMA, STAGING_SCHEMA, Warehouse, staging_table_name,
    )
    from lakemirror.staging.registry import register_relations

__getattr__ = lazy_exports(__name__, {
    "ingest": ("IngestResult", "StagingTable", "Status", "ingest_table", "move_processed"),
    "layout": ("CONTROL_SCHEMA", "STAGING_SCHEMA", "Warehouse", "staging_table_name"),
    "registry": ("register_relations",),
})

__all__ = [
    "CONTROL_SCHEMA", "STAGING_SCHEMA", "IngestResult", "StagingTable", "Status", "Warehouse",
    "ingest_table", "move_processed", "register_relations", "staging_table_name",
]
