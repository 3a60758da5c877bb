"""Open a delimited-text file: the checks made up front, then its rows as a stream."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath

import pyarrow as pa

from lakemirror.landing.delimited.encoding import Text
from lakemirror.landing.delimited.errors import FileErrors
from lakemirror.landing.delimited.format import ColumnDefinition, DelimitedFormat, schema
from lakemirror.landing.delimited.header import check_format, declared_columns
from lakemirror.landing.delimited.splitter import Splitter
from lakemirror.landing.zone import LandingZone
from lakemirror.landing.zone_door import ZoneDoor
from lakemirror.environment import DEFAULT_MAX_TEXT_BYTES


@dataclass(frozen=True)
class DelimitedText:
    """An opened delimited-text file: its typed schema and a stream of its rows."""

    schema: pa.Schema
    _batches: Callable[[int | None], Iterator[pa.RecordBatch]]

    def batches(self, *, max_rows: int | None = None) -> Iterator[pa.RecordBatch]:
        """Typed record batches in file order, read anew from the file on each call.

        Bad input raises a LandingZoneError that names the line, possibly after some batches
        came: a caller commits nothing before the stream has ended.
        """
        return self._batches(max_rows)


def open_delimited(path: PurePath, fmt: DelimitedFormat, columns: Sequence[ColumnDefinition] | None,
                   *, table: str, zone: ZoneDoor | None = None,
                   max_text_bytes: int = DEFAULT_MAX_TEXT_BYTES) -> DelimitedText:
    """Open a delimited-text file; `columns` types it, without them every column is a string.

    The format and the header are checked now; the rows are read, and checked, as they stream.
    A last `__rowMarker__` column becomes int32. Bad input raises a LandingZoneError that names
    the line: the header is line 1, and line breaks inside the values of earlier rows count.
    The file is opened through `zone` (by default the folder holding it), once per reading;
    more than `max_text_bytes` of text (decompressed) fail it.
    """
    zone = zone or LandingZone(Path(path.parent))
    errors = FileErrors(path, fmt, table)
    check_format(fmt, errors)
    declared = declared_columns(columns, errors)
    splitter = Splitter(Text(path, zone, errors, max_bytes=max_text_bytes))
    parsed = splitter.parse(declared)
    if parsed is None:
        empty = schema(list((declared or {}).values()))
        return DelimitedText(empty, lambda max_rows: iter(()))
    return DelimitedText(parsed.schema, lambda max_rows: splitter.batches(parsed, max_rows))


def read_delimited(path: PurePath, fmt: DelimitedFormat, columns: Sequence[ColumnDefinition] | None,
                   *, table: str, zone: ZoneDoor | None = None) -> pa.Table:
    """Read a whole delimited-text file into one table (staging streams it: open_delimited)."""
    text = open_delimited(path, fmt, columns, table=table, zone=zone)
    return pa.Table.from_batches(list(text.batches()), schema=text.schema)
