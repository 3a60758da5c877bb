"""Read a delimited-text landing file (CSV and its kin) into Arrow, typed by its SchemaDefinition.

pyarrow.csv parses every field as a string; pyarrow.compute types whole columns. Where
pyarrow.csv does not follow the declared format exactly, the text is adjusted first: a CR or LF
that is not part of the row separator, and an escaped character of NullValue, are swapped for
unused private-use characters (and back in the values); a sentinel row after the last one shows
a quote left open; empty lines are marked where pyarrow would read them as rows of empty
fields; and no block of text ends between a CR and an LF (apache/arrow#51368).

A file's whole text is held in memory, so a file (after decompression, which streams) may hold
at most LAKEMIRROR_MAX_TEXT_BYTES bytes (default 2 GiB): a larger file, or a decompression
bomb, fails its table instead of taking all memory.
"""

from __future__ import annotations

import binascii
import codecs
import os
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from functools import reduce
from itertools import chain
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pv

from lakemirror.errors import (
    ColumnError,
    ConfigError,
    LandingZoneError,
    MetadataError,
    RowMarkerError,
    UnreadableFileError,
    ValueParseError,
)
from lakemirror.landing.zone import LandingZone, ZoneFile, chunks, read_bounded
from lakemirror.reference import ROW_MARKER

COMPRESSION_SUFFIXES = (".gz", ".zst", ".snappy")

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

_COLUMN_SEPARATORS = (",", ";", "|", "\t")
_ROW_SEPARATORS = ("\r\n", "\n", "\r")
_QUOTE_CHARACTERS = ('"', "'", "")
_ESCAPE_CHARACTERS = ("\\", "/", '"', "")
_ARROW_CODECS = {".gz": "gzip", ".zst": "zstd"}
_SNAPPY_STREAM = b"\xff\x06\x00\x00sNaPpY"  # the framing format's stream identifier chunk
MAX_TEXT_BYTES = "LAKEMIRROR_MAX_TEXT_BYTES"
DEFAULT_MAX_TEXT_BYTES = 2 << 30
_BREAKS = r"\r\n|\r|\n"
_BLOCK_SIZE = 1 << 22
_CRLF_CHUNK = 1 << 18  # fits in a CPU cache
_SHOWN_CHARS = 50
_PRIVATE_USE = (range(0xE000, 0xF900), range(0xF0000, 0xFFFFE), range(0x100000, 0x10FFFE))
_DATE = "[0-9]{4}-[0-9]{2}-[0-9]{2}"
_TIME = r"[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?"
_ZONE = "(Z|[+-][0-9]{2}(:?[0-9]{2})?)"
_BASE64_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_SEXTETS = np.zeros(256, np.uint32)
_SEXTETS[np.frombuffer(_BASE64_ALPHABET, np.uint8)] = np.arange(64)


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


def read_delimited(path: Path, fmt: DelimitedFormat, columns: Sequence[ColumnDefinition] | None,
                   *, table: str, zone: LandingZone | None = None) -> pa.Table:
    """Read a whole delimited-text file; `columns` types it, without them every column is a string.

    A last `__rowMarker__` column becomes int32. Bad input raises a LandingZoneError that names
    the line: the header is line 1, and line breaks inside the values of earlier rows count.
    The file is opened through `zone` (by default the folder holding it).
    """
    reader = _Reader(path, fmt, table, zone or LandingZone(path.parent))
    declared = reader.declared(columns)
    text = reader.text()
    if not text:
        return _schema(list((declared or {}).values())).empty_table()
    parse = reader.prepare(text, declared)
    return pa.Table.from_batches(list(reader.batches(parse)), schema=_schema(parse.columns))


_Converter = Callable[[pa.Array], pa.Array]


@dataclass(frozen=True)
class _Text:
    """UTF-8 text as pyarrow.csv must see it, and how to undo the swaps."""

    data: bytes
    tail: bytes  # a sentinel row to read after the data
    restore: dict[str, str]  # placeholder -> the character it stands for
    null_value: str  # a NULL field as pyarrow sees it, after unescaping
    sentinel: str  # the value of every field of the sentinel row
    blank: str  # marks an empty line, where needed


@dataclass(frozen=True)
class _Parse:
    """Everything needed to parse the text and type its columns."""

    text: _Text
    header: list[str]  # column names as pyarrow reads them (with placeholders)
    columns: list[ColumnDefinition]  # one per header column, the marker as Int32


class _Reader:
    """One file being read: its path, format and table, which every error names."""

    def __init__(self, path: Path, fmt: DelimitedFormat, table: str, zone: LandingZone) -> None:
        self.path = path
        self.fmt = fmt
        self.table = table
        self.zone = zone
        self._check_format()

    def error(self, message: str, hint: str,
              kind: type[LandingZoneError] = UnreadableFileError) -> LandingZoneError:
        return kind(message, table=self.table, file=str(self.path), hint=hint)

    def _check_format(self) -> None:
        fmt = self.fmt
        options = (("ColumnSeparator", fmt.column_separator, _COLUMN_SEPARATORS),
                   ("RowSeparator", fmt.row_separator, _ROW_SEPARATORS),
                   ("QuoteCharacter", fmt.quote_character, _QUOTE_CHARACTERS),
                   ("EscapeCharacter", fmt.escape_character, _ESCAPE_CHARACTERS))
        for option, value, allowed in options:
            if value not in allowed:
                raise self.error(f"{option} {value!r} is not supported",
                                 f"set {option} in _metadata.json to one of "
                                 f"{', '.join(map(repr, allowed))}", MetadataError)
        if not fmt.first_row_as_header:
            raise self.error("FirstRowAsHeader is false, but the first row must name the columns",
                             "write a header row and set FirstRowAsHeader to true", MetadataError)
        try:
            "".encode(fmt.encoding)  # b"".decode skips the lookup
        except LookupError as error:
            raise self.error(f"Encoding {fmt.encoding!r} is not a known text encoding",
                             "use e.g. UTF-8, UTF-16, windows-1252, ISO-8859-1 or ascii",
                             MetadataError) from error

    def declared(self, columns: Sequence[ColumnDefinition] | None
                 ) -> dict[str, ColumnDefinition] | None:
        """SchemaDefinition columns by name, checked."""
        if columns is None:
            return None
        for column in columns:
            if column.data_type not in DATA_TYPES:
                raise self.error(f"column {column.name!r} has unknown type {column.data_type!r}",
                                 f"use one of {', '.join(DATA_TYPES)}", MetadataError)
        names = [column.name for column in columns]
        if ROW_MARKER in names:
            raise self.error(f"SchemaDefinition declares {ROW_MARKER}, which is not a data column",
                             f"remove {ROW_MARKER} from SchemaDefinition", MetadataError)
        if len(set(names)) < len(names):
            raise self.error(f"SchemaDefinition declares {_duplicates(names)} more than once",
                             "declare each column once", MetadataError)
        return {column.name: column for column in columns}

    # -- bytes to UTF-8 text ------------------------------------------------------------------

    def text(self) -> bytes:
        """The file's content as UTF-8 without a byte order mark."""
        raw = self._decompressed()
        try:
            utf8 = raw if _is_utf8_codec(self.fmt.encoding) and _valid_utf8(raw) \
                else raw.decode(self.fmt.encoding).encode("utf-8")
        except UnicodeDecodeError as error:
            line = 1 + _count_breaks(raw[:error.start].decode(self.fmt.encoding, "replace"))
            raise self.error(
                f"line {line}: bytes {raw[error.start:error.end]!r} at offset {error.start} are "
                f"not valid {self.fmt.encoding}",
                "write the file in the declared Encoding, or declare the encoding it uses in "
                "_metadata.json") from error
        return utf8.removeprefix(codecs.BOM_UTF8)

    def _decompressed(self) -> bytes:
        """The file's bytes, decompressed as its name says, at most max_text_bytes() of them."""
        import cramjam

        limit = max_text_bytes()
        suffix = self.path.suffix.lower()
        with self.zone.open(self.path) as handle:
            try:
                data = (None if suffix not in COMPRESSION_SUFFIXES and handle.size > limit
                        else read_bounded(_decompressing(handle, suffix), limit))
            except (OSError, pa.ArrowException, cramjam.DecompressionError) as error:
                raise self._unreadable(error) from error
        if data is None:
            decompressed = " once decompressed" if suffix in COMPRESSION_SUFFIXES else ""
            raise self.error(
                f"the file holds more than {limit} bytes{decompressed}, the most lakemirror "
                f"reads of one delimited-text file ({MAX_TEXT_BYTES})",
                f"split the file into smaller change files (or raise {MAX_TEXT_BYTES}, if "
                "the machine has the memory for it)")
        return data

    def _unreadable(self, error: Exception) -> LandingZoneError:
        return self.error(f"cannot read or decompress the file: {error}",
                          "replace it with a complete file; .gz is gzip, .zst zstd and .snappy "
                          "snappy framing format")

    # -- text to pyarrow.csv input ------------------------------------------------------------

    def prepare(self, text: bytes, declared: dict[str, ColumnDefinition] | None) -> _Parse:
        """Swap what pyarrow.csv would misread, read the header and match it with `declared`."""
        escape = _escape(self.fmt).encode()
        if _escaped(text, len(text), escape):
            raise self.error("the file ends with an escape character",
                             "escape the escape character itself, or remove it")
        token = (self.fmt.null_value or "").encode()
        unused = self._unused(text, token.decode())
        restore: dict[str, str] = {}
        steps = _escape_steps(text, token, self.fmt, unused, restore)
        text = _replace(text, steps)
        newline_steps = _newline_steps(text, self.fmt.row_separator, unused, restore)
        text = _replace(text, newline_steps)
        token = _replace(token, steps + newline_steps)
        sentinel, blank = next(unused), next(unused)
        header = self._header(text)
        names = [_restored_text(name, restore) for name in header]
        self._check_names(names)
        columns = self._columns(names, declared)
        tail = self._sentinel_row(text, sentinel, len(header))
        null_value = _unescape(token.decode(), escape.decode())
        return _Parse(_Text(text, tail, restore, null_value, sentinel, blank), header, columns)

    def _unused(self, text: bytes, avoid: str) -> Iterator[str]:
        """Private-use characters found neither in the text nor in `avoid`."""
        quick = b"\xee" not in text  # no character U+E000..U+EFFF occurs
        for code in chain(*_PRIVATE_USE):
            char = chr(code)
            if char not in avoid and ((quick and code < 0xF000) or char.encode() not in text):
                yield char
        raise self.error("the file uses every private-use character, so none is left to stand in "
                         "for separators while parsing", "split the file into smaller files")

    def _header(self, text: bytes) -> list[str]:
        """Column names as pyarrow reads them; the header row must hold no row separator."""
        end = text.find(self.fmt.row_separator.encode())
        head = text if end < 0 else text[:end]
        if not head:
            raise self.error("line 1, the header row, is empty", "write the column names there")
        try:
            names: list[str] = pv.read_csv(pa.BufferReader(head + b"\n"),
                                           parse_options=_parse_options(self.fmt)).column_names
        except pa.ArrowException as error:
            raise self.error(f"cannot read the header row (line 1): {error}",
                             "write the column names on the first line, closing every quote "
                             "there") from error
        return names

    def _check_names(self, names: list[str]) -> None:
        for name in names:
            if re.search(_BREAKS, name):
                raise self.error(
                    f"column name {_shown(name)} holds a line break: the rows probably do not end "
                    f"with RowSeparator {self.fmt.row_separator!r}",
                    "set RowSeparator in _metadata.json to what the file uses, and keep line "
                    "breaks out of column names")
        if "" in names:
            raise self.error(f"the header row has an empty column name; columns are {names}",
                             "name every column", ColumnError)
        if len(set(names)) < len(names):
            raise self.error(f"the header row names {_duplicates(names)} more than once",
                             "give each column a distinct name", ColumnError)
        if ROW_MARKER in names[:-1]:
            raise self.error(f"{ROW_MARKER} must be the last column; columns are {names}",
                             f"write {ROW_MARKER} as the last column", RowMarkerError)

    def _columns(self, names: list[str], declared: dict[str, ColumnDefinition] | None
                 ) -> list[ColumnDefinition]:
        """The definition of each header column, the marker as non-nullable Int32."""
        has_marker = names[-1] == ROW_MARKER
        data_names = names[:-1] if has_marker else names
        marker = [ColumnDefinition(ROW_MARKER, "Int32", nullable=False)] if has_marker else []
        if declared is None:
            return [ColumnDefinition(name, "String") for name in data_names] + marker
        missing = [name for name in declared if name not in data_names]
        extra = [name for name in data_names if name not in declared]
        if missing or extra:
            raise self.error(f"the header row does not match SchemaDefinition: missing {missing}, "
                             f"not declared {extra}",
                             "write exactly the declared columns, or fix SchemaDefinition",
                             ColumnError)
        return [declared[name] for name in data_names] + marker

    def _sentinel_row(self, text: bytes, sentinel: str, width: int) -> bytes:
        """A row after the last one: if a quote is left open, it swallows this row."""
        separator = self.fmt.row_separator.encode()
        ends_row = text.endswith(separator) and not _escaped(
            text, len(text) - len(separator), _escape(self.fmt).encode())
        row = self.fmt.column_separator.join([sentinel] * width).encode()
        return row if ends_row else separator + row

    # -- parsing and typing -------------------------------------------------------------------

    def batches(self, parse: _Parse) -> Iterator[pa.RecordBatch]:
        """Typed record batches in file order."""
        strings = self._strings(parse)
        schema = _schema(parse.columns)
        row = 0
        for batch in strings.to_batches():
            arrays = [self._convert(batch.column(index), column, strings, row)
                      for index, column in enumerate(parse.columns)]
            yield pa.RecordBatch.from_arrays(arrays, schema=schema)
            row += batch.num_rows

    def _strings(self, parse: _Parse) -> pa.Table:
        """Every field as a string (NULL where NullValue says), without the sentinel row."""
        strings = self._parsed(parse)
        if strings.num_columns > 1 and _has_empty_row(strings):
            # pyarrow reads an empty line as a row of empty fields; it has one field
            parse = replace(parse, text=_marked_empty_lines(parse.text, self.fmt.row_separator))
            strings = self._parsed(parse)
        last = strings.num_rows - 1
        if strings.column(0)[last].as_py() != parse.text.sentinel:
            raise self._unclosed_quote(self._line(strings, last))
        return strings.slice(0, last).rename_columns([column.name for column in parse.columns])

    def _parsed(self, parse: _Parse) -> pa.Table:
        try:
            return _restored(self._read_csv(parse), parse.text.restore)
        except pa.ArrowException as error:
            raise self._parse_error(parse, error) from error

    def _read_csv(self, parse: _Parse, *, use_threads: bool = True,
                  handler: Callable[[pv.InvalidRow], str] | None = None) -> pa.Table:
        parse_options = _parse_options(self.fmt, handler)
        convert_options = pv.ConvertOptions(
            column_types=dict.fromkeys(parse.header, pa.string()), include_columns=parse.header,
            strings_can_be_null=True, null_values=[parse.text.null_value],
            quoted_strings_can_be_null=False, check_utf8=False)

        def read(block_size: int) -> pa.Table:
            return pv.read_csv(_Blocks(parse.text.data, parse.text.tail),
                               read_options=pv.ReadOptions(use_threads=use_threads,
                                                           block_size=block_size),
                               parse_options=parse_options, convert_options=convert_options)

        try:
            return read(_BLOCK_SIZE)
        except pa.ArrowInvalid as error:
            if "straddle" not in str(error):  # a row is longer than a block
                raise
            return read(min(len(parse.text.data) + len(parse.text.tail) + 1, 2**31 - 1))

    def _parse_error(self, parse: _Parse, error: pa.ArrowException) -> LandingZoneError:
        """Name the first row whose field count is wrong (read again, slowly, to find it)."""
        invalid: list[pv.InvalidRow] = []

        def skip(row: pv.InvalidRow) -> str:
            invalid.append(row)
            return "skip"

        try:
            strings = _restored(self._read_csv(parse, use_threads=False, handler=skip),
                                parse.text.restore)
        except pa.ArrowException:
            invalid.clear()
        if not invalid:
            return self.error(f"cannot parse the file: {error}",
                              "check ColumnSeparator, QuoteCharacter and EscapeCharacter")
        row = invalid[0]
        line = self._line(strings, row.number - 2)
        if parse.text.sentinel in row.text:
            return self._unclosed_quote(line)
        return self.error(
            f"line {line}: {row.expected_columns} fields expected, as in the header, but "
            f"{row.actual_columns} found: {_shown(_restored_text(row.text, parse.text.restore))}",
            f"quote values that hold {self.fmt.column_separator!r}, and check ColumnSeparator "
            "and RowSeparator in _metadata.json")

    def _unclosed_quote(self, line: int) -> LandingZoneError:
        return self.error(f"line {line}: a quoted field is still open at the end of the file",
                          f"close it with {self.fmt.quote_character!r}, and escape that character "
                          "inside quoted values")

    def _line(self, strings: pa.Table, row: int) -> int:
        """The line where data row `row` starts: header and row separators plus value breaks."""
        head = strings.slice(0, row)
        breaks: int = sum(pc.sum(pc.count_substring_regex(column, _BREAKS)).as_py() or 0
                          for column in head.columns)
        nulls: int = sum(column.null_count for column in head.columns)
        return 2 + row + breaks + nulls * _count_breaks(self.fmt.null_value or "")

    def _convert(self, values: pa.Array, column: ColumnDefinition, strings: pa.Table,
                 first_row: int) -> pa.Array:
        if not column.nullable and values.null_count:
            index = pc.index(pc.is_null(values), True).as_py()
            raise self._value_error(column, self._line(strings, first_row + index), None)
        convert = _CONVERTERS[column.data_type]
        try:
            return convert(values)
        except pa.ArrowInvalid:
            index = _first_failure(values, convert)
            line = self._line(strings, first_row + index)
            raise self._value_error(column, line, values[index].as_py()) from None

    def _value_error(self, column: ColumnDefinition, line: int, value: str | None
                     ) -> LandingZoneError:
        problem = (f"NULL in a {column.data_type} column that is not nullable" if value is None
                   else f"{_shown(value)} is not a valid {column.data_type}")
        message = f"line {line}, column {column.name!r}: {problem}"
        if column.name == ROW_MARKER:
            return self.error(message, "write 0 (insert), 1 (update), 2 (delete) or 4 (upsert)",
                              RowMarkerError)
        hint = ("write a value, or declare the column nullable in SchemaDefinition"
                if value is None else f"write {column.data_type} values like "
                f"{_EXAMPLES[column.data_type]}, or fix the type in SchemaDefinition")
        return self.error(message, hint, ValueParseError)


def max_text_bytes() -> int:
    """The most bytes of text one delimited file may hold, from LAKEMIRROR_MAX_TEXT_BYTES."""
    value = os.environ.get(MAX_TEXT_BYTES, "").strip()
    if not value:
        return DEFAULT_MAX_TEXT_BYTES
    if not value.isdigit() or int(value) == 0:
        raise ConfigError(f"{MAX_TEXT_BYTES}={value!r} is not a positive number of bytes",
                          hint=f"set {MAX_TEXT_BYTES} to e.g. {DEFAULT_MAX_TEXT_BYTES}, or unset "
                               "it")
    return int(value)


def _decompressing(handle: ZoneFile, suffix: str) -> Iterator[bytes]:
    """The file's bytes, decompressed piece by piece as its name says."""
    if suffix == ".snappy":
        yield from _unsnappy(handle)
    elif suffix in _ARROW_CODECS:
        with pa.CompressedInputStream(handle, _ARROW_CODECS[suffix]) as stream:
            yield from chunks(stream)
    else:
        yield from chunks(handle)


def _unsnappy(handle: ZoneFile) -> Iterator[bytes]:
    """Snappy framing format, decompressed a run of whole chunks at a time (each run led by the
    stream identifier, which the format allows to repeat)."""
    import cramjam

    pending = bytearray()
    for piece in chunks(handle):
        pending += piece
        end = _whole_chunks(pending)
        if end:
            yield bytes(cramjam.snappy.decompress(_SNAPPY_STREAM + pending[:end]))
            del pending[:end]
    if pending:  # a truncated chunk: let the decompressor say so
        yield bytes(cramjam.snappy.decompress(_SNAPPY_STREAM + pending))


def _whole_chunks(data: bytearray) -> int:
    """The length of the leading run of whole chunks (type byte, 24-bit length, body)."""
    end = 0
    while end + 4 <= len(data):
        following = end + 4 + int.from_bytes(data[end + 1:end + 4], "little")
        if following > len(data):
            break
        end = following
    return end


class _Blocks:
    """Data, then a tail, as a file that pyarrow.csv reads in blocks.

    pyarrow drops the LF that starts a block after a block that ends in CR, even inside a quoted
    value (apache/arrow#51368), so such a block ends one byte early. The data never ends in a
    CR before the tail's LF (a lone CR is data, swapped for a placeholder).
    """

    closed = False

    def __init__(self, data: bytes, tail: bytes) -> None:
        self._data, self._tail, self._at = memoryview(data), tail, 0

    def read(self, size: int = -1) -> bytes | memoryview:
        data, start = self._data, self._at
        end = len(data) + len(self._tail)
        end = end if size < 0 else min(start + size, end)
        if end - start > 1 and end < len(data) and data[end - 1] == 13 and data[end] == 10:
            end -= 1
        self._at = end
        if end <= len(data):
            return data[start:end]
        return bytes(data[start:]) + self._tail[max(start - len(data), 0):end - len(data)]


# -- text helpers -----------------------------------------------------------------------------

def _escape(fmt: DelimitedFormat) -> str:
    """The escape character that makes any next character literal ('' when none or doubling)."""
    return "" if fmt.escape_character == fmt.quote_character else fmt.escape_character


def _parse_options(fmt: DelimitedFormat,
                   handler: Callable[[pv.InvalidRow], str] | None = None) -> pv.ParseOptions:
    """pyarrow.csv options; a doubled quote inside quotes is always one quote (as in RFC 4180)."""
    return pv.ParseOptions(delimiter=fmt.column_separator, quote_char=fmt.quote_character or False,
                           double_quote=True, escape_char=_escape(fmt) or False,
                           newlines_in_values=True, ignore_empty_lines=False,
                           invalid_row_handler=handler)


def _is_utf8_codec(encoding: str) -> bool:
    return codecs.lookup(encoding).name == "utf-8"


def _valid_utf8(data: bytes) -> bool:
    offsets = pa.py_buffer(np.array([0, len(data)], np.int64))
    array = pa.Array.from_buffers(pa.large_string(), 1, [None, offsets, pa.py_buffer(data)])
    try:
        array.validate(full=True)
    except pa.ArrowInvalid:
        return False
    return True


def _escaped(text: bytes, end: int, escape: bytes) -> bool:
    """Whether an odd run of escape characters ends at `end`, so it escapes what follows."""
    start = end
    while escape and start > 0 and text[start - 1] == escape[0]:
        start -= 1
    return (end - start) % 2 == 1


def _replace(data: bytes, steps: list[tuple[bytes, bytes]]) -> bytes:
    for old, new in steps:
        data = data.replace(old, new)
    return data


def _escape_steps(text: bytes, token: bytes, fmt: DelimitedFormat, unused: Iterator[str],
                  restore: dict[str, str]) -> list[tuple[bytes, bytes]]:
    """Steps that keep escaped characters apart from plain ones where pyarrow would merge them.

    pyarrow unescapes before comparing with NullValue, so an escaped character of NullValue
    gets its own placeholder; so does an escaped CR, which must not join a CRLF row separator.
    Escaped escape characters are masked meanwhile, so that pairs are found left to right.
    """
    escape = _escape(fmt)
    if not escape or (escape.encode() not in text and escape.encode() not in token):
        return []
    chars = set(token.decode()) | ({"\r"} if fmt.row_separator == "\r\n" else set())
    pairs = [(escape + char).encode() for char in sorted(chars - {escape})]
    steps = []
    for pair in pairs:
        if pair in text or pair in token:
            placeholder = next(unused)
            restore[placeholder] = pair.decode()[1:]
            steps.append((pair, (escape + placeholder).encode()))
    if not steps:
        return []
    mask = next(unused).encode()
    return [(2 * escape.encode(), mask), *steps, (mask, 2 * escape.encode())]


def _newline_steps(text: bytes, separator: str, unused: Iterator[str],
                   restore: dict[str, str]) -> list[tuple[bytes, bytes]]:
    """Steps that hide every CR and LF that is not part of a row separator."""
    if separator == "\r\n":
        if _only_crlf(text):
            return []
        cr, lf, crlf = next(unused), next(unused), next(unused)
        restore.update({cr: "\r", lf: "\n"})
        return [(b"\r\n", crlf.encode()), (b"\r", cr.encode()), (b"\n", lf.encode()),
                (crlf.encode(), b"\r\n")]
    other = "\n" if separator == "\r" else "\r"
    if other.encode() not in text:
        return []
    placeholder = next(unused)
    restore[placeholder] = other
    return [(other.encode(), placeholder.encode())]


def _only_crlf(text: bytes) -> bool:
    """Whether every CR is followed by LF and every LF follows a CR."""
    octets = np.frombuffer(text, np.uint8)
    if octets[0] == 10 or octets[-1] == 13:
        return False
    for start in range(0, len(octets), _CRLF_CHUNK):
        chunk = octets[start:start + _CRLF_CHUNK + 1]
        if not np.array_equal(chunk[:-1] == 13, chunk[1:] == 10):
            return False
    return True


def _unescape(value: str, escape: str) -> str:
    return re.sub(re.escape(escape) + "(.)", r"\1", value, flags=re.S) if escape else value


def _restored_text(value: str, restore: dict[str, str]) -> str:
    for placeholder, char in restore.items():
        value = value.replace(placeholder, char)
    return value


def _restored(table: pa.Table, restore: dict[str, str]) -> pa.Table:
    columns = []
    for column in table.columns:
        for placeholder, char in restore.items():
            column = pc.replace_substring(column, placeholder, char)
        columns.append(column)
    return pa.table(columns, names=table.column_names)


def _has_empty_row(strings: pa.Table) -> bool:
    """Whether some row has only empty or NULL fields."""
    empty = [pc.equal(pc.fill_null(pc.binary_length(column), 0), 0) for column in strings.columns]
    return bool(pc.any(reduce(pc.and_, empty)).as_py())


def _marked_empty_lines(text: _Text, separator: str) -> _Text:
    """Text with a placeholder on each empty line (and inside quoted values, restored there)."""
    double = 2 * separator.encode()
    marked = (separator + text.blank + separator).encode()
    data = text.data.replace(double, marked).replace(double, marked)  # twice for runs
    return replace(text, data=data, restore={**text.restore, text.blank: ""})


def _count_breaks(text: str) -> int:
    return len(re.findall(_BREAKS, text))


def _shown(value: str) -> str:
    return repr(value if len(value) <= _SHOWN_CHARS else value[:_SHOWN_CHARS] + "...")


def _duplicates(names: list[str]) -> list[str]:
    return sorted({name for name in names if names.count(name) > 1})


def _schema(columns: list[ColumnDefinition]) -> pa.Schema:
    return pa.schema([pa.field(column.name, DATA_TYPES[column.data_type], column.nullable)
                      for column in columns])


# -- typing strings -----------------------------------------------------------------------------

def _first_failure(values: pa.Array, convert: _Converter) -> int:
    """Index of the first value `convert` rejects, given that it rejects the whole array."""
    good, bad = 0, len(values)  # a prefix of `good` values converts, of `bad` values fails
    while bad - good > 1:
        middle = (good + bad) // 2
        try:
            convert(values.slice(0, middle))
            good = middle
        except pa.ArrowInvalid:
            bad = middle
    return good


def _require(matches: pa.Array) -> None:
    """Reject the array unless every non-null value matched."""
    if not pc.all(matches, min_count=0).as_py():
        raise pa.ArrowInvalid("a value has the wrong form")


def _integers(arrow_type: pa.DataType) -> _Converter:
    def convert(values: pa.Array) -> pa.Array:
        integers = pc.cast(values, arrow_type)
        if pc.any(pc.starts_with(values, "0x", ignore_case=True)).as_py():
            raise pa.ArrowInvalid("pyarrow reads 0x1F as hexadecimal; the format does not")
        return integers
    return convert


def _cast(arrow_type: pa.DataType) -> _Converter:
    """A cast, where pyarrow's parsing is the format.

    Floats: 1.5, -2e3, nan, inf; dates: YYYY-MM-DD only; booleans: true, false, 1 or 0, any case.
    """
    def convert(values: pa.Array) -> pa.Array:
        return pc.cast(values, arrow_type)
    return convert


def _plain_timestamps(text: pa.Array) -> pa.Array | None:
    """The quick path: naive 'YYYY-MM-DD HH:MM:SS[.ffffff]' (or with T) only, else None.

    pyarrow also reads shorter forms (no seconds), which are under 19 characters long.
    """
    if (pc.min(pc.binary_length(text)).as_py() or 19) < 19:
        return None
    try:
        return pc.cast(text, pa.timestamp("us"))
    except pa.ArrowInvalid:
        return None


def _microseconds(values: pa.Array) -> pa.Array:
    """Cut fractions of a second after the sixth digit (SQL Server writes seven)."""
    return pc.replace_substring_regex(values, r"(\.[0-9]{6})[0-9]+", r"\1")


def _datetimes(values: pa.Array) -> pa.Array:
    """ISO 8601 date and time; with a zone offset (or Z) converted to UTC."""
    plain = _plain_timestamps(values)
    if plain is not None:
        return plain
    _require(pc.match_substring_regex(values, f"^{_DATE}[T ]{_TIME}{_ZONE}?$"))
    text = _microseconds(values)
    text = pc.if_else(pc.match_substring_regex(text, f"{_ZONE}$"), text,
                      pc.binary_join_element_wise(text, "Z", ""))
    return pc.cast(pc.cast(text, pa.timestamp("us", "UTC")), pa.timestamp("us"))


def _times(values: pa.Array) -> pa.Array:
    stamps = pc.binary_join_element_wise("1970-01-01 ", values, "")
    plain = _plain_timestamps(stamps)
    if plain is None:
        _require(pc.match_substring_regex(values, f"^{_TIME}$"))
        plain = pc.cast(_microseconds(stamps), pa.timestamp("us"))
    return pc.cast(plain, pa.time64("us"))


def _unchanged(values: pa.Array) -> pa.Array:
    return values


def _binaries(values: pa.Array) -> pa.Array:
    """Base64, or hexadecimal after 0x."""
    is_hex = pc.match_substring_regex(values, "^0[xX]")
    _require(pc.if_else(
        is_hex, pc.match_substring_regex(values, "^0[xX]([0-9A-Fa-f]{2})*$"),
        pc.match_substring_regex(
            values, "^([A-Za-z0-9+/]{4})*([A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$")))
    is_hex = pc.fill_null(is_hex, False)
    text = pc.fill_null(values, "")
    decoded = pc.if_else(is_hex, _from_hex(pc.if_else(is_hex, text, "0x")),
                         _from_base64(pc.if_else(is_hex, "", text)))
    return pc.if_else(pc.is_null(values), pa.scalar(None, pa.binary()), decoded)


def _concatenated(values: pa.Array) -> tuple[np.ndarray, pa.Buffer]:
    """Each value's length, and all values as one buffer."""
    lengths = pc.binary_length(values).to_numpy(zero_copy_only=False).astype(np.int64)
    whole = pa.ListArray.from_arrays(pa.array([0, len(values)], pa.int32()), values)
    return lengths, pc.binary_join(whole, "")[0].as_buffer()


def _binary_array(lengths: np.ndarray, data: object) -> pa.Array:
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    return pa.Array.from_buffers(pa.binary(), len(lengths),
                                 [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def _from_hex(values: pa.Array) -> pa.Array:
    lengths, digits = _concatenated(pc.utf8_slice_codeunits(values, 2))
    return _binary_array(lengths // 2, binascii.a2b_hex(digits))


def _from_base64(values: pa.Array) -> pa.Array:
    """Decode valid padded base64, all values at once."""
    lengths, data = _concatenated(values)
    sextets = _SEXTETS[np.frombuffer(data, np.uint8)].reshape(-1, 4)
    words = (sextets[:, 0] << 18) | (sextets[:, 1] << 12) | (sextets[:, 2] << 6) | sextets[:, 3]
    octets = np.stack([words >> 16, words >> 8, words], axis=1).astype(np.uint8).ravel()
    padding = pc.count_substring(values, "=").to_numpy(zero_copy_only=False)
    ends = np.cumsum(lengths // 4 * 3)
    keep = np.ones(len(octets), bool)
    keep[ends[padding > 0] - 1] = False
    keep[ends[padding > 1] - 2] = False
    return _binary_array(lengths // 4 * 3 - padding, octets[keep])


_CONVERTERS: dict[str, _Converter] = {
    "Double": _cast(pa.float64()),
    "Single": _cast(pa.float32()),
    "Int16": _integers(pa.int16()),
    "Int32": _integers(pa.int32()),
    "Int64": _integers(pa.int64()),
    "DateTime": _datetimes,
    "IDate": _cast(pa.date32()),
    "ITime": _times,
    "String": _unchanged,
    "Boolean": _cast(pa.bool_()),
    "ByteArray": _binaries,
}

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
