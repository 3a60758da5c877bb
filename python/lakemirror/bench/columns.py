"""Column values of generated benchmark rows: ten columns of mixed types, built from numpy."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from lakemirror.contract import DELETE, ROW_MARKER

KEY = "id"
SCHEMA = pa.schema([
    (KEY, pa.int64()), ("quantity", pa.int32()), ("version", pa.int64()),
    ("price", pa.float64()), ("code", pa.string()), ("note", pa.string()),
    ("active", pa.bool_()), ("birth_date", pa.date32()),
    ("updated_at", pa.timestamp("us", tz="UTC")), ("balance", pa.decimal128(18, 4)),
    (ROW_MARKER, pa.int32()),
])
LETTERS = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz    ", dtype=np.uint8)
EPOCH_2020_US = 1_577_836_800_000_000
FIVE_YEARS_US = 5 * 365 * 86_400 * 1_000_000
NOTE_NULL_SHARE = 0.05

Keys = npt.NDArray[np.int64]
Markers = npt.NDArray[np.int32]


def change_rows(rng: np.random.Generator, keys: Keys, markers: Markers) -> pa.Table:
    """Rows for `keys` with random values and `__rowMarker__` = `markers`; a delete row carries
    only its key (other columns null), as the contract allows."""
    n = len(keys)
    values = [
        pa.array(rng.integers(0, 1_000, n, dtype=np.int32)),
        pa.array(rng.integers(0, 1 << 40, n, dtype=np.int64)),
        pa.array(np.round(rng.random(n) * 1_000, 2)),
        _strings(rng, np.full(n, 8, dtype=np.int32), letters_only=True),
        _strings(rng, rng.integers(16, 65, n, dtype=np.int32)),
        pa.array(rng.random(n) < 0.5),
        pa.array(rng.integers(0, 20_000, n, dtype=np.int32)).cast(pa.date32()),
        pa.array(EPOCH_2020_US + rng.integers(0, FIVE_YEARS_US, n, dtype=np.int64))
        .cast(SCHEMA.field("updated_at").type),
        _decimals(rng.integers(-10**12, 10**12, n, dtype=np.int64)),
    ]
    values[4] = _with_nulls(values[4], rng.random(n) >= NOTE_NULL_SHARE)
    kept = pa.array(markers != DELETE)
    data = [_with_nulls(column, kept) for column in values]
    return pa.Table.from_arrays([pa.array(keys), *data, pa.array(markers)], schema=SCHEMA)


def _strings(rng: np.random.Generator, lengths: npt.NDArray[np.int32], *,
             letters_only: bool = False) -> pa.Array:
    """Random strings of the given lengths, written straight into Arrow buffers (letters
    from random bytes; the slight bias of `byte % alphabet size` does not matter here)."""
    offsets = np.zeros(len(lengths) + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    alphabet = LETTERS[:26] if letters_only else LETTERS
    by_byte = alphabet[np.arange(256) % len(alphabet)]
    data = by_byte[np.frombuffer(rng.bytes(int(offsets[-1])), dtype=np.uint8)]
    return pa.Array.from_buffers(pa.string(), len(lengths),
                                 [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def _decimals(unscaled: Keys) -> pa.Array:
    """decimal(18, 4) values from unscaled int64s (two's complement, 128-bit little endian)."""
    words = np.empty((len(unscaled), 2), dtype=np.int64)
    words[:, 0] = unscaled
    words[:, 1] = unscaled >> 63
    return pa.Array.from_buffers(pa.decimal128(18, 4), len(unscaled),
                                 [None, pa.py_buffer(words)])


def _with_nulls(column: pa.Array, valid: pa.Array | npt.NDArray[np.bool_]) -> pa.Array:
    return pc.if_else(valid, column, pa.scalar(None, column.type))
