"""A landing zone or warehouse in a bucket or container that does not exist is a configuration
error (exit code 2) naming the URL and the fix, on S3 (moto) and Azure (Azurite), never an
'unexpected error ... report it'."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from lakemirror.cli.main import cli
from lakemirror.environment import STORAGE_OPTIONS, STORAGE_OPTIONS_FILE

from conftest import copy_project


@pytest.fixture
def invoke(tmp_path, object_store_server):
    copy_project(tmp_path / "project")
    env = {"LAKEMIRROR_HOME": str(tmp_path / "home"), STORAGE_OPTIONS_FILE: None,
           STORAGE_OPTIONS: json.dumps(dict(object_store_server.options)),
           **object_store_server.environment}
    return lambda *args: CliRunner().invoke(cli, list(args), env=env)


@pytest.fixture
def missing(object_store_server):
    return f"{object_store_server.scheme}://no-such-bucket/mirror"


def assert_configuration_error(result, url, setting):
    assert result.exit_code == 2, result.output
    assert url in result.output and "does not exist" in result.output, result.output
    assert "create the bucket or container" in result.output and setting in result.output
    assert "unexpected" not in result.output and "report it" not in result.output


@pytest.mark.parametrize("command", ["ingest", "run"])
def test_a_missing_bucket_as_landing_zone(tmp_path, invoke, missing, command):
    result = invoke(command, "--landing-zone", missing, "--warehouse", str(tmp_path / "wh"),
                    "--project-dir", str(tmp_path / "project"))
    assert_configuration_error(result, missing, "LAKEMIRROR_LANDING_ZONE")


@pytest.mark.parametrize("command", ["ingest", "run"])
def test_a_missing_bucket_as_warehouse(tmp_path, invoke, missing, command):
    (tmp_path / "zone").mkdir()
    result = invoke(command, "--landing-zone", str(tmp_path / "zone"), "--warehouse", missing,
                    "--project-dir", str(tmp_path / "project"))
    assert_configuration_error(result, missing, "LAKEMIRROR_WAREHOUSE")


def test_status_of_a_warehouse_in_a_missing_bucket(invoke, missing):
    assert_configuration_error(invoke("status", "--warehouse", missing), missing,
                               "LAKEMIRROR_WAREHOUSE")
