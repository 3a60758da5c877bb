"""Which of the project's own models still use a mirrored table: read from the manifest dbt
parses for the run anyway (see `dbt_runner.parsed_project`), never from a parse of its own;
kept in the warehouse with the project's state, so that a run on an unchanged project (an
idle run, while a table stays retired) parses nothing."""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from pathlib import PurePath
from typing import Any

from lakemirror.codegen import HISTORY_SUFFIX, MIRROR_FOLDER
from lakemirror.dbt_runner import parsed_project
from lakemirror.dbt_vars import WAREHOUSE_NAME_VAR
from lakemirror.idle import project_state
from lakemirror.naming import qualified_name, staging_table_name
from lakemirror.project import profiles_dir
from lakemirror.run.dbt import dbt_warehouse
from lakemirror.run.settings import RunSettings
from lakemirror.staging.layout import Warehouse

USERS_FILE = "_lakemirror/model_users.json"  # the last users found, with the project's state

# The manifest's collections of nodes that can depend on a model.
_COLLECTIONS = ("nodes", "exposures", "metrics", "semantic_models", "saved_queries",
                "unit_tests")


def tables_in_use(settings: RunSettings, tables: Collection[tuple[str, str]]
                  ) -> dict[tuple[str, str], list[str]] | None:
    """For each (schema, table) whose generated model (or history model) a node of the
    project's own depends on, those nodes ("model report (models/user/report.sql)"); None
    when dbt cannot parse the project (its own invocation reports why)."""
    if not tables:
        return {}
    state = project_state(settings.project_dir, settings.target, settings.dbt_vars)
    known = _known_users(settings.layout, state)
    if known is not None and all(qualified_name(*table) in known for table in tables):
        used = {table: known[qualified_name(*table)] for table in tables}
        return {table: users for table, users in used.items() if users}
    manifest = parsed_project(
        settings.project_dir,
        profiles_dir=profiles_dir(settings.project_dir, settings.env.dbt_profiles_dir),
        target=settings.target, warehouse=dbt_warehouse(settings),
        dbt_vars={**settings.dbt_vars, WAREHOUSE_NAME_VAR: settings.warehouse_name},
        warm=settings.warm)
    if manifest is None:
        return None
    used = {table: users_of(manifest, _model_names(*table)) for table in tables}
    _keep_users(settings.layout, state, used)
    return {table: users for table, users in used.items() if users}


def _known_users(layout: Warehouse, state: str) -> dict[str, list[str]] | None:
    """The users kept for the project `state` (by 'schema.table'), or None."""
    try:
        text = layout.storage.read_text(USERS_FILE)
        kept = None if text is None else json.loads(text)
        if not isinstance(kept, dict) or kept.get("project_state") != state:
            return None
        return {str(name): [str(user) for user in users]
                for name, users in dict(kept["users"]).items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # parsed again


def _keep_users(layout: Warehouse, state: str,
                used: Mapping[tuple[str, str], list[str]]) -> None:
    layout.storage.write_text(USERS_FILE, json.dumps({
        "project_state": state,
        "users": {qualified_name(*table): users for table, users in used.items()}}))


def users_of(manifest: Any, models: Collection[str]) -> list[str]:
    """The nodes depending on the generated `models` that lakemirror did not generate, each
    as its kind, name and file."""
    generated = {unique_id for unique_id, node in manifest.nodes.items()
                 if node.resource_type == "model" and node.name in models and _generated(node)}
    users = {child for model in generated for child in manifest.child_map.get(model, ())}
    return sorted(_described(manifest, unique_id) for unique_id in users
                  if not _generated(_node(manifest, unique_id)))


def _model_names(schema: str, table: str) -> tuple[str, str]:
    model = staging_table_name(schema, table)
    return model, model + HISTORY_SUFFIX


def _node(manifest: Any, unique_id: str) -> Any:
    for collection in _COLLECTIONS:
        if (node := getattr(manifest, collection, {}).get(unique_id)) is not None:
            return node
    return None


def _generated(node: Any) -> bool:
    """Whether lakemirror generated the node: it is defined under the mirror folder."""
    path = PurePath(str(getattr(node, "original_file_path", "")))
    return path.parts[:len(MIRROR_FOLDER.parts)] == MIRROR_FOLDER.parts


def _described(manifest: Any, unique_id: str) -> str:
    node = _node(manifest, unique_id)
    kind = unique_id.split(".", 1)[0]
    if node is None:
        return unique_id
    return f"{kind} {node.name} ({node.original_file_path})"
