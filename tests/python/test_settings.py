"""The environment is read in one place (lakemirror.environment), once, at the edge: a bad value
stops the command with exit code 2 naming the variable, and lower layers never read it."""

import dataclasses
import json
import os
import re
from pathlib import Path

import obstore
import pytest
from click.testing import CliRunner
from lakemirror.cli.main import cli
from lakemirror.environment import (
    CONNECT_TIMEOUT,
    DEBUG,
    ENGINE_PORT,
    LEASE_SECONDS,
    MAINTENANCE_HOURS,
    MAX_TEXT_BYTES,
    SCHEMA_SUFFIX,
    SETTLE_SECONDS,
    STORAGE_OPTIONS,
    STORAGE_OPTIONS_FILE,
    read_settings,
)
from lakemirror.storage.warehouse import warehouse_location, warehouse_storage

PACKAGE = Path(__file__).resolve().parents[2] / "python" / "lakemirror"
READS_ENVIRONMENT = re.compile(r"os\.environ|\bgetenv\(|environ\.get\(")
SETTINGS_MODULE = Path("environment.py")


def environment_readers() -> set[Path]:
    return {path.relative_to(PACKAGE) for path in PACKAGE.rglob("*.py")
            if READS_ENVIRONMENT.search(path.read_text(encoding="utf-8"))}


def test_only_the_settings_module_reads_the_environment():
    assert environment_readers() == {SETTINGS_MODULE}


def test_storage_settings_given_not_in_the_process_environment_reach_the_store(s3_server,
                                                                               monkeypatch):
    """LAKEMIRROR_STORAGE_OPTIONS and a cloud SDK's client variable (AWS_ALLOW_HTTP: moto
    answers over http, which the store refuses without it) reach the warehouse's store from
    the settings alone."""
    options = {name: value for name, value in s3_server.options.items() if name != "allow_http"}
    for variable in (STORAGE_OPTIONS, STORAGE_OPTIONS_FILE, "AWS_ALLOW_HTTP"):
        monkeypatch.delenv(variable, raising=False)
    settings = read_settings({STORAGE_OPTIONS: json.dumps(options), "AWS_ALLOW_HTTP": "true"})
    prefix = s3_server.fresh_prefix("warehouse")
    root = warehouse_location(s3_server.url(prefix), storage=settings.storage)
    warehouse_storage(root).write_text("_lakemirror/probe.txt", "reached")
    assert obstore.get(s3_server.store(prefix), "_lakemirror/probe.txt").bytes() == b"reached"


@pytest.mark.parametrize(("variable", "value"), [
    (CONNECT_TIMEOUT, "-5"),
    (CONNECT_TIMEOUT, "soon"),
    (SETTLE_SECONDS, "two"),
    (SETTLE_SECONDS, "-1"),
    (LEASE_SECONDS, "inf"),
    (MAINTENANCE_HOURS, "daily"),
    (MAX_TEXT_BYTES, "0"),
    (ENGINE_PORT, "70000"),
    (SCHEMA_SUFFIX, "Sales"),
])
def test_a_bad_value_is_exit_code_2_naming_the_variable(tmp_path, variable, value):
    result = CliRunner().invoke(cli, ["status", "--warehouse", str(tmp_path / "wh")],
                                env={variable: value})
    assert result.exit_code == 2, result.output
    assert variable in result.output and "Fix:" in result.output
    assert not (tmp_path / "wh").exists()


def test_settings_are_read_from_the_environment_given_not_the_process(monkeypatch):
    monkeypatch.setenv(SETTLE_SECONDS, "9")
    waits, settles_at_once = read_settings({SETTLE_SECONDS: "5"}), read_settings({})
    assert (waits.settle_seconds, settles_at_once.settle_seconds) == (5.0, 2.0)
    assert read_settings().settle_seconds == 9.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        waits.settle_seconds = 0.0  # type: ignore[misc]
    assert waits.settle_seconds == 5.0


def test_maintenance_can_be_left_to_the_maintain_command():
    assert read_settings({MAINTENANCE_HOURS: " Never "}).maintenance_hours is None
    assert read_settings({MAINTENANCE_HOURS: "0"}).maintenance_hours == 0.0


def test_debug_leaves_the_process_environment_as_it_was(tmp_path, monkeypatch):
    monkeypatch.delenv(DEBUG, raising=False)
    before = dict(os.environ)
    result = CliRunner().invoke(cli, ["--debug", "inspect", "--warehouse", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert dict(os.environ) == before
