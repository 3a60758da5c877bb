"""Read a change file as Arrow batches in exact row order, validated and positioned.

Each row gets `_lm_position = sequence * ROWS_PER_FILE + row number`: one sortable
number for the change position (file sequence number, row inside the file). Files are opened
through the zone's door (a regular file, never a link, never blocking).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lakemirror.contract import INSERT, MARKER_CHOICES, ROW_MARKER, VALID_MARKERS
from lakemirror.errors import (
    ColumnError,
    FileNameError,
    LandingZoneError,
    RowMarkerError,
    UnreadableFileError,
)
from lakemirror.landing.arrow_types import staged_field, to_delta
from lakemirror.landing.delimited import open_delimited
from lakemirror.landing.delimited.lines import row_line
from lakemirror.landing.detection import SequenceFile
from lakemirror.landing.discovery import LandingTable
from lakemirror.landing.pandas_index import column_layout
from lakemirror.landing.metadata import TableMetadata
from lakemirror.landing.zone_door import ZoneFile
from lakemirror.environment import DEFAULT_MAX_TEXT_BYTES

POSITION = "_lm_position"
ROWS_PER_FILE = 10**10
MAX_SEQUENCE = (2**63 - 1) // ROWS_PER_FILE - 1
BATCH_ROWS = 65_536
# Parquet is read one column chunk at a time, through a buffer of this size: pre-buffering
# (pyarrow's default) reads every row group of the file ahead, so memory grew with the file.
PARQUET_READ_BUFFER = 2**20


@dataclass(frozen=True)
class ChangeFile:
    """An opened, schema-checked change file ready to stream into staging."""

    table: LandingTable
    file: SequenceFile
    schema: pa.Schema  # staging schema: _lm_position, data columns, __rowMarker__
    read: Callable[[], Iterator[pa.RecordBatch]]
    has_marker: bool
    metadata: TableMetadata
    close: Callable[[], None] = lambda: None  # releases the open file

    def __enter__(self) -> ChangeFile:
        return self

    def __exit__(self, *exception: object) -> None:
        self.close()

    @property
    def data_columns(self) -> list[str]:
        return [str(name) for name in self.schema.names[1:-1]]

    def batches(self) -> Iterator[pa.RecordBatch]:
        """Stream positioned batches; raises LandingZoneError on a bad marker before commit."""
        first_position = self.file.sequence * ROWS_PER_FILE
        row = 0
        try:
            for batch in self.read():
                start = first_position + row
                positions = pa.array(np.arange(start, start + len(batch), dtype=np.int64))
                markers = self._markers(batch, row)
                data = [to_delta(batch.column(name), name, table=self.table.qualified_name,
                                 file=str(self.file.path)) for name in self.data_columns]
                yield pa.RecordBatch.from_arrays([positions, *data, markers], schema=self.schema)
                row += len(batch)
        except (pa.ArrowException, OSError) as error:
            raise self._error(f"cannot read rows after row {row}: {error}",
                              "replace the file with a complete, uncorrupted file",
                              UnreadableFileError) from error

    def _markers(self, batch: pa.RecordBatch, first_row: int) -> pa.Array:
        if not self.has_marker:
            return pa.repeat(pa.scalar(self.metadata.default_marker, pa.int32()), len(batch))
        markers = batch.column(ROW_MARKER)
        try:
            markers = pc.cast(markers, pa.int32())
        except pa.ArrowInvalid as error:
            raise self._error(f"{ROW_MARKER} holds a value that is not an integer: {error}",
                              f"use {MARKER_CHOICES}") from error
        keyless = not self.metadata.key_columns
        allowed = [INSERT] if keyless else sorted(VALID_MARKERS)
        bad = pc.invert(pc.fill_null(pc.is_in(markers, pa.array(allowed, pa.int32())), False))
        if pc.any(bad).as_py():
            index = pc.index(bad, True).as_py()
            value = markers[index].as_py()
            where = self._row_named(first_row + index)
            if keyless and value in VALID_MARKERS:
                raise self._error(
                    f"{where} has {ROW_MARKER}={value}, but the table has no "
                    "keyColumns, so only inserts (0) are possible",
                    "declare keyColumns in _metadata.json (recreate the table folder)")
            raise self._error(f"{where} has {ROW_MARKER}={value!r}", f"use {MARKER_CHOICES}")
        return markers

    def _row_named(self, row: int) -> str:
        """Row `row` (0 for the first) as the docs name it: a delimited file's line (the
        header is line 1, line breaks inside values count), else its row counted from 1."""
        text = self.metadata.delimited
        if text is None:
            return f"row {row + 1}"
        return f"line {row_line(self.read(), row, text.null_value)}"

    def _error(self, message: str, hint: str,
               kind: type[LandingZoneError] = RowMarkerError) -> LandingZoneError:
        return kind(message, table=self.table.qualified_name, file=str(self.file.path), hint=hint)


def open_change_file(table: LandingTable, file: SequenceFile, metadata: TableMetadata,
                     max_text_bytes: int = DEFAULT_MAX_TEXT_BYTES) -> ChangeFile:
    """Open a change file and check its columns against the contract (`max_text_bytes`: the
    most text a delimited one may hold)."""
    where = {"table": table.qualified_name, "file": str(file.path)}
    if file.sequence > MAX_SEQUENCE:
        raise FileNameError(f"sequence number {file.sequence} is above {MAX_SEQUENCE}",
                               hint="restart numbering in a new table folder", **where)
    if metadata.delimited is not None:
        return _checked(table, file, metadata, *_open_delimited(table, file, metadata,
                                                                     max_text_bytes))
    handle = table.door.open(file.path)
    try:
        return _checked(table, file, metadata, *_open_parquet(handle, where), handle.close)
    except BaseException:
        handle.close()
        raise


def _checked(table: LandingTable, file: SequenceFile, metadata: TableMetadata,
             arrow_schema: pa.Schema, read: Callable[[], Iterator[pa.RecordBatch]],
             close: Callable[[], None] = lambda: None) -> ChangeFile:
    """The change file, once its columns fit the contract."""
    where = {"table": table.qualified_name, "file": str(file.path)}
    names = arrow_schema.names
    has_marker = ROW_MARKER in names
    if has_marker and names[-1] != ROW_MARKER:
        raise RowMarkerError(f"{ROW_MARKER} must be the last column; columns are {names}",
                               hint=f"write {ROW_MARKER} as the last column", **where)
    data_fields = [staged_field(field, **where)
                   for field in arrow_schema if field.name != ROW_MARKER]
    reserved = [field.name for field in data_fields if field.name.startswith("_lm_")]
    if reserved:
        raise ColumnError(f"columns {reserved} use lakemirror's reserved prefix _lm_",
                               hint="rename these columns in the source", **where)
    needed = [*metadata.key_columns, *filter(None, [metadata.conditional_column])]
    missing = [name for name in needed if name not in names]
    if missing and names:
        raise ColumnError(f"columns {missing} named in _metadata.json are not in the file; "
                               f"columns are {names}",
                               hint="write every keyColumns (and ConditionalUpdateColumn) "
                                    "column into each file", **where)
    schema = pa.schema([pa.field(POSITION, pa.int64(), nullable=False), *data_fields,
                        pa.field(ROW_MARKER, pa.int32())])
    return ChangeFile(table, file, schema, read, has_marker, metadata, close)


Opened = tuple[pa.Schema, Callable[[], Iterator[pa.RecordBatch]]]


def _open_parquet(handle: ZoneFile, where: dict[str, str]) -> Opened:
    if handle.size == 0:
        raise UnreadableFileError("the Parquet file is empty (0 bytes)",
                               hint="write a complete Parquet file (an empty one has a footer)",
                               **where)
    try:
        parquet = pq.ParquetFile(handle, pre_buffer=False, buffer_size=PARQUET_READ_BUFFER)
    except (pa.ArrowException, OSError) as error:
        raise UnreadableFileError(f"not a readable Parquet file: {error}",
                               hint="replace it with a complete Parquet file", **where) from error
    layout = column_layout(parquet.schema_arrow)
    if layout is None:
        return parquet.schema_arrow, lambda: parquet.iter_batches(batch_size=BATCH_ROWS)
    return layout.schema, lambda: layout.batches(
        parquet.iter_batches(batch_size=BATCH_ROWS, columns=layout.read))


def _open_delimited(table: LandingTable, file: SequenceFile, metadata: TableMetadata,
                    max_text_bytes: int) -> Opened:
    assert metadata.delimited is not None
    text = open_delimited(file.path, metadata.delimited, metadata.schema_definition,
                          table=table.qualified_name, zone=table.door,
                          max_text_bytes=max_text_bytes)
    return text.schema, lambda: text.batches(max_rows=BATCH_ROWS)

