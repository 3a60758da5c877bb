"""Stand-ins: the text adjusted where pyarrow.csv would not split it as the format says.

A CR or LF that is not part of the row separator, and an escaped character of NullValue, are
swapped for unused private-use characters (and back in the values); empty lines are marked
where pyarrow would read them as rows of empty fields. The text is adjusted a piece at a time,
cut where no adjustment spans the cut.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import chain

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakemirror.landing.delimited.errors import FileErrors
from lakemirror.landing.delimited.format import DelimitedFormat, escape
from lakemirror.landing.delimited.lines import value_bytes

_PRIVATE_USE = (range(0xE000, 0xF900), range(0xF0000, 0xFFFFE), range(0x100000, 0x10FFFE))


class Conflict(Exception):
    """The text holds a character chosen to stand in for another."""


@dataclass(frozen=True)
class Swaps:
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


def unused(fmt: DelimitedFormat, present: set[int], errors: FileErrors) -> Iterator[str]:
    """Private-use characters found neither among the code points `present` nor in NullValue."""
    avoid = fmt.null_value or ""
    for code in chain(*_PRIVATE_USE):
        char = chr(code)
        if code not in present and char not in avoid:
            yield char
    raise errors.no_stand_in_left()


def swaps(fmt: DelimitedFormat, stand_ins: Iterator[str], *, scanned: bool) -> Swaps:
    """Stand-ins for every escaped character of NullValue (pyarrow unescapes before comparing
    with it) and for an escaped CR before a CRLF row separator (which it must not join), and
    for every CR and LF that is not part of a row separator."""
    escape_char = escape(fmt)
    token = fmt.null_value or ""
    restore: dict[str, str] = {}
    steps: list[tuple[str, str]] = []
    mask = ""
    chars = sorted(set(token) - {escape_char} | ({"\r"} if fmt.row_separator == "\r\n" else set()))
    if escape_char and chars:
        restore = {next(stand_ins): char for char in chars}
        mask = next(stand_ins)  # pairs of escape characters meanwhile, so pairs go left to right
        steps = [(2 * escape_char, mask),
                 *((escape_char + char, escape_char + placeholder)
                   for placeholder, char in restore.items()), (mask, 2 * escape_char)]
    escaped = tuple(((escape_char + char).encode(), (escape_char + placeholder).encode(),
                     placeholder) for placeholder, char in restore.items())
    newlines = [(char, next(stand_ins)) for char in ("\r", "\n") if char != fmt.row_separator]
    restore.update((placeholder, char) for char, placeholder in newlines)
    crlf = next(stand_ins) if fmt.row_separator == "\r\n" else ""
    steps += [("\r\n", crlf), *newlines, (crlf, "\r\n")] if crlf else newlines
    for old, new in steps:
        token = token.replace(old, new)
    sentinel, blank = next(stand_ins), next(stand_ins)
    restore[blank] = ""
    return Swaps(escape_char.encode(), mask.encode(), escaped, fmt.row_separator.encode(),
                 tuple((char.encode(), placeholder) for char, placeholder in newlines),
                 crlf.encode(), sentinel, blank, restore, _unescape(token, escape_char), scanned)


class Adjuster:
    """Adjusts one reading of the text, piece by piece, and notes the stand-ins it used."""

    def __init__(self, swaps: Swaps, *, mark: bool) -> None:
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
            raise Conflict
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


def cut(data: bytes, escape_char: bytes) -> int:
    """Where to cut `data` (which ends between characters), from its end, so that no adjustment
    spans the cut: not inside a character, not between CR and LF, not after an escape
    character that escapes what follows."""
    end = len(data)
    while end > 0:
        if end < len(data) and data[end] & 0xC0 == 0x80:
            end -= 1
        elif data[end - 1] == 13 and (end == len(data) or data[end] == 10):
            end -= 1
        elif escaped(data, end, escape_char):
            end -= 1
        else:
            break
    return end


def escaped(text: bytes, end: int, escape_char: bytes) -> bool:
    """Whether an odd run of escape characters ends at `end`, so it escapes what follows."""
    start = end
    while escape_char and start > 0 and text[start - 1] == escape_char[0]:
        start -= 1
    return (end - start) % 2 == 1


def restored_text(value: str, restore: dict[str, str]) -> str:
    for placeholder, char in restore.items():
        value = value.replace(placeholder, char)
    return value


def restored(batch: pa.RecordBatch, restore: dict[str, str]) -> pa.RecordBatch:
    """The batch with its stand-ins swapped back, in the columns that hold any."""
    if not restore:
        return batch
    leads = {placeholder.encode()[0] for placeholder in restore}
    columns = []
    for column in batch.columns:
        data = value_bytes(column)
        if data is None or any(np.any(data == lead) for lead in leads):
            for placeholder, char in restore.items():
                column = pc.replace_substring(column, placeholder, char)
        columns.append(column)
    return pa.RecordBatch.from_arrays(columns, names=batch.schema.names)


def _unescape(value: str, escape_char: str) -> str:
    if not escape_char:
        return value
    return re.sub(re.escape(escape_char) + "(.)", r"\1", value, flags=re.S)
