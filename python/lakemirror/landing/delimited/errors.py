"""The errors of reading a delimited-text file, each naming the table, the file, what is wrong
(on which line) and what to do."""

from __future__ import annotations

from pathlib import PurePath

from lakemirror.contract import MARKER_CHOICES, ROW_MARKER
from lakemirror.errors import (
    ColumnError, LandingZoneError, MetadataError, RowMarkerError, UnreadableFileError,
    ValueParseError,
)
from lakemirror.landing.delimited.format import ColumnDefinition, DelimitedFormat
from lakemirror.environment import MAX_TEXT_BYTES

_SHOWN_CHARS = 50
_EXAMPLES = {
    "Double": "3.14159, -2.5e-3 or nan",
    "Single": "3.14, -2.5e-3 or inf",
    "Int16": "-12 or 345 (up to 32767)",
    "Int32": "-12 or 345",
    "Int64": "-12 or 345",
    "DateTime": "2025-06-17 14:30:00, 2025-06-17T14:30:00.123456 or 2025-06-17 14:30:00+02:00",
    "IDate": "2025-06-17",
    "ITime": "14:30:00 or 14:30:00.123456",
    "String": "any text",
    "Boolean": "true, false, 1 or 0",
    "ByteArray": "base64 (AQID) or hexadecimal (0x010203)",
}


class FileErrors:
    """The errors of one file being read: its path, format and table, which every error names."""

    def __init__(self, path: PurePath, fmt: DelimitedFormat, table: str) -> None:
        self.path = path
        self.fmt = fmt
        self.table = table

    def error(self, message: str, hint: str,
              kind: type[LandingZoneError] = UnreadableFileError) -> LandingZoneError:
        return kind(message, table=self.table, file=str(self.path), hint=hint)

    # -- _metadata.json -------------------------------------------------------------------------

    def unsupported(self, option: str, value: str, allowed: tuple[str, ...]) -> LandingZoneError:
        return self.error(f"{option} {value!r} is not supported",
                          f"set {option} in _metadata.json to one of "
                          f"{', '.join(map(repr, allowed))}", MetadataError)

    def no_header(self) -> LandingZoneError:
        return self.error("FirstRowAsHeader is false, but the first row must name the columns",
                          "write a header row and set FirstRowAsHeader to true", MetadataError)

    def unknown_encoding(self) -> LandingZoneError:
        return self.error(f"Encoding {self.fmt.encoding!r} is not a known text encoding",
                          "use e.g. UTF-8, UTF-16, windows-1252, ISO-8859-1 or ascii",
                          MetadataError)

    def unknown_type(self, column: ColumnDefinition, known: list[str]) -> LandingZoneError:
        return self.error(f"column {column.name!r} has unknown type {column.data_type!r}",
                          f"use one of {', '.join(known)}", MetadataError)

    def marker_declared(self) -> LandingZoneError:
        return self.error(f"SchemaDefinition declares {ROW_MARKER}, which is not a data column",
                          f"remove {ROW_MARKER} from SchemaDefinition", MetadataError)

    def declared_twice(self, names: list[str]) -> LandingZoneError:
        return self.error(f"SchemaDefinition declares {_duplicates(names)} more than once",
                          "declare each column once", MetadataError)

    # -- the bytes ------------------------------------------------------------------------------

    def too_large(self, limit: int, compressed: bool) -> LandingZoneError:
        decompressed = " once decompressed" if compressed else ""
        return self.error(
            f"the file holds more than {limit} bytes{decompressed}, the most lakemirror "
            f"reads of one delimited-text file ({MAX_TEXT_BYTES})",
            f"split the file into smaller change files, or raise {MAX_TEXT_BYTES}")

    def unreadable(self, error: Exception) -> LandingZoneError:
        return self.error(f"cannot read or decompress the file: {error}",
                          "replace it with a complete file; .gz is gzip, .zst zstd and .snappy "
                          "snappy framing format")

    def undecodable(self, line: int, data: bytes, offset: int) -> LandingZoneError:
        return self.error(
            f"line {line}: bytes {data!r} at offset {offset} are not valid {self.fmt.encoding}",
            "write the file in the declared Encoding, or declare the encoding it uses in "
            "_metadata.json")

    def no_stand_in_left(self) -> LandingZoneError:
        return self.error("the file uses every private-use character, so none is left to stand in "
                          "for separators while parsing", "split the file into smaller files")

    def changed(self) -> LandingZoneError:
        return self.error("the file changed while lakemirror read it",
                          "write each change file elsewhere and move it into the table folder "
                          "once it is complete")

    def ends_with_escape(self) -> LandingZoneError:
        return self.error("the file ends with an escape character",
                          "escape the escape character itself, or remove it")

    # -- the header -----------------------------------------------------------------------------

    def empty_header(self) -> LandingZoneError:
        return self.error("line 1, the header row, is empty", "write the column names there")

    def unreadable_header(self, error: Exception) -> LandingZoneError:
        return self.error(f"cannot read the header row (line 1): {error}",
                          "write the column names on the first line, closing every quote there")

    def name_with_break(self, name: str) -> LandingZoneError:
        return self.error(
            f"column name {shown(name)} holds a line break: the rows probably do not end "
            f"with RowSeparator {self.fmt.row_separator!r}",
            "set RowSeparator in _metadata.json to what the file uses, and keep line "
            "breaks out of column names")

    def empty_name(self, names: list[str]) -> LandingZoneError:
        return self.error(f"the header row has an empty column name; columns are {names}",
                          "name every column", ColumnError)

    def named_twice(self, names: list[str]) -> LandingZoneError:
        return self.error(f"the header row names {_duplicates(names)} more than once",
                          "give each column a distinct name", ColumnError)

    def marker_not_last(self, names: list[str]) -> LandingZoneError:
        return self.error(f"{ROW_MARKER} must be the last column; columns are {names}",
                          f"write {ROW_MARKER} as the last column", RowMarkerError)

    def header_mismatch(self, missing: list[str], extra: list[str]) -> LandingZoneError:
        return self.error(f"the header row does not match SchemaDefinition: missing {missing}, "
                          f"not declared {extra}",
                          "write exactly the declared columns, or fix SchemaDefinition",
                          ColumnError)

    # -- the rows -------------------------------------------------------------------------------

    def parse_failure(self, error: BaseException | None) -> LandingZoneError:
        return self.error(f"cannot parse the file: {error}",
                          "check ColumnSeparator, QuoteCharacter and EscapeCharacter")

    def field_count(self, line: int, expected: int, actual: int, text: str) -> LandingZoneError:
        return self.error(
            f"line {line}: {expected} fields expected, as in the header, but {actual} found: "
            f"{shown(text)}",
            f"quote values that hold {self.fmt.column_separator!r}, and check ColumnSeparator "
            "and RowSeparator in _metadata.json")

    def unclosed_quote(self, line: int) -> LandingZoneError:
        return self.error(f"line {line}: a quoted field is still open at the end of the file",
                          f"close it with {self.fmt.quote_character!r}, and escape that character "
                          "inside quoted values")

    def bad_value(self, column: ColumnDefinition, line: int, value: str | None
                  ) -> LandingZoneError:
        """A NULL (`value` None) or a value that is not of the column's type."""
        problem = (f"NULL in a {column.data_type} column that is not nullable" if value is None
                   else f"{shown(value)} is not a valid {column.data_type}")
        message = f"line {line}, column {column.name!r}: {problem}"
        if column.name == ROW_MARKER:
            return self.error(message, f"write {MARKER_CHOICES}", RowMarkerError)
        hint = ("write a value, or declare the column nullable in SchemaDefinition"
                if value is None else f"write {column.data_type} values like "
                f"{_EXAMPLES[column.data_type]}, or fix the type in SchemaDefinition")
        return self.error(message, hint, ValueParseError)


def shown(value: str) -> str:
    return repr(value if len(value) <= _SHOWN_CHARS else value[:_SHOWN_CHARS] + "...")


def _duplicates(names: list[str]) -> list[str]:
    return sorted({name for name in names if names.count(name) > 1})
