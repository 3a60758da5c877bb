"""Generate the history model (SCD type 2) of a mirrored table, next to its mirror model.

Every mirrored table gets one, disabled until the dbt var `lakemirror_history` names the table
(`['dbo.customers']`, or `['*']` for all), so a project that does not ask for history builds
exactly what it built before. The model lives in `models/mirror/<schema>/history/`: it takes the
`mirror:` folder's hooks (its own batches in mirror_batches) and settings, and it follows its
mirror model: the same keys, the same warehouses, and it goes when the mirror model goes.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace
from pathlib import Path, PurePath

from lakemirror.codegen.generated import (
    MIRROR_FOLDER,
    Outcome,
    folder_lock,
    is_edited,
    model_paths,
    model_sql,
    write_generated,
)
from lakemirror.codegen.models import MirrorModel, model_test
from lakemirror.codegen.quoting import jinja_string, yaml_string
from lakemirror.codegen.warehouses import read_warehouses, warehouse_condition
from lakemirror.errors import FileNameError
from lakemirror.landing.discovery import LandingTable
from lakemirror.naming import qualified_name, staging_table_name

HISTORY_VARIABLE = "lakemirror_history"
HISTORY_SUFFIX = "__history"  # of the history model's name and of its table's
_HISTORY_COMMENT = """\
-- Every version of each key of the landing-zone table this file is named after (SCD type 2):
-- one row per insert, update or upsert that took effect, valid from its change position to the
-- position of the key's next update, upsert or delete (docs/pages/history.md)."""


def history_relation(schema: str, table: str) -> str:
    """The history table's relation name, as its batches are recorded in mirror_batches."""
    return qualified_name(schema, table) + HISTORY_SUFFIX


def history_sql(model: MirrorModel) -> str:
    """The history model's SQL: the mirror strategy with `mirror_history=true`, reading the
    mirror model's staging source (see `model_sql`)."""
    return model_sql(
        keys=model.key_columns, conditional_column=model.conditional_column,
        schema=model.schema, alias=model.table + HISTORY_SUFFIX, source=model.name,
        macro="staged_history", options="\n        mirror_history=true,",
        comment=_HISTORY_COMMENT)


def history_yml(schema: str, table: str, warehouses: Collection[str] | None = None) -> str:
    """The history model's yml: enabled when the var `lakemirror_history` names the table (or
    holds '*') and, with `warehouses`, dbt runs for one of them."""
    qualified = qualified_name(schema, table)
    wanted = (f"({jinja_string(qualified)} in var('{HISTORY_VARIABLE}', []) "
              f"or '*' in var('{HISTORY_VARIABLE}', []))")
    condition = wanted if warehouses is None else f"({warehouse_condition(warehouses)} and {wanted})"
    name = staging_table_name(schema, table) + HISTORY_SUFFIX
    model_enabled = yaml_string("{{ " + condition + " | as_bool }}")
    enabled = None if warehouses is None else model_enabled
    return f"""version: 2

models:
  - name: {yaml_string(name)}
    description: >
      Every version of each key of {qualified} (SCD type 2), from its staged changes. Built when
      the dbt var {HISTORY_VARIABLE} lists '{qualified}' (or '*').
    config:
      enabled: {model_enabled}{model_test("lakemirror.history_rows", name, {}, enabled)}
    columns:
      - name: _lm_valid_from
        description: Change position (file sequence * 10^10 + row) that opened the version.
      - name: _lm_valid_to
        description: Position of the update, upsert or delete that ended it; NULL while current.
      - name: _lm_is_current
        description: The version is the key's current row (_lm_valid_to is NULL).
      - name: _lm_is_deleted
        description: A delete ended the version.
"""


def without_history_clashes(tables: list[LandingTable], staged: Collection[tuple[str, str]]
                            ) -> list[LandingTable]:
    """The zone's `tables`, a landing table whose relation or model has the name of another
    table's history (`<t>__history` next to `<t>`) failing with the clash: one of the two loses
    the name, so dbt never sees two models of one name nor two tables in one folder. The name
    stays with the history of `<t>` (in the zone or still `staged`), unless the landing table
    was staged before `<t>` was."""
    staged = set(staged)
    owners = {claimed: (schema, name)
              for schema, name in [*((t.schema, t.name) for t in tables), *sorted(staged)]
              for claimed in _history_names(schema, name)}
    in_zone = {(table.schema, table.name): table for table in tables}
    losers: dict[PurePath, FileNameError] = {}
    for table in tables:
        owner = next((owners[name] for name in (table.qualified_name,
                                                 staging_table_name(table.schema, table.name))
                      if name in owners), None)
        if owner is None or table.problem is not None:
            continue
        holder = in_zone.get(owner)
        if (table.schema, table.name) in staged and owner not in staged:
            if holder is not None and holder.problem is None:
                losers[holder.folder] = _history_name_taken(holder, table)
        else:
            losers[table.folder] = _history_name_held(table, ".".join(owner), holder)
    return [replace(table, problem=losers[table.folder]) if table.folder in losers else table
            for table in tables]


def _history_names(schema: str, table: str) -> tuple[str, str]:
    """The names the table's history claims: its relation and its model."""
    return history_relation(schema, table), staging_table_name(schema, table) + HISTORY_SUFFIX


def _history_name_held(table: LandingTable, owner: str,
                       holder: LandingTable | None) -> FileNameError:
    """`table` maps to the name of the history model and table of `owner` (in the zone as
    `holder`, else still staged)."""
    where = (f"folder {holder.zone_folder!r}" if holder is not None
             else "still staged: its folder was deleted, and the next run that selects it drops it")
    return FileNameError(
        f"the folder {table.zone_folder!r} maps to table {table.qualified_name}, the name of the "
        f"history model and table of {owner} ({where}; docs/pages/history.md)",
        table=table.qualified_name, file=str(table.folder),
        hint=f"rename the folder {table.zone_folder!r} to a name that does not end in "
             f"{HISTORY_SUFFIX}; it is not mirrored until then, and {owner} mirrors as usual")


def _history_name_taken(table: LandingTable, holder: LandingTable) -> FileNameError:
    """`table`'s history model and table would take the name of `holder`, mirrored before."""
    return FileNameError(
        f"the history model and table of {table.qualified_name} (folder {table.zone_folder!r}) "
        f"would be named {holder.qualified_name}, which the folder {holder.zone_folder!r} "
        f"has been mirrored to since before {table.zone_folder!r} came",
        table=table.qualified_name, file=str(table.folder),
        hint=f"rename the folder {table.zone_folder!r}, or rename or delete the folder "
             f"{holder.zone_folder!r} (deleting it drops its table); {table.qualified_name} is "
             f"not mirrored until then, and {holder.qualified_name} mirrors as usual")


def write_history_model(project_dir: Path, model: MirrorModel) -> dict[Path, Outcome]:
    """Write (or refresh) the table's history model after its mirror model: the same keys and
    the warehouses its mirror model's yml lists. A file the user edited is left alone."""
    mirror_sql, mirror_yml = model_paths(project_dir, model.schema, model.table)
    sql, yml = _history_paths(project_dir, model.schema, model.table)
    with folder_lock(mirror_sql.parent):
        warehouses = read_warehouses(mirror_yml) if mirror_yml.exists() else None
        outcomes = {yml: write_generated(yml, history_yml(model.schema, model.table,
                                                          warehouses), "#")}
        return {sql: write_generated(sql, history_sql(model), "--")} | outcomes


def retire_history_model(project_dir: Path, schema: str, table: str) -> dict[Path, Outcome]:
    """Follow the retirement of the table's mirror model: while its SQL is kept (other
    warehouses, or edited), the history model lists the warehouses its mirror model lists;
    else its files go, except those the user edited."""
    mirror_sql, mirror_yml = model_paths(project_dir, schema, table)
    sql, yml = _history_paths(project_dir, schema, table)
    if not sql.parent.is_dir():
        return {}
    with folder_lock(mirror_sql.parent):
        if (mirror_sql.exists() and yml.exists() and mirror_yml.exists()
                and "lakemirror_staging" in mirror_yml.read_text(encoding="utf-8")):
            warehouses = read_warehouses(mirror_yml) if mirror_yml.exists() else None
            return {yml: write_generated(yml, history_yml(schema, table, warehouses), "#")}
        outcomes: dict[Path, Outcome] = {}
        for path in (sql, yml):
            if path.exists():
                outcomes[path] = "kept-edited" if is_edited(path) else "removed"
                if outcomes[path] == "removed":
                    path.unlink()
        return outcomes


def _history_paths(project_dir: Path, schema: str, table: str) -> tuple[Path, Path]:
    base = (project_dir / MIRROR_FOLDER / schema / "history"
            / (staging_table_name(schema, table) + HISTORY_SUFFIX))
    return base.with_suffix(".sql"), base.with_suffix(".yml")
