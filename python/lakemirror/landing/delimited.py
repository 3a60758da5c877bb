"""Read a delimited-text landing file (CSV and its kin) as Arrow batches, typed by its
SchemaDefinition.

pyarrow.csv parses every field as a string; pyarrow.compute types whole columns. Where
pyarrow.csv does not follow the declared format exactly, the text is adjusted first: a CR or LF
that is not part of the row separator, and an escaped character of NullValue, are swapped for
unused private-use characters (and back in the values); a sentinel row after the last one shows
a quote left open; empty lines are marked where pyarrow would read them as rows of empty
fields; and no block of text ends between a CR and an LF (apache/arrow#51368).

The file streams, so memory does not grow with its size, only with its longest row: it is
decompressed, decoded and adjusted a piece at a time (cut where no adjustment spans the cut),
parsed a block at a time, and typed a batch at a time. The private-use characters are chosen
before the text is seen; should the file hold one of them, it is read again with characters it
does not hold. A row too long for the blocks is read again with larger blocks. Such a re-read
skips the rows already handed on. A file with several problems fails on the first met in this
order (the header first, then the rows as they come), so not always on the one a whole-file
reading would name; a file with one problem fails with the same message either way.

LAKEMIRROR_MAX_TEXT_BYTES (default 2 GiB) still caps a file's decompressed size, no longer for
memory but as a guard: a small .gz can unpack to terabytes (a decompression bomb) that would
otherwise be staged for hours, and a file that is one endless row is held whole.
"""

from __future__ import annotations

import binascii
import codecs
import os
import re
import sys
import threading
import weakref
from collections import deque
from collections.abc import Callable, Generator, Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass, replace
from itertools import chain
from pathlib import Path
from typing import TypeVar

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
from lakemirror.landing.zone import LandingZone, ZoneFile, chunks
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
_BLOCK_SIZE = 1 << 20  # text that pyarrow.csv parses at a time
_TEXT_CHUNK = 1 << 20  # decompressed bytes that are decoded and adjusted at a time
_LARGEST_BLOCK = 2**31 - 1
_RELEASE_SECONDS = 60  # pyarrow lets go of a file it was reading at once: this is a safeguard
_SHOWN_CHARS = 50
_PRIVATE_USE = (range(0xE000, 0xF900), range(0xF0000, 0xFFFFE), range(0x100000, 0x10FFFE))
_PRIVATE_USE_LEADS = ((0xEE, 3), (0xEF, 3), (0xF3, 4), (0xF4, 4))  # UTF-8 lead bytes, lengths
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


def open_delimited(path: Path, fmt: DelimitedFormat, columns: Sequence[ColumnDefinition] | None,
                   *, table: str, zone: LandingZone | None = None) -> DelimitedText:
    """Open a delimited-text file; `columns` types it, without them every column is a string.

    The format and the header are checked now; the rows are read, and checked, as they stream.
    A last `__rowMarker__` column becomes int32. Bad input raises a LandingZoneError that names
    the line: the header is line 1, and line breaks inside the values of earlier rows count.
    The file is opened through `zone` (by default the folder holding it), once per reading.
    """
    reader = _Reader(path, fmt, table, zone or LandingZone(path.parent))
    return reader.open(reader.declared(columns))


def read_delimited(path: Path, fmt: DelimitedFormat, columns: Sequence[ColumnDefinition] | None,
                   *, table: str, zone: LandingZone | None = None) -> pa.Table:
    """Read a whole delimited-text file into one table (staging streams it: open_delimited)."""
    text = open_delimited(path, fmt, columns, table=table, zone=zone)
    return pa.Table.from_batches(list(text.batches()), schema=text.schema)


_Converter = Callable[[pa.Array], pa.Array]
_T = TypeVar("_T")


class _Conflict(Exception):
    """The text holds a character chosen to stand in for another."""


class _Straddle(Exception):
    """A row is longer than the blocks pyarrow.csv reads."""


class _Stopped(Exception):
    """The text is read no further."""


@dataclass(frozen=True)
class _Swaps:
    """The private-use characters that stand in for what pyarrow.csv would misread."""

    escape: bytes  # the escape character that makes any next character literal, or b""
    mask: bytes  # stands in for a pair of escape characters meanwhile
    escaped: tuple[tuple[bytes, bytes, str], ...]  # escape + character, escape + stand-in
    separator: bytes
    newlines: tuple[tuple[bytes, str], ...]  # CR or LF (not the separator's), stand-in
    crlf: bytes  # stands in for CRLF meanwhile
    sentinel: str  # the value of every field of the sentinel row
    blank: str  # marks an empty line
    restore: dict[str, str]  # stand-in -> what it stands for (the blank mark: nothing)
    null_value: str  # a NULL field as pyarrow sees it, after unescaping
    scanned: bool  # chosen after reading which private-use characters the text holds

    @property
    def chars(self) -> list[bytes]:
        return [char for char in (self.mask, self.crlf, self.sentinel.encode(),
                                  *map(str.encode, self.restore)) if char]


def _swaps(fmt: DelimitedFormat, unused: Iterator[str], *, scanned: bool) -> _Swaps:
    """Stand-ins for every escaped character of NullValue (pyarrow unescapes before comparing
    with it) and for an escaped CR before a CRLF row separator (which it must not join), and
    for every CR and LF that is not part of a row separator."""
    escape = _escape(fmt)
    token = fmt.null_value or ""
    restore: dict[str, str] = {}
    steps: list[tuple[str, str]] = []
    mask = ""
    chars = sorted(set(token) - {escape} | ({"\r"} if fmt.row_separator == "\r\n" else set()))
    if escape and chars:
        restore = {next(unused): char for char in chars}
        mask = next(unused)  # pairs of escape characters meanwhile, so that pairs go left to right
        steps = [(2 * escape, mask), *((escape + char, escape + placeholder)
                                       for placeholder, char in restore.items()), (mask, 2 * escape)]
    escaped = tuple(((escape + char).encode(), (escape + placeholder).encode(), placeholder)
                    for placeholder, char in restore.items())
    newlines = [(char, next(unused)) for char in ("\r", "\n") if char != fmt.row_separator]
    restore.update((placeholder, char) for char, placeholder in newlines)
    crlf = next(unused) if fmt.row_separator == "\r\n" else ""
    steps += [("\r\n", crlf), *newlines, (crlf, "\r\n")] if crlf else newlines
    for old, new in steps:
        token = token.replace(old, new)
    sentinel, blank = next(unused), next(unused)
    restore[blank] = ""
    return _Swaps(escape.encode(), mask.encode(), escaped, fmt.row_separator.encode(),
                  tuple((char.encode(), placeholder) for char, placeholder in newlines),
                  crlf.encode(), sentinel, blank, restore, _unescape(token, escape), scanned)


class _Adjuster:
    """Adjusts one reading of the text, piece by piece, and notes the stand-ins it used."""

    def __init__(self, swaps: _Swaps, *, mark: bool) -> None:
        self.swaps = swaps
        self.mark = mark  # mark empty lines (pyarrow reads them right with one column only)
        self.used: set[str] = set()
        self._chars = swaps.chars
        self._leads = sorted({char[:1] for char in self._chars})
        self._ended_row = False

    def restore(self) -> dict[str, str]:
        return {char: self.swaps.restore[char] for char in self.swaps.restore if char in self.used}

    def __call__(self, text: bytes) -> bytes:
        """The text as pyarrow.csv must see it; it starts and ends where no adjustment spans."""
        swaps = self.swaps
        if any(lead in text for lead in self._leads) and any(c in text for c in self._chars):
            raise _Conflict
        if swaps.escaped and swaps.escape in text:
            text = text.replace(2 * swaps.escape, swaps.mask)
            for pair, swapped, placeholder in swaps.escaped:
                if pair in text:
                    text = text.replace(pair, swapped)
                    self.used.add(placeholder)
            text = text.replace(swaps.mask, 2 * swaps.escape)
        text = self._newlines(text)
        if self.mark:
            separator = swaps.separator
            if self._ended_row and text.startswith(separator):
                text = swaps.blank.encode() + text
                self.used.add(swaps.blank)
            if 2 * separator in text:
                marked = separator + swaps.blank.encode() + separator
                text = text.replace(2 * separator, marked).replace(2 * separator, marked)
                self.used.add(swaps.blank)
            self._ended_row = text.endswith(separator)
        return text

    def _newlines(self, text: bytes) -> bytes:
        """Every CR and LF that is not part of a row separator swapped for its stand-in."""
        swaps = self.swaps
        if not swaps.crlf:
            (other, placeholder), = swaps.newlines
            if other in text:
                text = text.replace(other, placeholder.encode())
                self.used.add(placeholder)
            return text
        crs, lfs = text.count(b"\r"), text.count(b"\n")
        pairs = text.count(b"\r\n") if crs and lfs else 0
        if crs == lfs == pairs:
            return text
        (cr, cr_stand_in), (lf, lf_stand_in) = swaps.newlines
        self.used.update(stand_in for stand_in, alone in ((cr_stand_in, crs > pairs),
                                                          (lf_stand_in, lfs > pairs)) if alone)
        if crs == pairs:  # only LFs alone: swap every LF, then those of a CRLF back
            swapped = lf_stand_in.encode()
            return text.replace(lf, swapped).replace(cr + swapped, b"\r\n")
        if lfs == pairs:
            swapped = cr_stand_in.encode()
            return text.replace(cr, swapped).replace(swapped + lf, b"\r\n")
        text = text.replace(b"\r\n", swaps.crlf)
        text = text.replace(cr, cr_stand_in.encode()).replace(lf, lf_stand_in.encode())
        return text.replace(swaps.crlf, b"\r\n")


@dataclass(frozen=True)
class _Parse:
    """Everything needed to parse the text and type its columns."""

    swaps: _Swaps
    header: list[str]  # column names as pyarrow reads them (with stand-ins)
    columns: list[ColumnDefinition]  # one per header column, the marker as Int32
    header_bytes: int  # of the header row as pyarrow reads it, with its row separator

    @property
    def schema(self) -> pa.Schema:
        return _schema(self.columns)


@dataclass
class _Done:
    """The rows handed on so far, and the line breaks and NULLs in their values."""

    rows: int = 0
    breaks: int = 0
    nulls: int = 0


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

    def open(self, declared: dict[str, ColumnDefinition] | None) -> DelimitedText:
        """The schema from the header; the rows stream when the batches are read."""
        swaps = _swaps(self.fmt, self._unused(frozenset()), scanned=False)
        try:
            head = self._first_line(swaps)
        except _Conflict:
            swaps = self._scanned_swaps()
            head = self._first_line_again(swaps)
        if head is None:
            schema = _schema(list((declared or {}).values()))
            return DelimitedText(schema, lambda max_rows: iter(()))
        parse = self._parse(swaps, head, declared)
        return DelimitedText(parse.schema, lambda max_rows: self.batches(parse, max_rows))

    # -- bytes to UTF-8 text ------------------------------------------------------------------

    def _raw(self) -> Generator[bytes, None, None]:
        """The file's bytes from the start, decompressed as its name says, in pieces of at most
        _TEXT_CHUNK; more than max_text_bytes() of them fail the table."""
        import cramjam

        limit = max_text_bytes()
        suffix = self.path.suffix.lower()
        read = 0
        with self.zone.open(self.path) as handle:
            if suffix not in COMPRESSION_SUFFIXES and handle.size > limit:
                raise self._too_large(limit, suffix)
            try:
                for piece in _decompressing(handle, suffix):
                    read += len(piece)
                    if read > limit:
                        raise self._too_large(limit, suffix)
                    for start in range(0, len(piece), _TEXT_CHUNK):
                        yield piece[start:start + _TEXT_CHUNK] if _TEXT_CHUNK < len(piece) \
                            else piece
            except (OSError, pa.ArrowException, cramjam.DecompressionError) as error:
                raise self._unreadable(error) from error

    def _too_large(self, limit: int, suffix: str) -> LandingZoneError:
        decompressed = " once decompressed" if suffix in COMPRESSION_SUFFIXES else ""
        return self.error(
            f"the file holds more than {limit} bytes{decompressed}, the most lakemirror "
            f"reads of one delimited-text file ({MAX_TEXT_BYTES})",
            f"split the file into smaller change files, or raise {MAX_TEXT_BYTES}")

    def _unreadable(self, error: Exception) -> LandingZoneError:
        return self.error(f"cannot read or decompress the file: {error}",
                          "replace it with a complete file; .gz is gzip, .zst zstd and .snappy "
                          "snappy framing format")

    def _decoded(self) -> Iterator[bytes]:
        """The text as UTF-8 without a byte order mark, in pieces that end between characters."""
        pieces = self._utf8() if _is_utf8_codec(self.fmt.encoding) else self._recoded()
        first = True
        for piece in pieces:
            if first and piece:
                piece, first = piece.removeprefix(codecs.BOM_UTF8), False
            if piece:
                yield piece

    def _utf8(self) -> Iterator[bytes]:
        """UTF-8 bytes as they are, once checked."""
        carry, offset = b"", 0  # offset: where in the file the next `data` starts
        for piece in chain(self._raw(), [None]):
            data = carry + piece if piece is not None else carry
            end = _utf8_end(data) if piece is not None else len(data)
            if not _valid_utf8(data, end):
                self._check_decodes(data[:end], offset)
            carry = data[end:]
            if end:
                yield data if end == len(data) else data[:end]
            offset += end

    def _recoded(self) -> Iterator[bytes]:
        """Text in another encoding, decoded and encoded as UTF-8."""
        decoder = _Decoder(self.fmt.encoding)
        offset = 0  # bytes given to the decoder
        for piece in chain(self._raw(), [None]):
            pending = len(decoder.pending())
            try:
                text = decoder.decode(piece or b"", final=piece is None)
            except UnicodeDecodeError as error:
                raise self._undecodable(error, offset - pending) from error
            offset += len(piece or b"")
            yield text.encode("utf-8")

    def _check_decodes(self, data: bytes, offset: int) -> None:
        """Fail the table unless `data`, which starts at `offset` of the file, decodes."""
        try:
            data.decode(self.fmt.encoding)
        except UnicodeDecodeError as error:
            raise self._undecodable(error, offset) from error

    def _undecodable(self, error: UnicodeDecodeError, offset: int) -> LandingZoneError:
        """`error` met in bytes that start at `offset` of the file."""
        start = offset + error.start
        return self.error(
            f"line {self._line_at(start)}: bytes {error.object[error.start:error.end]!r} at "
            f"offset {start} are not valid {self.fmt.encoding}",
            "write the file in the declared Encoding, or declare the encoding it uses in "
            "_metadata.json")

    def _line_at(self, offset: int) -> int:
        """The line of the byte at `offset`, read again up to it."""
        decoder = _Decoder(self.fmt.encoding, "replace")
        breaks = read = 0
        after_cr = False
        with closing(self._raw()) as pieces:
            for piece in pieces:
                text = decoder.decode(piece[:offset - read], final=False)
                breaks += _count_breaks(text) - (after_cr and text.startswith("\n"))
                after_cr = text.endswith("\r") if text else after_cr
                read += len(piece)
                if read >= offset:
                    break
        return 1 + breaks

    # -- the private-use characters that stand in ---------------------------------------------

    def _unused(self, present: frozenset[str]) -> Iterator[str]:
        """Private-use characters found neither in `present` nor in NullValue."""
        avoid = self.fmt.null_value or ""
        for code in chain(*_PRIVATE_USE):
            char = chr(code)
            if char not in present and char not in avoid:
                yield char
        raise self.error("the file uses every private-use character, so none is left to stand in "
                         "for separators while parsing", "split the file into smaller files")

    def _scanned_swaps(self) -> _Swaps:
        """Stand-ins chosen after reading the private-use characters that the text holds."""
        present: set[int] = set()
        for piece in self._decoded():
            octets = None
            for lead, length in _PRIVATE_USE_LEADS:
                if bytes([lead]) in piece:
                    octets = np.frombuffer(piece, np.uint8) if octets is None else octets
                    present.update(_code_points(octets, lead, length).tolist())
        return _swaps(self.fmt, self._unused(frozenset(map(chr, present))), scanned=True)

    def _changed(self) -> LandingZoneError:
        return self.error("the file changed while lakemirror read it",
                          "write each change file elsewhere and move it into the table folder "
                          "once it is complete")

    # -- text to pyarrow.csv input ------------------------------------------------------------

    def _adjusted(self, adjust: _Adjuster) -> Generator[bytes, None, None]:
        """The text as pyarrow.csv must see it, cut where no adjustment spans the cut."""
        escape = adjust.swaps.escape
        carry = b""
        for piece in self._decoded():
            data = carry + piece if carry else piece
            end = _cut(data, escape)
            carry = data[end:]
            if end:
                yield adjust(data if end == len(data) else data[:end])
        if _escaped(carry, len(carry), escape):
            raise self.error("the file ends with an escape character",
                             "escape the escape character itself, or remove it")
        if carry:
            yield adjust(carry)

    def _first_line(self, swaps: _Swaps) -> bytes | None:
        """The header row as pyarrow reads it (up to the first row separator); None for a file
        without text."""
        separator = swaps.separator
        head = bytearray()
        pieces = self._adjusted(_Adjuster(swaps, mark=False))
        try:
            for piece in pieces:
                searched = max(len(head) - len(separator) + 1, 0)
                head += piece
                end = head.find(separator, searched)
                if end >= 0:
                    return bytes(head[:end])
        finally:
            pieces.close()
        return bytes(head) if head else None

    def _first_line_again(self, swaps: _Swaps) -> bytes | None:
        try:
            return self._first_line(swaps)
        except _Conflict:
            raise self._changed() from None

    def _parse(self, swaps: _Swaps, head: bytes, declared: dict[str, ColumnDefinition] | None
               ) -> _Parse:
        """Read the header and match it with `declared`."""
        header = self._header(head)
        names = [_restored_text(name, swaps.restore) for name in header]
        self._check_names(names)
        return _Parse(swaps, header, self._columns(names, declared),
                      len(head) + len(swaps.separator))

    def _header(self, head: bytes) -> list[str]:
        """Column names as pyarrow reads them; the header row must hold no row separator."""
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

    def _text(self, adjust: _Adjuster, width: int) -> Generator[bytes, None, None]:
        """The adjusted text, then a sentinel row: if a quote is left open, it swallows this."""
        last = b""
        for piece in self._adjusted(adjust):
            yield piece
            last = piece
        separator = adjust.swaps.separator
        ends_row = last.endswith(separator) and not _escaped(
            last, len(last) - len(separator), adjust.swaps.escape)
        row = self.fmt.column_separator.join([adjust.swaps.sentinel] * width).encode()
        yield row if ends_row else separator + row

    # -- parsing and typing -------------------------------------------------------------------

    def batches(self, parse: _Parse, max_rows: int | None) -> Iterator[pa.RecordBatch]:
        """Typed record batches in file order, of at most `max_rows` rows."""
        done = _Done()
        block_size = _BLOCK_SIZE
        while True:
            try:
                for batch in self._attempt(parse, block_size, done):
                    for start in range(0, batch.num_rows, max_rows or batch.num_rows or 1):
                        yield batch.slice(start, max_rows)
                return
            except _Conflict:
                if parse.swaps.scanned:
                    raise self._changed() from None
                swaps = self._scanned_swaps()
                head = self._first_line_again(swaps) or b""
                parse = replace(parse, swaps=swaps, header=self._header(head),
                                header_bytes=len(head) + len(swaps.separator))
            except _Straddle as straddle:
                if block_size == _LARGEST_BLOCK:
                    raise self._parse_failure(straddle.__cause__) from straddle.__cause__
                block_size = min(4 * block_size, _LARGEST_BLOCK)

    def _attempt(self, parse: _Parse, block_size: int, done: _Done) -> Iterator[pa.RecordBatch]:
        """Typed batches of the rows after the first `done.rows`, parsed in blocks of
        `block_size`; raises _Conflict or _Straddle when the text must be read again."""
        adjust = _Adjuster(parse.swaps, mark=len(parse.header) > 1)
        invalid: list[pv.InvalidRow] = []

        def skip(row: pv.InvalidRow) -> str:
            invalid.append(row)
            return "skip"

        convert_options = pv.ConvertOptions(
            column_types=dict.fromkeys(parse.header, pa.string()), include_columns=parse.header,
            strings_can_be_null=True, null_values=[parse.swaps.null_value],
            quoted_strings_can_be_null=False, check_utf8=False)
        reader = self._parsing(lambda: _CsvReader(
            _Blocks(self._text(adjust, len(parse.header)), first=parse.header_bytes),
            pv.ReadOptions(use_threads=False, block_size=block_size),
            _parse_options(self.fmt, skip), convert_options))
        try:
            yield from self._rows(reader, parse, adjust, invalid, done)
        finally:
            reader.close()

    def _rows(self, reader: _CsvReader, parse: _Parse, adjust: _Adjuster,
              invalid: list[pv.InvalidRow], done: _Done) -> Iterator[pa.RecordBatch]:
        held: pa.RecordBatch | None = None  # rows not handed on: the last may be the sentinel
        start = 0  # the row number (from 0) of the next batch's first row
        while (batch := self._parsing(reader.next_batch)) is not None:
            fresh = max(done.rows - start, 0)  # rows before it were handed on before a re-read
            start += batch.num_rows
            batch = batch.slice(fresh)
            if invalid and invalid[0].number - 2 <= start:
                pending = [] if held is None else [held]
                pending.append(batch.slice(0, batch.num_rows - (start - invalid[0].number + 2)))
                raise self._invalid_row(invalid[0], pending, adjust, done)
            if batch.num_rows:
                if held is not None:
                    yield self._typed(held, parse, adjust, done)
                held = batch
        if invalid:
            raise self._invalid_row(invalid[0], [] if held is None else [held], adjust, done)
        if held is None or held.column(0)[-1].as_py() != parse.swaps.sentinel:
            last = [] if held is None else [held.slice(0, held.num_rows - 1)]
            raise self._unclosed_quote(self._line([_restored(batch, adjust.restore())
                                                   for batch in last], done))
        yield self._typed(held.slice(0, held.num_rows - 1), parse, adjust, done)

    def _parsing(self, read: Callable[[], _T]) -> _T:
        """What `read` returns, with pyarrow's errors said plainly (a too long row: _Straddle)."""
        try:
            return read()
        except pa.ArrowInvalid as error:
            if "straddle" in str(error):
                raise _Straddle from error
            raise self._parse_failure(error) from error
        except pa.ArrowException as error:
            raise self._parse_failure(error) from error

    def _parse_failure(self, error: BaseException | None) -> LandingZoneError:
        return self.error(f"cannot parse the file: {error}",
                          "check ColumnSeparator, QuoteCharacter and EscapeCharacter")

    def _invalid_row(self, row: pv.InvalidRow, pending: list[pa.RecordBatch], adjust: _Adjuster,
                     done: _Done) -> LandingZoneError:
        """The first row whose field count is wrong; `pending` holds the rows before it that
        were not handed on."""
        restore = adjust.restore()
        line = self._line([_restored(batch, restore) for batch in pending], done)
        if adjust.swaps.sentinel in row.text:
            return self._unclosed_quote(line)
        return self.error(
            f"line {line}: {row.expected_columns} fields expected, as in the header, but "
            f"{row.actual_columns} found: {_shown(_restored_text(row.text, adjust.swaps.restore))}",
            f"quote values that hold {self.fmt.column_separator!r}, and check ColumnSeparator "
            "and RowSeparator in _metadata.json")

    def _unclosed_quote(self, line: int) -> LandingZoneError:
        return self.error(f"line {line}: a quoted field is still open at the end of the file",
                          f"close it with {self.fmt.quote_character!r}, and escape that character "
                          "inside quoted values")

    def _line(self, pending: list[pa.RecordBatch], done: _Done) -> int:
        """The line where the row after `done` and `pending` starts: header and row separators
        plus value breaks."""
        rows: int = done.rows + sum(batch.num_rows for batch in pending)
        columns = [column for batch in pending for column in batch.columns]
        breaks: int = done.breaks + sum(
            pc.sum(pc.count_substring_regex(column, _BREAKS)).as_py() or 0 for column in columns)
        nulls: int = done.nulls + sum(column.null_count for column in columns)
        return 2 + rows + breaks + nulls * _count_breaks(self.fmt.null_value or "")

    def _typed(self, batch: pa.RecordBatch, parse: _Parse, adjust: _Adjuster,
               done: _Done) -> pa.RecordBatch:
        """The strings typed; `done` then counts them."""
        strings = _restored(batch, adjust.restore())
        arrays = [self._convert(strings, index, column, done)
                  for index, column in enumerate(parse.columns)]
        done.rows += strings.num_rows
        done.breaks += sum(_breaks(column) for column in strings.columns)
        done.nulls += sum(column.null_count for column in strings.columns)
        return pa.RecordBatch.from_arrays(arrays, schema=parse.schema)

    def _convert(self, strings: pa.RecordBatch, index: int, column: ColumnDefinition,
                 done: _Done) -> pa.Array:
        values = strings.column(index)
        if not column.nullable and values.null_count:
            row = pc.index(pc.is_null(values), True).as_py()
            raise self._value_error(column, self._line([strings.slice(0, row)], done), None)
        convert = _CONVERTERS[column.data_type]
        try:
            return convert(values)
        except pa.ArrowInvalid:
            row = _first_failure(values, convert)
            line = self._line([strings.slice(0, row)], done)
            raise self._value_error(column, line, values[row].as_py()) from None

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
    """Pieces of text as a file that pyarrow.csv reads in blocks, on threads of its own.

    Each block is copied into Arrow's memory: as short-lived Python objects of megabytes, the
    blocks would fragment the heap and keep a few hundred megabytes of it. pyarrow drops the LF
    that starts a block after a block that ends in CR, even inside a quoted value
    (apache/arrow#51368), so such a block ends one byte early.
    """

    closed = False

    def __init__(self, pieces: Generator[bytes, None, None], *, first: int) -> None:
        self._pieces = pieces
        self._queue: deque[bytes] = deque()
        self._queued = 0  # bytes in the queue
        self._ended = False
        self._first = first  # the first block holds the header row: pyarrow reads it from there
        self._lock = threading.Lock()
        self._stopped = False

    def stop(self) -> None:
        """Close the file: later reads fail, so that the reader stops instead of parsing a text
        cut short."""
        with self._lock:
            self._stopped = True
            self._pieces.close()

    def read(self, size: int = -1) -> pa.Buffer:
        with self._lock:
            if self._stopped:
                raise _Stopped
            return self._block(size)

    def _block(self, size: int) -> pa.Buffer:
        size, self._first = (max(size, self._first) if size >= 0 else size), 0
        while not self._ended and (size < 0 or self._queued <= size):  # a byte past the block
            piece = next(self._pieces, None)
            self._ended = piece is None
            if piece:
                self._queue.append(piece)
                self._queued += len(piece)
        end = self._queued if size < 0 else min(size, self._queued)
        if 1 < end < self._queued and self._byte(end - 1) == 13 and self._byte(end) == 10:
            end -= 1
        block = pa.allocate_buffer(end)
        octets = np.frombuffer(block, np.uint8)
        filled = 0
        while filled < end:
            piece = self._queue.popleft()
            if filled + len(piece) > end:
                self._queue.appendleft(piece[end - filled:])
                piece = piece[:end - filled]
            octets[filled:filled + len(piece)] = np.frombuffer(piece, np.uint8)
            filled += len(piece)
        self._queued -= end
        return block

    def _byte(self, index: int) -> int:
        for piece in self._queue:
            if index < len(piece):
                return piece[index]
            index -= len(piece)
        raise IndexError(index)


class _Decoder:
    """An incremental decoder that, like decoding a whole text, reads UTF-16 and UTF-32 without
    a byte order mark in the machine's byte order (Python's incremental ones refuse them)."""

    def __init__(self, encoding: str, errors: str = "strict") -> None:
        self._decoder = codecs.getincrementaldecoder(encoding)(errors)
        self._native = f"{codecs.lookup(encoding).name}-{sys.byteorder[0]}e"
        self._errors = errors

    def pending(self) -> bytes:
        """Bytes given, but not decoded yet: they start the text of a decoding error."""
        pending: bytes = self._decoder.getstate()[0]
        return pending

    def decode(self, data: bytes, *, final: bool) -> str:
        pending = self.pending()
        try:
            return self._decoder.decode(data, final)
        except UnicodeDecodeError:
            raise
        except UnicodeError:  # no byte order mark
            self._decoder = codecs.getincrementaldecoder(self._native)(self._errors)
            return self._decoder.decode(pending + data, final)


class _File:
    """The file pyarrow reads: only pyarrow holds it, so it is gone once pyarrow let go of it."""

    __slots__ = ("read", "closed", "__weakref__")

    def __init__(self, read: Callable[[int], pa.Buffer]) -> None:
        self.read = read
        self.closed = False


class _CsvReader:
    """pyarrow.csv reading blocks, which its threads read ahead; closed, it has let go of them.

    A read ahead still pending when Python exits hangs the process (apache/arrow#43604,
    apache/arrow#50482), so closing stops the blocks, drops the reader (which waits for its
    reads without the GIL) and waits until pyarrow no longer holds the file.
    """

    def __init__(self, blocks: _Blocks, read_options: pv.ReadOptions,
                 parse_options: pv.ParseOptions, convert_options: pv.ConvertOptions) -> None:
        self._blocks = blocks
        self._released = threading.Event()
        files = [_File(blocks.read)]  # no frame of an error's traceback may hold it
        self._file = weakref.ref(files[0], lambda file: self._released.set())
        self._reader: pv.CSVStreamingReader | None = None
        try:
            self._reader = pv.open_csv(files.pop(), read_options=read_options,
                                       parse_options=parse_options,
                                       convert_options=convert_options)
        except BaseException:
            self.close()
            raise

    def next_batch(self) -> pa.RecordBatch | None:
        assert self._reader is not None
        try:
            return self._reader.read_next_batch()
        except StopIteration:
            return None

    def close(self) -> None:
        self._blocks.stop()
        self._reader = None
        self._released.wait(_RELEASE_SECONDS)


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


def _valid_utf8(data: bytes, end: int) -> bool:
    """Whether the first `end` bytes are valid UTF-8."""
    offsets = pa.py_buffer(np.array([0, end], np.int64))
    array = pa.Array.from_buffers(pa.large_string(), 1, [None, offsets, pa.py_buffer(data)])
    try:
        array.validate(full=True)
    except pa.ArrowInvalid:
        return False
    return True


def _utf8_end(data: bytes) -> int:
    """The length of `data` without a character that it cuts short at its end."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 != 0x80:  # not a continuation byte
            length = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4 if byte < 0xF8 else 1
            return len(data) - back if byte >= 0xC0 and back < length else len(data)
    return len(data)


def _code_points(octets: np.ndarray, lead: int, length: int) -> np.ndarray:
    """The code points of the UTF-8 characters of `length` bytes that start with `lead`."""
    starts = np.flatnonzero(octets == lead)
    points = (octets[starts].astype(np.int64) & (0x0F if length == 3 else 0x07))
    for following in range(1, length):
        points = (points << 6) | (octets[starts + following] & 0x3F)
    return points


def _cut(data: bytes, escape: bytes) -> int:
    """Where to cut `data` (which ends between characters), from its end, so that no adjustment
    spans the cut: not inside a character, not between CR and LF, not after an escape
    character that escapes what follows."""
    end = len(data)
    while end > 0:
        if end < len(data) and data[end] & 0xC0 == 0x80:
            end -= 1
        elif data[end - 1] == 13 and (end == len(data) or data[end] == 10):
            end -= 1
        elif _escaped(data, end, escape):
            end -= 1
        else:
            break
    return end


def _escaped(text: bytes, end: int, escape: bytes) -> bool:
    """Whether an odd run of escape characters ends at `end`, so it escapes what follows."""
    start = end
    while escape and start > 0 and text[start - 1] == escape[0]:
        start -= 1
    return (end - start) % 2 == 1


def _unescape(value: str, escape: str) -> str:
    return re.sub(re.escape(escape) + "(.)", r"\1", value, flags=re.S) if escape else value


def _restored_text(value: str, restore: dict[str, str]) -> str:
    for placeholder, char in restore.items():
        value = value.replace(placeholder, char)
    return value


def _restored(batch: pa.RecordBatch, restore: dict[str, str]) -> pa.RecordBatch:
    """The batch with its stand-ins swapped back, in the columns that hold any."""
    if not restore:
        return batch
    leads = {placeholder.encode()[0] for placeholder in restore}
    columns = []
    for column in batch.columns:
        data = _value_bytes(column)
        if data is None or any(np.any(data == lead) for lead in leads):
            for placeholder, char in restore.items():
                column = pc.replace_substring(column, placeholder, char)
        columns.append(column)
    return pa.RecordBatch.from_arrays(columns, names=batch.schema.names)


def _breaks(values: pa.Array) -> int:
    """Line breaks (CRLF, CR or LF) inside the values, as _count_breaks counts them, counted in
    the data of all values at once."""
    data = _value_bytes(values)
    if data is None:
        return int(pc.sum(pc.count_substring_regex(values, _BREAKS)).as_py() or 0)
    crs, lfs = np.count_nonzero(data == 13), np.count_nonzero(data == 10)
    if not (crs and lfs):
        return int(crs + lfs)
    pairs = np.flatnonzero((data[:-1] == 13) & (data[1:] == 10))
    starts = _offsets(values)[1:-1] - _offsets(values)[0]
    return int(crs + lfs - len(pairs) + np.count_nonzero(np.isin(pairs + 1, starts)))


def _offsets(values: pa.Array) -> np.ndarray:
    return np.frombuffer(values.buffers()[1], np.int32, len(values) + 1, 4 * values.offset)


def _value_bytes(values: pa.Array) -> np.ndarray | None:
    """The bytes of all values of a string array, one after another; None when NULL slots hold
    bytes too (so that they are not just the values')."""
    if values.type != pa.string() or len(values) == 0:
        return None if len(values) else np.zeros(0, np.uint8)
    offsets = _offsets(values)
    if values.null_count and (pc.sum(pc.binary_length(values)).as_py() or 0) != \
            offsets[-1] - offsets[0]:
        return None
    data = values.buffers()[2]
    if data is None:
        return np.zeros(0, np.uint8)
    return np.frombuffer(data, np.uint8)[offsets[0]:offsets[-1]]


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
