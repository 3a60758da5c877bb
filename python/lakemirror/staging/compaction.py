"""Fold a staging table's applied changes into a snapshot, so staging stays the size of the
table plus its recent changes instead of every change ever received.

The changes at or below the applied watermark W are replaced, in one Delta commit, by:
- every current row of the mirrored table, as an insert at the position of the change that wrote
  it (inserts always apply, so a rebuild gives exactly these rows, duplicates included);
- with a ConditionalUpdateColumn C, for each key whose high-water mark (the largest C of its
  history) is above the C of its current rows, the change that set it. That change is a delete
  positioned before the key's current rows: any other change holding the largest C is either
  one of the current rows or was undone by a later change with a C at least as large.
Changes above W stay as they are. A rebuild from staging (a full refresh, or a deleted mirrored
folder) then gives the same table, and the model's high-water marks are unchanged. A table
without keys takes inserts only: its staging already is its rows, and it is left alone.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import CommitProperties

from lakemirror.contract import DELETE, INSERT, ROW_MARKER
from lakemirror.delta.access import delta_table, is_delta_table, write_delta
from lakemirror.delta.bookkeeping import bookkeeping_commit, bookkeeping_keys
from lakemirror.delta.rows import read_table
from lakemirror.errors import StorageError
from lakemirror.staging.ingest import COMPACTED_KEY
from lakemirror.landing import POSITION
from lakemirror.staging.evolution import conform
from lakemirror.storage.location import Location

OPERATION_KEY = "lakemirror.operation"


@dataclass(frozen=True)
class Compaction:
    """What folding one staging table did."""

    rows_before: int  # staged changes at or below the watermark
    rows_after: int  # snapshot rows that replaced them

    @property
    def changed(self) -> bool:
        return self.rows_after < self.rows_before


def compact_staging(staging: Location, mirrored: Location, watermark: int, *, keys: Sequence[str],
                    conditional_column: str | None, table: str,
                    prove: Callable[[], None] = lambda: None) -> Compaction:
    """Fold the staged changes at or below `watermark` into the mirrored table's rows, once
    `prove` (which raises otherwise) has found the mirror equal to their replay."""
    if not keys or watermark <= 0 or not is_delta_table(mirrored):
        return Compaction(0, 0)
    staged_table = delta_table(staging)
    schema = pa.schema(staged_table.schema().to_arrow())
    applied = staged_table.to_pyarrow_table(filters=[(POSITION, "<=", watermark)])
    current = read_table(mirrored)
    if _unfoldable(applied, current, keys, watermark):
        return Compaction(applied.num_rows, applied.num_rows)
    prove()
    snapshot = _with_marker(current, INSERT, schema)
    if conditional_column is not None:
        holders = _high_water_holders(applied, current, list(keys), conditional_column, table)
        snapshot = pa.concat_tables([snapshot, conform_table(holders, schema)])
    if snapshot.num_rows >= applied.num_rows:
        return Compaction(applied.num_rows, applied.num_rows)
    kept = bookkeeping_keys(staged_table)
    write_delta(staging, snapshot.sort_by(POSITION), mode="overwrite",
                    predicate=f"{POSITION} <= {int(watermark)}",
                    commit_properties=CommitProperties(
                        custom_metadata={**kept, OPERATION_KEY: "compact",
                                         COMPACTED_KEY: str(int(watermark))}))
    return Compaction(applied.num_rows, snapshot.num_rows)


def _unfoldable(applied: pa.Table, current: pa.Table, keys: Sequence[str],
                watermark: int) -> bool:
    """Whether the mirrored table is not exactly its state at the watermark (a batch was
    merged but not yet recorded: the next run records it), or a key column holds NULL (which
    Arrow's joins never match): the table is then left for a later compaction."""
    ahead = current.num_rows > 0 and pc.max(current[POSITION]).as_py() > watermark
    return ahead or any(applied[key].null_count for key in keys)


def _with_marker(rows: pa.Table, marker: int, schema: pa.Schema) -> pa.Table:
    """Mirrored rows as staged changes of one marker, in the staging schema."""
    data = rows.select([name for name in rows.column_names if name in schema.names])
    data = data.append_column(ROW_MARKER, pa.repeat(pa.scalar(marker, pa.int32()),
                                                    rows.num_rows))
    return conform_table(data, schema)


def conform_table(rows: pa.Table, schema: pa.Schema) -> pa.Table:
    batches = [conform(batch, schema) for batch in rows.to_batches()]
    return pa.Table.from_batches(batches, schema=schema)


def _high_water_holders(applied: pa.Table, current: pa.Table, keys: list[str], column: str,
                        table: str) -> pa.Table:
    """The changes that set a key's high-water mark above the C of its current rows."""
    history = applied.group_by(keys).aggregate([(column, "max")])
    now = current.group_by(keys).aggregate([(column, "max")]).rename_columns(
        [*keys, "current_max"])
    marks = history.join(now, keys, join_type="left outer")
    above = pc.or_kleene(pc.is_null(marks["current_max"]),
                         pc.greater(marks[f"{column}_max"], marks["current_max"]))
    marks = marks.filter(pc.and_kleene(pc.is_valid(marks[f"{column}_max"]), above))
    if marks.num_rows == 0:
        return applied.slice(0, 0)
    candidates = applied.join(marks.select([*keys, f"{column}_max"]), keys, join_type="inner")
    candidates = candidates.filter(pc.equal(candidates[column], candidates[f"{column}_max"]))
    latest = candidates.group_by(keys).aggregate([(POSITION, "max")])
    holders = applied.filter(pc.is_in(applied[POSITION], latest[f"{POSITION}_max"]))
    if not pc.all(pc.equal(holders[ROW_MARKER], DELETE)).as_py():
        raise StorageError(
            f"staging compaction found a high-water mark of {column} that is neither a current "
            "row nor a delete; staging was left as it is",
            table=table, hint="report this as a bug, with the table's staged changes")
    return holders


def staged_keys(staging: Location) -> list[str]:
    """The key columns recorded with the staging table's bookkeeping."""
    recorded = bookkeeping_commit(delta_table(staging)).get("lakemirror.keyColumns")
    return list(json.loads(recorded)) if recorded else []
