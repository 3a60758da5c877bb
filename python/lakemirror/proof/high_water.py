"""A resync's changes against a ConditionalUpdateColumn C: the MERGE skips an update, upsert or
delete whose C is below its key's high-water mark (the largest C of every earlier change to
the key; NULL is lowest). A delete is staged with the mark itself, so it takes effect; an
upsert below the mark would be skipped, so the snapshot is refused, naming the key."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from lakemirror.codegen.quoting import datafusion_identifier as quoted
from lakemirror.delta.rows import query_tables
from lakemirror.errors import SnapshotError
from lakemirror.proof.replay import STAGED, ChangeLog
from lakemirror.storage.location import Location


def with_high_water(deleted: pa.Table, upserted: pa.Table, log: ChangeLog, staging: Location,
                    table: str) -> pa.Table:
    """The deleted keys with C set to their high-water mark; refuses an upsert below it."""
    assert log.conditional_column is not None
    column, keys = log.conditional_column, list(log.keys)
    names = [f"k{index}" for index in range(len(keys))]
    marks = query_tables({STAGED: staging}, f"""
select {", ".join(map(quoted, keys))}, max({quoted(column)}) as _lm_high_water
from {STAGED} group by {", ".join(map(quoted, keys))}""").rename_columns([*names, "mark"])
    upserts = upserted.select([*keys, column]).rename_columns([*names, "value"])
    checked = upserts.join(marks, names, join_type="inner")
    below = pc.and_(pc.is_valid(checked.column("mark")), pc.fill_null(
        pc.less(checked.column("value"), checked.column("mark")), True))
    if pc.any(below).as_py():
        sample = checked.filter(below).slice(0, 1).to_pylist()[0]
        key = ", ".join(f"{name}={sample[alias]!r}" for name, alias in zip(keys, names))
        raise SnapshotError(
            f"the snapshot's row of key {key} has {column}={sample['value']!r}, below the "
            f"key's high-water mark {sample['mark']!r}: the MERGE would skip it, so the "
            f"mirror could not equal the snapshot ({int(pc.sum(below).as_py())} such keys)",
            table=table, hint=f"export the snapshot with {column} values at least those "
                              "of the changes already landed")
    if column in keys:
        return deleted
    marked = deleted.rename_columns(names).join(marks, names, join_type="left outer")
    return marked.rename_columns([*keys, column])
