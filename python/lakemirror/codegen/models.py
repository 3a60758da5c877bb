"""Generate one dbt model (SQL + yml) per mirrored table, never overwriting a user's edits.

Each generated file starts with a checksum of its body; a file whose body no longer matches
was edited by someone and is left alone.

One project may mirror several warehouses (dev and prod). dbt wants one model per name, so a
table's model is shared by the warehouses that mirror it, and its yml lists them: the model
and its staging source are enabled only when LAKEMIRROR_WAREHOUSE_NAME is one of them (see
`warehouses.py`). That list is lakemirror's even in an edited file, and is left out of the
checksum.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from lakemirror.codegen.generated import (
    Outcome, folder_lock, is_edited, model_paths, model_sql, write_generated,
)
from lakemirror.codegen.quoting import dbt_yaml_text, jinja_string, yaml_string
from lakemirror.codegen.warehouses import (
    WAREHOUSES_ANCHOR,
    read_warehouses,
    replace_warehouses,
    warehouses_line,
)
from lakemirror.errors import LakemirrorError
from lakemirror.naming import staging_table_name



class ModelConflictError(LakemirrorError):
    """Two warehouses mirror a table of one name with different keys: one project holds one
    model per table, so the second cannot share the first's model."""

    error_class: Literal["user", "system"] = "user"


_MIRROR_COMMENT = """\
-- Current state of the landing-zone table this file is named after. The staged changes not
-- yet applied are read here; the `mirror` strategy collapses them per key in change order and
-- MERGEs them, so re-running is always safe."""


@dataclass(frozen=True)
class MirrorModel:
    """The generated model of one mirrored table."""

    schema: str
    table: str
    key_columns: tuple[str, ...]
    conditional_column: str | None = None

    @property
    def name(self) -> str:
        return staging_table_name(self.schema, self.table)

    def sql(self) -> str:
        """The model's SQL (see `model_sql`: no name from the landing zone is ever read as
        jinja or SQL)."""
        return model_sql(
            keys=self.key_columns, conditional_column=self.conditional_column,
            schema=self.schema, alias=self.table, source=self.name, macro="staged_changes",
            comment=_MIRROR_COMMENT)

    def yml(self, warehouses: Collection[str] | None = None) -> str:
        """The model's yml. dbt renders yml values as jinja, so each value holding a name is an
        inert jinja expression of it (see `dbt_yaml_text`); the model is tested with
        lakemirror.mirror_rows, which quotes the key names itself. With `warehouses`, the
        source and the model are enabled only for those warehouses."""
        enabled = None if warehouses is None else f"*{WAREHOUSES_ANCHOR}"
        key_names = ", ".join(dbt_yaml_text(key) for key in self.key_columns)
        tests = model_test("lakemirror.mirror_rows", self.name, {"keys": f"[{key_names}]"},
                           enabled)
        keys = "".join(f"""
      - name: {dbt_yaml_text(key)}
        description: Key column (keyColumns in _metadata.json)."""
            for key in self.key_columns)
        key_text = ", ".join(self.key_columns) or "none: inserts only"
        qualified = f"{self.schema}.{self.table}"
        source_text = f"Change log of {qualified} staged from the landing zone."
        model_text = f"Mirror of landing-zone table {qualified} (keys: {key_text})."
        source_config = model_config = ""
        if warehouses is not None:
            source_config = f"""
        config:
          # Built only for these warehouses (LAKEMIRROR_WAREHOUSE_NAME); lakemirror keeps the list.
          {warehouses_line(warehouses)}"""
            model_config = f"""
    config:
      enabled: *{WAREHOUSES_ANCHOR}"""
        return f"""version: 2

sources:
  - name: lakemirror_staging
    schema: "_lakemirror_staging{{{{ env_var('LAKEMIRROR_SCHEMA_SUFFIX', '') }}}}"
    tables:
      - name: {yaml_string(self.name)}
        description: {dbt_yaml_text(source_text)}{source_config}

models:
  - name: {yaml_string(self.name)}
    description: {dbt_yaml_text(model_text)}{model_config}{tests}
    columns:{keys}
      - name: _lm_position
        description: Change position (file sequence * 10^10 + row) that wrote the row.
"""


def model_test(test: str, model: str, arguments: dict[str, str], enabled: str | None) -> str:
    """The `data_tests` of the model named `model`: the one generic test `test`, which checks
    all its rows in one statement, with `arguments` (yml values), named `<test>_<model>`
    (dbt's own name would spell out the arguments: the key names, escaped). With `enabled` (a yml value), the test is
    enabled as its model is: a model of another warehouse is disabled, and its test must not
    fall back on a model of the same name elsewhere (your project's, when lakemirror is a
    package)."""
    entry = f"\n          name: {yaml_string(test.replace('.', '_') + '_' + model)}"
    settings = "".join(f"\n            {name}: {value}" for name, value in arguments.items())
    entry += f"\n          arguments:{settings}" if arguments else ""
    entry += f"\n          config:\n            enabled: {enabled}" if enabled is not None else ""
    return f"\n    data_tests:\n      - {test}:{entry}"


def write_model(project_dir: Path, model: MirrorModel, *,
                warehouse: str | None = None) -> dict[Path, Outcome]:
    """Write the model's yml, then its SQL, under models/mirror/<schema>/: a dbt run parsing
    the project meanwhile may see the yml alone (a warning), never the SQL without its source.
    `warehouse` (the name of the one being mirrored) joins the warehouses already listed in the yml;
    another warehouse's model with other keys is a ModelConflictError. Without `warehouse`
    the model is enabled for every warehouse."""
    sql, yml = model_paths(project_dir, model.schema, model.table)
    with folder_lock(sql.parent):
        members = None
        if warehouse is not None:
            listed = (read_warehouses(yml) or set()) if yml.exists() else set()
            _check_shared(sql, model, listed - {warehouse})
            members = listed | {warehouse}
        outcomes = {yml: write_generated(yml, model.yml(members), "#")}
        if outcomes[yml] == "kept-edited" and members is not None:
            replace_warehouses(yml, members)
        return {sql: write_generated(sql, model.sql(), "--")} | outcomes


def retire_model(project_dir: Path, schema: str, table: str, *,
                 warehouse: str | None = None) -> dict[Path, Outcome]:
    """Remove the generated model of a table dropped from `warehouse`.
    While other warehouses are listed in its yml, only this one leaves the list (`updated`).
    A file the user edited is kept; when that is the SQL, the yml is rewritten to disable the
    model, so the project still parses without the table's staging source."""
    sql, yml = model_paths(project_dir, schema, table)
    if not sql.parent.is_dir():
        return {}
    with folder_lock(sql.parent):
        listed = read_warehouses(yml) if yml.exists() and warehouse is not None else None
        remaining = listed - {warehouse} if listed is not None else set()
        if remaining:
            replace_warehouses(yml, remaining)
            return {yml: "updated"}
        outcomes: dict[Path, Outcome] = {}
        for path in (sql, yml):
            if path.exists():
                outcomes[path] = "kept-edited" if is_edited(path) else "removed"
        if outcomes.get(sql) == "kept-edited" and outcomes.get(yml) != "kept-edited":
            write_generated(yml, _disabled_yml(staging_table_name(schema, table)), "#")
            outcomes[yml] = "disabled"
        elif outcomes.get(yml) == "kept-edited" and listed is not None:
            replace_warehouses(yml, set())  # kept, and built for no warehouse
        for path, outcome in outcomes.items():
            if outcome == "removed":
                path.unlink()
        return outcomes


def _check_shared(sql: Path, model: MirrorModel, others: set[str]) -> None:
    """Raise ModelConflictError when warehouses `others` share the model and its unedited SQL
    has other keys (or another conditional update column) than `model`."""
    if not others or not sql.exists() or is_edited(sql):
        return
    theirs = _definition(sql.read_text(encoding="utf-8"))
    if theirs is None or theirs == (model.key_columns, model.conditional_column):
        return
    raise ModelConflictError(
        f"the dbt model {sql.name} is shared with warehouse {', '.join(sorted(others))}, whose "
        f"table has {_described(*theirs)}; here the table has "
        f"{_described(model.key_columns, model.conditional_column)}, and a dbt project holds "
        "one model per table",
        hint="publish the same keyColumns (and ConditionalUpdateColumn) to both landing zones, "
             "or mirror this warehouse with a dbt project of its own")


def _described(keys: tuple[str, ...], conditional: str | None) -> str:
    return f"keys {list(keys)}" + (f" and ConditionalUpdateColumn {conditional!r}"
                                   if conditional is not None else "")


def _definition(sql: str) -> tuple[tuple[str, ...], str | None] | None:
    """The keys and conditional update column a generated model's SQL configures (None when
    they cannot be read back, e.g. from an older lakemirror's format)."""
    keys = re.search(r"^\s*unique_key=(\[.*\]),$", sql, re.MULTILINE)
    conditional = re.search(r"^\s*conditional_update_column=('.*'),$", sql, re.MULTILINE)
    try:
        key_columns = tuple(ast.literal_eval(keys.group(1))) if keys else None
        column = ast.literal_eval(conditional.group(1)) if conditional else None
    except (SyntaxError, ValueError):
        return None
    return None if key_columns is None else (key_columns, column)


def _disabled_yml(name: str) -> str:
    return f"""version: 2

models:
  - name: {yaml_string(name)}
    description: >
      Its landing-zone folder was deleted, so lakemirror dropped the mirrored table. You edited
      the model's SQL, so lakemirror kept it, disabled. Delete both files when you no longer
      need them.
    config:
      enabled: false
"""
