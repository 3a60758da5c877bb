"""What a snapshot changes in a table: per side of the table (the replay of its staged changes,
and the mirrored table when it applied them all), one Arrow join of its keys with the
snapshot's, never row by row.

A key is unchanged when each side holds exactly one row of it, equal to the snapshot's in every
column (`proof.equal`); a snapshot key that any side lacks or holds otherwise is upserted, and a
key a side holds that the snapshot lacks is deleted. The snapshot's keys are never NULL
(`proof.snapshot` refuses them), so Arrow's joins, which never match NULL, see them all; a
side's NULL key matches nothing and is deleted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import reduce

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakemirror.proof.equal import same_values

SIDE, SNAPSHOT = "side_row", "snapshot_row"  # row numbers, beside the keys named k0, k1, ...


@dataclass(frozen=True)
class Diff:
    """The snapshot's changes: the keys to delete, the snapshot rows to upsert (those of keys
    the replay lacks are inserts), and the snapshot rows left as they are."""

    deleted: pa.Table  # key columns only
    upserted: pa.Table  # snapshot rows
    inserted: int
    unchanged: int


@dataclass(frozen=True)
class _Side:
    """One side against the snapshot: per snapshot row whether the side holds its key, and
    whether it holds it once, equal; and the side's keys the snapshot lacks."""

    holds: np.ndarray
    clean: np.ndarray
    lacking: pa.Table


def diff(snapshot: pa.Table, sides: Sequence[pa.Table], keys: Sequence[str]) -> Diff:
    """The changes that make every side (the replay first) equal to `snapshot`; each side holds
    the snapshot's columns."""
    compared = [_compare(snapshot, side, keys) for side in sides]
    dirty = ~reduce(np.logical_and, [side.clean for side in compared])
    lacking = pa.concat_tables([side.lacking for side in compared])
    deleted = lacking.group_by(lacking.column_names).aggregate([])
    return Diff(deleted.rename_columns(list(keys)), snapshot.filter(pa.array(dirty)),
                int((~compared[0].holds).sum()), int((~dirty).sum()))


def _compare(snapshot: pa.Table, side: pa.Table, keys: Sequence[str]) -> _Side:
    """Join the side's keys with the snapshot's (full outer) and compare the matched rows."""
    pairs = _numbered(side, keys, SIDE).join(_numbered(snapshot, keys, SNAPSHOT),
                                             _key_names(keys), join_type="full outer")
    matched = pairs.filter(pc.and_(pc.is_valid(pairs.column(SIDE)),
                                   pc.is_valid(pairs.column(SNAPSHOT))))
    ours, theirs = matched.column(SNAPSHOT), matched.column(SIDE)
    equal = reduce(np.logical_and, [
        same_values(side.column(name).take(theirs), snapshot.column(name).take(ours)
                    ).to_numpy(zero_copy_only=False)
        for name in snapshot.column_names if name not in keys], np.ones(len(ours), bool))
    rows = ours.to_numpy()
    held = np.bincount(rows, minlength=snapshot.num_rows)
    differing = np.bincount(rows[~equal], minlength=snapshot.num_rows)
    lacking = pairs.filter(pc.is_null(pairs.column(SNAPSHOT))).select(_key_names(keys))
    return _Side(held > 0, (held == 1) & (differing == 0), lacking)


def _numbered(rows: pa.Table, keys: Sequence[str], number: str) -> pa.Table:
    """The keys of `rows`, named k0, k1, ... (names from the landing zone never meet the
    names of this module), and each row's number."""
    return rows.select(list(keys)).rename_columns(_key_names(keys)).append_column(
        number, pa.array(np.arange(rows.num_rows, dtype=np.int64)))


def _key_names(keys: Sequence[str]) -> list[str]:
    return [f"k{index}" for index in range(len(keys))]
