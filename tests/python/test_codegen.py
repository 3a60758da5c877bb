"""Generated mirror models: content, never overwriting edits, and lint-clean SQL."""

import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from lakemirror.codegen import MirrorModel, write_model

from conftest import REPO, copy_project


def test_generated_model_names_keys_strategy_and_source(tmp_path):
    outcomes = write_model(tmp_path, MirrorModel("sales", "orderlines", ("OrderID", "Line'No")))
    sql_path = tmp_path / "models/mirror/sales/sales__orderlines.sql"
    assert set(outcomes.values()) == {"created"}
    sql = sql_path.read_text()
    assert "incremental_strategy='mirror'" in sql
    assert "unique_key=['OrderID', 'Line\\'No']" in sql
    assert "source('lakemirror_staging', 'sales__orderlines')" in sql
    document = yaml.safe_load((tmp_path / "models/mirror/sales/sales__orderlines.yml").read_text())
    [model] = document["models"]
    assert [column["name"] for column in model["columns"]] == ["OrderID", "Line'No",
                                                               "_lm_position"]


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
    result = subprocess.run([str(Path(sys.executable).parent / "sqlfluff"), "lint", "models"],
                            cwd=project, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout
    assert "dbo__customers.sql" not in result.stdout
