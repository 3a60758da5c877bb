"""The CLI: exit codes, --json, clear errors, new processes, the background engine + plain dbt."""

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import psutil
import pyarrow as pa
import pytest
import yaml
from click.testing import CliRunner
from deltalake import DeltaTable

from lakemirror.cli.main import cli
from lakemirror.engine import EngineAddress
from lakemirror.engine.identity import ENGINE_MARK
from lakemirror.engine.plain_dbt import embedded_engine
from lakemirror.project import init_project
from lakemirror.reference import ROW_MARKER, apply_changes
from lakemirror.staging.lock import table_locks
from lakemirror.storage.warehouse import warehouse_storage

from conftest import REPO, as_multiset, copy_project, mirrored_rows
from spark_cluster import free_port
from zone_kinds import WITH_S3, published_zone  # noqa: F401 (a fixture)

M = ROW_MARKER
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), (M, pa.int32())])
BIN = Path(sys.executable).parent


def run_cli(*args, env=None):
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)


def test_missing_landing_zone_is_a_usage_error_with_a_clear_message(tmp_path):
    result = run_cli("run", "--landing-zone", str(tmp_path / "nope"),
                     "--warehouse", str(tmp_path / "wh"),
                     "--project-dir", str(copy_project(tmp_path / "project")))
    assert result.exit_code == 2
    assert "landing zone" in result.output and "does not exist" in result.output
    assert "LAKEMIRROR_LANDING_ZONE" in result.output


def test_version_names_the_installed_package():
    from importlib.metadata import version

    result = run_cli("--version")
    assert result.exit_code == 0 and result.output == f"lakemirror, version {version('lakemirror')}\n"


def test_missing_option_is_a_usage_error():
    result = run_cli("run", env={"LAKEMIRROR_LANDING_ZONE": "", "LAKEMIRROR_WAREHOUSE": ""})
    assert result.exit_code == 2 and "--landing-zone" in result.output


@pytest.mark.slow
@pytest.mark.parametrize("published_zone", WITH_S3, indirect=True)
def test_json_status_and_exit_code_one_when_a_table_fails(published_zone, tmp_path):
    zone = published_zone.zone
    zone.table("Good", ["id"])
    zone.table("Sales.schema/Bad", ["id"])
    zone.table("Late", ["id"])
    zone.write("Good", 1, [{"id": 1, "v": "a", M: 0}, {"id": 1, "v": "b", M: 1}], SCHEMA)
    zone.write("Sales.schema/Bad", 1, [{"id": 1, "v": "a", M: 5}], SCHEMA)
    zone.write("Late", 2, [{"id": 1, "v": "a", M: 0}], SCHEMA)
    published_zone.publish()
    env = {"LAKEMIRROR_LANDING_ZONE": str(published_zone.location),
           "LAKEMIRROR_WAREHOUSE": str(tmp_path / "wh"), **published_zone.environment}
    result = run_cli("run", "--json", "--project-dir", str(copy_project(tmp_path / "project")),
                     env=env)
    assert result.exit_code == 1
    tables = {(t["schema"], t["table"]): t for t in json.loads(result.stdout)["tables"]}
    assert set(tables) == {("dbo", "good"), ("sales", "bad"), ("dbo", "late")}
    assert tables["dbo", "good"] == {"schema": "dbo", "table": "good", "status": "replicating",
                                     "last_sequence": 1, "rows": 1, "error": None, "note": None,
                                     "error_class": None, "warnings": [], "folder": "Good"}
    assert (tables["sales", "bad"]["status"], tables["sales", "bad"]["error_class"]) == (
        "failed", "user")
    assert "__rowMarker__=5" in tables["sales", "bad"]["error"]
    assert tables["dbo", "late"]["status"] == "waiting"
    assert "00000000000000000001.parquet" in tables["dbo", "late"]["error"]
    shown = run_cli("status", "--json", env=env)
    assert {(t["schema"], t["table"]): t["status"] for t in json.loads(shown.stdout)["tables"]} \
        == {name: table["status"] for name, table in tables.items()}
    inspected = run_cli("inspect", "dbo.good", "--json", env=env)
    assert inspected.exit_code == 0 and '"table": "dbo.good"' in inspected.output


@pytest.mark.slow
def test_every_status_names_its_folder_so_folders_differing_by_case_are_told_apart(
        zone, tmp_path):
    for folder in ("Orders", "orders", "Sales.schema/Lines"):
        zone.table(folder, ["id"])
        zone.write(folder, 1, [{"id": 1, "v": "a", M: 0}], SCHEMA)
    env = {"LAKEMIRROR_LANDING_ZONE": str(zone.root), "LAKEMIRROR_WAREHOUSE": str(tmp_path / "wh"),
           "LAKEMIRROR_PROJECT_DIR": str(copy_project(tmp_path / "project"))}
    expected = [("dbo", "orders", "Orders", "failed"), ("dbo", "orders", "orders", "failed"),
                ("sales", "lines", "Sales.schema/Lines", "replicating")]
    for command in ("ingest", "run", "status"):
        options = ["--project-dir", env["LAKEMIRROR_PROJECT_DIR"]] if command != "status" else []
        result = run_cli(command, "--json", *options, env=env)
        assert result.exit_code == 1, result.output
        assert sorted((t["schema"], t["table"], t["folder"], t["status"])
                      for t in json.loads(result.stdout)["tables"]) == expected, command

        printed = run_cli(command, *options, env=env).stdout.splitlines()
        assert printed[-4].split()[:2] == ["table", "folder"], command
        assert sorted(tuple(line.split()[:2]) for line in printed[-3:]) == [
            ("dbo.orders", "Orders"), ("dbo.orders", "orders"),
            ("sales.lines", "Sales.schema/Lines")], command

    subprocess.run(["rm", "-r", str(zone.root / "Sales.schema")], check=True)
    result = run_cli("run", "--json", "--project-dir", env["LAKEMIRROR_PROJECT_DIR"], env=env)
    dropped = [t for t in json.loads(result.stdout)["tables"] if t["status"] == "dropped"]
    assert [(t["table"], t["folder"]) for t in dropped] == [("lines", "Sales.schema/Lines")]


@pytest.mark.slow
def test_background_engine_then_plain_dbt_run_merges_in_new_processes(zone, tmp_path):
    project = copy_project(tmp_path / "project")
    warehouse = tmp_path / "wh"
    env = {**os.environ, "LAKEMIRROR_HOME": str(tmp_path / "home"),
           "LAKEMIRROR_ENGINE_PORT": str(free_port()), "LAKEMIRROR_WAREHOUSE": str(warehouse),
           "LAKEMIRROR_LANDING_ZONE": str(zone.root), "LAKEMIRROR_PROJECT_DIR": str(project),
           "DBT_PROFILES_DIR": str(project / "profiles")}

    def sh(*args):
        return subprocess.run(args, env=env, cwd=project, capture_output=True, text=True,
                              timeout=300)

    zone.table("T", ["id"])
    zone.write("T", 1, [{"id": 1, "v": "a", M: 0}, {"id": 2, "v": "b", M: 0}], SCHEMA)
    started = sh(str(BIN / "lakemirror"), "engine", "start")
    try:
        assert started.returncode == 0, started.stderr
        assert sh(str(BIN / "lakemirror"), "engine", "status").returncode == 0
        first = sh(str(BIN / "lakemirror"), "run")
        assert first.returncode == 0, first.stdout + first.stderr
        zone.write("T", 2, [{"id": 1, "v": "a2", M: 1}, {"id": 2, "v": None, M: 2}], SCHEMA)
        ingested = sh(str(BIN / "lakemirror"), "ingest")
        assert ingested.returncode == 0, ingested.stdout + ingested.stderr
        dbt_run = sh(str(BIN / "dbt"), "run")
        assert dbt_run.returncode == 0, dbt_run.stdout
        dbt_test = sh(str(BIN / "dbt"), "test")
        assert dbt_test.returncode == 0, dbt_test.stdout
    finally:
        sh(str(BIN / "lakemirror"), "engine", "stop")
    assert sh(str(BIN / "lakemirror"), "engine", "status").returncode == 1
    assert mirrored_rows(warehouse, "dbo", "t") == as_multiset([{"id": 1, "v": "a2"}])
    operations = [entry["operation"] for entry in DeltaTable(str(warehouse / "dbo/t")).history()]
    assert "MERGE" in operations and len([op for op in operations if "CREATE" in op]) == 1


@pytest.mark.parametrize("made_by", ["repository", "init"])
def test_plain_dbt_without_the_engine_stops_at_once_naming_the_fix(tmp_path, made_by):
    """Spark Connect's client would retry the missing engine for about ten minutes, silently:
    the timeouts only keep a regression from hanging the suite."""
    if made_by == "init":
        project = tmp_path / "project"
        init_project(project)
        profiles = project
    else:
        project = copy_project(tmp_path / "project")
        profiles = project / "profiles"
    (project / "models").mkdir(exist_ok=True)
    (project / "models" / "one.sql").write_text("select 1 as id\n")  # dbt connects to run it
    env = {**os.environ, "LAKEMIRROR_HOME": str(tmp_path / "home"),
           "LAKEMIRROR_ENGINE_PORT": str(free_port()), "LAKEMIRROR_WAREHOUSE": str(tmp_path / "wh"),
           "DBT_PROFILES_DIR": str(profiles)}

    def dbt(*args):
        return subprocess.run([str(BIN / "dbt"), *args], env=env, cwd=project,
                              capture_output=True, text=True, timeout=60)

    assert dbt("parse").returncode == 0  # needs no engine
    run = dbt("run")
    assert run.returncode == 2, run.stdout
    assert (f"the embedded engine is not running: nothing answers at "
            f"127.0.0.1:{env['LAKEMIRROR_ENGINE_PORT']}") in run.stdout
    assert "lakemirror engine start" in run.stdout
    with socket.socket() as engine:  # a background engine on another port: its port is named
        engine.bind(("127.0.0.1", 0))
        engine.listen()
        port = engine.getsockname()[1]
        (tmp_path / "home").mkdir()
        (tmp_path / "home" / "engine.json").write_text(json.dumps(
            {"pid": os.getpid(), "started": psutil.Process().create_time(),
             "host": "127.0.0.1", "port": port}))
        build = dbt("build")
    assert build.returncode == 2, build.stdout
    assert f"export LAKEMIRROR_ENGINE_PORT={port}" in build.stdout


def test_every_target_is_marked_and_the_connect_ones_are_checked_for_a_server():
    """Every target names its engine in its mark; both Spark Connect targets are marked, so dbt
    never sits in the client's silent retries; only the embedded one is taken for lakemirror's
    engine."""
    outputs = yaml.safe_load((REPO / "profiles" / "profiles.yml").read_text())["lakemirror"][
        "outputs"]
    assert {name: output["server_side_parameters"][ENGINE_MARK] for name, output in outputs.items()
            if ENGINE_MARK in output.get("server_side_parameters", {})} == {
        "embedded": "embedded", "spark": "spark", "connect": "connect"}
    assert embedded_engine(outputs["connect"]["server_side_parameters"]) is None
    assert embedded_engine({"spark.remote": "sc://engine:7/;token=x", ENGINE_MARK: "embedded"}
                           ) == EngineAddress("engine", 7)


def test_a_run_waits_for_a_table_another_run_holds_then_names_it(zone, tmp_path):
    zone.table("T", ["id"])
    with table_locks(warehouse_storage(tmp_path / "wh"), ["dbo.t"], timeout=0, progress=print):
        result = run_cli("ingest", "--landing-zone", str(zone.root),
                         "--warehouse", str(tmp_path / "wh"), "--lock-timeout", "0.5",
                         "--project-dir", str(copy_project(tmp_path / "project")))
    assert result.exit_code == 2, result.output
    assert "waiting for dbo.t" in result.output
    assert "[table dbo.t] another lakemirror run is still working on this table" in result.output


def test_an_unknown_table_is_a_usage_error(zone, tmp_path):
    zone.table("T", ["id"])
    result = run_cli("ingest", "--landing-zone", str(zone.root), "--warehouse",
                     str(tmp_path / "wh"), "--table", "sales.nope",
                     "--project-dir", str(copy_project(tmp_path / "project")))
    assert result.exit_code == 2 and "no table sales.nope" in result.output
    assert "one of: dbo.t" in result.output


@pytest.mark.slow
@pytest.mark.parametrize("kill_after", [1.5, 8.0])  # staging; dbt (random moments: test_object_faults)
def test_killed_run_then_rerun_gives_exactly_the_reference(zone, tmp_path, kill_after):
    """SIGKILL an incremental `lakemirror run` at some moment (ingest, dbt parse, MERGE...)."""
    zone.table("T", ["id"])
    files = [[{"id": i % 300, "v": f"{n}-{i}", M: [0, 1, 2, 4][(i + n) % 4]} for i in range(2_000)]
             for n in range(6)]
    project = copy_project(tmp_path / "project")
    env = {**os.environ, "LAKEMIRROR_HOME": str(tmp_path / "home"),
           "LAKEMIRROR_LANDING_ZONE": str(zone.root), "LAKEMIRROR_WAREHOUSE": str(tmp_path / "wh"),
           "LAKEMIRROR_PROJECT_DIR": str(project)}
    command = [str(BIN / "lakemirror"), "run"]
    for sequence, rows in enumerate(files[:3], 1):
        zone.write("T", sequence, rows, SCHEMA)
    first = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0 and "Completed successfully" in first.stderr + first.stdout
    assert "\x1b[" not in first.stderr + first.stdout  # dbt's log is plain text into a pipe
    for sequence, rows in enumerate(files[3:], 4):
        zone.write("T", sequence, rows, SCHEMA)
    victim = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        victim.wait(timeout=kill_after)
    except subprocess.TimeoutExpired:
        victim.kill()
        victim.wait()
    rerun = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    expected = [{k: v for k, v in row.items() if k != M} for row in apply_changes(files, ["id"])]
    assert mirrored_rows(tmp_path / "wh", "dbo", "t") == as_multiset(expected)


def test_status_of_a_folder_no_run_wrote_is_a_configuration_error(tmp_path):
    result = CliRunner().invoke(cli, ["status", "--warehouse", str(tmp_path / "wh")])
    assert result.exit_code == 2 and "is not a lakemirror warehouse" in result.output


@pytest.mark.slow
def test_status_counts_files_staged_but_not_yet_applied(zone, tmp_path):
    zone.table("T", ["id"])
    for sequence in (1, 2):
        zone.write("T", sequence, [{"id": sequence, "v": "a", M: 0}], SCHEMA)
    env = {"LAKEMIRROR_LANDING_ZONE": str(zone.root), "LAKEMIRROR_WAREHOUSE": str(tmp_path / "wh"),
           "LAKEMIRROR_PROJECT_DIR": str(copy_project(tmp_path / "project"))}

    def recorded():
        shown = run_cli("status", "--json", "--warehouse", str(tmp_path / "wh"))
        [table] = json.loads(shown.output)["tables"]
        return (table["last_sequence_staged"], table["last_sequence_applied"], table["rows"],
                table["files_pending"])

    assert run_cli("ingest", env=env).exit_code == 0
    assert recorded() == (2, 0, None, 2)  # staged by ingest, for a dbt build to apply
    assert "last_sequence_staged" in run_cli("status", "--warehouse", str(tmp_path / "wh")).output
    assert run_cli("run", env=env).exit_code == 0
    assert recorded() == (2, 2, 2, 0)


STATUS_THEN_MODULES = """
import sys
from lakemirror.cli.main import cli
try:
    cli(["status", "--warehouse", sys.argv[1]])
except SystemExit:
    pass
print(sorted({name.split(".")[0] for name in sys.modules} & {"pysail", "pyspark", "dbt"}),
      sorted(name for name in sys.modules if name.startswith("lakemirror.staging.ingest")
             or name.startswith("lakemirror.landing.changes")))
"""


def test_status_reads_the_monitor_without_the_run_machinery(tmp_path):
    """`lakemirror status` starts fast: it loads neither the engine, dbt, nor the ingest code."""
    from lakemirror import monitor
    from lakemirror.staging.layout import Warehouse

    record = monitor.TableMonitor(
        schema="dbo", table="t", status="replicating", last_sequence_staged=3,
        last_sequence_applied=3, rows=7,
        files_pending=0, processed_rows=9, processed_bytes=99, last_sync=None, error=None,
        error_class=None, warnings=())
    monitor.write_monitor(Warehouse(tmp_path / "wh"), [record])
    shown = subprocess.run([sys.executable, "-c", STATUS_THEN_MODULES, str(tmp_path / "wh")],
                           capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    assert "dbo" in shown.stdout and "replicating" in shown.stdout
    assert shown.stdout.strip().splitlines()[-1] == "[] []"


IDLE_RUN_THEN_MODULES = """
import sys
from lakemirror.cli.main import cli
try:
    cli(["run", "--json"])
except SystemExit as stopped:
    assert not stopped.code, stopped.code
print(sorted({name.split(".")[0] for name in sys.modules} & {"pysail", "pyspark", "dbt", "pandas"}
             | {name for name in sys.modules if name == "pyarrow.dataset"}))
"""


@pytest.mark.slow
def test_an_idle_run_over_tables_with_deletion_vectors_loads_no_dbt_engine_or_pandas(
        zone, tmp_path):
    """With nothing new, a run counts the rows of tables with deletion vectors (the default)
    from their Delta log: it needs neither dbt, the engine, pandas nor pyarrow.dataset."""
    zone.table("T", ["id"])
    zone.write("T", 1, [{"id": i, "v": "a", M: 0} for i in range(1, 4)], SCHEMA)
    zone.write("T", 2, [{"id": 2, "v": None, M: 2}], SCHEMA)
    env = {**os.environ, "LAKEMIRROR_LANDING_ZONE": str(zone.root),
           "LAKEMIRROR_WAREHOUSE": str(tmp_path / "wh"),
           "LAKEMIRROR_PROJECT_DIR": str(copy_project(tmp_path / "project"))}
    assert run_cli("run", env=env).exit_code == 0
    zone.write("T", 3, [{"id": 3, "v": None, M: 2}], SCHEMA)  # a MERGE: a deletion vector
    assert run_cli("run", env=env).exit_code == 0
    table = DeltaTable(str(tmp_path / "wh/dbo/t"))
    assert "deletionVectors" in (table.protocol().reader_features or ())
    assert int(table.history(1)[0]["operationMetrics"]["numTargetDeletionVectorsAdded"]) == 1

    idle = subprocess.run([sys.executable, "-c", IDLE_RUN_THEN_MODULES], env=env,
                          capture_output=True, text=True, timeout=120)
    assert idle.returncode == 0, idle.stderr
    [table_status] = json.loads(idle.stdout[:idle.stdout.rindex("}") + 1])["tables"]
    assert table_status["rows"] == 1  # three inserted, two deleted
    assert idle.stdout.strip().splitlines()[-1] == "[]"
