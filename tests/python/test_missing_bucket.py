"""A landing zone or warehouse in a bucket or container that does not exist is a configuration
error (exit code 2) naming the bucket or container, the URL and the fix (the command that
creates it), on S3 (moto) and Azure (Azurite), before anything is written; never an
'unexpected error ... report it'."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from click.testing import CliRunner

from lakemirror.cli.main import cli
from lakemirror.environment import STORAGE_OPTIONS, STORAGE_OPTIONS_FILE
from lakemirror.errors import ConfigError
from lakemirror.storage.missing_bucket import missing_bucket_error

from conftest import Zone, copy_project


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
    """Exit code 2 naming the bucket (moto) or container (Azurite), the URL and the fix."""
    assert result.exit_code == 2, result.output
    noun = "container" if url.startswith("az://") else "bucket"
    assert f"{noun} no-such-bucket does not exist" in result.output, result.output
    assert url in result.output, result.output
    command = "az storage container create --name no-such-bucket" if noun == "container" \
        else "aws s3 mb s3://no-such-bucket"
    assert f"create the {noun} (e.g. `{command}" in result.output, result.output
    assert setting in result.output, result.output
    assert "unexpected" not in result.output and "report it" not in result.output


@pytest.mark.parametrize(("url", "noun", "name", "command"), [
    ("s3://raw/zone", "bucket", "raw", "aws s3 mb s3://raw"),
    ("gs://raw/zone", "bucket", "raw", "gcloud storage buckets create gs://raw"),
    ("az://raw/zone", "container", "raw", "az storage container create --name raw"),
    ("abfss://raw@acct.dfs.core.windows.net/zone", "container", "raw",
     "az storage container create --name raw --account-name acct"),
    ("https://onelake.dfs.fabric.microsoft.com/My%20Space/Lake.Lakehouse/Files", "workspace",
     "My Space", "in Microsoft Fabric"),
])
def test_the_error_names_the_bucket_or_container_and_how_to_create_it(url, noun, name, command):
    error = missing_bucket_error(url, "landing zone")
    assert isinstance(error, ConfigError) and error.exit_code == 2
    assert (error.noun, error.bucket, error.url, error.role) == (noun, name, url, "landing zone")
    assert error.message == f"{noun} {name} does not exist (the landing zone {url})"
    assert command in error.hint and "LAKEMIRROR_LANDING_ZONE" in error.hint


@pytest.mark.parametrize("command", ["ingest", "run"])
def test_a_missing_bucket_as_landing_zone(tmp_path, invoke, missing, command):
    result = invoke(command, "--landing-zone", missing, "--warehouse", str(tmp_path / "wh"),
                    "--project-dir", str(tmp_path / "project"))
    assert_configuration_error(result, missing, "LAKEMIRROR_LANDING_ZONE")
    assert not (tmp_path / "wh").exists()  # nothing written


@pytest.mark.parametrize("command", ["ingest", "run"])
def test_a_missing_bucket_as_warehouse(tmp_path, invoke, missing, command):
    zone = Zone(tmp_path / "zone")
    zone.table("Customers", ["id"])
    zone.write("Customers", 1, [{"id": 1}], pa.schema([("id", pa.int64())]))
    published = files_under(tmp_path / "zone")
    result = invoke(command, "--landing-zone", str(tmp_path / "zone"), "--warehouse", missing,
                    "--project-dir", str(tmp_path / "project"))
    assert_configuration_error(result, missing, "LAKEMIRROR_WAREHOUSE")
    assert files_under(tmp_path / "zone") == published  # nothing written, nothing moved
    assert not (tmp_path / "project/models/mirror").exists()


def files_under(folder):
    return sorted(path.relative_to(folder) for path in folder.rglob("*"))


@pytest.mark.parametrize("command", [["status"], ["inspect"], ["maintain"], ["doctor"],
                                     ["restore"], ["restore", "dbo.customers"],
                                     ["engine", "start"]])
def test_commands_on_a_warehouse_in_a_missing_bucket(invoke, missing, command):
    assert_configuration_error(invoke(*command, "--warehouse", missing), missing,
                               "LAKEMIRROR_WAREHOUSE")


def test_the_json_error_document_names_its_kind(invoke, missing):
    error = json.loads(invoke("status", "--json", "--warehouse", missing).stdout)["error"]
    assert error["kind"] == "MissingBucketError" and missing in error["message"], error
