"""The environment is read in one place (lakemirror.environment), once, at the edge: a bad value
stops the command with exit code 2 naming the variable, and lower layers never read it."""

import dataclasses
import os
import re
from pathlib import Path

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
    read_settings,
)

PACKAGE = Path(__file__).resolve().parents[2] / "python" / "lakemirror"
READS_ENVIRONMENT = re.compile(r"os\.environ|\bgetenv\(|environ\.get\(")
SETTINGS_MODULE = Path("environment.py")
# Files that still read the environment themselves, each with why.
EXCEPTIONS = {
    Path("storage/options.py"): "LAKEMIRROR_STORAGE_OPTIONS(_FILE) are read when a location is "
                                "parsed without options (parse_location, by every caller)",
    Path("storage/location.py"): "the cloud SDKs' client variables (AWS_*, AZURE_*, GOOGLE_*) "
                                 "obstore would read itself, passed on with a store's options",
    Path("storage/hadoop.py"): "AZURE_STORAGE_ACCOUNT_NAME, the account of an abfss URL "
                               "given without one",
    Path("storage/engine_settings.py"): "the emulators' endpoints (AZURITE_*) handed on to "
                                        "an engine process",
}


def environment_readers() -> set[Path]:
    return {path.relative_to(PACKAGE) for path in PACKAGE.rglob("*.py")
            if READS_ENVIRONMENT.search(path.read_text(encoding="utf-8"))}


def test_only_the_settings_module_reads_the_environment():
    assert environment_readers() - {SETTINGS_MODULE} - EXCEPTIONS.keys() == set()


def test_every_exception_still_reads_the_environment():
    """An exception that no longer reads it must leave the list."""
    assert EXCEPTIONS.keys() <= environment_readers()


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
    result = CliRunner().invoke(cli, ["--debug", "status", "--warehouse", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert dict(os.environ) == before
