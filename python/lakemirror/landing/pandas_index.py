"""The index pandas writes into a Parquet file, read as the publisher meant it.

`DataFrame.to_parquet` stores an index after every other column, so after `__rowMarker__`,
and describes it in the file's `pandas` metadata; an index of evenly spaced integers is not
stored at all, only described there as a range (start, step). An unnamed index
(`__index_level_0__`, or an unnamed range) is pandas' row labels, not data: it is left out. A
named index (`df.set_index("id")`) is data: it is read as a column (a range becomes its
bigint values) just before `__rowMarker__`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from lakemirror.contract import ROW_MARKER

UNNAMED_INDEX = re.compile(r"__index_level_[0-9]+__")
_LIMIT = 1 << 40  # a range's start and step: its values then fit a bigint


@dataclass(frozen=True)
class ColumnLayout:
    """Which columns of the file to read, and the columns as the contract expects them."""

    read: list[str]
    schema: pa.Schema
    ranges: dict[str, tuple[int, int]] = field(default_factory=dict)  # name → (start, step)

    def batches(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """The file's batches with the layout's columns, ranges filled in."""
        row = 0
        for batch in batches:
            arrays = {name: batch.column(name) for name in self.read}
            for name, (start, step) in self.ranges.items():
                offsets = np.arange(row, row + len(batch), dtype=np.int64)
                arrays[name] = pa.array(start + step * offsets, pa.int64())
            row += len(batch)
            yield pa.RecordBatch.from_arrays([arrays[name] for name in self.schema.names],
                                             schema=self.schema)


def column_layout(schema: pa.Schema) -> ColumnLayout | None:
    """How to read a file pandas wrote; None when it needs nothing but a plain read."""
    stored, ranges = _index(schema)
    if not stored and not ranges:
        return None
    data = [name for name in schema.names if name not in stored]
    named = [name for name in schema.names if name in stored
             and not UNNAMED_INDEX.fullmatch(name)] + list(ranges)
    if data and data[-1] == ROW_MARKER:
        order = [*data[:-1], *named, ROW_MARKER]
    else:
        order = [*data, *named]  # no marker, or one out of place: the checks report it
    fields = {item.name: item for item in schema}
    fields.update({name: pa.field(name, pa.int64(), nullable=False) for name in ranges})
    return ColumnLayout([name for name in order if name not in ranges],
                        pa.schema([fields[name] for name in order]), ranges)


def _index(schema: pa.Schema) -> tuple[set[str], dict[str, tuple[int, int]]]:
    """The stored index columns and the named range indexes of the pandas metadata (none
    when it has none, or holds something else than pandas writes)."""
    try:
        document: Any = json.loads((schema.metadata or {}).get(b"pandas", b"{}"))
    except ValueError:
        return set(), {}
    listed = document.get("index_columns", []) if isinstance(document, dict) else []
    listed = listed if isinstance(listed, list) else []
    stored = {name for name in listed if isinstance(name, str) and name in schema.names}
    ranges = {entry["name"]: (entry["start"], entry["step"]) for entry in listed
              if isinstance(entry, dict) and entry.get("kind") == "range"
              and isinstance(entry.get("name"), str) and entry["name"] not in schema.names
              and all(isinstance(entry.get(key), int) and abs(entry[key]) < _LIMIT
                      for key in ("start", "step"))}
    return stored, ranges
