"""The warehouse's dropped area: what lakemirror keeps of a dropped table until its retention
period has passed, so that a drop by mistake (a deleted folder, a wrong landing zone) costs no
data.

A dropped table's staging, mirrored and history tables move, with its applied batches, to
`<warehouse>/_lakemirror/dropped/<schema>/<table>/<incarnation>/`, next to `dropped.json`
(the table, its incarnation id, when and why). `restore_copy` moves them back.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq

from lakemirror.conflicts import retry_on_conflict
from lakemirror.delta.access import delta_table, is_delta_table, write_delta
from lakemirror.delta.rows import query_table
from lakemirror.staging.layout import Warehouse
from lakemirror.storage.location import Location

RECORD = "dropped.json"
BATCHES = "batches.parquet"
HISTORY_SUFFIX = "__history"


@dataclass(frozen=True)
class DroppedCopy:
    """One dropped table kept in the dropped area."""

    schema: str
    table: str
    incarnation: str
    dropped_at: float  # seconds since epoch
    reason: str
    path: Location

    @property
    def qualified_name(self) -> str:
        return f"{self.schema}.{self.table}"

    @property
    def dropped_on(self) -> str:
        return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(self.dropped_at))


def _parts(warehouse: Warehouse, schema: str, table: str, base: Location) -> dict[str, str]:
    """The storage keys of a table's data, live (`base` = the warehouse root) or in a copy."""
    if base == warehouse.root:
        return {"staging": warehouse.key(warehouse.staging_path(schema, table)),
                "mirrored": warehouse.key(warehouse.mirrored_path(schema, table)),
                "history": warehouse.key(warehouse.mirrored_path(schema, table + HISTORY_SUFFIX))}
    return {name: f"{warehouse.key(base)}/{name}" for name in ("staging", "mirrored", "history")}


def keep_dropped(warehouse: Warehouse, schema: str, table: str, incarnation: str | None,
                 reason: str) -> DroppedCopy:
    """Move the table's data into the dropped area. Staging moves last: while it is in place
    the table counts as staged, so a crash midway only means the next run drops it again,
    moving what is left (a copy of the same incarnation is replaced by the newer one)."""
    copy = DroppedCopy(schema, table, incarnation or "unknown", time.time(), reason,
                       warehouse.dropped_root / schema / table / (incarnation or "unknown"))
    storage, key = warehouse.storage, warehouse.key(copy.path)
    if storage.exists(f"{key}/staging"):  # an earlier drop's, finished: this one is newer
        storage.remove(key)
    storage.write_text(f"{key}/{RECORD}", json.dumps({
        "schema": schema, "table": table, "incarnation": copy.incarnation,
        "dropped_at": copy.dropped_at, "reason": reason}, indent=2))
    live, kept = _parts(warehouse, schema, table, warehouse.root), _parts(
        warehouse, schema, table, copy.path)
    history_is_mirror = storage.exists(
        warehouse.key(warehouse.staging_path(schema, table + HISTORY_SUFFIX)))
    storage.move(live["mirrored"], kept["mirrored"])
    if not history_is_mirror:  # a landing table named `<table>__history` is a table itself
        storage.move(live["history"], kept["history"])
    _keep_batches(warehouse, schema, table, f"{key}/{BATCHES}")
    storage.move(live["staging"], kept["staging"])
    return copy


def dropped_copies(warehouse: Warehouse, qualified_name: str | None = None
                   ) -> list[DroppedCopy]:
    """The copies in the dropped area (of one table), oldest first."""
    copies = []
    for folder in _copy_folders(warehouse):
        try:
            text = warehouse.storage.read_text(f"{folder}/{RECORD}")
            if text is None:
                continue
            document = json.loads(text)
            copy = DroppedCopy(str(document["schema"]), str(document["table"]),
                               str(document["incarnation"]), float(document["dropped_at"]),
                               str(document["reason"]), warehouse.root / folder)
        except (OSError, ValueError, KeyError, TypeError):
            continue  # half written: the drop it belongs to is redone by the next run
        if qualified_name in (None, copy.qualified_name):
            copies.append(copy)
    return sorted(copies, key=lambda copy: copy.dropped_at)


def _copy_folders(warehouse: Warehouse) -> list[str]:
    """The keys of the folders `<dropped area>/<schema>/<table>/<incarnation>`."""
    storage, root = warehouse.storage, warehouse.key(warehouse.dropped_root)
    return [f"{root}/{schema}/{table}/{incarnation}"
            for schema in storage.folders(root)
            for table in storage.folders(f"{root}/{schema}")
            for incarnation in storage.folders(f"{root}/{schema}/{table}")]


def restore_copy(warehouse: Warehouse, copy: DroppedCopy) -> None:
    """Move the copy's data back in place (staging first: the table then counts as staged,
    and a crash midway leaves the rest in the copy for `restore` to finish)."""
    live, kept = _parts(warehouse, copy.schema, copy.table, warehouse.root), _parts(
        warehouse, copy.schema, copy.table, copy.path)
    storage, key = warehouse.storage, warehouse.key(copy.path)
    for part in ("staging", "mirrored", "history"):
        storage.move(kept[part], live[part])
    if storage.exists(f"{key}/{BATCHES}"):
        path = warehouse.control_path("mirror_batches")
        rows = pq.read_table(pa.BufferReader(storage.read_bytes(f"{key}/{BATCHES}")))
        if is_delta_table(path):
            rows = rows.cast(pa.schema(delta_table(path).schema().to_arrow()))
        retry_on_conflict(lambda: write_delta(path, rows, mode="append"),
                          what=f"restore the batches of {copy.qualified_name}",
                          progress=lambda message: None)
    _remove_copy(warehouse, copy)


def purge_dropped(warehouse: Warehouse, retention_days: float, *,
                  now: float | None = None) -> list[DroppedCopy]:
    """Delete the copies dropped longer ago than the retention period."""
    cutoff = (time.time() if now is None else now) - retention_days * 86_400
    expired = [copy for copy in dropped_copies(warehouse) if copy.dropped_at < cutoff]
    for copy in expired:
        _remove_copy(warehouse, copy)
    return expired


def _remove_copy(warehouse: Warehouse, copy: DroppedCopy) -> None:
    """Delete the copy, and its table's and schema's folders when they are left empty."""
    storage, key = warehouse.storage, warehouse.key(copy.path)
    storage.remove(key)
    storage.remove_empty(key.rpartition("/")[0], warehouse.key(warehouse.dropped_root))


def _keep_batches(warehouse: Warehouse, schema: str, table: str, kept: str) -> None:
    """Move the table's (and its history's) rows of mirror_batches into `kept`: a restored
    table goes on from the batches it had applied. The delete is retried when dbt hooks of
    another run append batches meanwhile (a commit conflict)."""
    path = warehouse.control_path("mirror_batches")
    if not is_delta_table(path):
        return
    names = f"relation_name in ('{schema}.{table}', '{schema}.{table}{HISTORY_SUFFIX}')"
    rows = query_table(path, f"select * from delta_table where {names}")
    if rows.num_rows:
        written = pa.BufferOutputStream()
        pq.write_table(rows, written)
        warehouse.storage.write_bytes(kept, written.getvalue().to_pybytes())
    retry_on_conflict(lambda: delta_table(path).delete(names),
                      what=f"forget the batches of {schema}.{table}",
                      progress=lambda message: None)

