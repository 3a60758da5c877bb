"""`lakemirror resync`: a source snapshot applied as the table's state at its last staged change
position S, as one batch of changes through the normal path.

`stage_snapshot`, under the table's lock: the snapshot is read and checked (`proof.snapshot`),
compared with the replay of the staged changes up to S (and with the mirrored table when it
applied exactly up to S: `proof.diff`), and its changes, a delete per key it lacks and an
upsert per key it holds otherwise, are appended to the staging table in one Delta commit at
positions S+1, S+2, ... in key order. Then, the lock released, a run of that one table applies
them (`lakemirror resync` in `cli.proof`): the `mirror` strategy MERGEs them and records the
batch, the history model records them, and change files staged later apply on top. Exactly
once by construction: the replay then holds the staged changes, so resyncing again with the
same snapshot stages nothing and only applies what is pending; a crash before the commit leaves
the old state, one after it leaves the commit for the next run (which sees it pending:
`lakemirror.resyncThrough`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace

import numpy as np
import pyarrow as pa
from deltalake import CommitProperties
from deltalake.transaction import AddAction, RemoveAction

from lakemirror.contract import DELETE, ROW_MARKER, UPSERT
from lakemirror.delta.access import delta_table, is_delta_table
from lakemirror.delta.bookkeeping import bookkeeping_keys
from lakemirror.delta.rows import query_tables, read_table
from lakemirror.environment import DEFAULT_LEASE_SECONDS
from lakemirror.errors import ConfigError, SnapshotError
from lakemirror.landing import POSITION, ROWS_PER_FILE
from lakemirror.monitor import applied_positions
from lakemirror.naming import qualified_name, split_qualified_name
from lakemirror.proof.diff import Diff, diff
from lakemirror.proof.replay import POSITION_SQL, STAGED, ChangeLog, change_log, replayed_rows
from lakemirror.proof.high_water import with_high_water
from lakemirror.proof.snapshot import Snapshot, Target, read_snapshot
from lakemirror.staging.compaction import OPERATION_KEY
from lakemirror.staging.evolution import conform
from lakemirror.staging.ingest import KEEP_EXPIRED_COMMITS, RESYNC_THROUGH_KEY
from lakemirror.staging.layout import Warehouse
from lakemirror.staging.lifecycle import staged_tables
from lakemirror.staging.lock import DEFAULT_LOCK_TIMEOUT, HeldLocks, table_locks
from lakemirror.staging.parts import write_parts
from lakemirror.status import TableStatus
from lakemirror.storage.location import Location

SNAPSHOT_KEY = "lakemirror.snapshot"
SNAPSHOT_ROWS_KEY = "lakemirror.snapshotRows"


@dataclass(frozen=True)
class Staged:
    """What staging a snapshot did: its changes by kind, and the positions they took (None
    when the snapshot equals the staged state)."""

    table: str
    snapshot: str
    snapshot_rows: int
    deleted: int
    updated: int
    inserted: int
    unchanged: int
    first_position: int | None = None
    last_position: int | None = None


def stage_snapshot(layout: Warehouse, name: str, location: Location, *,
                   lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
                   lease_seconds: float = DEFAULT_LEASE_SECONDS,
                   progress: Callable[[str], None] = lambda message: None) -> Staged:
    """Stage the changes the snapshot at `location` makes to table `name` ('schema.table')."""
    known = [qualified_name(schema, table) for schema, table in staged_tables(layout)]
    if name not in known:
        raise ConfigError(f"no mirrored table {name} in this warehouse",
                          hint=f"name one of: {', '.join(known) or '(none yet: run first)'}")
    with table_locks(layout.storage, [name], timeout=lock_timeout, progress=progress,
                     lease_seconds=lease_seconds) as locks:
        staging = layout.staging_path(*split_qualified_name(name))
        log = change_log(staging)
        if not log.keys:
            raise SnapshotError("a table without keyColumns cannot be resynced: its "
                                "changes are inserts only", table=name,
                                hint="declare keyColumns for the table, or reload it")
        schema = pa.schema(delta_table(staging).schema().to_arrow())
        snapshot = read_snapshot(location, Target(name, pa.schema(
            [schema.field(column) for column in log.data_columns]), log.keys))
        progress(f"resync {name}: {snapshot.rows.num_rows} rows in {snapshot.name}")
        last = _last_position(staging)
        changes = diff(snapshot.rows, _sides(layout, name, staging, log, last), log.keys)
        staged = _counts(name, snapshot, changes)
        rows = _changes(changes, log, staging, name)
        if rows.num_rows == 0:
            return staged
        if last % ROWS_PER_FILE + rows.num_rows >= ROWS_PER_FILE:
            raise SnapshotError(f"{rows.num_rows} changes do not fit after position {last}",
                                table=name, hint="land the snapshot's changes as a change file")
        _commit(staging, schema, rows.append_column(POSITION, pa.array(
            np.arange(last + 1, last + 1 + rows.num_rows, dtype=np.int64))), locks, name, {
            OPERATION_KEY: "resync", SNAPSHOT_KEY: snapshot.name,
            SNAPSHOT_ROWS_KEY: str(snapshot.rows.num_rows),
            RESYNC_THROUGH_KEY: str(last + rows.num_rows)})
        return replace(staged, first_position=last + 1, last_position=last + rows.num_rows)


def _last_position(staging: Location) -> int:
    """S: the position of the last staged change."""
    found = query_tables({STAGED: staging},
                         f"select max({POSITION_SQL}) as lm_last from {STAGED}")
    return int(found.column("lm_last")[0].as_py() or 0)


def _sides(layout: Warehouse, name: str, staging: Location, log: ChangeLog,
           last: int) -> list[pa.Table]:
    """The rows the table holds: the replay up to S, and the mirrored table when it applied
    exactly up to S (so rows changed behind lakemirror's back are put right too)."""
    replayed = query_tables({STAGED: staging}, replayed_rows(log, last))
    sides = [replayed.select(list(log.data_columns))]
    mirrored = layout.mirrored_path(*split_qualified_name(name))
    if applied_positions(layout).get(name) == last and is_delta_table(mirrored):
        sides.append(_as_staged(read_table(mirrored), replayed.schema, log))
    return sides


def _as_staged(rows: pa.Table, schema: pa.Schema, log: ChangeLog) -> pa.Table:
    """The mirrored rows in the staged columns and types (a column it lacks as NULL)."""
    batches = [conform(batch, schema) for batch in rows.to_batches()]
    return pa.Table.from_batches(batches, schema=schema).select(list(log.data_columns))


def _counts(name: str, snapshot: Snapshot, changes: Diff) -> Staged:
    upserted = changes.upserted.num_rows
    return Staged(name, snapshot.name, snapshot.rows.num_rows, changes.deleted.num_rows,
                  upserted - changes.inserted, changes.inserted, changes.unchanged)


def _changes(changes: Diff, log: ChangeLog, staging: Location, name: str) -> pa.Table:
    """The changes as staged rows without their positions, in key order: deletes carry the
    keys (and, with a ConditionalUpdateColumn, the key's high-water mark), upserts the
    snapshot's row."""
    deleted = changes.deleted
    if log.conditional_column is not None and (deleted.num_rows or changes.upserted.num_rows):
        deleted = with_high_water(deleted, changes.upserted, log, staging, name)
    rows = pa.concat_tables([_marked(deleted, DELETE), _marked(changes.upserted, UPSERT)],
                            promote_options="default")
    return rows.sort_by([(key, "ascending") for key in log.keys])


def _marked(rows: pa.Table, marker: int) -> pa.Table:
    return rows.append_column(ROW_MARKER, pa.repeat(pa.scalar(marker, pa.int32()),
                                                    rows.num_rows))


def _commit(staging: Location, schema: pa.Schema, rows: pa.Table, locks: HeldLocks, name: str,
            metadata: dict[str, str]) -> None:
    """Append `rows` to the staging table in one commit, carrying its bookkeeping on."""
    from lakemirror.staging.ingest import StagingTable

    table = delta_table(staging)
    batches = [conform(batch, schema) for batch in rows.to_batches()]
    parts: list[AddAction | RemoveAction] = [*write_parts(staging, schema, batches)]
    locks.ensure_held([name])
    table.create_write_transaction(
        parts, "append", schema, post_commithook_properties=KEEP_EXPIRED_COMMITS,
        commit_properties=CommitProperties(custom_metadata={**bookkeeping_keys(table),
                                                            **metadata}))
    StagingTable(staging).checkpoint()


@dataclass(frozen=True)
class Resynced:
    """A resync: what it staged, and the table's status after the run that applied it (None:
    the run did not report it)."""

    staged: Staged
    status: TableStatus | None

    @property
    def ok(self) -> bool:
        return self.status is not None and not self.status.unhealthy

    def to_json(self) -> str:
        status = self.status
        return json.dumps({"ok": self.ok, **asdict(self.staged),
                           "status": None if status is None else status.status,
                           "rows": None if status is None else status.rows,
                           "error": None if status is None else status.error}, indent=2)

    def to_text(self) -> str:
        staged, status = self.staged, self.status
        counts = (f"{staged.deleted} deleted, {staged.updated} updated, {staged.inserted} "
                  f"inserted, {staged.unchanged} unchanged")
        where = ("nothing new staged: the staged changes already hold the snapshot"
                 if staged.first_position is None else
                 f"staged at positions {staged.first_position} to {staged.last_position}")
        after = ("not applied: the table was not in the run" if status is None else
                 f"applied: {status.status}, {status.rows} rows"
                 + (f"; {status.error}" if status.error else ""))
        return (f"{staged.table}: resync from {staged.snapshot} ({staged.snapshot_rows} rows): "
                f"{counts}; {where}\n{after}")

