"""Stage a landing-zone table's new change files into its append-only staging Delta table.

One Delta commit per file, carrying the file's sequence number, name and the table's keys in the
commit metadata, so the staging table itself records how far ingestion got. A file moves to
`_ProcessedFiles/` only after its rows are committed; the newest staged file stays in place for
the publisher.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, Schema, write_deltalake

from lakemirror.errors import (
    FileNameError,
    LakemirrorError,
    LandingZoneError,
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
from lakemirror.landing.discovery import NAME
from lakemirror.reference import ROW_MARKER
from lakemirror.staging.layout import Warehouse
from lakemirror.staging.retention import DEFAULT_RETENTION_DAYS, purge_processed

SEQUENCE_KEY = "lakemirror.sequence"
FILE_KEY = "lakemirror.file"
KEYS_KEY = "lakemirror.keyColumns"
Status = Literal["replicating", "waiting", "failed"]


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
    error_type: str | None = None


def ingest_table(table: LandingTable, warehouse: Warehouse, *,
                 retention_days: float = DEFAULT_RETENTION_DAYS,
                 on_file: Callable[[SequenceFile], None] = lambda file: None) -> IngestResult:
    """Stage every new file of `table` in order; a bad file stops only this table."""
    staging = StagingTable(warehouse.staging_path(table.schema, table.name))
    staged = StagedFiles()
    metadata = TableMetadata()
    detection = Detection([], [])
    staged_files = staged_rows = staged_bytes = 0

    def result(status: Status, error: LakemirrorError | str | None = None) -> IngestResult:
        pending = len(detection.pending) - staged_files + detection.blocked
        error_class: Literal["user", "system"] | None = (
            None if not isinstance(error, LakemirrorError) else
            "user" if isinstance(error, LandingZoneError) else "system")
        return IngestResult(table, status, metadata, staged.last_sequence, staged_files,
                            staged_rows, staged_bytes, pending,
                            None if error is None else str(error), error_class,
                            type(error).__name__ if isinstance(error, LakemirrorError) else None)

    try:
        _check_names(table)
        metadata = read_metadata(table.folder, table.qualified_name)
        staged = staging.staged_files(
            with_names=metadata.file_detection == "LastUpdateTimeFileDetection")
        staging.check_keys(table, metadata)
        detection = detect_files(table, metadata, staged)
        move_processed(table, detection.staged_in_place)
        for file in detection.pending:
            on_file(file)
            staged_rows += staging.append(open_change_file(table, file, metadata))
            staged_bytes += file.path.stat().st_size
            staged = StagedFiles(file.sequence, file.path.name, staged.names | {file.path.name})
            move_processed(table, [*detection.staged_in_place, *(
                pending.path for pending in detection.pending[:staged_files])])
            staged_files += 1
        purge_processed(table, retention_days)
    except LakemirrorError as error:
        return result("failed", error)
    if detection.waiting_for:
        return result("waiting", detection.waiting_for)
    if staged.last_sequence == 0:
        return result("waiting", "no change files yet")
    return result("replicating")


def move_processed(table: LandingTable, staged_files: list[Path]) -> None:
    """Move staged files to `_ProcessedFiles/` (callers never pass the newest staged file)."""
    done = [path for path in staged_files if path.exists()]
    if done:
        table.processed_folder.mkdir(exist_ok=True)
    for path in done:
        target = table.processed_folder / path.name
        os.replace(path, target)
        os.utime(target)  # retention counts from now


class StagingTable:
    """The append-only staging Delta table of one landing-zone table."""

    def __init__(self, path: os.PathLike[str]) -> None:
        self.path = str(path)

    def _last_commit(self) -> dict[str, Any]:
        if not DeltaTable.is_deltatable(self.path):
            return {}
        history = DeltaTable(self.path).history(limit=1)
        return history[0] if history else {}

    def staged_files(self, *, with_names: bool) -> StagedFiles:
        """The last staged sequence and file name; all staged names when `with_names`."""
        last = self._last_commit()
        if SEQUENCE_KEY not in last:
            return StagedFiles()
        names: frozenset[str] = frozenset()
        if with_names:
            names = frozenset(str(commit[FILE_KEY]) for commit in DeltaTable(self.path).history()
                              if FILE_KEY in commit)
        return StagedFiles(int(last[SEQUENCE_KEY]), str(last.get(FILE_KEY)), names)

    def check_keys(self, table: LandingTable, metadata: TableMetadata) -> None:
        """keyColumns are immutable once a table has staged data."""
        recorded = self._last_commit().get(KEYS_KEY)
        if recorded is not None and tuple(json.loads(recorded)) != metadata.key_columns:
            raise MetadataError(
                f"keyColumns changed from {json.loads(recorded)} to {list(metadata.key_columns)}",
                table=table.qualified_name, file=str(table.folder / "_metadata.json"),
                hint="keys are immutable: recreate the table folder to change keys")

    def append(self, change_file: ChangeFile) -> int:
        """Commit all rows of `change_file` in one transaction; returns the row count."""
        schema_mode = self._check_columns(change_file)
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
        metadata = {SEQUENCE_KEY: str(change_file.file.sequence),
                    FILE_KEY: change_file.file.path.name,
                    KEYS_KEY: json.dumps(list(change_file.metadata.key_columns))}
        try:
            write_deltalake(self.path, reader, mode="append", schema_mode=schema_mode,
                            commit_properties=CommitProperties(custom_metadata=metadata))
        except Exception as error:  # delta-rs raises plain Exception for schema errors
            if failure:
                raise failure[0] from error
            raise SchemaChangeError(
                f"could not stage the file: {error}", table=change_file.table.qualified_name,
                file=str(change_file.file.path),
                hint="check that column types match the earlier files of this table") from error
        return rows

    def _check_columns(self, change_file: ChangeFile) -> Literal["merge"] | None:
        """The write's schema mode; raises when the file's columns differ from staging's."""
        if not DeltaTable.is_deltatable(self.path):
            return None
        staged = {field.name: _type_name(field.type)
                  for field in DeltaTable(self.path).schema().fields
                  if not field.name.startswith("_lm_") and field.name != ROW_MARKER}
        if not staged or not change_file.data_columns:
            return "merge"  # a file without columns (empty text file) fits any table
        where = {"table": change_file.table.qualified_name, "file": str(change_file.file.path)}
        if list(staged) != change_file.data_columns:
            raise SchemaChangeError(
                f"columns {change_file.data_columns} differ from the staged columns "
                f"{list(staged)}", hint="publish the same columns, or recreate the table folder",
                **where)
        incoming = Schema.from_arrow(change_file.schema)
        for field in incoming.fields:
            if field.name in staged and _type_name(field.type) != staged[field.name]:
                raise SchemaChangeError(
                    f"column {field.name!r} changed type from {staged[field.name]} to "
                    f"{_type_name(field.type)}",
                    hint="publish the earlier type, or recreate the table folder", **where)
        return None


def _type_name(delta_type: Any) -> str:
    """A Delta type as `array<long>`, without nullability; nanosecond timestamps are stored as
    microseconds, so they compare equal."""
    return _describe(json.loads(delta_type.to_json())).replace("_nanos", "")


def _describe(spec: Any) -> str:
    if isinstance(spec, str):
        return spec
    if spec["type"] == "array":
        return f"array<{_describe(spec['elementType'])}>"
    if spec["type"] == "map":
        return f"map<{_describe(spec['keyType'])},{_describe(spec['valueType'])}>"
    fields = ",".join(f"{field['name']}:{_describe(field['type'])}" for field in spec["fields"])
    return f"struct<{fields}>"


def _check_names(table: LandingTable) -> None:
    for kind, name in (("schema", table.schema), ("table", table.name)):
        if not NAME.match(name):
            raise FileNameError(
                f"{kind} name {name!r} has characters other than letters, digits and _",
                table=table.qualified_name, file=str(table.folder),
                hint="rename the folder using letters, digits and underscores")
