"""How a mirrored table is named: `schema.table` as users and the control tables write it, and
`schema__table` as its staging relation, dbt source and mirror model are called. One place, so
that every layer builds and splits these names alike."""

from __future__ import annotations

import re

# dbt's node selection splits and reads its specs (spaces, commas, `+`, `@`, `:`, `.`, `*`)
# and has no quoting: only names of these characters name exactly one thing there.
_SELECTABLE = re.compile(r"[A-Za-z0-9_]+")


def qualified_name(schema: str, table: str) -> str:
    """The table's name as users write it: `schema.table`."""
    return f"{schema}.{table}"


def split_qualified_name(name: str) -> tuple[str, str]:
    """The schema and table of `schema.table` (split at the first dot; the table is '' when
    there is no dot, which callers that validate names then refuse)."""
    schema, _, table = name.partition(".")
    return schema, table


def staging_table_name(schema: str, table: str) -> str:
    """Name of a table's staging relation inside STAGING_SCHEMA (also its dbt source name and
    the name of its mirror model)."""
    return f"{schema}__{table}"


def is_selectable(name: str) -> bool:
    """Whether dbt's node selection (`--select`, `--exclude`) can name the model or source
    `name` exactly: a landing-zone name of other characters could select other nodes, or
    none, so it is never written into a selection spec."""
    return _SELECTABLE.fullmatch(name) is not None
