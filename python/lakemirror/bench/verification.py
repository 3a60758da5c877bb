"""Compare a contender's final table with the expected one: same keys, same values."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from lakemirror.bench.columns import KEY
from lakemirror.contract import ROW_MARKER

IGNORED_PREFIX = "_lm_"


@dataclass(frozen=True)
class Verification:
    """Whether the tables agree; `message` names the first difference found."""

    ok: bool
    message: str
    compared_rows: int = 0


@dataclass(frozen=True)
class Seen:
    """What verification compares of a table: its column names, all its keys, and its rows of
    (at least) the keys whose values are compared; so a table too large for memory can be
    compared a part at a time, read once as a stream (key_buckets.py)."""

    column_names: list[str]
    keys: npt.NDArray[np.generic]
    rows: pa.Table

    @classmethod
    def of(cls, table: pa.Table, key: str) -> Seen:
        return cls(table.column_names, table[key].to_numpy(), table)


def verify(expected: pa.Table, actual: pa.Table, sample: int | None = 1_000, seed: int = 7,
           *, key: str = KEY, changed_keys: pa.Array | None = None) -> Verification:
    """Check row counts and the full key sets, then the values of `sample` keys (all keys when
    None), half of them drawn from `changed_keys` when given. `_lm_*` columns are ignored and
    actual columns are cast to the expected types before comparing."""
    picked = pick_keys(expected[key], sample, seed, changed_keys)
    return compare(Seen.of(expected, key), Seen.of(actual, key), picked, key=key)


def compare(expected: Seen, actual: Seen, picked: pa.Array, *, key: str = KEY) -> Verification:
    """`verify` on what was seen of both tables, comparing the values of the `picked` keys."""
    columns = _data_columns(expected.column_names)
    missing = [name for name in columns if name not in actual.column_names]
    extra = [name for name in _data_columns(actual.column_names) if name not in columns]
    if missing or extra:
        return Verification(False, f"columns differ: missing {missing}, unexpected {extra}")
    keys_differ = _key_difference(np.sort(expected.keys), np.sort(actual.keys))
    if keys_differ:
        return Verification(False, keys_differ)
    want = _rows_of(expected.rows.select(columns), key, picked)
    got = _rows_of(actual.rows.select(columns), key, picked)
    for name in columns:
        difference = _column_difference(want, got, name, key)
        if difference:
            return Verification(False, difference, want.num_rows)
    return Verification(True, f"{len(expected.keys)} rows match ({want.num_rows} compared)",
                        want.num_rows)


def _data_columns(names: list[str]) -> list[str]:
    return [name for name in names if name != ROW_MARKER and not name.startswith(IGNORED_PREFIX)]


def _key_difference(want: npt.NDArray[np.generic], got: npt.NDArray[np.generic]) -> str:
    """Empty when the key multisets are equal, else the counts and a first culprit key."""
    if len(want) == len(got) and np.array_equal(want, got):
        return ""
    counts = f"expected {len(want)} rows, got {len(got)}"
    missing, extra = np.setdiff1d(want, got), np.setdiff1d(got, want)
    if len(missing):
        return f"{counts}: key {missing[0].item()!r} is missing"
    if len(extra):
        return f"{counts}: key {extra[0].item()!r} is not expected"
    duplicated = got[1:][got[1:] == got[:-1]]
    return f"{counts}: key {duplicated[0].item()!r} appears more than once"


def pick_keys(keys: pa.ChunkedArray, sample: int | None, seed: int,
               changed_keys: pa.Array | None = None) -> pa.Array:
    """`sample` distinct expected keys, deterministic for `seed`; all keys when None."""
    every = keys.combine_chunks()
    if sample is None or sample >= len(every):
        return every
    rng = np.random.default_rng(seed)
    if changed_keys is None:
        return _draw(every, sample, rng)
    changed = _draw(pc.filter(changed_keys, pc.is_in(changed_keys, value_set=every)),
                    sample // 2, rng)
    return pc.unique(pa.concat_arrays([changed, _draw(every, sample - len(changed), rng)]))


def _draw(pool: pa.Array, count: int, rng: np.random.Generator) -> pa.Array:
    """Up to `count` distinct values of `pool`, drawn without replacement."""
    unique = pc.unique(pool)
    return unique.take(rng.choice(len(unique), min(count, len(unique)), replace=False))


def _rows_of(table: pa.Table, key: str, keys: pa.Array) -> pa.Table:
    return table.filter(pc.is_in(table[key], value_set=keys)).sort_by(key)


def _column_difference(want: pa.Table, got: pa.Table, name: str, key: str) -> str:
    """Empty when column `name` agrees row by row (tables sorted by key), else the first
    difference with its key and both values."""
    expected, actual = want[name], got[name]
    if actual.type != expected.type:
        try:
            actual = actual.cast(expected.type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:
            return f"column {name!r}: type {got[name].type} is not {expected.type} ({error})"
    same = pc.if_else(pc.is_null(expected), pc.is_null(actual),
                      pc.fill_null(pc.equal(expected, actual), False))
    if pc.all(same).as_py():
        return ""
    index = pc.index(same, False).as_py()
    return (f"key {want[key][index].as_py()!r}, column {name!r}: expected "
            f"{expected[index].as_py()!r}, got {actual[index].as_py()!r}")
