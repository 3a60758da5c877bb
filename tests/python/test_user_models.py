"""`lakemirror run` builds the user's own models and tests beside the mirror: each one it
builds is reported (the JSON's `models`, the printed summary), a failure among them makes the
exit code 1, and the mirror tables are applied whatever the user's models do, also when dbt
cannot parse the project at all."""

import json

import pytest
from click.testing import CliRunner

from lakemirror.cli.main import cli
from lakemirror.reference import ROW_MARKER as M
from lakemirror.reference import apply_changes

from conftest import as_multiset, copy_project, mirrored_rows
from test_orchestration import load_example
from test_packaging import publish

FILES = [[{"id": 1, "name": "a", M: 0}, {"id": 2, "name": "b", M: 0}],
         [{"id": 1, "name": "a2", M: 1}, {"id": 3, "name": "c", M: 0}]]


def project_with(tmp_path, models):
    """A project copy with the user's `models` (name → SQL) in models/user/."""
    project = copy_project(tmp_path / "project")
    (project / "models/user").mkdir(parents=True)
    for name, sql in models.items():
        (project / f"models/user/{name}.sql").write_text(sql)
    return project


def lakemirror_run(tmp_path, project, *options):
    return CliRunner().invoke(cli, [
        "run", *options, "--landing-zone", str(tmp_path / "zone"),
        "--warehouse", str(tmp_path / "wh"), "--project-dir", str(project)])


def mirrored_exactly(tmp_path, files):
    return mirrored_rows(tmp_path / "wh", "dbo", "customers") == as_multiset(
        apply_changes(files, ["id"]))


@pytest.mark.slow
def test_user_models_failing_at_run_time_are_reported_and_fail_the_run(tmp_path):
    project = project_with(tmp_path, {
        "good": "select id from {{ ref('dbo__customers') }}",
        "broken_sql": "select no_such_column from {{ ref('dbo__customers') }}",
        "broken_jinja": "select {{ no_such_macro() }} as x",
        "after_broken": "select * from {{ ref('broken_sql') }}"})
    publish(tmp_path / "zone", 1, FILES[0])
    publish(tmp_path / "zone", 2, FILES[1])

    result = lakemirror_run(tmp_path, project, "--json")
    assert result.exit_code == 1, result.output
    document = json.loads(result.stdout)
    assert [table["status"] for table in document["tables"]] == ["replicating"]
    assert mirrored_exactly(tmp_path, FILES)
    models = {model["name"]: model for model in document["models"]}
    assert set(models) == {"good", "broken_sql", "broken_jinja", "after_broken"}
    assert (models["good"]["status"], models["good"]["error"]) == ("success", None)
    assert models["broken_sql"]["status"] == "error"
    assert "no_such_column" in models["broken_sql"]["error"]
    assert models["broken_jinja"]["status"] == "error"
    assert "Compilation Error in model broken_jinja" in models["broken_jinja"]["error"]
    assert models["after_broken"]["status"] == "skipped"
    assert {model["resource_type"] for model in document["models"]} == {"model"}
    example = load_example()  # the Airflow example's job goes on, and fails at its end
    status = example.outcome(result.exit_code, result.stdout)
    with pytest.raises(example.MirrorFailed, match="(?s)model broken_sql error: .*no_such_column"):
        example.check(status)

    printed = lakemirror_run(tmp_path, project)  # nothing new, but the models are built again
    assert printed.exit_code == 1, printed.output
    assert "models and tests of the project: 1 ok, 3 failed" in printed.stdout
    assert "model broken_sql error:" in printed.stdout


@pytest.mark.slow
def test_a_project_dbt_cannot_parse_still_mirrors_and_names_the_broken_model(tmp_path):
    project = project_with(tmp_path, {
        "report": "select * from {{ ref('no_such_model') }}",
        "good": "select id from {{ ref('dbo__customers') }}"})
    publish(tmp_path / "zone", 1, FILES[0])

    result = lakemirror_run(tmp_path, project, "--json")
    assert result.exit_code == 1, result.output
    document = json.loads(result.stdout)
    assert [table["status"] for table in document["tables"]] == ["replicating"]
    assert mirrored_exactly(tmp_path, FILES[:1])
    [model] = document["models"]
    assert (model["name"], model["resource_type"], model["status"]) == (
        "report", "model", "error")
    assert "depends on a node named 'no_such_model'" in model["error"]
    assert "none of its own models and tests were built" in model["error"]
    assert not (project / ".dbtignore").exists()  # the project itself is never touched


def test_the_mirror_only_view_links_the_project_and_hides_all_but_macros_and_mirror_models(
        tmp_path):
    import pathspec

    from lakemirror.run.mirror_only import mirror_only_project

    project = tmp_path / "project"
    for folder in ("models/mirror/dbo", "models/user", "my_macros", "tests", "target"):
        (project / folder).mkdir(parents=True)
    (project / "dbt_project.yml").write_text("name: p\nmacro-paths: [my_macros]\n")
    (project / ".dbtignore").write_text("models/mirror/dbo/scratch.sql\n")
    view = mirror_only_project(project, tmp_path / "home")
    assert mirror_only_project(project, tmp_path / "home") == view  # one view per project
    assert {entry.name for entry in view.iterdir()} == {
        "dbt_project.yml", "models", "my_macros", "tests", ".dbtignore"}  # dbt's target: own
    assert (view / "models").resolve() == project / "models"
    ignored = pathspec.PathSpec.from_lines("gitwildmatch", (view / ".dbtignore").open())
    assert {path: ignored.match_file(path) for path in (
        "models/mirror/dbo/dbo__t.sql", "models/mirror/dbo/history/dbo__t__history.sql",
        "models/mirror/dbo/_dbo__t.yml", "my_macros/m.sql", "models/user/report.sql",
        "models/top.sql", "tests/t.sql", "macros/m.sql", "models/mirror/dbo/scratch.sql")} == {
        "models/mirror/dbo/dbo__t.sql": False, "models/mirror/dbo/history/dbo__t__history.sql":
        False, "models/mirror/dbo/_dbo__t.yml": False, "my_macros/m.sql": False,
        "models/user/report.sql": True, "models/top.sql": True, "tests/t.sql": True,
        "macros/m.sql": True, "models/mirror/dbo/scratch.sql": True}
    (project / "tests").rmdir()
    assert "tests" not in {entry.name for entry in mirror_only_project(
        project, tmp_path / "home").iterdir()}  # gone from the project, gone from the view
