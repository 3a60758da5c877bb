"""The embedded engine on a warehouse in object storage (Azurite, moto's S3): Sail reads its
storage settings only from its process environment, so lakemirror starts a child engine with
the warehouse's settings, one per set of settings, and delta-rs reads what it wrote with the
same settings as storage options."""

import json
import os
import subprocess

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from lakemirror.run.dbt import embedded_engine
from lakemirror.environment import read_settings
from lakemirror.storage import parse_location
from lakemirror.storage.engine_settings import delta_storage_options, engine_environment
from lakemirror.project import init_project
from lakemirror.reference import ROW_MARKER
from lakemirror.environment import STORAGE_OPTIONS as OPTIONS_VARIABLE

from conftest import Zone, as_multiset, mirrored_rows, owner_session
from spark_cluster import free_port
from test_cli import BIN


def test_the_engine_started_with_the_warehouses_settings_writes_there(object_store_server):
    server = object_store_server
    location = parse_location(server.url(server.fresh_prefix("wh")), server.options)
    env = read_settings()
    address, _ = embedded_engine(engine_environment(location, env.storage.variables), env=env)
    spark = owner_session(address)
    try:
        spark.sql(f"create table t (id int, v string) using delta location "
                  f"'{location.url}/dbo/t'")
        spark.sql("insert into t values (1, 'a'), (2, 'b')")
        spark.sql("merge into t using (select 2 as id, 'c' as v) s on t.id = s.id "
                  "when matched then update set *")
    finally:
        spark.stop()
    table = DeltaTable(f"{location.url}/dbo/t", storage_options=delta_storage_options(location))
    assert sorted(table.to_pyarrow_table().to_pylist(), key=lambda row: row["id"]) == [
        {"id": 1, "v": "a"}, {"id": 2, "v": "c"}]
    assert table.version() == 2


def test_two_warehouses_with_other_settings_get_two_engines(s3_server):
    def engine(options):
        location, env = parse_location(s3_server.url("wh"), options), read_settings()
        return embedded_engine(engine_environment(location, env.storage.variables), env=env)[1]

    first = engine(s3_server.options)
    assert engine(dict(s3_server.options)) is first
    other = engine({**s3_server.options, "access_key_id": "another-key"})
    assert other is not first and other.pid != first.pid
    local = engine_environment(parse_location("/tmp/wh"), {})
    assert embedded_engine(local, env=read_settings())[1] not in (first, other)


@pytest.mark.parametrize("kind", ["azurite", "s3"])
def test_the_settings_are_object_stores_variables(request, kind):
    server = request.getfixturevalue(f"{kind}_server")
    environment = engine_environment(parse_location(server.url("wh"), server.options),
                                     read_settings().storage.variables)
    if kind == "s3":
        assert environment["AWS_ENDPOINT"] == server.endpoint
        assert environment["AWS_ALLOW_HTTP"] == "true"
        assert environment["AWS_SECRET_ACCESS_KEY"] == "lakemirror-test"
    else:
        assert environment["AZURE_STORAGE_USE_EMULATOR"] == "true"
        assert environment["AZURE_STORAGE_ACCOUNT_NAME"] == "devstoreaccount1"
        assert environment["AZURITE_BLOB_STORAGE_URL"] == server.endpoint
    assert "AWS_BUCKET" not in environment and "AZURE_CONTAINER_NAME" not in environment


def test_plain_dbt_builds_an_init_project_on_an_engine_started_with_the_warehouse(
        tmp_path, object_store_server):
    """In a `lakemirror init` project, `lakemirror engine start` gives the engine the storage
    settings of LAKEMIRROR_WAREHOUSE (Sail reads them nowhere else): plain `dbt build` then
    mirrors into the warehouse URL and its tests pass; an engine started without them is
    refused by dbt's plugin, naming the fix, before any model runs."""
    server = object_store_server
    zone = Zone(tmp_path / "LandingZone")
    zone.table("T", ["id"])
    zone.write("T", 1, [{"id": 1, "v": "a", ROW_MARKER: 0}, {"id": 2, "v": "b", ROW_MARKER: 0}],
               pa.schema([("id", pa.int64()), ("v", pa.string()), (ROW_MARKER, pa.int32())]))
    project = tmp_path / "project"
    init_project(project)
    url = server.url(server.fresh_prefix("wh"))
    env = {**os.environ, "LAKEMIRROR_HOME": str(tmp_path / "home"),
           "LAKEMIRROR_ENGINE_PORT": str(free_port()), "LAKEMIRROR_WAREHOUSE": url,
           OPTIONS_VARIABLE: json.dumps(dict(server.options)),
           "LAKEMIRROR_LANDING_ZONE": str(zone.root), "LAKEMIRROR_PROJECT_DIR": str(project),
           "DBT_PROFILES_DIR": str(project)}

    def sh(program, *args, **changes):
        return subprocess.run([str(BIN / program), *args], env={**env, **changes}, cwd=project,
                              capture_output=True, text=True, timeout=300)

    assert sh("lakemirror", "ingest").returncode == 0
    try:
        assert sh("lakemirror", "engine", "start", LAKEMIRROR_WAREHOUSE=str(tmp_path / "wh")
                  ).returncode == 0
        refused = sh("dbt", "run")
        assert refused.returncode == 2, refused.stdout
        assert "was started without the storage settings of the warehouse" in refused.stdout
        assert f"lakemirror engine start --warehouse {url}" in refused.stdout
        assert sh("lakemirror", "engine", "stop").returncode == 0
        started = sh("lakemirror", "engine", "start")
        assert started.returncode == 0, started.stderr
        dbt_build = sh("dbt", "build")
        assert dbt_build.returncode == 0, dbt_build.stdout
        assert "PASS=" in dbt_build.stdout and "ERROR=0" in dbt_build.stdout
    finally:
        sh("lakemirror", "engine", "stop")
    assert mirrored_rows(parse_location(url, server.options), "dbo", "t") == as_multiset(
        [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}])


def test_the_configured_port_goes_to_one_engine_and_another_takes_a_free_one(s3_server,
                                                                            monkeypatch):
    port = free_port()
    monkeypatch.setenv("LAKEMIRROR_ENGINE_PORT", str(port))

    def engine(key):
        options = {**s3_server.options, "access_key_id": f"{key}-{port}"}
        location, env = parse_location(s3_server.url("wh"), options), read_settings()
        return embedded_engine(engine_environment(location, env.storage.variables), env=env)

    first_address, first = engine("first")
    second_address, second = engine("second")
    assert first_address.port == port and second_address.port != port
    assert first.alive() and second.alive()
    first.kill()
    assert engine("first")[0].port == port  # restarted where it was
