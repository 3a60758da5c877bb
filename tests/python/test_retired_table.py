"""A table whose landing folder the publisher deleted while a model of the user's still ref()s
its mirror is `retired`: kept as last mirrored, with its generated model, so dbt still compiles
the project and every other table goes on. Once no model uses it, the next run drops it (the
dropped area keeps it, `restore` brings it back). End to end through the CLI."""

import json
import shutil
from types import SimpleNamespace

import pytest

import lakemirror.dbt_runner as dbt_runner
from lakemirror.reference import apply_changes
from lakemirror.run.users import users_of

from conftest import Zone, as_multiset, copy_project, mirrored_rows
from test_cli import run_cli
from test_mistakes import FILES, Mirror, statuses

USES = "model report (models/user/report.sql)"


def retired_setup(tmp_path):
    """Customers and Sales.schema/Orders mirrored from their first file, and a model of the
    user's on the mirror of Customers."""
    setup = Mirror(Zone(tmp_path / "LandingZone"), tmp_path / "warehouse",
                   copy_project(tmp_path / "project"))
    for folder in ("Customers", "Sales.schema/Orders"):
        setup.zone.table(folder, ["id"])
        setup.publish(folder, 1)
    user = setup.project / "models" / "user"
    user.mkdir(parents=True)
    (user / "report.sql").write_text("select id, v from {{ ref('dbo__customers') }}\n")
    first = setup.run()
    assert first.exit_code == 0, first.output
    return setup


def tables(result):
    return {f"{t['schema']}.{t['table']}": t for t in json.loads(result.stdout)["tables"]}


@pytest.mark.slow
def test_a_deleted_folder_a_model_still_uses_is_retired_and_the_others_go_on(tmp_path):
    setup = retired_setup(tmp_path)
    shutil.rmtree(setup.zone.root / "Customers")
    setup.publish("Sales.schema/Orders", 2)

    retired = setup.run()
    assert retired.exit_code == 0, retired.output
    assert statuses(retired) == {"dbo.customers": "retired", "sales.orders": "replicating"}
    customers = tables(retired)["dbo.customers"]
    assert USES in customers["note"] and customers["rows"] == 3, customers
    assert customers["last_sequence"] == 1 and customers["folder"] == "Customers", customers
    [warning] = json.loads(retired.stdout)["warnings"]
    assert warning.startswith("dbo.customers is retired") and USES in warning, warning
    setup.assert_exact("Sales.schema/Orders", 2)
    setup.assert_exact("Customers", 1)  # kept as last mirrored
    assert "dbo__customers.sql" in setup.models()
    report = mirrored_rows(setup.warehouse, "analytics", "report")
    assert report == as_multiset(apply_changes(FILES[:1], ["id"]))

    shown = run_cli("status", "--json", "--warehouse", str(setup.warehouse))
    assert shown.exit_code == 0, shown.output
    [record] = [t for t in json.loads(shown.output)["tables"] if t["table"] == "customers"]
    assert record["status"] == "retired" and USES in record["warnings"][0], record

    setup.publish("Sales.schema/Orders", 3)
    later = setup.run()
    assert later.exit_code == 0, later.output
    assert statuses(later) == {"dbo.customers": "retired", "sales.orders": "replicating"}
    setup.assert_exact("Sales.schema/Orders", 3)

    (setup.project / "models" / "user" / "report.sql").unlink()
    dropped = setup.run()
    assert dropped.exit_code == 0, dropped.output
    assert statuses(dropped) == {"dbo.customers": "dropped", "sales.orders": "replicating"}
    assert "lakemirror restore dbo.customers" in tables(dropped)["dbo.customers"]["note"]
    assert "dbo__customers.sql" not in setup.models()
    assert not (setup.warehouse / "dbo" / "customers").exists()

    setup.zone.table("Customers", ["id"])
    setup.publish("Customers", 2)
    restored = run_cli("restore", "dbo.customers", "--warehouse", str(setup.warehouse))
    assert restored.exit_code == 0, restored.output
    after = setup.run()
    assert after.exit_code == 0, after.output
    assert statuses(after) == {"dbo.customers": "replicating", "sales.orders": "replicating"}
    setup.assert_exact("Customers", 2)
    setup.assert_continued("Customers")


@pytest.mark.slow
def test_a_retired_table_whose_folder_comes_back_goes_on(tmp_path):
    setup = retired_setup(tmp_path)
    shutil.move(setup.zone.root / "Customers", tmp_path / "away")
    assert statuses(setup.run())["dbo.customers"] == "retired"

    shutil.move(tmp_path / "away", setup.zone.root / "Customers")
    setup.publish("Customers", 2)
    back = setup.run()
    assert back.exit_code == 0, back.output
    assert statuses(back) == {"dbo.customers": "replicating", "sales.orders": "replicating"}
    assert json.loads(back.stdout)["warnings"] == []
    setup.assert_exact("Customers", 2)
    setup.assert_continued("Customers")


@pytest.mark.slow
def test_ingest_alone_retires_the_table_too(tmp_path):
    """An orchestrator that runs dbt itself gets a project dbt still compiles."""
    setup = retired_setup(tmp_path)
    shutil.rmtree(setup.zone.root / "Customers")
    ingested = setup.run(command="ingest")
    assert ingested.exit_code == 0, ingested.output
    assert statuses(ingested) == {"dbo.customers": "retired", "sales.orders": "replicating"}
    assert "dbo__customers.sql" in setup.models()
    assert (setup.warehouse / "dbo" / "customers" / "_delta_log").is_dir()


@pytest.mark.slow
def test_a_run_on_an_unchanged_project_finds_the_users_without_parsing_it(tmp_path,
                                                                         monkeypatch):
    setup = retired_setup(tmp_path)
    shutil.rmtree(setup.zone.root / "Customers")
    assert statuses(setup.run())["dbo.customers"] == "retired"

    parses = []
    monkeypatch.setattr(dbt_runner, "parse_project", parses.append)  # and parses nothing
    idle = setup.run()
    assert idle.exit_code == 0, idle.output
    assert statuses(idle) == {"dbo.customers": "retired", "sales.orders": "replicating"}
    assert USES in tables(idle)["dbo.customers"]["note"]
    assert parses == []


def test_the_users_of_a_model_are_the_nodes_lakemirror_did_not_generate():
    def node(name, path, kind="model"):
        return SimpleNamespace(name=name, original_file_path=path, resource_type=kind)

    mirror = "models/mirror/dbo"
    nodes = {
        "model.p.dbo__customers": node("dbo__customers", f"{mirror}/dbo__customers.sql"),
        "model.p.dbo__customers__history": node(
            "dbo__customers__history", f"{mirror}/history/dbo__customers__history.sql"),
        "test.p.lakemirror_mirror_rows_dbo__customers": node(
            "lakemirror_mirror_rows_dbo__customers", f"{mirror}/dbo__customers.yml", "test"),
        "model.p.report": node("report", "models/user/report.sql"),
        "test.p.relationships_report": node("relationships_report", "models/user/_user.yml",
                                            "test"),
        "model.p.dbo__orders": node("dbo__orders", f"{mirror}/dbo__orders.sql"),
    }
    manifest = SimpleNamespace(nodes=nodes, exposures={
        "exposure.p.dashboard": node("dashboard", "models/user/_exposures.yml", "exposure")},
        child_map={
            "model.p.dbo__customers": ["test.p.lakemirror_mirror_rows_dbo__customers",
                                       "test.p.relationships_report"],
            "model.p.dbo__customers__history": ["model.p.report", "exposure.p.dashboard"],
            "model.p.dbo__orders": []})
    assert users_of(manifest, ("dbo__customers", "dbo__customers__history")) == [
        "exposure dashboard (models/user/_exposures.yml)", USES,
        "test relationships_report (models/user/_user.yml)"]
    assert users_of(manifest, ("dbo__orders", "dbo__orders__history")) == []
