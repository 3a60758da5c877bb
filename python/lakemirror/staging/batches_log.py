"""The log of mirror batches (`_lakemirror_control.mirror_batches`) that the mirror models'
hooks append to. It is created here, by ingest, before dbt starts its threads: models built at
once on a fresh warehouse would otherwise create it at the same moment, and on Spark the loser
fails (DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION) and is built again. The hooks' own
`create table if not exists` then only attaches it."""

from __future__ import annotations

import pyarrow as pa
from deltalake import DeltaTable

from lakemirror.delta.access import is_delta_table, storage_options
from lakemirror.staging.layout import Warehouse
from lakemirror.staging.lock import control_lock

MIRROR_BATCHES = "mirror_batches"
# The columns macros/mirror/_mirror_batches_table.sql declares.
MIRROR_BATCHES_SCHEMA = pa.schema([
    pa.field("relation_name", pa.string()),
    pa.field("invocation_id", pa.string()),
    pa.field("kind", pa.string()),
    pa.field("batch_end", pa.int64()),
    pa.field("recorded_at", pa.string()),
])


def create_mirror_batches(warehouse: Warehouse) -> None:
    """Create the empty log where it is missing (other lakemirror runs wait: control lock)."""
    location = warehouse.control_path(MIRROR_BATCHES)
    if is_delta_table(location):
        return
    with control_lock(warehouse.storage):
        if not is_delta_table(location):
            DeltaTable.create(str(location), MIRROR_BATCHES_SCHEMA,
                              storage_options=storage_options(location))
