"""Compare the rows a replay implies with a table's rows, every column of every row.

Rows are matched by the position of the change that wrote them (unique in a mirrored table,
and in a history table as `_lm_valid_from`), in one full outer join of delta-rs's SQL engine:
an expected row without its match is missing, a table row without one (or a second one at
the same position) is extra, a matched pair that differs in any column (NULL equal to NULL) is
changed. One aggregate over the join tells whether the sides match; only when they do not is
it read again, for the exact counts and a few samples.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from lakemirror.codegen.quoting import datafusion_identifier as quoted
from lakemirror.delta.rows import query_tables
from lakemirror.proof.replay import count_rows
from lakemirror.storage.location import Location

SAMPLES = 5  # sample rows reported per kind of difference
Kind = Literal["missing", "extra", "changed"]
# What each count counts, over the joined rows (`_joined`).
KINDS: dict[str, str] = {
    "missing": "_lm_expected is not null and not _lm_actual_present",
    "extra": "_lm_extra",
    "changed": "_lm_expected is not null and _lm_actual_present and _lm_differs "
               "and not _lm_extra",
}
COUNTED: dict[str, str] = {
    "expected_rows": "_lm_expected is not null and not _lm_extra",
    "actual_rows": "_lm_actual_present",
    **KINDS,
}
# Enough to tell that the sides match, over `paired` (no numbering of table rows that share
# an identity): every expected row paired once, no pair differing.
QUICK = {
    "actual_rows": "_lm_actual_present",
    "missing": KINDS["missing"],
    "differing": "_lm_expected is not null and _lm_actual_present and _lm_differs",
}


@dataclass(frozen=True)
class Sample:
    """One differing row: its kind, position, key and, when changed, the columns that differ
    with the expected value and the table's."""

    kind: Kind
    position: int | None
    key: dict[str, Any]
    columns: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class Comparison:
    """How a table's rows compare with the rows its changes imply."""

    expected_rows: int
    actual_rows: int
    missing: int  # expected rows the table lacks
    extra: int  # table rows no change wrote (or a second row at one position)
    changed: int  # rows at the right position whose columns differ
    samples: tuple[Sample, ...] = ()

    @property
    def ok(self) -> bool:
        return not (self.missing or self.extra or self.changed)


@dataclass(frozen=True)
class Sides:
    """The two sides of a comparison: a query of the expected rows and one of the table's,
    over the Delta tables `tables` (registered under their names), matched by `identity`,
    compared on `columns`, with `keys` named in samples."""

    tables: Mapping[str, Location]
    expected: str
    actual: str
    identity: str
    columns: tuple[str, ...]
    keys: tuple[str, ...]


def compare(sides: Sides) -> Comparison:
    """Compare the two sides (see `Sides`): one aggregate over the join tells whether they
    match; only when they do not is it read again for exact counts and samples."""
    quick = query_tables(sides.tables, f"""
{_joined(sides)}
select count(_lm_expected) as paired_rows, {_sums(QUICK)}
from paired""").to_pylist()[0]
    paired, actual, missing, differing = (int(quick[name]) for name in ("paired_rows", *QUICK))
    # counted alone (narrow: cheaper than distinct identities in the join), since a table row
    # sharing an expected row's identity pairs with it a second time
    expected = count_rows(sides.tables, sides.expected)
    if not missing and not differing and actual == expected == paired:
        return Comparison(expected, actual, 0, 0, 0)
    exact = query_tables(sides.tables, f"""
{_joined(sides)}
select {_sums(COUNTED)}
from joined""").to_pylist()[0]
    expected, actual, missing, extra, changed = (int(exact[name]) for name in COUNTED)
    return Comparison(expected, actual, missing, extra, changed, _samples(sides))


def _sums(counted: Mapping[str, str]) -> str:
    """Aggregates counting the rows where each condition holds."""
    return ", ".join(f"coalesce(sum(case when {where} then 1 else 0 end), 0) as {name}"
                     for name, where in counted.items())


def _joined(sides: Sides) -> str:
    """The CTEs `paired`: the full outer join of both sides, with per column whether it
    differs (`_lm_differs_<i>`) and whether any does (`_lm_differs`); and `joined`: `paired`,
    where of several table rows at one expected row's identity, the first that matches it
    (else one) pairs with it and the others are extra (`_lm_extra`)."""
    identity = quoted(sides.identity)
    differs = [f"(e.{quoted(name)} is distinct from a.{quoted(name)})" for name in sides.columns]
    flags = "".join(f", {flag} as _lm_differs_{index}" for index, flag in enumerate(differs))
    values = "".join(f", e.{quoted(name)} as _lm_expected_{index}, a.{quoted(name)} as "
                     f"_lm_actual_{index}" for index, name in enumerate(sides.columns))
    keys = "".join(f", e.{quoted(name)} as _lm_expected_key_{index}, a.{quoted(name)} as "
                   f"_lm_actual_key_{index}" for index, name in enumerate(sides.keys))
    return f"""
with paired as (
    select e.{identity} as _lm_expected, a.{identity} as _lm_identity,
           a._lm_present is not null as _lm_actual_present,
           ({" or ".join(differs) or "false"}) as _lm_differs{flags}{values}{keys}
    from ({sides.expected}) as e
    full outer join (select *, true as _lm_present from ({sides.actual}) as rows) as a
        on e.{identity} = a.{identity}
),
joined as (
    select *, _lm_actual_present and (_lm_expected is null or row_number() over (
        partition by _lm_expected order by _lm_differs) > 1) as _lm_extra
    from paired
)"""


def _samples(sides: Sides) -> tuple[Sample, ...]:
    """A few rows of each kind of difference."""
    rows = query_tables(sides.tables, f"""
{_joined(sides)}
{" union all ".join(f"select * from (select '{kind}' as _lm_kind, * from joined where {where} "
                    f"limit {SAMPLES}) as {kind}" for kind, where in KINDS.items())}""")
    return tuple(_sample(row, sides) for row in rows.to_pylist())


def _sample(row: Mapping[str, Any], sides: Sides) -> Sample:
    kind: Kind = row["_lm_kind"]
    side = "actual" if kind == "extra" else "expected"  # where the key is read
    position = row["_lm_identity"] if kind == "extra" else row["_lm_expected"]
    key = {name: row[f"_lm_{side}_key_{index}"] for index, name in enumerate(sides.keys)}
    columns = {name: {"expected": row[f"_lm_expected_{index}"],
                      "actual": row[f"_lm_actual_{index}"]}
               for index, name in enumerate(sides.columns)
               if kind == "changed" and row[f"_lm_differs_{index}"]}
    return Sample(kind, position, key, columns)
