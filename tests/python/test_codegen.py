"""Generated mirror models: content, never overwriting edits, and lint-clean SQL."""

import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import jinja2
import pytest
import yaml
from dbt.clients.jinja import get_rendered

from lakemirror.codegen import MirrorModel, write_history_model, write_model

from conftest import REPO, copy_project


def render_model(sql: str) -> dict:
    """What the generated SQL passes to config() and to lakemirror.staged_changes(source())."""
    calls: dict = {}
    jinja2.Environment().from_string(sql).render(
        config=lambda **kwargs: calls.update(config=kwargs) or "",
        source=lambda *names: names,
        lakemirror=SimpleNamespace(staged_changes=lambda s: calls.update(source=s) or ""))
    return calls


def test_generated_model_names_keys_strategy_and_source(tmp_path):
    outcomes = write_model(tmp_path, MirrorModel("sales", "orderlines", ("OrderID", "Line'No")))
    sql_path = tmp_path / "models/mirror/sales/sales__orderlines.sql"
    assert set(outcomes.values()) == {"created"}
    calls = render_model(sql_path.read_text())
    assert calls["config"] == {
        "materialized": "incremental", "incremental_strategy": "mirror",
        "unique_key": ["OrderID", "Line'No"], "schema": "sales", "alias": "orderlines"}
    assert calls["source"] == ("lakemirror_staging", "sales__orderlines")
    document = yaml.safe_load((tmp_path / "models/mirror/sales/sales__orderlines.yml").read_text())
    [model] = document["models"]
    assert [get_rendered(column["name"], {}) for column in model["columns"]] == [
        "OrderID", "Line'No", "_lm_position"]
    assert [column.get("data_tests") for column in model["columns"]] == [None, None, None]
    [test] = model["data_tests"]  # one test for the whole model
    assert [get_rendered(key, {}, native=True)
            for key in test["lakemirror.mirror_rows"]["arguments"]["keys"]] == [
        "OrderID", "Line'No"]


@pytest.mark.parametrize("name", [
    "{{ env_var('LM_SECRET_PROBE') }}", "note{#1", "{% raw %}", "a`b", "it's \"q\" \\",
    "line\nbreak", "é 😀"])
def test_generated_files_hold_names_only_as_inert_text(tmp_path, name):
    write_model(tmp_path, MirrorModel("dbo", "t", (name, "id"), conditional_column=name))
    sql = (tmp_path / "models/mirror/dbo/dbo__t.sql").read_text()
    yml = (tmp_path / "models/mirror/dbo/dbo__t.yml").read_text()
    assert name not in sql and name not in yml
    config = render_model(sql)["config"]
    assert (config["unique_key"], config["conditional_update_column"]) == ([name, "id"], name)
    [model] = yaml.safe_load(yml)["models"]
    assert get_rendered(model["columns"][0]["name"], {}) == name
    [test] = model["data_tests"]
    assert [get_rendered(key, {}, native=True)
            for key in test["lakemirror.mirror_rows"]["arguments"]["keys"]] == [name, "id"]
    assert name in get_rendered(model["description"], {})


def test_regenerating_keeps_an_edited_file_and_refreshes_an_untouched_one(tmp_path):
    model = MirrorModel("dbo", "t", ("id",))
    write_model(tmp_path, model)
    sql_path = tmp_path / "models/mirror/dbo/dbo__t.sql"
    yml_path = tmp_path / "models/mirror/dbo/dbo__t.yml"
    sql_path.write_text(sql_path.read_text() + "where id > 0\n")
    again = write_model(tmp_path, MirrorModel("dbo", "t", ("id", "other")))
    assert again[sql_path] == "kept-edited" and sql_path.read_text().endswith("where id > 0\n")
    assert again[yml_path] == "updated" and "other" in yml_path.read_text()
    assert set(write_model(tmp_path, MirrorModel("dbo", "t", ("id", "other"))).values()) == {
        "kept-edited", "unchanged"}


def test_generated_models_and_marts_are_lint_clean(tmp_path):
    project = copy_project(tmp_path / "project")
    shutil.copy(REPO / ".sqlfluff", project / ".sqlfluff")
    shutil.copytree(REPO / "tests/lint_library", project / "tests/lint_library")
    write_model(project, MirrorModel("dbo", "customers", ("CustomerID",)))
    write_history_model(project, MirrorModel("dbo", "customers", ("CustomerID",)))
    result = subprocess.run([str(Path(sys.executable).parent / "sqlfluff"), "lint", "models"],
                            cwd=project, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout
    assert "dbo__customers.sql" not in result.stdout
    assert "dbo__customers__history.sql" not in result.stdout


def test_tests_of_a_warehouse_bound_model_are_enabled_with_it(tmp_path):
    """A model of another warehouse is disabled; its tests must be too, or dbt points them at a
    model of the same name elsewhere (your project's, when lakemirror is a package)."""
    model = MirrorModel("dbo", "t", ("id",))
    write_model(tmp_path, model, warehouse="prod")
    write_history_model(tmp_path, model)
    for path in ["dbo/dbo__t.yml", "dbo/history/dbo__t__history.yml"]:
        [described] = yaml.safe_load((tmp_path / "models/mirror" / path).read_text())["models"]
        tests = described["data_tests"]
        assert len(tests) == 1 and isinstance(tests[0], dict), path
        assert not any("data_tests" in column for column in described["columns"]), path
        assert {next(iter(test.values()))["config"]["enabled"] for test in tests} == {
            described["config"]["enabled"]}, path
