"""Stage a landing-zone table's new change files into its append-only staging Delta table.

One Delta commit per file, carrying the file's sequence number in the commit metadata, so the
staging table itself records how far ingestion got. A file moves to `_ProcessedFiles/` only
after its rows are committed; the newest staged file stays in place for the publisher.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal

import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, write_deltalake
from deltalake.exceptions import DeltaError

from lakemirror.errors import LakemirrorError, LandingZoneError, SchemaChangeError
from lakemirror.landing import (
    ChangeFile,
    LandingTable,
    SequenceFile,
    open_change_file,
    read_metadata,
    sequence_file_name,
    sequence_files,
)
from lakemirror.landing.discovery import NAME
from lakemirror.staging.layout import Warehouse

SEQUENCE_KEY = "lakemirror.sequence"
Status = Literal["replicating", "waiting", "failed"]


@dataclass(frozen=True)
class IngestResult:
    """What ingestion did for one table and the state it left it in."""

    table: LandingTable
    status: Status
    key_columns: tuple[str, ...] = ()
    last_sequence: int = 0
    staged_files: int = 0
    staged_rows: int = 0
    error: str | None = None


def ingest_table(table: LandingTable, warehouse: Warehouse, *,
                 on_file: Callable[[SequenceFile], None] = lambda file: None) -> IngestResult:
    """Stage every contiguous new file of `table`; a bad file stops only this table."""
    staging = StagingTable(warehouse.staging_path(table.schema, table.name))
    last_sequence = staging.last_sequence()
    staged_files = staged_rows = 0
    key_columns: tuple[str, ...] = ()
    try:
        _check_names(table)
        key_columns = read_metadata(table.folder, table.qualified_name).key_columns
        files = sequence_files(table.folder)
        move_processed(table, files, last_sequence)
        for file in (file for file in files if file.sequence > last_sequence):
            if file.sequence != last_sequence + 1:
                missing = sequence_file_name(last_sequence + 1)
                return IngestResult(table, "waiting", key_columns, last_sequence, staged_files,
                                    staged_rows, f"waiting for missing file {missing}")
            on_file(file)
            staged_rows += staging.append(open_change_file(table, file, key_columns))
            staged_files += 1
            last_sequence = file.sequence
            move_processed(table, files, last_sequence)
    except LakemirrorError as error:
        return IngestResult(table, "failed", key_columns, last_sequence, staged_files,
                            staged_rows, str(error))
    if last_sequence == 0:
        return IngestResult(table, "waiting", key_columns, 0, error="no change files yet")
    return IngestResult(table, "replicating", key_columns, last_sequence, staged_files,
                        staged_rows)


def move_processed(table: LandingTable, files: list[SequenceFile], last_sequence: int) -> None:
    """Move staged files to `_ProcessedFiles/`, keeping the newest staged file in place."""
    done = [file for file in files if file.sequence < last_sequence and file.path.exists()]
    if done:
        table.processed_folder.mkdir(exist_ok=True)
    for file in done:
        os.replace(file.path, table.processed_folder / file.path.name)


class StagingTable:
    """The append-only staging Delta table of one landing-zone table."""

    def __init__(self, path: os.PathLike[str]) -> None:
        self.path = str(path)

    def last_sequence(self) -> int:
        """Sequence number of the last staged file (0 when nothing is staged)."""
        if not DeltaTable.is_deltatable(self.path):
            return 0
        history = DeltaTable(self.path).history(limit=1)
        return int(history[0].get(SEQUENCE_KEY, 0)) if history else 0

    def append(self, change_file: ChangeFile) -> int:
        """Commit all rows of `change_file` in one transaction; returns the row count."""
        self._check_columns(change_file)
        failure: list[LakemirrorError] = []
        rows = 0

        def batches() -> Iterator[pa.RecordBatch]:  # our error would be flattened to text
            nonlocal rows
            try:
                for batch in change_file.batches():
                    rows += len(batch)
                    yield batch
            except LakemirrorError as error:
                failure.append(error)
                raise

        reader = pa.RecordBatchReader.from_batches(change_file.schema, batches())
        metadata = {SEQUENCE_KEY: str(change_file.file.sequence)}
        try:
            write_deltalake(self.path, reader, mode="append",
                            commit_properties=CommitProperties(custom_metadata=metadata))
        except (DeltaError, pa.ArrowException, OSError) as error:
            if failure:
                raise failure[0] from error
            raise LandingZoneError(
                f"could not stage the file: {error}", table=change_file.table.qualified_name,
                file=str(change_file.file.path),
                hint="check that column types match the earlier files of this table") from error
        return rows

    def _check_columns(self, change_file: ChangeFile) -> None:
        if not DeltaTable.is_deltatable(self.path):
            return
        staged = pa.schema(DeltaTable(self.path).schema().to_arrow()).names
        if staged != change_file.schema.names:
            raise SchemaChangeError(
                f"columns {change_file.data_columns} differ from the staged columns "
                f"{staged[1:-1]}", table=change_file.table.qualified_name,
                file=str(change_file.file.path),
                hint="publish the same columns, or recreate the table folder")


def _check_names(table: LandingTable) -> None:
    for kind, name in (("schema", table.schema), ("table", table.name)):
        if not NAME.match(name):
            raise LandingZoneError(
                f"{kind} name {name!r} has characters other than letters, digits and _",
                table=table.qualified_name, file=str(table.folder),
                hint="rename the folder using letters, digits and underscores")
