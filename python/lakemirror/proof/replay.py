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
    (of the change that wrote the row) and the data columns. Which changes survive is worked
    out on the narrow columns (position, keys, marker, C); only then are their rows read."""
    columns = ", ".join(f"rows.{quoted(name)}" for name in (POSITION, *log.data_columns))
    return f"""
select {columns}
from ({_staged(through)}) as rows
join ({_surviving(log, through)}) as surviving on surviving.{POSITION_SQL} = rows.{POSITION_SQL}"""


def _surviving(log: ChangeLog, through: int) -> str:
    """A query of the positions of the changes whose rows the table holds."""
    if not log.keys:
        return f"select {POSITION_SQL} from ({_staged(through)}) as inserted"
    keys = ", ".join(quoted(key) for key in log.keys)
    return f"""
select e.{POSITION_SQL}
from ({effective_changes(log, through)}) as e
left join (
    select {keys}, max({POSITION_SQL}) as _lm_last_replacing
    from ({effective_changes(log, through)}) as replacing
    where {MARKER_SQL} <> {INSERT}
    group by {keys}
) as r on {_same_key(log.keys, "e", "r")}
where (e.{MARKER_SQL} <> {INSERT} and e.{MARKER_SQL} <> {DELETE}
       and e.{POSITION_SQL} = r._lm_last_replacing)
   or (e.{MARKER_SQL} = {INSERT}
       and (r._lm_last_replacing is null or e.{POSITION_SQL} > r._lm_last_replacing))"""


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
    than any value; the first change of a key always does)."""
    staged = _staged(through) if wide else _narrow(log, through)
    if log.conditional_column is None or not log.keys:
        return staged
    order = quoted(log.conditional_column)
    keys = ", ".join(quoted(key) for key in log.keys)
    return f"""
select changes.* from ({staged}) as changes
left join (
    select {POSITION_SQL}, max({order}) over (
        partition by {keys} order by {POSITION_SQL}
        rows between unbounded preceding and 1 preceding) as _lm_high_water
    from (
        select narrow.{POSITION_SQL}, {", ".join(f"narrow.{quoted(key)}" for key in log.keys)},
               narrow.{order}
        from ({_narrow(log, through)}) as narrow
        join (select {keys} from ({_narrow(log, through)}) as counted
              group by {keys} having count(*) > 1)
            as several on {_same_key(log.keys, "narrow", "several")}
    ) as positioned
) as marks on marks.{POSITION_SQL} = changes.{POSITION_SQL}
where changes.{MARKER_SQL} = {INSERT} or marks._lm_high_water is null
   or (changes.{order} is not null and changes.{order} >= marks._lm_high_water)"""


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
