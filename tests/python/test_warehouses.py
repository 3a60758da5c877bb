"""One dbt project, many warehouses: each generated model lists the warehouses that mirror its
table, by logical name, and dbt builds it only for those (LAKEMIRROR_WAREHOUSE_NAME)."""

import os
import socket
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow as pa
import pytest

from lakemirror.codegen import (
    MirrorModel,
    ModelConflictError,
    read_warehouses,
    retire_model,
    write_model,
)
from lakemirror.errors import ConfigError
from lakemirror.project import init_project
from lakemirror.reference import ROW_MARKER as M
from lakemirror.service import MirrorService, RunSettings

from conftest import Zone, as_multiset, mirrored_rows

BIN = Path(sys.executable).parent
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), (M, pa.int32())])
CUSTOMERS = MirrorModel("dbo", "customers", ("id",))
DEV, PROD = "dev", "prod"


def yml_of(project, name="dbo__customers"):
    return project / "models/mirror/dbo" / f"{name}.yml"


def test_a_shared_model_lists_every_warehouse_and_keeps_the_first_ones_files(tmp_path):
    first = write_model(tmp_path, CUSTOMERS, warehouse=DEV)
    sql = tmp_path / "models/mirror/dbo/dbo__customers.sql"
    second = write_model(tmp_path, CUSTOMERS, warehouse=PROD)
    assert set(first.values()) == {"created"}
    assert (second[sql], second[yml_of(tmp_path)]) == ("unchanged", "updated")
    assert read_warehouses(yml_of(tmp_path)) == {"dev", "prod"}
    assert set(write_model(tmp_path, CUSTOMERS, warehouse=DEV).values()) == {"unchanged"}


def test_the_list_is_kept_up_to_date_even_in_a_yml_you_edited(tmp_path):
    write_model(tmp_path, CUSTOMERS, warehouse=DEV)
    yml = yml_of(tmp_path)
    yml.write_text(yml.read_text().replace("Key column (keyColumns in _metadata.json).",
                                           "The customer number."))
    outcomes = write_model(tmp_path, CUSTOMERS, warehouse=PROD)
    assert outcomes[yml] == "kept-edited" and "The customer number." in yml.read_text()
    assert read_warehouses(yml) == {"dev", "prod"}
    assert retire_model(tmp_path, "dbo", "customers", warehouse=PROD) == {
        yml: "updated"}
    assert read_warehouses(yml) == {"dev"} and "The customer number." in yml.read_text()
    sql = yml.with_suffix(".sql")
    assert retire_model(tmp_path, "dbo", "customers", warehouse=DEV) == {
        sql: "removed", yml: "kept-edited"}  # dropped here, listed nowhere else
    assert read_warehouses(yml) == set() and "The customer number." in yml.read_text()


@pytest.mark.parametrize("style", [
    "'{{ (env_var(''LAKEMIRROR_WAREHOUSE_NAME'', ''default'') in [''dev'', ''prod'']) "
    "| as_bool }}'",
    '"{{ (env_var(\'LAKEMIRROR_WAREHOUSE_NAME\', \'default\') in [\'dev\', \'prod\']) '
    '| as_bool }}"  # built for dev and prod'])
def test_a_list_you_rewrote_in_another_yaml_style_still_reads_back(tmp_path, style):
    """The list is read as YAML, so it reads back in any quoting you rewrite it in."""
    write_model(tmp_path, CUSTOMERS, warehouse=DEV)
    yml = yml_of(tmp_path)
    line = next(line for line in yml.read_text().splitlines() if "&lakemirror_warehouses" in line)
    yml.write_text(yml.read_text().replace(line, line.split("&lakemirror_warehouses ")[0]
                                           + "&lakemirror_warehouses " + style))
    assert read_warehouses(yml) == {"dev", "prod"}
    write_model(tmp_path, CUSTOMERS, warehouse="test")
    assert read_warehouses(yml) == {"dev", "prod", "test"}


def test_a_dropped_table_leaves_only_its_warehouse_until_the_last_one_drops_it(tmp_path):
    write_model(tmp_path, CUSTOMERS, warehouse=DEV)
    write_model(tmp_path, CUSTOMERS, warehouse=PROD)
    sql, yml = tmp_path / "models/mirror/dbo/dbo__customers.sql", yml_of(tmp_path)
    assert retire_model(tmp_path, "dbo", "customers", warehouse=DEV) == {yml: "updated"}
    assert sql.exists() and read_warehouses(yml) == {"prod"}
    assert retire_model(tmp_path, "dbo", "customers", warehouse=PROD) == {
        sql: "removed", yml: "removed"}
    assert not sql.exists() and not yml.exists()


def test_the_same_table_with_other_keys_in_another_warehouse_is_a_conflict(tmp_path):
    write_model(tmp_path, MirrorModel("dbo", "customers", ("id",), "ts"), warehouse=DEV)
    with pytest.raises(ModelConflictError) as raised:
        write_model(tmp_path, MirrorModel("dbo", "customers", ("id", "region")),
                    warehouse=PROD)
    message = str(raised.value)
    assert "warehouse dev," in message and "['id', 'region']" in message and "'ts'" in message
    assert raised.value.error_class == "user"
    assert read_warehouses(yml_of(tmp_path)) == {"dev"}  # nothing changed
    # the only warehouse of a model may change its keys (its ingest checks that it may)
    write_model(tmp_path, MirrorModel("dbo", "customers", ("id", "region")), warehouse=DEV)


def test_runs_of_many_warehouses_at_once_lose_no_warehouse(tmp_path):
    start = threading.Barrier(16)

    def mirror(number):
        start.wait()
        write_model(tmp_path, CUSTOMERS, warehouse=f"wh{number}")

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(mirror, range(16)))
    assert read_warehouses(yml_of(tmp_path)) == {f"wh{number}" for number in range(16)}


@pytest.mark.parametrize("name", ["/data/wh", "", "a b", "x'y", "é", "n" * 65])
def test_a_name_that_is_no_warehouse_name_stops_the_run(tmp_path, name):
    with pytest.raises(ConfigError, match="cannot name a warehouse"):
        MirrorService(RunSettings.given(tmp_path, tmp_path / "wh", tmp_path,
                                        warehouse_name=name))


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def dbt_models(project, name, monkeypatch):
    """The models `dbt ls` selects in the project when LAKEMIRROR_WAREHOUSE_NAME is `name`
    (unset: None)."""
    from dbt.cli.main import dbtRunner

    monkeypatch.setenv("LAKEMIRROR_WAREHOUSE", str(project.parent / "wh" / str(name)))
    if name is None:
        monkeypatch.delenv("LAKEMIRROR_WAREHOUSE_NAME", raising=False)
    else:
        monkeypatch.setenv("LAKEMIRROR_WAREHOUSE_NAME", name)
    result = dbtRunner().invoke(["ls", "--project-dir", str(project), "--profiles-dir",
                                 str(project), "--resource-type", "model", "--output", "name",
                                 "--quiet"])
    assert result.success, result.exception
    return set(result.result)


@pytest.mark.slow
def test_one_project_mirrors_dev_and_prod_and_plain_dbt_builds_only_the_targets_tables(
        tmp_path, monkeypatch):
    project = tmp_path / "project"
    init_project(project)
    dev, prod = Zone(tmp_path / "dev"), Zone(tmp_path / "prod")
    for zone, folders in ((dev, ["Customers", "Orders"]), (prod, ["Customers", "Products"])):
        for folder in folders:
            zone.table(folder, ["id"])
            zone.write(folder, 1, [{"id": 1, "v": f"{zone.root.name} {folder}", M: 0}], SCHEMA)
    services = {zone.root.name: MirrorService(RunSettings.given(
                    zone.root, tmp_path / "wh" / zone.root.name, project, quiet=True,
                    warehouse_name=zone.root.name))
                for zone in (dev, prod)}
    for name, service in services.items():
        statuses = service.run()
        assert {status.status for status in statuses} == {"replicating"}, (name, statuses)

    assert {path.stem: read_warehouses(path)
            for path in (project / "models/mirror/dbo").glob("*.yml")} == {
        "dbo__customers": {"dev", "prod"}, "dbo__orders": {"dev"}, "dbo__products": {"prod"}}
    assert dbt_models(project, "dev", monkeypatch) == {"dbo__customers", "dbo__orders"}
    assert dbt_models(project, "prod", monkeypatch) == {"dbo__customers", "dbo__products"}
    assert dbt_models(project, "other", monkeypatch) == set()
    assert dbt_models(project, None, monkeypatch) == set()  # neither is `default`

    # plain dbt for prod: its changes applied, nothing of dev's built there or touched
    prod.write("Customers", 2, [{"id": 1, "v": "prod 2", M: 1}, {"id": 2, "v": "new", M: 0}],
               SCHEMA)
    services["prod"].ingest_only()
    env = {**os.environ, "LAKEMIRROR_HOME": str(tmp_path / "home"),
           "LAKEMIRROR_ENGINE_PORT": str(free_port()),
           "LAKEMIRROR_WAREHOUSE": str(tmp_path / "wh/prod"), "LAKEMIRROR_WAREHOUSE_NAME": "prod"}

    def sh(*args):
        return subprocess.run([str(BIN / args[0]), *args[1:]], cwd=project, env=env,
                              capture_output=True, text=True, timeout=300)

    assert sh("lakemirror", "engine", "start").returncode == 0
    try:
        dbt_run = sh("dbt", "run", "--target", "embedded")
    finally:
        sh("lakemirror", "engine", "stop")
    assert dbt_run.returncode == 0, dbt_run.stdout
    assert "dbo__orders" not in dbt_run.stdout and "dbo.orders" not in dbt_run.stdout
    assert mirrored_rows(tmp_path / "wh/prod", "dbo", "customers") == as_multiset(
        [{"id": 1, "v": "prod 2"}, {"id": 2, "v": "new"}])
    assert mirrored_rows(tmp_path / "wh/dev", "dbo", "customers") == as_multiset(
        [{"id": 1, "v": "dev Customers"}])
    assert not (tmp_path / "wh/prod/dbo/orders").exists()
    assert not (tmp_path / "wh/dev/dbo/products").exists()


def test_a_table_with_other_keys_than_the_other_warehouses_fails_alone(tmp_path):
    project = tmp_path / "project"
    init_project(project, deps=False)
    dev, prod = Zone(tmp_path / "dev"), Zone(tmp_path / "prod")
    for zone, keys in ((dev, ["id"]), (prod, ["id", "v"])):
        for folder in ("Customers", "Other"):
            zone.table(folder, keys if folder == "Customers" else ["id"])
            zone.write(folder, 1, [{"id": 1, "v": "a", M: 0}], SCHEMA)
    MirrorService(RunSettings.given(dev.root, tmp_path / "wh/dev", project, quiet=True,
                                    warehouse_name="dev")).ingest_only()
    statuses = {status.table: status for status in MirrorService(RunSettings.given(
        prod.root, tmp_path / "wh/prod", project, quiet=True,
        warehouse_name="prod")).ingest_only()}
    assert statuses["other"].status != "failed"
    assert (statuses["customers"].status, statuses["customers"].error_class) == ("failed", "user")
    assert "shared with warehouse" in statuses["customers"].error
    assert read_warehouses(yml_of(project)) == {"dev"}
