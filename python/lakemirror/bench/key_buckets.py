"""The expected final tables of a large zone, and their verification, a key bucket at a time.

A generated table's change rows can outgrow memory (scale 100: 200 million rows, ~25 GB in
Arrow). They are split once into `count` bucket files by `id % count`, in change order, so a
key's changes all land in one bucket in their order; each bucket's final state is then computed
alone (reference_state.py), and what verification needs of it kept: its sorted keys (a `.npy`
file) and its rows of a sample of keys. A contender's final table is read once, as a stream:
its keys are split the same way and its rows of the sampled keys kept, and each bucket is
compared with its expected one (verification.py). One bucket (a small zone) is the same check
on the whole table.
"""

from __future__ import annotations

import math
import shutil
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lakemirror.bench.columns import KEY, Keys
from lakemirror.bench.reference_state import final_state
from lakemirror.bench.verification import Seen, Verification, compare, pick_keys
from lakemirror.contract import ROW_MARKER
from lakemirror.delta.rows import without_views

BUCKET_ROWS = 5_000_000  # change rows per bucket: ~0.6 GB in Arrow, ~2.3 GB at final_state's peak
READ_ROWS = 1_000_000  # rows of a change file read at once while splitting


@dataclass(frozen=True)
class ExpectedBucket:
    """The expected rows whose `id % bucket count` is this bucket's number: their sorted keys
    (a `.npy` file) and their rows of the sampled keys."""

    keys: Path
    sample: pa.Table


@dataclass(frozen=True)
class ExpectedTable:
    """The expected final table of one generated table, in key buckets."""

    buckets: tuple[ExpectedBucket, ...]
    column_names: list[str]
    rows: int


def bucket_count(change_rows: int) -> int:
    """Buckets enough for each to hold about `BUCKET_ROWS` change rows."""
    return max(1, math.ceil(change_rows / BUCKET_ROWS))


def expected_table(files: Sequence[Path], folder: Path, count: int, sample: int,
                   seed: int = 7) -> ExpectedTable:
    """The final state of the change `files`, computed bucket by bucket under `folder` (the
    bucketed change rows are removed as they are used), with `sample` keys per bucket whose
    values are compared."""
    schema = pq.read_schema(files[0])
    batches = (batch for path in files for batch in parquet_batches(path))
    buckets, rows = [], 0
    for number, path in enumerate(_split_by_key(batches, schema, count, folder / "changes")):
        state = final_state(pq.read_table(path))
        keys = folder / f"keys-{number:04d}.npy"
        np.save(keys, np.sort(state[KEY].to_numpy()))
        picked = pick_keys(state[KEY], sample, seed)
        buckets.append(ExpectedBucket(keys, state.filter(pc.is_in(state[KEY], value_set=picked))))
        rows += state.num_rows
        path.unlink()
    shutil.rmtree(folder / "changes")
    return ExpectedTable(tuple(buckets), [name for name in schema.names if name != ROW_MARKER],
                         rows)


def verify_in_buckets(expected: ExpectedTable, actual: pa.RecordBatchReader, *,
                      key: str = KEY) -> Verification:
    """Verify the stream `actual` against `expected` bucket by bucket: every key, and the
    values of the sampled keys; the first difference names its bucket and key."""
    count = len(expected.buckets)
    every_picked = pa.concat_arrays([bucket.sample[key].combine_chunks()
                                     for bucket in expected.buckets])
    keys: list[list[Keys]] = [[np.empty(0, dtype=np.int64)] for _ in range(count)]
    sampled = [without_views(actual.schema.empty_table())]
    for batch in actual:
        batch_keys = batch.column(key).to_numpy()
        for number, part in enumerate(_by_bucket(batch_keys, count)):
            keys[number].append(batch_keys[part])
        wanted = pc.is_in(batch.column(key), value_set=every_picked)
        if pc.any(wanted).as_py():  # Arrow cannot filter views: a batch with some is cast
            sampled.append(without_views(pa.Table.from_batches([batch])).filter(wanted))
    rows, compared = pa.concat_tables(sampled), 0
    for number, bucket in enumerate(expected.buckets):
        checked = compare(Seen(expected.column_names, np.load(bucket.keys), bucket.sample),
                          Seen(actual.schema.names, np.concatenate(keys[number]), rows),
                          bucket.sample[key], key=key)
        if not checked.ok:
            where = f"key bucket {number + 1} of {count}: " if count > 1 else ""
            return Verification(False, where + checked.message, compared + checked.compared_rows)
        compared += checked.compared_rows
    return Verification(True, f"{expected.rows} rows match ({compared} compared, "
                              f"{count} key bucket{'s' if count > 1 else ''})", compared)


def parquet_batches(path: Path) -> Iterator[pa.RecordBatch]:
    """The rows of a Parquet file, about `READ_ROWS` at a time (whole row groups), in bounded
    memory: pyarrow's `iter_batches` holds on to what it read (3.4 GB for a 2.9 GB file)."""
    parquet = pq.ParquetFile(path)
    groups: list[int] = []
    for number in range(parquet.num_row_groups):
        groups.append(number)
        if (number + 1 == parquet.num_row_groups
                or sum(parquet.metadata.row_group(group).num_rows for group in groups)
                >= READ_ROWS):
            yield from parquet.read_row_groups(groups).to_batches()
            groups = []


def _split_by_key(batches: Iterable[pa.RecordBatch], schema: pa.Schema, count: int,
                  folder: Path) -> list[Path]:
    """Write `batches` into `count` bucket files by key, keeping their order in each (a row
    group per batch and bucket: `write_batch` would buffer a row group in every writer)."""
    folder.mkdir(parents=True)
    paths = [folder / f"{number:04d}.parquet" for number in range(count)]
    writers = [pq.ParquetWriter(path, schema) for path in paths]
    try:
        for batch in batches:
            for writer, part in zip(writers, _by_bucket(batch.column(KEY).to_numpy(), count)):
                if len(part):
                    writer.write_table(pa.Table.from_batches([batch.take(part)]))
    finally:
        for writer in writers:
            writer.close()
    return paths


def _by_bucket(keys: Keys, count: int) -> list[npt.NDArray[np.intp]]:
    """Positions of `keys` in each bucket (`key % count`), ascending within a bucket."""
    buckets = keys % count
    order = np.argsort(buckets, kind="stable")
    bounds = np.searchsorted(buckets[order], np.arange(count + 1))
    return [order[start:end] for start, end in zip(bounds[:-1], bounds[1:])]
