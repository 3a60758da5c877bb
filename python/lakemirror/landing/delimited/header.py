"""The checks made before any row is read: the format's options, the SchemaDefinition, and the
header row matched with it."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.csv as pv

from lakemirror.contract import ROW_MARKER
from lakemirror.landing.delimited.errors import FileErrors
from lakemirror.landing.delimited.format import (
    COLUMN_SEPARATORS,
    DATA_TYPES,
    ESCAPE_CHARACTERS,
    QUOTE_CHARACTERS,
    ROW_SEPARATORS,
    ColumnDefinition,
    DelimitedFormat,
    parse_options,
    schema,
)
from lakemirror.landing.delimited.lines import BREAKS
from lakemirror.landing.delimited.standins import Swaps, restored_text


@dataclass(frozen=True)
class Parse:
    """Everything needed to parse the text and type its columns."""

    swaps: Swaps
    header: list[str]  # column names as pyarrow reads them (with stand-ins)
    columns: list[ColumnDefinition]  # one per header column, the marker as Int32
    header_bytes: int  # of the header row as pyarrow reads it, with its row separator

    @property
    def schema(self) -> pa.Schema:
        return schema(self.columns)


def check_format(fmt: DelimitedFormat, errors: FileErrors) -> None:
    options = (("ColumnSeparator", fmt.column_separator, COLUMN_SEPARATORS),
               ("RowSeparator", fmt.row_separator, ROW_SEPARATORS),
               ("QuoteCharacter", fmt.quote_character, QUOTE_CHARACTERS),
               ("EscapeCharacter", fmt.escape_character, ESCAPE_CHARACTERS))
    for option, value, allowed in options:
        if value not in allowed:
            raise errors.unsupported(option, value, allowed)
    if not fmt.first_row_as_header:
        raise errors.no_header()
    try:
        "".encode(fmt.encoding)  # b"".decode skips the lookup
    except LookupError as error:
        raise errors.unknown_encoding() from error


def declared_columns(columns: Sequence[ColumnDefinition] | None, errors: FileErrors
                     ) -> dict[str, ColumnDefinition] | None:
    """SchemaDefinition columns by name, checked."""
    if columns is None:
        return None
    for column in columns:
        if column.data_type not in DATA_TYPES:
            raise errors.unknown_type(column, list(DATA_TYPES))
    names = [column.name for column in columns]
    if ROW_MARKER in names:
        raise errors.marker_declared()
    if len(set(names)) < len(names):
        raise errors.declared_twice(names)
    return {column.name: column for column in columns}


def parse(swaps: Swaps, head: bytes, declared: dict[str, ColumnDefinition] | None,
          errors: FileErrors) -> Parse:
    """Read the header row `head` (as pyarrow reads it) and match it with `declared`."""
    header = header_names(head, errors)
    names = [restored_text(name, swaps.restore) for name in header]
    _check_names(names, errors)
    return Parse(swaps, header, _columns(names, declared, errors),
                 len(head) + len(swaps.separator))


def header_names(head: bytes, errors: FileErrors) -> list[str]:
    """Column names as pyarrow reads them; the header row must hold no row separator."""
    if not head:
        raise errors.empty_header()
    try:
        names: list[str] = pv.read_csv(pa.BufferReader(head + b"\n"),
                                       parse_options=parse_options(errors.fmt)).column_names
    except pa.ArrowException as error:
        raise errors.unreadable_header(error) from error
    return names


def _check_names(names: list[str], errors: FileErrors) -> None:
    for name in names:
        if re.search(BREAKS, name):
            raise errors.name_with_break(name)
    if "" in names:
        raise errors.empty_name(names)
    if len(set(names)) < len(names):
        raise errors.named_twice(names)
    if ROW_MARKER in names[:-1]:
        raise errors.marker_not_last(names)


def _columns(names: list[str], declared: dict[str, ColumnDefinition] | None,
             errors: FileErrors) -> list[ColumnDefinition]:
    """The definition of each header column, the marker as non-nullable Int32."""
    has_marker = names[-1] == ROW_MARKER
    data_names = names[:-1] if has_marker else names
    marker = [ColumnDefinition(ROW_MARKER, "Int32", nullable=False)] if has_marker else []
    if declared is None:
        return [ColumnDefinition(name, "String") for name in data_names] + marker
    missing = [name for name in declared if name not in data_names]
    extra = [name for name in data_names if name not in declared]
    if missing or extra:
        raise errors.header_mismatch(missing, extra)
    return [declared[name] for name in data_names] + marker
