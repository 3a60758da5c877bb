"""The contract an orchestrator reads: with `--json` every command prints exactly one JSON
document on stdout, whatever happens (its answer, or an `error` object when it is refused,
misconfigured or fails), and its exit code is the documented one (errors.ExitCode: 0 healthy,
1 failed, 2 configuration or usage, 3 refused to protect the data)."""

import json
import os
import shutil
import subprocess

import pyarrow as pa
import pytest
from click.testing import CliRunner

from lakemirror.cli.main import cli
from lakemirror.errors import ExitCode
from lakemirror.reference import ROW_MARKER as M

from conftest import Zone, copy_project
from test_orchestration import load_example
from test_packaging import BIN

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), (M, pa.int32())])
FOLDERS = ("Customers", "Sales.schema/Orders", "Extra")
ERROR_FIELDS = {"kind", "message", "fix", "table", "file"}
UNSET = {"LAKEMIRROR_WAREHOUSE": None, "LAKEMIRROR_LANDING_ZONE": None,
         "LAKEMIRROR_PROJECT_DIR": None}
# Every command that takes --json, with what it needs besides the warehouse.
COMMANDS = {"run": ("--landing-zone", "zone"), "ingest": ("--landing-zone", "zone"),
            "status": (), "maintain": (), "inspect": (), "doctor": ("--readers", "delta-rs")}


def invoke(*args, env=None):
    return CliRunner().invoke(cli, list(args), env={**UNSET, **(env or {})})


def one_document(stdout):
    """stdout holds exactly one JSON document (json.loads refuses anything around it)."""
    return json.loads(stdout)


def error_of(result, code):
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
    document = one_document(result.stdout)
    assert set(document) == {"error"} and set(document["error"]) == ERROR_FIELDS, document
    assert result.stderr.startswith("error: "), result.stderr  # and one line for people
    return document["error"]


def command_line(command, tmp_path, *extra):
    given = [str(tmp_path / value) if value == "zone" else value
             for value in COMMANDS[command]]
    project = ("--project-dir", str(tmp_path / "project")) if command in ("run", "ingest") else ()
    return [command, "--json", *given, *project, *extra]


@pytest.fixture
def project(tmp_path):
    (tmp_path / "zone").mkdir()
    return copy_project(tmp_path / "project")


@pytest.mark.parametrize("command", COMMANDS)
def test_a_missing_warehouse_is_a_configuration_error_document(command, tmp_path, project):
    error = error_of(invoke(*command_line(command, tmp_path)), ExitCode.CONFIG)
    assert "warehouse" in error["message"].lower() and error["fix"], error


@pytest.mark.parametrize("command", COMMANDS)
def test_a_bad_option_is_a_usage_error_document(command, tmp_path, project):
    result = invoke(*command_line(command, tmp_path, "--warehouse", str(tmp_path / "wh"),
                                  "--no-such-option"))
    error = error_of(result, ExitCode.CONFIG)
    assert error["kind"] == "UsageError" and "--no-such-option" in error["message"], error
    assert error["fix"] == f"see `cli {command} --help`", error


def test_a_command_line_refused_before_any_command_is_a_usage_error_document():
    for args in (["--no-such-option", "status", "--json"], ["no-such-command", "--json"],
                 ["status", "--json", "--history", "x"]):
        error = error_of(invoke(*args), ExitCode.CONFIG)
        assert error["kind"] == "UsageError", (args, error)
    plain = invoke("no-such-command")  # without --json: click's usage message, as before
    assert plain.exit_code == 2 and plain.stdout == "" and "No such command" in plain.stderr


def test_a_bad_setting_is_a_configuration_error_document(tmp_path):
    result = invoke("status", "--json", "--warehouse", str(tmp_path),
                    env={"LAKEMIRROR_MAINTENANCE_HOURS": "often"})
    error = error_of(result, ExitCode.CONFIG)
    assert error["kind"] == "ConfigError" and "LAKEMIRROR_MAINTENANCE_HOURS" in error["message"]


def test_a_path_that_is_no_warehouse_is_a_configuration_error_document(tmp_path):
    for command in ("status", "inspect"):
        result = invoke(command, "--json", "--warehouse", str(tmp_path / "no-such-folder"))
        assert error_of(result, ExitCode.CONFIG)["kind"] == "ConfigError", command


def test_an_unexpected_error_is_a_document_too(tmp_path, monkeypatch):
    from lakemirror.cli import inspect

    def broken(*args, **kwargs):
        raise KeyError("oops")

    monkeypatch.setattr(inspect, "table_logs", broken)
    error = error_of(invoke("inspect", "--json", "--warehouse", str(tmp_path)), ExitCode.FAILED)
    assert error["kind"] == "UnexpectedError" and "KeyError: 'oops'" in error["message"]
    assert "--debug" in error["fix"]


def test_refusals_to_protect_the_data_exit_3_with_their_reason(tmp_path, project):
    zone = Zone(tmp_path / "zone")
    for folder in FOLDERS:
        zone.table(folder, ["id"])
        zone.write(folder, 1, [{"id": 1, "v": "a", M: 0}], SCHEMA)
    warehouse = ("--warehouse", str(tmp_path / "wh"))
    ingested = invoke(*command_line("ingest", tmp_path, *warehouse))
    assert ingested.exit_code == ExitCode.HEALTHY, ingested.output
    assert set(one_document(ingested.stdout)) == {"tables", "models", "warnings"}
    for command in ("status", "maintain", "inspect", "doctor"):  # their answers, as JSON
        answered = invoke(*command_line(command, tmp_path, *warehouse))
        assert answered.exit_code == ExitCode.HEALTHY, (command, answered.output)
        one_document(answered.stdout)

    wrong = str(zone.root / "Sales.schema")
    for command in ("run", "ingest"):
        result = invoke(command, "--json", "--landing-zone", wrong, *warehouse,
                        "--project-dir", str(project))
        error = error_of(result, ExitCode.REFUSED)
        assert error["kind"] == "ZoneBindingError", error
        assert "is a folder inside the bound zone" in error["message"]
        assert "--rebind-landing-zone" in error["fix"]
    # The installed command too: one document on stdout and nothing else (it printed nothing
    # and exited 1 before).
    done = subprocess.run([str(BIN / "lakemirror"), "run", "--json", "--landing-zone", wrong,
                           *warehouse, "--project-dir", str(project)],
                          capture_output=True, text=True, env={**os.environ, **{
                              "LAKEMIRROR_HOME": str(tmp_path / "home")}}, check=False)
    assert done.returncode == ExitCode.REFUSED, done.stderr
    assert one_document(done.stdout)["error"]["kind"] == "ZoneBindingError"

    shutil.rmtree(zone.root / "Customers")
    shutil.rmtree(zone.root / "Sales.schema")
    for command in ("run", "ingest"):
        error = error_of(invoke(*command_line(command, tmp_path, *warehouse)),
                         ExitCode.REFUSED)
        assert error["kind"] == "MassDropError" and "--confirm-drops" in error["fix"], error


def test_the_airflow_examples_job_reads_each_exit_code(tmp_path, project, monkeypatch):
    """docs/pages/examples/airflow_dag.py's `outcome`, given real invocations' outputs."""
    example = load_example()
    zone = Zone(tmp_path / "zone")
    zone.table("Customers", ["id"])
    zone.write("Customers", 1, [{"id": 1, "v": "a", M: 0}], SCHEMA)
    warehouse = ("--warehouse", str(tmp_path / "wh"))

    missing = invoke(*command_line("run", tmp_path))
    with pytest.raises(example.MirrorMisconfigured, match="exited with 2: UsageError: .*"
                                                          "--warehouse"):
        example.outcome(missing.exit_code, missing.stdout)
    healthy = invoke(*command_line("ingest", tmp_path, *warehouse))
    status = example.outcome(healthy.exit_code, healthy.stdout)
    assert status["exit_code"] == 0 and status["tables"][0]["table"] == "customers"
    example.check(status)
    wrong = invoke("run", "--json", "--landing-zone", str(tmp_path), *warehouse,
                   "--project-dir", str(project))
    with pytest.raises(example.MirrorRefused, match="exited with 3: ZoneBindingError: .*Fix: "
                                                    "pass --landing-zone"):
        example.outcome(wrong.exit_code, wrong.stdout)

    from lakemirror.service import MirrorService

    def broken(*args, **kwargs):
        raise KeyError("oops")

    monkeypatch.setattr(MirrorService, "run", broken)
    failed = invoke(*command_line("run", tmp_path, *warehouse))
    with pytest.raises(example.MirrorFailed, match="exited with 1: UnexpectedError: .*oops"):
        example.outcome(failed.exit_code, failed.stdout)
    with pytest.raises(example.MirrorFailed, match="exited with -9: Killed"):
        example.outcome(-9, "", "Killed")  # no document from a killed process
