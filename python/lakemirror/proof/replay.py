"""The state a table's staged changes imply, recomputed from its change log alone.

A replay is a query of delta-rs's SQL engine over the staging table (registered as `staged`),
written from the contract's semantics (`lakemirror.reference`), never from the MERGE macro that
builds the mirror: per key, the rows are the last update or upsert that took effect and every
insert after the key's last update, upsert or delete. With a ConditionalUpdateColumn C, an
update, upsert or delete takes effect only when its C reaches the largest C of every earlier
change to its key. Keys match NULL to NULL, as the reference does. Every name in the query is
quoted by `datafusion_identifier`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from lakemirror.codegen.quoting import datafusion_identifier as quoted
from lakemirror.contract import DELETE, INSERT, ROW_MARKER
from lakemirror.delta.access import delta_table
from lakemirror.delta.bookkeeping import bookkeeping_commit
from lakemirror.delta.rows import query_tables
from lakemirror.landing import POSITION
from lakemirror.staging.ingest import CONDITIONAL_KEY, KEYS_KEY
from lakemirror.storage.location import Location

STAGED = "staged"  # the name the staging table is registered under
POSITION_SQL, MARKER_SQL = quoted(POSITION), quoted(ROW_MARKER)


@dataclass(frozen=True)
class ChangeLog:
    """What replaying one staging table needs to know of it."""

    data_columns: tuple[str, ...]
    keys: tuple[str, ...]
    conditional_column: str | None = None


def change_log(staging: Location) -> ChangeLog:
    """The change log of the staging table at `staging`: its data columns, and the keys and
    conditional column its bookkeeping recorded."""
    table = delta_table(staging)
    recorded = bookkeeping_commit(table)
    names = [field.name for field in table.schema().fields]
    return ChangeLog(
        data_columns=tuple(name for name in names if name not in (POSITION, ROW_MARKER)),
        keys=tuple(json.loads(recorded.get(KEYS_KEY) or "[]")),
        conditional_column=recorded.get(CONDITIONAL_KEY) or None)


def replayed_rows(log: ChangeLog, through: int) -> str:
    """A query of the rows the changes at positions up to `through` imply: `_lm_position`
    (of the change that wrote the row) and the data columns. Every staged insert, update and
    upsert is kept but those superseded or skipped (`_superseded`): a key's rows can only be
    superseded when it has several changes, and those are few, so the join that drops them
    builds its table of them alone (the left side of a join is the side it builds)."""
    columns = ", ".join(f"rows.{quoted(name)}" for name in (POSITION, *log.data_columns))
    if not log.keys:  # inserts only
        return f"select {columns} from ({_staged(through)}) as rows"
    return f"""
select {columns}
from ({_superseded(log, through)}) as superseded
right join ({_staged(through)}) as rows on superseded.{POSITION_SQL} = rows.{POSITION_SQL}
where superseded.{POSITION_SQL} is null and rows.{MARKER_SQL} <> {DELETE}"""


def _superseded(log: ChangeLog, through: int) -> str:
    """A query of the positions of the changes of keys with several changes whose rows the
    table does not hold: each but the key's last update or upsert that took effect and the
    inserts after its last update, upsert or delete that took effect."""
    keys = ", ".join(quoted(key) for key in log.keys)
    marked = _effect_marked(log, through)
    return f"""
select c.{POSITION_SQL}
from ({marked}) as c
left join (
    select {keys}, max({POSITION_SQL}) as _lm_last_replacing
    from ({marked}) as replacing
    where _lm_takes_effect and {MARKER_SQL} <> {INSERT}
    group by {keys}
) as r on {_same_key(log.keys, "c", "r")}
where not (c._lm_takes_effect and (
    (c.{MARKER_SQL} <> {INSERT} and c.{MARKER_SQL} <> {DELETE}
     and c.{POSITION_SQL} = r._lm_last_replacing)
    or (c.{MARKER_SQL} = {INSERT}
        and (r._lm_last_replacing is null or c.{POSITION_SQL} > r._lm_last_replacing))))"""


def _effect_marked(log: ChangeLog, through: int) -> str:
    """The narrow changes of keys with several changes, each with whether it takes effect
    (`_lm_takes_effect`; see `effective_changes`)."""
    contested = _contested(log, through)
    if log.conditional_column is None:
        return f"select *, true as _lm_takes_effect from ({contested}) as contested"
    return f"""
select changes.*, {_reaches("changes", "marks", log.conditional_column)} as _lm_takes_effect
from ({contested}) as changes
left join ({_high_water_marks(log, contested)}) as marks
    on marks.{POSITION_SQL} = changes.{POSITION_SQL}"""


def _contested(log: ChangeLog, through: int) -> str:
    """The narrow changes of the keys with more than one change up to `through`."""
    keys = ", ".join(quoted(key) for key in log.keys)
    return f"""
select narrow.*
from ({_narrow(log, through)}) as narrow
join (select {keys} from ({_narrow(log, through)}) as counted
      group by {keys} having count(*) > 1) as several
    on {_same_key(log.keys, "narrow", "several")}"""


def _high_water_marks(log: ChangeLog, changes: str) -> str:
    """A query of the positions of `changes` with their key's high-water mark before them
    (`_lm_high_water`: the largest C of the key's earlier changes)."""
    keys = ", ".join(quoted(key) for key in log.keys)
    assert log.conditional_column is not None
    return f"""
select {POSITION_SQL}, max({quoted(log.conditional_column)}) over (
    partition by {keys} order by {POSITION_SQL}
    rows between unbounded preceding and 1 preceding) as _lm_high_water
from ({changes}) as positioned"""


def _reaches(changes: str, marks: str, column: str) -> str:
    """Whether a change takes effect against its key's high-water mark: an insert always, the
    first change of a key always, otherwise when its C (not NULL) reaches the mark."""
    order = quoted(column)
    return (f"({changes}.{MARKER_SQL} = {INSERT} or {marks}._lm_high_water is null "
            f"or ({changes}.{order} is not null and {changes}.{order} >= {marks}._lm_high_water))")


def count_rows(tables: Mapping[str, Location], query: str) -> int:
    """The number of rows of a query over the Delta tables `tables`."""
    counted = query_tables(tables, f"select count(*) as _lm_rows from ({query}) as counted")
    return int(counted["_lm_rows"][0].as_py())


def replayed_versions(log: ChangeLog, through: int) -> str:
    """A query of the versions (SCD type 2) the changes up to `through` imply, with the
    history table's columns: every insert, update or upsert that took effect opens one, valid
    from its position to the key's next update, upsert or delete that took effect."""
    columns = ", ".join(f"v.{quoted(name)}" for name in log.data_columns)
    keys = ", ".join(quoted(key) for key in log.keys) or "1"
    return f"""
select {columns}, v.{POSITION_SQL} as "_lm_valid_from", v._lm_ended_at as "_lm_valid_to",
       v._lm_ended_at is null as "_lm_is_current",
       coalesce(ending.{MARKER_SQL} = {DELETE}, false) as "_lm_is_deleted"
from (
    select *, min(case when {MARKER_SQL} <> {INSERT} then {POSITION_SQL} end) over (
        partition by {keys} order by {POSITION_SQL}
        rows between 1 following and unbounded following) as _lm_ended_at
    from ({effective_changes(log, through, wide=True)}) as changes
) as v
left join ({effective_changes(log, through)}) as ending
    on ending.{POSITION_SQL} = v._lm_ended_at
where v.{MARKER_SQL} <> {DELETE}"""


def effective_changes(log: ChangeLog, through: int, *, wide: bool = False) -> str:
    """A query of the staged changes up to `through` that take effect (their position, keys,
    marker and C; every column when `wide`): all of them, or with a ConditionalUpdateColumn,
    the inserts and the changes whose C reaches their key's high-water mark (NULL is lower
    than any value; the first change of a key always does, so only keys with several changes
    need their marks)."""
    staged = _staged(through) if wide else _narrow(log, through)
    if log.conditional_column is None or not log.keys:
        return staged
    return f"""
select changes.* from ({staged}) as changes
left join ({_high_water_marks(log, _contested(log, through))}) as marks
    on marks.{POSITION_SQL} = changes.{POSITION_SQL}
where {_reaches("changes", "marks", log.conditional_column)}"""


def _staged(through: int) -> str:
    return f"select * from {STAGED} where {POSITION_SQL} <= {int(through)}"


def _narrow(log: ChangeLog, through: int) -> str:
    """The staged changes' position, keys, marker and C."""
    order = () if log.conditional_column is None else (log.conditional_column,)
    names = dict.fromkeys((POSITION, *log.keys, ROW_MARKER, *order))
    return (f"select {', '.join(map(quoted, names))} from {STAGED} "
            f"where {POSITION_SQL} <= {int(through)}")


def _same_key(keys: Sequence[str], left: str, right: str) -> str:
    """Key columns equal, NULL matching NULL."""
    return " and ".join(f"({left}.{quoted(key)} is not distinct from {right}.{quoted(key)})"
                        for key in keys)
