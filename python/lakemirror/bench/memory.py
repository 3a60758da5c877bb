"""Memory: peak RSS of `lakemirror ingest` staging one large Parquet or CSV file, above the RSS
of the same process idle (imports done), measured in a process of its own."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.csv as pv
import pyarrow.parquet as pq

from lakemirror.bench.columns import SCHEMA, change_rows
from lakemirror.bench.rusage import measure
from lakemirror.contract import ROW_MARKER
from lakemirror.landing import sequence_file_name
from lakemirror.environment import (
    DEFAULT_MAX_TEXT_BYTES,
    MAX_TEXT_BYTES,
    process_environment,
)

BATCH_ROWS = 500_000
BYTES_PER_ROW = 100  # about what a generated row takes, to size the batches of a small file
TABLE = "Big"
FileFormat = Literal["parquet", "csv"]
CSV_TYPES = {pa.int64(): "Int64", pa.int32(): "Int32", pa.float64(): "Double",
             pa.bool_(): "Boolean", pa.date32(): "IDate", pa.timestamp("us"): "DateTime"}
SETTLED_AGO_SECONDS = 3_600  # a CSV has no footer: make it look settled at once


@dataclass(frozen=True)
class IngestMemory:
    file_gb: float
    rows: int
    idle_rss_mb: float
    peak_rss_mb: float
    file_format: FileFormat = "parquet"

    @property
    def above_idle_mb(self) -> float:
        return self.peak_rss_mb - self.idle_rss_mb

    def text(self) -> str:
        return (f"memory: ingesting one {self.file_gb:.2f} GB {self.file_format} file "
                f"({self.rows:,} rows): peak RSS {self.peak_rss_mb:,.0f} MB, "
                f"{self.above_idle_mb:,.0f} MB above the idle process "
                f"({self.idle_rss_mb:,.0f} MB)")


def measure_ingest_memory(directory: Path, gigabytes: float, progress: Callable[[str], None],
                          file_format: FileFormat = "parquet") -> IngestMemory:
    """Write one file of about `gigabytes` GB (GiB) and stage it in a process of its own. The
    CSV one raises LAKEMIRROR_MAX_TEXT_BYTES in that process when the file is above it."""
    shutil.rmtree(directory, ignore_errors=True)
    folder = directory / "LandingZone" / TABLE
    folder.mkdir(parents=True)
    path = folder / f"{sequence_file_name(1).rsplit('.', 1)[0]}.{file_format}"
    progress(f"memory: writing a {gigabytes:.2f} GB {file_format} file")
    size_bytes = int(gigabytes * 1024**3)
    if file_format == "csv":
        rows = write_large_csv(path, size_bytes)
        (folder / "_metadata.json").write_text(json.dumps(csv_metadata()))
        settled = time.time() - SETTLED_AGO_SECONDS
        os.utime(path, (settled, settled))
    else:
        rows = write_large_file(path, size_bytes)
        (folder / "_metadata.json").write_text('{"keyColumns": ["id"]}')
    size = path.stat().st_size
    progress(f"memory: ingesting {rows:,} rows ({size / 1024**3:.2f} GB)")
    env = process_environment()
    if file_format == "csv" and size >= int(env.get(MAX_TEXT_BYTES) or DEFAULT_MAX_TEXT_BYTES):
        env[MAX_TEXT_BYTES] = str(size + 1)
    log, idle = directory / "stderr.log", directory / "idle.json"
    with log.open("w") as errors:
        usage = measure([sys.executable, "-m", "lakemirror.bench.memory",
                         str(directory / "LandingZone"), str(directory / "warehouse"), str(idle)],
                        directory / "usage.json", stderr=errors, env=env)
    if usage.exit_code != 0:
        raise RuntimeError(f"memory: the {file_format} ingest process failed: "
                           f"{log.read_text().strip()[-500:]}")
    idle_rss_mb = json.loads(idle.read_text())["idle_rss_mb"]
    return IngestMemory(size / 1024**3, rows, idle_rss_mb, usage.peak_rss_mb, file_format)


def write_large_file(path: Path, size_bytes: int) -> int:
    """Write batches of generated change rows (inserts) until the file reaches `size_bytes`."""
    rows = 0
    with pq.ParquetWriter(path, SCHEMA) as writer:
        for batch in _batches(path, size_bytes):
            writer.write_table(batch, row_group_size=batch.num_rows)
            rows += batch.num_rows
    return rows


def write_large_csv(path: Path, size_bytes: int) -> int:
    """Write generated rows (an initial load: no `__rowMarker__`) as CSV with a header until
    the file reaches `size_bytes`; timestamps without a zone, decimals as text."""
    rows = 0
    with pv.CSVWriter(path, csv_schema()) as writer:
        for batch in _batches(path, size_bytes):
            writer.write_table(batch.drop_columns([ROW_MARKER]).cast(csv_schema()))
            rows += batch.num_rows
    return rows


def csv_schema() -> pa.Schema:
    fields = [field for field in SCHEMA if field.name != ROW_MARKER]
    return pa.schema([field.with_type(pa.timestamp("us")) if pa.types.is_timestamp(field.type)
                      else field.with_type(pa.string()) if pa.types.is_decimal(field.type)
                      else field for field in fields])


def csv_metadata() -> dict[str, object]:
    """`_metadata.json` of the CSV table: keys, `\n` rows, the typed columns."""
    return {"keyColumns": ["id"], "FileFormat": "CSV",
            "FileFormatTypeProperties": {"RowSeparator": "\n"},
            "SchemaDefinition": {"Columns": [
                {"Name": field.name, "DataType": CSV_TYPES.get(field.type, "String")}
                for field in csv_schema()]}}


def _batches(path: Path, size_bytes: int) -> Iterator[pa.Table]:
    """Generated insert rows, BATCH_ROWS at a time, until the file at `path` (which the
    caller writes them to) reaches `size_bytes`; at least one batch."""
    rng = np.random.default_rng(11)
    batch_rows = min(BATCH_ROWS, max(1_000, size_bytes // BYTES_PER_ROW // 4))
    rows = 0
    while rows == 0 or path.stat().st_size < size_bytes:
        keys = np.arange(rows, rows + batch_rows, dtype=np.int64)
        yield change_rows(rng, keys, np.zeros(batch_rows, np.int32))
        rows += batch_rows


def _rss_mb() -> float:
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024


def main() -> None:
    """Child process: import everything, report idle RSS, then ingest the landing zone."""
    from lakemirror.bench.contenders import private_project
    from lakemirror.service import MirrorService, RunSettings

    zone, warehouse, idle = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
    service = MirrorService(RunSettings.given(
        zone, warehouse, private_project(warehouse.parent / "project"), quiet=True))
    idle.write_text(json.dumps({"idle_rss_mb": _rss_mb()}))
    [status] = service.ingest_only()
    if status.status == "failed":
        raise SystemExit(f"ingest failed: {status.error}")


if __name__ == "__main__":
    main()
