"""Writes a deterministic benchmark landing zone from a BenchSpec, vectorised with numpy.

File 1 of each table is the initial load (all inserts); files 2.. are change files whose
updates, deletes and some upserts hit live keys, whose inserts and other upserts bring fresh
keys, and whose repeats change a key several times in one file (a key deleted earlier in a
file may come back later in it). The stream never inserts a live key nor updates a dead one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pyarrow.parquet as pq

from lakemirror.bench.columns import KEY, SCHEMA, Keys, Markers, change_rows
from lakemirror.bench.spec import OPS, BenchSpec, Op
from lakemirror.contract import DELETE, INSERT, UPDATE, UPSERT
from lakemirror.landing import sequence_file_name

MARKERS: dict[Op, int] = {"insert": INSERT, "update": UPDATE, "delete": DELETE,
                          "upsert": UPSERT}
ROW_GROUP_ROWS = 100_000
CHUNK_ROWS = 1_000_000  # rows made at once (~150 MB): a file of any size in bounded memory
FRESH_UPSERT_SHARE = 0.5


@dataclass(frozen=True)
class GeneratedTable:
    """One generated table: its name (schema dbo), folder, files in order, rows in all files."""

    name: str
    folder: Path
    files: tuple[Path, ...]
    change_rows: int


def generate_zone(root: Path, spec: BenchSpec) -> list[GeneratedTable]:
    """Write `root/LandingZone/Bench1..N` for `spec`; the same spec gives the same files."""
    zone = root / "LandingZone"
    return [_generate_table(zone, f"Bench{index}", spec, index)
            for index in range(1, spec.tables + 1)]


def _generate_table(zone: Path, name: str, spec: BenchSpec, index: int) -> GeneratedTable:
    folder = zone / name
    if folder.exists():
        raise FileExistsError(f"{folder} already exists; generate into an empty directory")
    folder.mkdir(parents=True)
    (folder / "_metadata.json").write_text(json.dumps({"keyColumns": [KEY]}))
    rng = np.random.default_rng([spec.seed, index])
    alive = np.zeros(spec.table_rows + spec.files * spec.changes_per_file + 1, dtype=np.bool_)
    alive[1:spec.table_rows + 1] = True
    files = [_write_file(folder, 1, (spec.seed, index), _initial_load(spec.table_rows))]
    next_key = spec.table_rows + 1
    for sequence in range(2, spec.files + 2):
        keys, markers = _plan_file(rng, spec, alive, next_key)
        next_key = max(next_key, int(keys.max()) + 1)
        files.append(_write_file(folder, sequence, (spec.seed, index),
                                 [(keys, markers)]))
    rows = spec.table_rows + spec.files * spec.changes_per_file
    return GeneratedTable(name=name, folder=folder, files=tuple(files), change_rows=rows)


def _initial_load(rows: int) -> Iterator[tuple[Keys, Markers]]:
    """Keys 1..`rows`, all inserts, a chunk at a time."""
    for start in range(1, rows + 1, CHUNK_ROWS):
        keys = np.arange(start, min(start + CHUNK_ROWS, rows + 1), dtype=np.int64)
        yield keys, np.full(len(keys), INSERT, dtype=np.int32)


def _write_file(folder: Path, sequence: int, table_seed: tuple[int, int],
                planned: Iterable[tuple[Keys, Markers]]) -> Path:
    """Write change file `sequence` from its planned keys and markers, its rows made
    `CHUNK_ROWS` at a time (bounded memory), each chunk's values drawn from a generator seeded
    by the table, the file and the chunk's number, so the same spec gives the same file."""
    path = folder / sequence_file_name(sequence)
    chunk_number = 0
    with pq.ParquetWriter(path, SCHEMA) as writer:
        for keys, markers in planned:
            for start in range(0, len(keys), CHUNK_ROWS):
                rng = np.random.default_rng([*table_seed, sequence, chunk_number])
                chunk = slice(start, start + CHUNK_ROWS)
                writer.write_table(change_rows(rng, keys[chunk], markers[chunk]),
                                   row_group_size=ROW_GROUP_ROWS)
                chunk_number += 1
    return path


def _plan_file(rng: np.random.Generator, spec: BenchSpec, alive: npt.NDArray[np.bool_],
               next_key: int) -> tuple[Keys, Markers]:
    """Keys and markers of one change file; `alive` (indexed by key) is updated to after it."""
    n = spec.changes_per_file
    markers = rng.permutation(np.repeat(
        np.array([MARKERS[op] for op in OPS], dtype=np.int32),
        _exact_counts(n, [spec.op_mix[op] for op in OPS])))
    repeat = np.zeros(n, dtype=np.bool_)
    repeat[1 + rng.choice(n - 1, size=min(round(n * spec.repeat_share), n - 1),
                          replace=False)] = True
    roots = np.flatnonzero(~repeat)
    keys = np.empty(n, dtype=np.int64)
    keys[roots] = _root_keys(rng, markers[roots], alive, next_key)
    roots_before = np.cumsum(~repeat)[repeat]
    keys[repeat] = keys[roots[(rng.random(len(roots_before)) * roots_before).astype(np.int64)]]
    order = np.argsort(keys, kind="stable")
    _make_valid(markers, keys, order)
    ordered = keys[order]
    last = order[np.append(ordered[1:] != ordered[:-1], True)]
    alive[keys[last]] = markers[last] != DELETE
    return keys, markers


def _root_keys(rng: np.random.Generator, markers: Markers, alive: npt.NDArray[np.bool_],
               next_key: int) -> Keys:
    """Distinct keys for the first change to each key: fresh for inserts and some upserts,
    live (sampled without replacement) for the rest."""
    fresh = (markers == INSERT) | ((markers == UPSERT)
                                   & (rng.random(len(markers)) < FRESH_UPSERT_SHARE))
    keys = np.empty(len(markers), dtype=np.int64)
    keys[fresh] = np.arange(next_key, next_key + np.count_nonzero(fresh), dtype=np.int64)
    keys[~fresh] = rng.choice(np.flatnonzero(alive), size=np.count_nonzero(~fresh),
                              replace=False)
    return keys


def _make_valid(markers: Markers, keys: Keys, order: npt.NDArray[np.intp]) -> None:
    """Turn repeats the key's state forbids into allowed ones: an insert of a live key becomes
    an update, an update or delete of a dead key an insert. Works rank by rank along each
    key's changes (`order` groups rows by key, in file order)."""
    ordered = keys[order]
    starts = np.append(True, ordered[1:] != ordered[:-1])
    index = np.arange(len(order))
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = index - np.maximum.accumulate(np.where(starts, index, 0))
    previous = np.empty(len(order), dtype=np.intp)
    previous[order[1:]] = order[:-1]
    for step in range(1, int(rank.max(initial=0)) + 1):
        rows = np.flatnonzero(rank == step)
        live = markers[previous[rows]] != DELETE
        wanted = markers[rows]
        markers[rows] = np.where(
            live & (wanted == INSERT), UPDATE,
            np.where(~live & ((wanted == UPDATE) | (wanted == DELETE)), INSERT, wanted))


def _exact_counts(total: int, shares: list[float]) -> npt.NDArray[np.int64]:
    """Split `total` by `shares` into integers that sum to it (largest remainder)."""
    exact = np.array(shares) * total
    counts: npt.NDArray[np.int64] = np.floor(exact).astype(np.int64)
    counts[np.argsort(counts - exact)[: total - int(counts.sum())]] += 1
    return counts
