"""Memory: peak RSS of `lakemirror ingest` staging one large Parquet file, above the RSS of the
same process idle (imports done), measured in a process of its own."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from lakemirror.bench.columns import SCHEMA, change_rows
from lakemirror.landing import sequence_file_name

BATCH_ROWS = 500_000
TABLE = "Big"


@dataclass(frozen=True)
class IngestMemory:
    file_gb: float
    rows: int
    idle_rss_mb: float
    peak_rss_mb: float

    @property
    def above_idle_mb(self) -> float:
        return self.peak_rss_mb - self.idle_rss_mb

    def text(self) -> str:
        return (f"memory: ingesting one {self.file_gb:.2f} GB Parquet file ({self.rows:,} rows): "
                f"peak RSS {self.peak_rss_mb:,.0f} MB, {self.above_idle_mb:,.0f} MB above the "
                f"idle process ({self.idle_rss_mb:,.0f} MB)")


def measure_ingest_memory(directory: Path, gigabytes: float,
                          progress: Callable[[str], None]) -> IngestMemory:
    shutil.rmtree(directory, ignore_errors=True)
    folder = directory / "LandingZone" / TABLE
    folder.mkdir(parents=True)
    (folder / "_metadata.json").write_text('{"keyColumns": ["id"]}')
    progress(f"memory: writing a {gigabytes:.2f} GB Parquet file")
    rows = write_large_file(folder / sequence_file_name(1), int(gigabytes * 1024**3))
    size = (folder / sequence_file_name(1)).stat().st_size / 1024**3
    progress(f"memory: ingesting {rows:,} rows ({size:.2f} GB)")
    process = subprocess.Popen(
        [sys.executable, "-m", "lakemirror.bench.memory", str(directory / "LandingZone"),
         str(directory / "warehouse")], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert process.stdout is not None
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError("memory: the ingest process failed")
    idle = json.loads(output)["idle_rss_mb"]
    return IngestMemory(size, rows, idle, usage.ru_maxrss / 1024)


def write_large_file(path: Path, size_bytes: int) -> int:
    """Write batches of generated change rows (inserts) until the file reaches `size_bytes`."""
    rng = np.random.default_rng(11)
    rows = 0
    with pq.ParquetWriter(path, SCHEMA) as writer:
        while path.stat().st_size < size_bytes or rows == 0:
            keys = np.arange(rows, rows + BATCH_ROWS, dtype=np.int64)
            writer.write_table(change_rows(rng, keys, np.zeros(BATCH_ROWS, np.int32)),
                               row_group_size=BATCH_ROWS)
            rows += BATCH_ROWS
    return rows


def _rss_mb() -> float:
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024


def main() -> None:
    """Child process: import everything, report idle RSS, then ingest the landing zone."""
    from lakemirror.bench.contenders import private_project
    from lakemirror.service import MirrorService

    zone, warehouse = Path(sys.argv[1]), Path(sys.argv[2])
    service = MirrorService(zone, warehouse, private_project(warehouse.parent / "project"),
                            quiet=True)
    print(json.dumps({"idle_rss_mb": _rss_mb()}), flush=True)
    [status] = service.ingest_only()
    if status.status == "failed":
        raise SystemExit(f"ingest failed: {status.error}")


if __name__ == "__main__":
    main()
