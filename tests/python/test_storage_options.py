"""Storage credentials and settings: the standard environment variables of object_store reach
the store, LAKEMIRROR_STORAGE_OPTIONS and its settings file add options (scoped by URL where
a zone and a warehouse need different ones), all read once into the settings, and a mistake in
them is an error naming the fix that never quotes a credential."""

from __future__ import annotations

import json

import obstore
import pytest

from lakemirror.environment import STORAGE_OPTIONS as OPTIONS_VARIABLE
from lakemirror.environment import STORAGE_OPTIONS_FILE as OPTIONS_FILE_VARIABLE
from lakemirror.environment import read_settings
from lakemirror.errors import ConfigError
from lakemirror.storage import configured_options, open_store, parse_location

# What each server's options are as object_store's standard environment variables.
STANDARD_VARIABLES = {
    "s3": {"endpoint": "AWS_ENDPOINT", "allow_http": "AWS_ALLOW_HTTP", "region": "AWS_REGION",
           "access_key_id": "AWS_ACCESS_KEY_ID", "secret_access_key": "AWS_SECRET_ACCESS_KEY",
           "conditional_put": "AWS_CONDITIONAL_PUT",
           "copy_if_not_exists": "AWS_COPY_IF_NOT_EXISTS"},
    "azurite": {"use_emulator": "AZURE_STORAGE_USE_EMULATOR",
                "account_name": "AZURE_STORAGE_ACCOUNT_NAME",
                "account_key": "AZURE_STORAGE_ACCOUNT_KEY"},
}


@pytest.fixture
def no_configured_options(monkeypatch):
    monkeypatch.delenv(OPTIONS_VARIABLE, raising=False)
    monkeypatch.delenv(OPTIONS_FILE_VARIABLE, raising=False)


def round_trip(location) -> bytes:
    store = open_store(location)
    obstore.put(store, "T/_metadata.json", b'{"keyColumns": []}')
    assert [item["path"] for batch in obstore.list(store) for item in batch] == ["T/_metadata.json"]
    return obstore.get(store, "T/_metadata.json").bytes().to_bytes()


def test_the_standard_environment_variables_reach_the_store(object_store_server, monkeypatch,
                                                            no_configured_options):
    for option, variable in STANDARD_VARIABLES[object_store_server.kind].items():
        monkeypatch.setenv(variable, object_store_server.options[option])
    location = parse_location(object_store_server.url(object_store_server.fresh_prefix()),
                              storage=read_settings().storage)
    assert "account_key" not in location.options and "secret_access_key" not in location.options
    assert round_trip(location) == b'{"keyColumns": []}'


def test_options_from_the_variable_and_the_file_reach_the_store(object_store_server, tmp_path,
                                                                no_configured_options):
    """Given in the environment `read_settings` reads, not this process's."""
    options = dict(object_store_server.options)
    secret = "account_key" if "account_key" in options else "secret_access_key"
    settings = tmp_path / "storage.json"
    settings.write_text(json.dumps({secret: options.pop(secret)}))
    storage = read_settings({OPTIONS_FILE_VARIABLE: str(settings),
                             OPTIONS_VARIABLE: json.dumps(options)}).storage
    url = object_store_server.url(object_store_server.fresh_prefix())
    assert round_trip(parse_location(url, storage=storage))


def test_url_scoped_options_apply_under_their_prefix_the_longest_last():
    storage = read_settings({OPTIONS_VARIABLE: json.dumps({
        "region": "eu-west-1", "allow_http": True, "max_retries": 3,
        "s3://zone-bucket": {"aws_profile": "zone", "region": "us-east-2"},
        "s3://zone-bucket/erp": {"aws_profile": "erp"},
        "abfss://landing@acct.dfs.core.windows.net": {"account_key": "k"}})}).storage
    assert configured_options(storage, "s3://zone-bucket/erp/LandingZone") == {
        "region": "us-east-2", "allow_http": "true", "max_retries": "3", "aws_profile": "erp"}
    assert configured_options(storage, "s3://zone-bucket-2/x")["region"] == "eu-west-1"
    azure = parse_location("abfss://landing@acct.dfs.core.windows.net/z", storage=storage)
    assert azure.options["account_key"] == "k"
    assert "account_key" not in parse_location("az://landing/z", storage=storage).options


@pytest.mark.parametrize("value, message, fix", [
    ('{"account_key": "SENTINEL-secret"', "is not valid JSON (line 1, column", "a JSON object"),
    ('["SENTINEL-secret"]', "is not a JSON object", "write e.g."),
    ('{"account_key": ["SENTINEL-secret"]}', "option 'account_key' is not a string",
     "plain value"),
    ('{"s3://b": "SENTINEL-secret"}', "'s3://b' holds no object of options", "with an object"),
])
def test_bad_options_name_the_variable_and_the_fix_but_no_value(value, message, fix):
    with pytest.raises(ConfigError) as raised:
        read_settings({OPTIONS_VARIABLE: value})
    assert str(raised.value).startswith(OPTIONS_VARIABLE)
    assert message in raised.value.message and fix in (raised.value.hint or "")
    assert "SENTINEL" not in str(raised.value)


def test_a_missing_settings_file_names_it(tmp_path):
    with pytest.raises(ConfigError, match="cannot read .*absent.json"):
        read_settings({OPTIONS_FILE_VARIABLE: str(tmp_path / "absent.json")})
