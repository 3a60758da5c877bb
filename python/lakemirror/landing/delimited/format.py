"""The delimited-text format of a table, as its _metadata.json declares it, and the contract's
data types; how pyarrow.csv is told to split that format."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.csv as pv

DATA_TYPES: dict[str, pa.DataType] = {
    "Double": pa.float64(),
    "Single": pa.float32(),
    "Int16": pa.int16(),
    "Int32": pa.int32(),
    "Int64": pa.int64(),
    "DateTime": pa.timestamp("us"),
    "IDate": pa.date32(),
    "ITime": pa.time64("us"),
    "String": pa.string(),
    "Boolean": pa.bool_(),
    "ByteArray": pa.binary(),
}

COLUMN_SEPARATORS = (",", ";", "|", "\t")
ROW_SEPARATORS = ("\r\n", "\n", "\r")
QUOTE_CHARACTERS = ('"', "'", "")
ESCAPE_CHARACTERS = ("\\", "/", '"', "")


@dataclass(frozen=True)
class DelimitedFormat:
    """FileFormatTypeProperties of a delimited-text table (open mirroring _metadata.json).

    Only the row separator ends a row; any other CR or LF is part of the value. The escape
    character makes the next character literal, in quoted and unquoted fields; when it equals
    the quote character, quotes are doubled inside quotes (a doubled quote is always read as
    one quote). An unquoted field equal to null_value as written is NULL.
    """

    column_separator: str = ","  # "," ";" "|" or tab
    row_separator: str = "\r\n"  # "\r\n" "\n" or "\r"
    quote_character: str = '"'  # '"' "'" or "" (no quoting)
    escape_character: str = "\\"  # "\\" "/" '"' or "" (none)
    null_value: str | None = None  # None or "": an empty unquoted field is NULL
    encoding: str = "utf-8"  # any Python text codec; a byte order mark is skipped
    first_row_as_header: bool = True  # must be true


@dataclass(frozen=True)
class ColumnDefinition:
    """One SchemaDefinition column."""

    name: str
    data_type: str  # a DATA_TYPES key
    nullable: bool = True


def schema(columns: list[ColumnDefinition]) -> pa.Schema:
    return pa.schema([pa.field(column.name, DATA_TYPES[column.data_type], column.nullable)
                      for column in columns])


def escape(fmt: DelimitedFormat) -> str:
    """The escape character that makes any next character literal ('' when none or doubling)."""
    return "" if fmt.escape_character == fmt.quote_character else fmt.escape_character


def parse_options(fmt: DelimitedFormat,
                  handler: Callable[[pv.InvalidRow], str] | None = None) -> pv.ParseOptions:
    """pyarrow.csv options; a doubled quote inside quotes is always one quote (as in RFC 4180)."""
    return pv.ParseOptions(delimiter=fmt.column_separator, quote_char=fmt.quote_character or False,
                           double_quote=True, escape_char=escape(fmt) or False,
                           newlines_in_values=True, ignore_empty_lines=False,
                           invalid_row_handler=handler)
