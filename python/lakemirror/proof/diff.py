"""What a snapshot changes in a table: Arrow joins on the keys of the snapshot's rows with the
rows the table holds (the replay of its staged changes, and the mirrored table when it applied
them all), never row by row.

A key is unchanged when each side holds exactly one row of it, equal to the snapshot's in every
column (NULL equal to NULL, NaN to NaN); a snapshot key that any side lacks or holds otherwise
is upserted, and a key a side holds that the snapshot lacks is deleted. The snapshot's keys are
never NULL (`proof.snapshot` refuses them), so Arrow's joins, which never match NULL, see them
all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import reduce

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakemirror.proof.equal import same_values

INDEX = "index"  # a row's index, beside the renamed keys


@dataclass(frozen=True)
class Diff:
    """The snapshot's changes: the keys to delete, the snapshot rows to upsert (those of keys
    the replay lacks are inserts), and the snapshot rows left as they are."""

    deleted: pa.Table  # key columns only
    upserted: pa.Table  # snapshot rows
    inserted: int
    unchanged: int


def diff(snapshot: pa.Table, sides: Sequence[pa.Table], keys: Sequence[str]) -> Diff:
    """The changes that make every side (the replay first) equal to `snapshot`; each side holds
    the snapshot's columns."""
    names = _Names(keys, snapshot.column_names)
    ours = names.renamed(snapshot)
    theirs = [names.renamed(side) for side in sides]
    clean = reduce(lambda held, keys: names.join(held, keys, "left semi"),
                   [_clean_keys(ours, side, names) for side in theirs])
    dirty = names.join(ours, clean, "left anti")
    held = [names.distinct(side) for side in theirs]
    inserted = names.join(dirty, held[0], "left anti").num_rows
    gone = [names.join(keys, ours, "left anti") for keys in held]
    deleted = names.distinct(pa.concat_tables(gone))
    return Diff(names.named(deleted), names.named(dirty), inserted,
                snapshot.num_rows - dirty.num_rows)


@dataclass(frozen=True)
class _Names:
    """Columns renamed for the joins: the keys k0, k1, ..., the other columns c0, c1, ...
    (names from the landing zone never meet names of this module)."""

    keys: Sequence[str]
    columns: Sequence[str]

    @property
    def key_names(self) -> list[str]:
        return [f"k{index}" for index in range(len(self.keys))]

    def _others(self) -> list[str]:
        return [name for name in self.columns if name not in self.keys]

    def renamed(self, rows: pa.Table) -> pa.Table:
        others = self._others()
        return rows.select([*self.keys, *others]).rename_columns(
            [*self.key_names, *(f"c{index}" for index in range(len(others)))])

    def named(self, rows: pa.Table) -> pa.Table:
        """Renamed rows with their names back."""
        names = dict(zip(self.key_names, self.keys))
        names |= {f"c{index}": name for index, name in enumerate(self._others())}
        return rows.rename_columns([names[name] for name in rows.column_names])

    def distinct(self, rows: pa.Table) -> pa.Table:
        """The distinct keys of renamed rows."""
        return rows.group_by(self.key_names).aggregate([])

    def join(self, left: pa.Table, right: pa.Table, kind: str) -> pa.Table:
        """The rows of `left` whose key `right` holds (`left semi`) or lacks (`left anti`),
        in their order (joined on the keys alone: Arrow's joins carry no nested column)."""
        found = self.indexed(left).join(right.select(self.key_names), self.key_names,
                                        join_type=kind)
        rows = found.column(INDEX)
        return left.take(rows.take(pc.sort_indices(rows)))

    def indexed(self, rows: pa.Table) -> pa.Table:
        """The keys of `rows` and each row's index."""
        return rows.select(self.key_names).append_column(
            INDEX, pa.array(np.arange(rows.num_rows, dtype=np.int64)))


def _clean_keys(snapshot: pa.Table, side: pa.Table, names: _Names) -> pa.Table:
    """The keys the side holds once, equal to the snapshot's row in every column."""
    keys = names.key_names
    pairs = names.indexed(side).join(
        names.indexed(snapshot).rename_columns([*keys, "snapshot_index"]), keys,
        join_type="inner")
    ours, theirs = pairs.column(INDEX), pairs.column("snapshot_index")
    equal = reduce(pc.and_, [same_values(side.column(name).take(ours),
                                         snapshot.column(name).take(theirs))
                             for name in snapshot.column_names if name not in keys],
                   pa.chunked_array([pa.repeat(True, pairs.num_rows)]))
    grouped = pairs.select(keys).append_column("equal", equal).group_by(keys).aggregate(
        [("equal", "all"), ("equal", "count")])
    once = pc.and_(grouped.column("equal_all"), pc.equal(grouped.column("equal_count"), 1))
    return grouped.filter(once).select(keys)
