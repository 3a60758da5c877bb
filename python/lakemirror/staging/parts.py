"""Write staged rows as Parquet parts of a staging Delta table, for one commit that adds them.

pyarrow's streaming writer holds one row group at a time, so staging a file of any size takes
bounded memory, and it writes faster than delta-rs's writer (staging a 2 GB file: 259 MB above
idle against 462 MB through delta-rs; docs/pages/performance.md). The parts only count once the
commit that adds them is written: a failed write removes what it wrote, and a crash or a
failed commit leaves files no version of the table reads, which `lakemirror maintain`'s
vacuum removes after the retention period.
"""

from __future__ import annotations

import contextlib
import json
import os
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from deltalake.transaction import AddAction

from lakemirror.landing.changes import POSITION

PART_BYTES = 256 * 2**20  # Arrow bytes of rows in one part before the next part starts
COMPRESSION = "snappy"  # what delta-rs and Spark write by default
# No dictionary encoding: staging is a change log written once and read by the next MERGE, and
# trying dictionaries took 40% of the time writing the benchmark's rows (which it did not shrink).
USE_DICTIONARY = False


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

    def close(self, folder: Path) -> AddAction:
        self.writer.close()
        stat = (folder / self.name).stat()
        stats: dict[str, object] = {"numRecords": self.rows}
        if self.rows:  # lets readers skip parts by change position
            stats |= {"minValues": {POSITION: self.lowest}, "maxValues": {POSITION: self.highest},
                      "nullCount": {POSITION: 0}}
        return AddAction(self.name, stat.st_size, {}, int(stat.st_mtime * 1000), True,
                         json.dumps(stats))


def write_parts(table_path: str, schema: pa.Schema,
                batches: Iterable[pa.RecordBatch]) -> list[AddAction]:
    """Write `batches` (each one row group) as parts in the table's folder; the add actions
    that commit them. On any error the parts written so far are removed and the error raised."""
    folder = Path(table_path)
    folder.mkdir(parents=True, exist_ok=True)
    actions: list[AddAction] = []
    written: list[str] = []
    part: _Part | None = None
    try:
        for batch in batches:
            if part is None:
                written.append(f"part-00000-{uuid.uuid4()}-c000.{COMPRESSION}.parquet")
                part = _Part(written[-1], pq.ParquetWriter(
                    folder / written[-1], schema, compression=COMPRESSION,
                    use_dictionary=USE_DICTIONARY))
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
            with contextlib.suppress(FileNotFoundError):
                os.unlink(folder / name)
        raise
    return actions
