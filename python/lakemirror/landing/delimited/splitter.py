"""The row splitter: the text adjusted and split into rows of strings by pyarrow.csv, a block at
a time, then typed; line numbers for what goes wrong. A stand-in character met in the text, or a
row longer than the blocks, makes a re-read that skips the rows already handed on."""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from dataclasses import replace
from typing import TypeVar

import pyarrow as pa
import pyarrow.csv as pv

from lakemirror.errors import LandingZoneError
from lakemirror.landing.delimited.blocks import Blocks, CsvReader
from lakemirror.landing.delimited.encoding import Text
from lakemirror.landing.delimited.format import ColumnDefinition, parse_options
from lakemirror.landing.delimited.header import Parse, header_names, parse
from lakemirror.landing.delimited.lines import Done, line
from lakemirror.landing.delimited.standins import (
    Adjuster,
    Conflict,
    Swaps,
    cut,
    escaped,
    restored,
    restored_text,
    swaps,
    unused,
)
from lakemirror.landing.delimited.values import typed

BLOCK_SIZE = 1 << 20  # text that pyarrow.csv parses at a time
_LARGEST_BLOCK = 2**31 - 1
_T = TypeVar("_T")


class _Straddle(Exception):
    """A row is longer than the blocks pyarrow.csv reads."""


class Splitter:
    """Splits one file's text into rows, read anew on each call; every error names the file."""

    def __init__(self, text: Text) -> None:
        self.text = text
        self.errors = text.errors
        self.fmt = text.errors.fmt

    def parse(self, declared: dict[str, ColumnDefinition] | None) -> Parse | None:
        """The header read and matched with `declared`; None for a file without text."""
        chosen = swaps(self.fmt, unused(self.fmt, set(), self.errors), scanned=False)
        try:
            head = self._first_line(chosen)
        except Conflict:
            chosen = self.scanned_swaps()
            head = self._first_line_again(chosen)
        return None if head is None else parse(chosen, head, declared, self.errors)

    def batches(self, parsed: Parse, max_rows: int | None) -> Iterator[pa.RecordBatch]:
        """Typed record batches in file order, of at most `max_rows` rows."""
        done = Done()
        block_size = BLOCK_SIZE
        while True:
            try:
                for batch in self._attempt(parsed, block_size, done):
                    for start in range(0, batch.num_rows, max_rows or batch.num_rows or 1):
                        yield batch.slice(start, max_rows)
                return
            except Conflict:
                if parsed.swaps.scanned:
                    raise self.errors.changed() from None
                chosen = self.scanned_swaps()
                head = self._first_line_again(chosen) or b""
                parsed = replace(parsed, swaps=chosen, header=header_names(head, self.errors),
                                 header_bytes=len(head) + len(chosen.separator))
            except _Straddle as straddle:
                if block_size == _LARGEST_BLOCK:
                    raise self.errors.parse_failure(straddle.__cause__) from straddle.__cause__
                block_size = min(4 * block_size, _LARGEST_BLOCK)

    def scanned_swaps(self) -> Swaps:
        """Stand-ins chosen after reading the private-use characters that the text holds."""
        return swaps(self.fmt, unused(self.fmt, self.text.private_use(), self.errors),
                     scanned=True)

    # -- the text as pyarrow.csv reads it ------------------------------------------------------

    def _adjusted(self, adjust: Adjuster) -> Generator[bytes, None, None]:
        """The text as pyarrow.csv must see it, cut where no adjustment spans the cut."""
        escape = adjust.swaps.escape
        carry = b""
        for piece in self.text.decoded():
            data = carry + piece if carry else piece
            end = cut(data, escape)
            carry = data[end:]
            if end:
                yield adjust(data if end == len(data) else data[:end])
        if escaped(carry, len(carry), escape):
            raise self.errors.ends_with_escape()
        if carry:
            yield adjust(carry)

    def _first_line(self, chosen: Swaps) -> bytes | None:
        """The header row as pyarrow reads it (up to the first row separator); None for a file
        without text."""
        separator = chosen.separator
        head = bytearray()
        pieces = self._adjusted(Adjuster(chosen, mark=False))
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

    def _first_line_again(self, chosen: Swaps) -> bytes | None:
        try:
            return self._first_line(chosen)
        except Conflict:
            raise self.errors.changed() from None

    def _sentinelled(self, adjust: Adjuster, width: int) -> Generator[bytes, None, None]:
        """The adjusted text, then a sentinel row: if a quote is left open, it swallows this."""
        last = b""
        for piece in self._adjusted(adjust):
            yield piece
            last = piece
        separator = adjust.swaps.separator
        ends_row = last.endswith(separator) and not escaped(
            last, len(last) - len(separator), adjust.swaps.escape)
        row = self.fmt.column_separator.join([adjust.swaps.sentinel] * width).encode()
        yield row if ends_row else separator + row

    # -- rows ----------------------------------------------------------------------------------

    def _attempt(self, parsed: Parse, block_size: int, done: Done) -> Iterator[pa.RecordBatch]:
        """Typed batches of the rows after the first `done.rows`, parsed in blocks of
        `block_size`; raises Conflict or _Straddle when the text must be read again."""
        adjust = Adjuster(parsed.swaps, mark=len(parsed.header) > 1)
        invalid: list[pv.InvalidRow] = []

        def skip(row: pv.InvalidRow) -> str:
            invalid.append(row)
            return "skip"

        convert_options = pv.ConvertOptions(
            column_types=dict.fromkeys(parsed.header, pa.string()), include_columns=parsed.header,
            strings_can_be_null=True, null_values=[parsed.swaps.null_value],
            quoted_strings_can_be_null=False, check_utf8=False)
        reader = self._parsing(lambda: CsvReader(
            Blocks(self._sentinelled(adjust, len(parsed.header)), first=parsed.header_bytes),
            pv.ReadOptions(use_threads=False, block_size=block_size),
            parse_options(self.fmt, skip), convert_options))
        try:
            yield from self._rows(reader, parsed, adjust, invalid, done)
        finally:
            reader.close()

    def _rows(self, reader: CsvReader, parsed: Parse, adjust: Adjuster,
              invalid: list[pv.InvalidRow], done: Done) -> Iterator[pa.RecordBatch]:
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
                    yield self._typed(held, parsed, adjust, done)
                held = batch
        if invalid:
            raise self._invalid_row(invalid[0], [] if held is None else [held], adjust, done)
        if held is None or held.column(0)[-1].as_py() != parsed.swaps.sentinel:
            last = [] if held is None else [held.slice(0, held.num_rows - 1)]
            raise self.errors.unclosed_quote(self._line(last, adjust, done))
        yield self._typed(held.slice(0, held.num_rows - 1), parsed, adjust, done)

    def _typed(self, batch: pa.RecordBatch, parsed: Parse, adjust: Adjuster,
               done: Done) -> pa.RecordBatch:
        """The strings typed; `done` then counts them."""
        strings = restored(batch, adjust.restore())
        result = typed(strings, parsed.columns, done, self.errors)
        done.count(strings)
        return result

    def _parsing(self, read: Callable[[], _T]) -> _T:
        """What `read` returns, with pyarrow's errors said plainly (a too long row: _Straddle)."""
        try:
            return read()
        except pa.ArrowInvalid as error:
            if "straddle" in str(error):
                raise _Straddle from error
            raise self.errors.parse_failure(error) from error
        except pa.ArrowException as error:
            raise self.errors.parse_failure(error) from error

    def _invalid_row(self, row: pv.InvalidRow, pending: list[pa.RecordBatch], adjust: Adjuster,
                     done: Done) -> LandingZoneError:
        """The first row whose field count is wrong; `pending` holds the rows before it that
        were not handed on."""
        at = self._line(pending, adjust, done)
        if adjust.swaps.sentinel in row.text:
            return self.errors.unclosed_quote(at)
        return self.errors.field_count(at, row.expected_columns, row.actual_columns,
                                       restored_text(row.text, adjust.swaps.restore))

    def _line(self, pending: list[pa.RecordBatch], adjust: Adjuster, done: Done) -> int:
        """The line where the row after `done` and `pending` (not restored yet) starts."""
        restore = adjust.restore()
        return line([restored(batch, restore) for batch in pending], done, self.fmt.null_value)
