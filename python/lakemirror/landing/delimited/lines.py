"""Line numbers: a row's line is the header's line, one per row before it, and the line breaks
inside the values of those rows (a NULL counts those of NullValue as written)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

BREAKS = r"\r\n|\r|\n"


@dataclass
class Done:
    """The rows handed on so far, and the line breaks and NULLs in their values."""

    rows: int = 0
    breaks: int = 0
    nulls: int = 0

    def count(self, strings: pa.RecordBatch) -> None:
        """Count the rows of `strings` (their stand-ins swapped back) as handed on."""
        self.rows += strings.num_rows
        self.breaks += sum(breaks(column) for column in strings.columns)
        self.nulls += sum(column.null_count for column in strings.columns)


def line(pending: list[pa.RecordBatch], done: Done, null_value: str | None) -> int:
    """The line where the row after `done` and `pending` starts: header and row separators
    plus value breaks."""
    rows: int = done.rows + sum(batch.num_rows for batch in pending)
    columns = [column for batch in pending for column in batch.columns]
    value_breaks: int = done.breaks + sum(
        pc.sum(pc.count_substring_regex(column, BREAKS)).as_py() or 0 for column in columns)
    nulls: int = done.nulls + sum(column.null_count for column in columns)
    return 2 + rows + value_breaks + nulls * count_breaks(null_value or "")


def row_line(batches: Iterable[pa.RecordBatch], row: int, null_value: str | None) -> int:
    """The line where row `row` (0 for the first after the header) starts, counted in the
    file's typed batches read again from its start: only text values hold line breaks."""
    done = Done()
    for batch in batches:
        before = batch.slice(0, row - done.rows)
        done.rows += before.num_rows
        done.breaks += sum(breaks(column) for column in before.columns
                           if column.type == pa.string())
        done.nulls += sum(column.null_count for column in before.columns)
        if done.rows >= row:
            break
    return 2 + done.rows + done.breaks + done.nulls * count_breaks(null_value or "")


def count_breaks(text: str) -> int:
    return len(re.findall(BREAKS, text))


def breaks(values: pa.Array) -> int:
    """Line breaks (CRLF, CR or LF) inside the values, as count_breaks counts them, counted in
    the data of all values at once."""
    data = value_bytes(values)
    if data is None:
        return int(pc.sum(pc.count_substring_regex(values, BREAKS)).as_py() or 0)
    crs, lfs = np.count_nonzero(data == 13), np.count_nonzero(data == 10)
    if not (crs and lfs):
        return int(crs + lfs)
    pairs = np.flatnonzero((data[:-1] == 13) & (data[1:] == 10))
    starts = _offsets(values)[1:-1] - _offsets(values)[0]
    return int(crs + lfs - len(pairs) + np.count_nonzero(np.isin(pairs + 1, starts)))


def value_bytes(values: pa.Array) -> np.ndarray | None:
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


def _offsets(values: pa.Array) -> np.ndarray:
    return np.frombuffer(values.buffers()[1], np.int32, len(values) + 1, 4 * values.offset)
