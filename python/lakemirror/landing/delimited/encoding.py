"""A file's text as UTF-8 without a byte order mark, decoded from its declared encoding a piece
at a time; a byte that does not decode fails the table, naming its line and offset."""

from __future__ import annotations

import codecs
import sys
from collections.abc import Generator, Iterator
from contextlib import closing
from itertools import chain
from pathlib import PurePath

import numpy as np
import pyarrow as pa

from lakemirror.errors import LandingZoneError
from lakemirror.landing.delimited.compression import raw_bytes
from lakemirror.landing.delimited.errors import FileErrors
from lakemirror.landing.delimited.lines import count_breaks
from lakemirror.landing.zone_door import ZoneDoor
from lakemirror.environment import DEFAULT_MAX_TEXT_BYTES

_PRIVATE_USE_LEADS = ((0xEE, 3), (0xEF, 3), (0xF3, 4), (0xF4, 4))  # UTF-8 lead bytes, lengths


class Text:
    """The text of one file, read anew from its start on each call."""

    def __init__(self, path: PurePath, zone: ZoneDoor, errors: FileErrors, *,
                 max_bytes: int = DEFAULT_MAX_TEXT_BYTES) -> None:
        self.path = path
        self.zone = zone
        self.errors = errors
        self.encoding = errors.fmt.encoding
        self.max_bytes = max_bytes

    def raw(self) -> Generator[bytes, None, None]:
        return raw_bytes(self.zone, self.path, self.errors, limit=self.max_bytes)

    def decoded(self) -> Iterator[bytes]:
        """The text as UTF-8 without a byte order mark, in pieces that end between characters."""
        pieces = self._utf8() if _is_utf8_codec(self.encoding) else self._recoded()
        first = True
        for piece in pieces:
            if first and piece:
                piece, first = piece.removeprefix(codecs.BOM_UTF8), False
            if piece:
                yield piece

    def private_use(self) -> set[int]:
        """The code points of the characters led by a byte that leads private-use ones (a
        superset of the private-use characters the text holds)."""
        present: set[int] = set()
        for piece in self.decoded():
            octets = None
            for lead, length in _PRIVATE_USE_LEADS:
                if bytes([lead]) in piece:
                    octets = np.frombuffer(piece, np.uint8) if octets is None else octets
                    present.update(_code_points(octets, lead, length).tolist())
        return present

    def _utf8(self) -> Iterator[bytes]:
        """UTF-8 bytes as they are, once checked."""
        carry, offset = b"", 0  # offset: where in the file the next `data` starts
        for piece in chain(self.raw(), [None]):
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
        decoder = _Decoder(self.encoding)
        offset = 0  # bytes given to the decoder
        for piece in chain(self.raw(), [None]):
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
            data.decode(self.encoding)
        except UnicodeDecodeError as error:
            raise self._undecodable(error, offset) from error

    def _undecodable(self, error: UnicodeDecodeError, offset: int) -> LandingZoneError:
        """`error` met in bytes that start at `offset` of the file."""
        start = offset + error.start
        return self.errors.undecodable(self._line_at(start), error.object[error.start:error.end],
                                       start)

    def _line_at(self, offset: int) -> int:
        """The line of the byte at `offset`, read again up to it."""
        decoder = _Decoder(self.encoding, "replace")
        breaks = read = 0
        after_cr = False
        with closing(self.raw()) as pieces:
            for piece in pieces:
                text = decoder.decode(piece[:offset - read], final=False)
                breaks += count_breaks(text) - (after_cr and text.startswith("\n"))
                after_cr = text.endswith("\r") if text else after_cr
                read += len(piece)
                if read >= offset:
                    break
        return 1 + breaks


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
