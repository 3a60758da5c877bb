"""Compare the rows a replay implies with a table's rows, every column of every row.

Rows are matched by the position of the change that wrote them (unique in a mirrored table,
and in a history table as `_lm_valid_from`), in one full outer join of delta-rs's SQL engine:
an expected row without its match is missing, a table row without one is extra, a matched
pair that differs in any column (NULL equal to NULL) is changed. The counts come from one
aggregate over the join; only when they show a difference is it read again for a few samples.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from lakemirror.codegen.quoting import datafusion_identifier as quoted
from lakemirror.delta.rows import query_tables
from lakemirror.storage.location import Location

SAMPLES = 5  # sample rows reported per kind of difference
Kind = Literal["missing", "extra", "changed"]


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
    """Compare the two sides (see `Sides`)."""
    counts = query_tables(sides.tables, f"""
{_joined(sides)}
select count(distinct lm_expected) as expected_rows,
       coalesce(sum(case when lm_actual_present then 1 else 0 end), 0) as actual_rows,
       coalesce(sum(case when lm_expected is not null and not lm_actual_present
                         then 1 else 0 end), 0) as missing,
       coalesce(sum(case when lm_expected is not null and lm_actual_present and lm_differs
                         then 1 else 0 end), 0) as changed
from joined""").to_pylist()[0]
    expected, actual = int(counts["expected_rows"]), int(counts["actual_rows"])
    missing, changed = int(counts["missing"]), int(counts["changed"])
    extra = actual - (expected - missing)
    comparison = Comparison(expected, actual, missing, extra, changed)
    if comparison.ok:
        return comparison
    return Comparison(expected, actual, missing, extra, changed, _samples(sides))


def _joined(sides: Sides) -> str:
    """The CTE `joined`: the full outer join of both sides, with per column whether it
    differs (`lm_differs_<i>`) and whether any does (`lm_differs`)."""
    identity = quoted(sides.identity)
    differs = [f"(e.{quoted(name)} is distinct from a.{quoted(name)})" for name in sides.columns]
    flags = "".join(f", {flag} as lm_differs_{index}" for index, flag in enumerate(differs))
    values = "".join(f", e.{quoted(name)} as lm_expected_{index}, a.{quoted(name)} as "
                     f"lm_actual_{index}" for index, name in enumerate(sides.columns))
    keys = "".join(f", coalesce(e.{quoted(name)}, a.{quoted(name)}) as lm_key_{index}"
                   for index, name in enumerate(sides.keys))
    return f"""
with joined as (
    select e.{identity} as lm_expected, a.{identity} as lm_identity,
           a.lm_present is not null as lm_actual_present,
           ({" or ".join(differs) or "false"}) as lm_differs{flags}{values}{keys}
    from ({sides.expected}) as e
    full outer join (select *, true as lm_present from ({sides.actual}) as rows) as a
        on e.{identity} = a.{identity}
)"""


def _samples(sides: Sides) -> tuple[Sample, ...]:
    """A few rows of each kind of difference."""
    kinds = {
        "missing": "lm_expected is not null and not lm_actual_present",
        "extra": "lm_expected is null and lm_actual_present",
        "changed": "lm_expected is not null and lm_actual_present and lm_differs",
    }
    rows = query_tables(sides.tables, f"""
{_joined(sides)}
{" union all ".join(f"select * from (select '{kind}' as lm_kind, * from joined where {where} "
                    f"limit {SAMPLES}) as {kind}" for kind, where in kinds.items())}""")
    return tuple(_sample(row, sides) for row in rows.to_pylist())


def _sample(row: Mapping[str, Any], sides: Sides) -> Sample:
    kind: Kind = row["lm_kind"]
    position = row["lm_expected"] if kind != "extra" else row["lm_identity"]
    key = {name: row[f"lm_key_{index}"] for index, name in enumerate(sides.keys)}
    columns = {name: {"expected": row[f"lm_expected_{index}"],
                      "actual": row[f"lm_actual_{index}"]}
               for index, name in enumerate(sides.columns)
               if kind == "changed" and row[f"lm_differs_{index}"]}
    return Sample(kind, position, key, columns)


def compared_columns(expected: Sequence[str], actual: Sequence[str]) -> tuple[str, ...]:
    """The columns both sides have, in the expected side's order."""
    present = set(actual)
    return tuple(name for name in expected if name in present)
