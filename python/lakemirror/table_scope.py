"""Which tables one run mirrors: every table, or only those named with `--table`. A run stages,
applies and drops only tables in its scope, so runs with disjoint scopes can run side by side."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from lakemirror.errors import ConfigError
from lakemirror.landing.discovery import DEFAULT_SCHEMA


@dataclass(frozen=True)
class Scope:
    """The qualified names ('schema.table') a run covers; `explicit` when chosen by --table."""

    names: frozenset[str]
    explicit: bool

    def __contains__(self, qualified_name: object) -> bool:
        return qualified_name in self.names


def resolve_scope(selected: Sequence[str], known: Iterable[str]) -> Scope:
    """The scope of a run over the known tables (in the landing zone or staged): all of them,
    or the selected ones ('schema.table', or 'table' for the zone root's schema)."""
    known = frozenset(known)
    if not selected:
        return Scope(known, explicit=False)
    names = frozenset(_qualified(name) for name in selected)
    unknown = sorted(names - known)
    if unknown:
        raise ConfigError(f"no table {', '.join(unknown)} in the landing zone or the warehouse",
                          hint="pass --table <schema>.<table>, one of: "
                               + (", ".join(sorted(known)) or "(no table yet)"))
    return Scope(names, explicit=True)


def _qualified(name: str) -> str:
    name = name.strip().lower()
    return name if "." in name else f"{DEFAULT_SCHEMA}.{name}"
