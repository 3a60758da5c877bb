"""Stage a landing-zone table's new change files into its append-only staging Delta table.

One Delta commit per file, carrying the file's sequence number, name and the table's keys in the
commit metadata, so the staging table itself records how far ingestion got. A file moves to
`_ProcessedFiles/` only after its rows are committed; the newest staged file stays in place for
the publisher. The staging table is the positive signal of what was staged: a staged file still
in place (a crash between staging and its move, or, on an object store, between the move's copy
and its delete) is moved by the next run, never staged again. On an object store each commit
also records the file's size and ETag, and a staged file still in place that no longer matches
them fails its table (`ChangedFileError`) instead of being moved or ignored. The landing zone
is read, and files are moved, only through its door (`landing.zone`); whatever fails, the table
fails with a typed error, never a traceback. A file's rows are read on a thread of their own, one
batch ahead of the parts being written (`staging.read_ahead`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import PurePath
from typing import Any, Literal

import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, Field, PostCommitHookProperties, Schema
from deltalake.transaction import AddAction, RemoveAction, create_table_with_add_actions

from lakemirror.contract import METADATA_FILE
from lakemirror.delta.access import delta_table, is_delta_table, storage_options
from lakemirror.delta.bookkeeping import bookkeeping_commit, bookkeeping_keys
from lakemirror.delta.listed_features import list_used_features
from lakemirror.errors import (
    ChangedFileError,
    CorruptTableError,
    LakemirrorError,
    MetadataError,
    SchemaChangeError,
)
from lakemirror.landing import (
    ChangeFile,
    Detection,
    LandingTable,
    SequenceFile,
    StagedFiles,
    TableMetadata,
    detect_files,
    open_change_file,
    read_metadata,
)
from lakemirror.landing.detection import Settling
from lakemirror.landing.zone_door import Entry
from lakemirror.landing.control_copy import ControlCopy, kept_copies, read_listed
from lakemirror.landing.incarnation import MARKER, create_mark, read_mark
from lakemirror.environment import DEFAULT_MAX_TEXT_BYTES
from lakemirror.staging.evolution import SchemaPlan, conform, plan_schema
from lakemirror.staging.failures import as_failure, storage_failure
from lakemirror.staging.layout import Warehouse
from lakemirror.staging.parts import write_parts
from lakemirror.staging.read_ahead import read_ahead
from lakemirror.staging.retention import DEFAULT_RETENTION_DAYS, purge_processed
from lakemirror.storage.location import Location, ObjectLocation

SEQUENCE_KEY = "lakemirror.sequence"
FILE_KEY = "lakemirror.file"
KEYS_KEY = "lakemirror.keyColumns"
CONDITIONAL_KEY = "lakemirror.conditionalUpdateColumn"  # "" when the table has none
INCARNATION_KEY = "lakemirror.incarnation"
SIZE_KEY = "lakemirror.fileSize"
ETAG_KEY = "lakemirror.fileETag"  # object stores only
METADATA_COPY_KEY = "lakemirror.metadataCopy"  # `_metadata.json` and its ETag (object stores)
MARK_COPY_KEY = "lakemirror.markCopy"  # the incarnation mark and its ETag (object stores)
COMPACTED_KEY = "lakemirror.compactedThrough"  # staging compaction folded changes up to here
RESYNC_THROUGH_KEY = "lakemirror.resyncThrough"  # the last position a resync staged
Status = Literal["replicating", "waiting", "failed"]
# A staging commit leaves deleting expired commits to `StagingTable.checkpoint`: delta-rs would
# list the whole log after each commit to find them.
KEEP_EXPIRED_COMMITS = PostCommitHookProperties(cleanup_expired_logs=False)


@dataclass(frozen=True)
class IngestResult:
    """What ingestion did for one table and the state it left it in."""

    table: LandingTable
    status: Status
    metadata: TableMetadata = TableMetadata()
    last_sequence: int = 0
    staged_files: int = 0
    staged_rows: int = 0
    staged_bytes: int = 0
    files_pending: int = 0
    error: str | None = None
    error_class: Literal["user", "system"] | None = None
    error_type: str | None = None  # the failure's class, as reported
    damaged: bool = False  # its Delta log is damaged: the table is neither built nor attached
    landed: tuple[SequenceFile, ...] = ()  # the new files listed: staged now, or still waiting
    resynced_through: int | None = None  # the last change a resync staged after the last file


def ingest_table(table: LandingTable, warehouse: Warehouse, *,
                 retention_days: float = DEFAULT_RETENTION_DAYS,
                 on_file: Callable[[SequenceFile], None] = lambda file: None,
                 settle: Callable[[Settling], None] | None = None, settle_seconds: float = 0.0,
                 staging: StagingTable | None = None, debug: bool = False,
                 max_text_bytes: int = DEFAULT_MAX_TEXT_BYTES) -> IngestResult:
    """Stage every new file of `table` in order; a bad file, a `problem` or a bug fails only
    this table (`debug`: a bug is raised). A file changed within `settle_seconds` waits
    (`settle`: waits it out once); `max_text_bytes` caps its text; `staging`: `staging.opened`."""
    staging = staging or StagingTable(warehouse.staging_path(table.schema, table.name))
    staged = StagedFiles()
    metadata = TableMetadata()
    detection = Detection([], [])
    staged_files = staged_rows = staged_bytes = 0
    warnings: list[str] = []
    current: PurePath | None = None  # the file being staged

    def result(status: Status, error: LakemirrorError | str | None = None) -> IngestResult:
        pending = len(detection.pending) - staged_files + len(detection.blocked)
        error_class = error.error_class if isinstance(error, LakemirrorError) else None
        return IngestResult(table, status,
                            replace(metadata, warnings=(*metadata.warnings, *warnings)),
                            staged.last_sequence, staged_files, staged_rows, staged_bytes,
                            pending, None if error is None else str(error), error_class,
                            type(error).__name__ if isinstance(error, LakemirrorError) else None,
                            isinstance(error, CorruptTableError),
                            (*detection.pending, *detection.blocked),
                            None if status == "failed" or staged_files
                            else _resynced_through(staging))

    try:
        if table.problem is not None:
            raise table.problem
        listing = table.take_listing()  # once: the control files' ETags are in it
        copies = {METADATA_COPY_KEY: read_listed(table.door, table.folder / METADATA_FILE,
                                                 listing, staging.kept(METADATA_COPY_KEY))}
        metadata = read_metadata(table, copies[METADATA_COPY_KEY], listing)
        staged = staging.staged_files(
            with_names=metadata.file_detection == "LastUpdateTimeFileDetection")
        staging.check_keys(table, metadata)
        staging.list_used_features()  # a table staged before lakemirror listed them
        incarnation, copies[MARK_COPY_KEY] = folder_incarnation(
            staging, table, listing, warn=warnings.append)
        detection = detect_files(table, metadata, staged, listing, settle_seconds=settle_seconds)
        if detection.settling is not None and settle is not None:
            settle(detection.settling)
            detection = detect_files(table, metadata, staged, settle_seconds=settle_seconds)
        warnings.extend(detection.warnings)
        staging.check_unchanged(table, detection.staged_listed, staged.newest)
        moved = move_processed(table, detection.staged_in_place)
        for file in detection.pending:
            current = file.path
            on_file(file)
            with open_change_file(table, file, metadata, max_text_bytes) as change_file:
                staged_rows += staging.append(change_file, incarnation, kept_copies(copies))
            staged_bytes += file.size
            staged = StagedFiles(file.sequence, file.path.name, staged.names | {file.path.name})
            current = None
            if staged_files:  # the file staged before this one is no longer the newest
                moved += move_processed(table, [detection.pending[staged_files - 1].path],
                                        folder_checked=moved > 0)
            staged_files += 1
        if staged_files:
            staging.checkpoint()
        if moved or staged_files or table.door.lists_history_cheaply:
            purge_processed(table, retention_days)
    except Exception as error:  # the table's error boundary
        return result("failed", as_failure(error, table, file=current, warehouse=warehouse.root,
                                           debug=debug))
    if detection.waiting_for:
        return result("waiting", detection.waiting_for)
    if staged.last_sequence == 0:
        return result("waiting", "no change files yet")
    return result("replicating")


def move_processed(table: LandingTable, staged_files: list[PurePath], *,
                   folder_checked: bool = False) -> int:
    """Move staged files, each listed in the folder by this run and passed once, to
    `_ProcessedFiles/`, stamped with the time of the move, from which retention counts
    (callers never pass the newest staged file); returns how many. `_ProcessedFiles/` must be
    a real folder of the zone: a link there fails the table, and nothing is moved into it.
    It is checked (and made) once a run: `folder_checked` after this run's first move."""
    door = table.door
    if staged_files and not folder_checked:
        door.make_folder(table.processed_folder)
    for path in staged_files:
        door.move(path, table.processed_folder)
    return len(staged_files)


class StagingTable:
    """The append-only staging Delta table of one landing-zone table."""

    def __init__(self, location: Location) -> None:
        self.location = location
        self.path = str(location)
        # opened and read once between this object's commits (the run holds the table's lock)
        self._opened: DeltaTable | None = None
        self._last: dict[str, Any] | None = None

    def _table(self) -> DeltaTable | None:
        """The staging Delta table (None before its first commit)."""
        if self._opened is None and is_delta_table(self.location):
            self._opened = delta_table(self.location)
        return self._opened

    @property
    def is_open(self) -> bool:
        """Whether this object holds the table opened (so it has commits)."""
        return self._opened is not None

    def _committed(self) -> None:
        """Forget what was read: the table has a new commit."""
        self._opened, self._last = None, None

    def _read_on(self, table: DeltaTable, last: dict[str, Any] | None) -> None:
        """Keep `table` open after this object's commit, reading only the new commits (not the
        whole log again), and `last`, the newest bookkeeping (None: read when needed)."""
        table.update_incremental()
        self._opened, self._last = table, last

    def _existing(self) -> DeltaTable:
        """The staging Delta table, which has commits (the caller read its bookkeeping)."""
        return self._table() or delta_table(self.location)

    def _last_commit(self) -> dict[str, Any]:
        if self._last is None and (table := self._table()) is not None:
            self._last = bookkeeping_commit(table)
        return self._last or {}  # nothing kept before the table exists: a run may restore it

    def staged_files(self, *, with_names: bool) -> StagedFiles:
        """The last staged sequence and file name; all staged names when `with_names`."""
        last = self._last_commit()
        if SEQUENCE_KEY not in last:
            return StagedFiles()
        names: frozenset[str] = frozenset()
        if with_names:
            names = frozenset(str(commit[FILE_KEY])
                              for commit in self._existing().history()
                              if FILE_KEY in commit)
        return StagedFiles(int(last[SEQUENCE_KEY]), str(last.get(FILE_KEY)), names)

    def accepted_metadata(self) -> TableMetadata | None:
        """The keyColumns and conditional update column the staged files were staged with
        (None before the first file): the only metadata a model of them may use."""
        last = self._last_commit()
        if KEYS_KEY not in last:
            return None
        return TableMetadata(key_columns=tuple(json.loads(last[KEYS_KEY])),
                             conditional_column=last.get(CONDITIONAL_KEY) or None)

    def check_keys(self, table: LandingTable, metadata: TableMetadata) -> None:
        """keyColumns are immutable once a table has staged data."""
        accepted = self.accepted_metadata()
        if accepted is not None and accepted.key_columns != metadata.key_columns:
            raise MetadataError(
                f"keyColumns changed from {list(accepted.key_columns)} to "
                f"{list(metadata.key_columns)}",
                table=table.qualified_name, file=str(table.folder / "_metadata.json"),
                hint="keys are immutable: recreate the table folder to change keys")

    def check_unchanged(self, table: LandingTable, listed: Sequence[Entry],
                        newest: str | None) -> None:
        """Raise ChangedFileError when a staged file still in the folder has another size or
        ETag than when it was staged (checked where both were recorded: object stores). The
        history is read only when a staged file other than the newest is still in place."""
        tagged = [entry for entry in listed if entry.etag is not None]
        if not tagged:
            return
        commits = ([self._last_commit()] if all(entry.name == newest for entry in tagged)
                   else self._existing().history())
        recorded = {str(commit[FILE_KEY]): commit for commit in reversed(commits)
                    if FILE_KEY in commit and ETAG_KEY in commit}
        for entry in tagged:
            commit = recorded.get(entry.name)
            if commit is None:
                continue
            was = (int(commit[SIZE_KEY]), str(commit[ETAG_KEY]))
            if was != (entry.size, entry.etag):
                raise _changed_file(table, entry, was)

    def recorded(self, key: str) -> Any:
        """What the last bookkeeping commit recorded under `key` (None: nothing)."""
        return self._last_commit().get(key)

    def incarnation(self) -> str | None:
        """The incarnation id of the table folder the staged files came from."""
        recorded = self.recorded(INCARNATION_KEY)
        return None if recorded is None else str(recorded)

    def kept(self, key: str) -> ControlCopy | None:
        """The control file copy the last commit kept under `key` (see `control_copy`)."""
        return ControlCopy.from_kept(self.recorded(key))

    def append(self, change_file: ChangeFile, incarnation: str,
               kept: Mapping[str, str] | None = None) -> int:
        """Commit all rows of `change_file` in one transaction; returns the row count. A file
        that widens a column rewrites the staged rows with the wider type in the same commit;
        one that adds columns adds them first, in a commit that records the same last staged
        file as the one before it. The commit keeps the control files' copies (`kept`)."""
        plan = self._plan(change_file)
        schema = plan.schema if plan.widened else plan.append_schema
        rows = 0
        staged = self._staged_files_dataset().to_batches() if plan.widened else ()

        def batches() -> Iterator[pa.RecordBatch]:
            nonlocal rows
            yield from (conform(batch, schema) for batch in staged)
            for batch in change_file.batches():
                rows += len(batch)
                yield conform(batch, schema)

        metadata = {**_file_bookkeeping(change_file, incarnation),
                    **carried_on(self._last_commit()), **(kept or {})}
        try:
            with read_ahead(batches()) as ahead:  # the next batches read while one is written
                self._commit(write_parts(self.location, schema, ahead), plan, metadata)
        except LakemirrorError:
            raise
        except Exception as error:  # delta-rs raises plain Exception for schema errors
            storage = storage_failure(error, table=change_file.table.qualified_name,
                                      file=change_file.file.path, location=self.location)
            if storage is not None:
                raise storage from error
            raise SchemaChangeError(
                f"could not stage the file: {error}", table=change_file.table.qualified_name,
                file=str(change_file.file.path),
                hint="check that column types match the earlier files of this table") from error
        self.list_used_features()
        return rows

    def _commit(self, parts: list[AddAction], plan: SchemaPlan,
                metadata: dict[str, str]) -> None:
        """One commit adding `parts` (replacing every staged file when a column widened)."""
        table = self._table()
        self._committed()
        properties = CommitProperties(custom_metadata=metadata)
        if table is None:
            create_table_with_add_actions(self.path, Schema.from_arrow(plan.schema), parts,
                                          commit_properties=properties,
                                          storage_options=storage_options(self.location))
            self._last = dict(metadata)
            return
        actions: list[AddAction | RemoveAction] = [*parts]
        if plan.added and not plan.widened:
            table.alter.add_columns([Field.from_arrow(plan.schema.field(name))
                                     for name in plan.added],
                                    commit_properties=CommitProperties(
                                        custom_metadata=bookkeeping_keys(table)))
        table.create_write_transaction(actions, "overwrite" if plan.widened else "append",
                                       plan.schema, commit_properties=properties,
                                       post_commithook_properties=KEEP_EXPIRED_COMMITS)
        self._read_on(table, dict(metadata))

    def checkpoint(self) -> None:
        """Checkpoint the log, which the engine's scans and the run's checks then read instead of
        each commit since the last one, and delete commits past its retention (one listing)."""
        self._existing().create_checkpoint()
        self._existing().cleanup_metadata()

    def list_used_features(self) -> None:
        """List the features staging uses in its protocol, so Delta on Spark can read it."""
        table = self._table()
        if table is not None and list_used_features(table):
            self._read_on(table, self._last)  # its commit carries the same bookkeeping on

    def _staged_files_dataset(self) -> Any:
        """The staged rows, read by pyarrow alone (delta-rs cannot be re-entered while it
        writes); staging is append-only, so its files are all its rows (a pyarrow Dataset;
        pyarrow.dataset is imported here, as it is slow to import). In object storage, where
        pyarrow has no credentials, delta-rs's file system reads them: the parts are written
        by pyarrow, and delta-rs commits only once they are all read."""
        import pyarrow.dataset as ds

        table = self._existing()
        if isinstance(self.location, ObjectLocation):
            return table.to_pyarrow_dataset()
        return ds.dataset(table.file_uris(), schema=pa.schema(table.schema().to_arrow()),
                          format="parquet")

    def _plan(self, change_file: ChangeFile) -> SchemaPlan:
        """How the file's columns evolve the staged schema (a file without columns, such as an
        empty text file, fits any table)."""
        table = self._table()
        staged = None if table is None else pa.schema(table.schema().to_arrow())
        if staged is not None and not change_file.data_columns:
            return SchemaPlan(staged, staged)
        return plan_schema(staged, change_file.schema, table=change_file.table.qualified_name,
                           file=str(change_file.file.path))


def _file_bookkeeping(change_file: ChangeFile, incarnation: str) -> dict[str, str]:
    """The bookkeeping a file's staging commit records of it."""
    return {SEQUENCE_KEY: str(change_file.file.sequence), FILE_KEY: change_file.file.path.name,
            KEYS_KEY: json.dumps(list(change_file.metadata.key_columns)),
            CONDITIONAL_KEY: change_file.metadata.conditional_column or "",
            INCARNATION_KEY: incarnation, SIZE_KEY: str(change_file.file.size),
            **({} if change_file.file.etag is None else {ETAG_KEY: change_file.file.etag})}


def carried_on(last: Mapping[str, Any]) -> dict[str, str]:
    """What a staging commit carries on from the one before it: how far compaction folded."""
    folded = last.get(COMPACTED_KEY)
    return {} if folded is None else {COMPACTED_KEY: str(folded)}


def _resynced_through(staging: StagingTable) -> int | None:
    """The last change position a resync staged after the last file (see `proof.resync`)."""
    through = staging.recorded(RESYNC_THROUGH_KEY)
    return None if through is None else int(through)


def _changed_file(table: LandingTable, entry: Entry, was: tuple[int, str]) -> ChangedFileError:
    """The error for a staged file still in place whose size and ETag are no longer `was`."""
    return ChangedFileError(
        f"{entry.name} changed after it was staged (staged: {was[0]} bytes, ETag {was[1]}; "
        f"now: {entry.size} bytes, ETag {entry.etag}); lakemirror neither applies it again nor "
        "ignores it", table=table.qualified_name, file=str(entry.path),
        hint="a published change file must not change: put the staged content back, or move "
             "the file into _ProcessedFiles/, and publish the correction as a new change file")


def folder_incarnation(staging: StagingTable, table: LandingTable, listing: Sequence[Entry], *,
                       warn: Callable[[str], None] = lambda message: None
                       ) -> tuple[str, ControlCopy]:
    """The folder's incarnation id and its mark as read or written, marking the folder
    when it has none yet (again, with a warning, when its mark was deleted from the folder
    it was staged from); raises when the folder is another incarnation than the staged
    files (it must be dropped first) or its mark cannot be read."""
    recorded = staging.incarnation()
    copy = listed_mark(staging, table, listing)
    mark = read_mark(table, copy)
    if mark.recreated(recorded):
        raise MetadataError(
            "the table folder was deleted and created again since its files were staged",
            table=table.qualified_name, file=str(table.folder / MARKER),
            hint="run `lakemirror run` (or `lakemirror ingest`), which drops the old table "
                 "and rebuilds it from the new folder")
    if mark.incarnation is not None:
        return mark.incarnation, copy
    if mark.lost and recorded is not None:
        warn(f"{MARKER} was deleted from {table.folder}, which still has _ProcessedFiles/: "
             "lakemirror wrote it again and goes on (to mirror the table from scratch, "
             "delete and recreate the whole folder)")
    incarnation, written = create_mark(table, recorded)
    return incarnation, written or ControlCopy(None)


def listed_mark(staging: StagingTable, table: LandingTable, listing: Sequence[Entry]
                ) -> ControlCopy:
    """The folder's incarnation mark as its `listing` shows it: the copy the staging table
    keeps when the mark is unchanged (no request on an object store), otherwise read."""
    return read_listed(table.door, table.folder / MARKER, listing, staging.kept(MARK_COPY_KEY))
