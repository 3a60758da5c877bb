"""Plain-Python reference model of the open mirroring `__rowMarker__` semantics.

The Spark/dbt path is tested against this model; it favours clarity over speed. It is a test
oracle, not part of the package's API: production code takes the contract from
`lakemirror.contract`, as this model does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from lakemirror.contract import DELETE, INSERT, ROW_MARKER, VALID_MARKERS

Row = dict[str, Any]


class ContractViolation(ValueError):
    """A change the contract does not allow (bad marker, update without keys)."""


def apply_changes(
    files: Iterable[Sequence[Mapping[str, Any]]],
    key_columns: Sequence[str],
    *,
    initial: Iterable[Mapping[str, Any]] = (),
    default_marker: int = INSERT,
    conditional_column: str | None = None,
) -> list[Row]:
    """Apply change files in order (rows in file order) and return the resulting rows.

    Per key: insert appends a row, update/upsert replace all rows with the new one,
    delete removes all rows. A row without `__rowMarker__` gets `default_marker`.

    Columns evolve: the result has every column any change carried, and a column a row did
    not carry (added later, or missing from its file) reads None.

    With `conditional_column` C, an update, upsert or delete applies only when its C is at
    least the key's high-water mark: the largest C of every earlier change to the key
    (inserts, applied or skipped changes, deletes included). NULL is lower than any value.
    """
    keys = tuple(key_columns)
    rows_by_key: dict[tuple[Any, ...], list[Row]] = {}
    high_water: dict[tuple[Any, ...], Any] = {}
    columns: dict[str, None] = {}
    for row in initial:
        columns.update(dict.fromkeys(row))
        rows_by_key.setdefault(_key_of(row, keys), []).append(dict(row))
    for file in files:
        for change in file:
            columns.update(dict.fromkeys(name for name in change if name != ROW_MARKER))
            marker = change.get(ROW_MARKER, default_marker)
            if marker not in VALID_MARKERS:
                raise ContractViolation(f"invalid {ROW_MARKER} {marker!r}")
            if marker != INSERT and not keys:
                raise ContractViolation("updates and deletes need keyColumns")
            data = {name: value for name, value in change.items() if name != ROW_MARKER}
            key = _key_of(data, keys)
            if conditional_column is not None:
                order, earlier = data.get(conditional_column), high_water.get(key)
                if order is not None and (earlier is None or order > earlier):
                    high_water[key] = order
                if marker != INSERT and not _reaches(order, earlier):
                    continue
            if marker == INSERT:
                rows_by_key.setdefault(key, []).append(data)
            elif marker == DELETE:
                rows_by_key.pop(key, None)
            else:
                rows_by_key[key] = [data]
    return [{name: row.get(name) for name in columns}
            for rows in rows_by_key.values() for row in rows]


def _reaches(order: Any, earlier: Any) -> bool:
    """Whether a change's conditional value reaches the key's earlier high-water mark."""
    return earlier is None or (order is not None and order >= earlier)


def _key_of(row: Mapping[str, Any], keys: tuple[str, ...]) -> tuple[Any, ...]:
    return tuple(row.get(name) for name in keys)
