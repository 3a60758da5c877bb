"""Write staged rows as Parquet parts of a staging Delta table, for one commit that adds them.

pyarrow's streaming writer holds one row group at a time, so staging a file of any size takes
bounded memory, and it writes faster than delta-rs's writer (staging a 2 GB file: 259 MB above
idle against 462 MB through delta-rs; docs/pages/performance.md). The parts only count once the
commit that adds them is written: a failed write removes what it wrote, and a crash or a
failed commit leaves files no version of the table reads, which `lakemirror maintain`'s
vacuum removes after the retention period.

Parts carry column statistics of `_lm_position` only, in their add actions and in their
Parquet row groups: every filter on staging rows is on the change position (the mirror models'
batch bounds, compaction's watermark), and the other columns' statistics (of strings and
decimals above all) took 40% of the time writing a part.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from deltalake.transaction import AddAction

from lakemirror.landing.changes import POSITION
from lakemirror.storage.location import Location, ObjectLocation, open_store

PART_BYTES = 256 * 2**20  # Arrow bytes of rows in one part before the next part starts
COMPRESSION = "snappy"  # what delta-rs and Spark write by default
# No dictionary encoding: staging is a change log written once and read by the next MERGE, and
# trying dictionaries took 40% of the time writing the benchmark's rows (which it did not shrink).
USE_DICTIONARY = False
STATISTICS = [POSITION]  # the columns whose Parquet statistics are written (see above)


@dataclass
class _Part:
    """One Parquet file being written, with the statistics its add action carries."""

    name: str
    writer: pq.ParquetWriter
    rows: int = 0
    bytes: int = 0
    lowest: int | None = None
    highest: int | None = None

    def write(self, batch: pa.RecordBatch) -> None:
        self.writer.write_batch(batch)
        self.rows += len(batch)
        self.bytes += batch.nbytes
        if len(batch):
            bounds = pc.min_max(batch.column(POSITION))
            low, high = bounds["min"].as_py(), bounds["max"].as_py()
            self.lowest = low if self.lowest is None else min(self.lowest, low)
            self.highest = high if self.highest is None else max(self.highest, high)

    def close(self, folder: _Folder) -> AddAction:
        self.writer.close()
        size, modified = folder.finish(self.name)
        stats: dict[str, object] = {"numRecords": self.rows}
        if self.rows:  # lets readers skip parts by change position
            stats |= {"minValues": {POSITION: self.lowest}, "maxValues": {POSITION: self.highest},
                      "nullCount": {POSITION: 0}}
        return AddAction(self.name, size, {}, modified, True, json.dumps(stats))


class _Folder:
    """A staging table's folder on disk: parts are files written in place."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)

    def open(self, name: str) -> Any:
        """Where the part `name` is written (a path or a writable file)."""
        return self.path / name

    def finish(self, name: str) -> tuple[int, int]:
        """The written part's size and modification time (ms)."""
        stat = (self.path / name).stat()
        return stat.st_size, int(stat.st_mtime * 1000)

    def remove(self, name: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path / name)


class _ObjectFolder(_Folder):
    """A staging table's prefix in object storage: a part is uploaded while it is written
    (multipart), and exists once its upload completes."""

    def __init__(self, location: ObjectLocation) -> None:
        self.store: Any = open_store(location)
        self.writers: dict[str, Any] = {}

    def open(self, name: str) -> Any:
        import obstore

        self.writers[name] = _Upload(obstore.open_writer(self.store, name))
        return self.writers[name]

    def finish(self, name: str) -> tuple[int, int]:
        """The uploaded part's size, as written, and the time its upload completed (no
        request: the part is not read back)."""
        upload = self.writers.pop(name)
        upload.close()  # pyarrow closed it already: the upload is complete
        return upload.size, int(time.time() * 1000)

    def remove(self, name: str) -> None:
        import obstore

        with contextlib.suppress(Exception):
            writer = self.writers.pop(name, None)
            if writer is not None:
                writer.close()
        with contextlib.suppress(FileNotFoundError):
            obstore.delete(self.store, name)


class _Upload(io.RawIOBase):
    """obstore's writable file as pyarrow takes one (obstore's `closed` is a method)."""

    def __init__(self, writer: Any) -> None:
        super().__init__()
        self.writer = writer
        self.size = 0  # bytes written

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        chunk = bytes(data)
        self.writer.write(chunk)
        self.size += len(chunk)
        return len(chunk)

    def close(self) -> None:
        if not self.closed:
            self.writer.close()
        super().close()


def write_parts(table: Location | str, schema: pa.Schema,
                batches: Iterable[pa.RecordBatch]) -> list[AddAction]:
    """Write `batches` (each one row group) as parts in the table's folder or prefix; the add
    actions that commit them. On any error the parts written so far are removed and the error
    raised."""
    folder = _ObjectFolder(table) if isinstance(table, ObjectLocation) else _Folder(Path(table))
    actions: list[AddAction] = []
    written: list[str] = []
    part: _Part | None = None
    try:
        for batch in batches:
            if part is None:
                written.append(f"part-00000-{uuid.uuid4()}-c000.{COMPRESSION}.parquet")
                part = _Part(written[-1], pq.ParquetWriter(
                    folder.open(written[-1]), schema, compression=COMPRESSION,
                    use_dictionary=USE_DICTIONARY, write_statistics=STATISTICS))
            part.write(batch)
            if part.bytes >= PART_BYTES:
                actions.append(part.close(folder))
                part = None
        if part is not None:
            actions.append(part.close(folder))
    except BaseException:
        with contextlib.suppress(Exception):
            if part is not None:
                part.writer.close()
        for name in written:
            folder.remove(name)
        raise
    return actions
