"""Landing-zone and warehouse locations: every URL form the ecosystem writes parses to the same
container or bucket and key prefix that obstore then opens, and every malformed one is refused
with the fix, without any network."""

from __future__ import annotations


import pytest

from lakemirror.errors import ConfigError
from lakemirror.storage import ObjectLocation, open_store, parse_location
from lakemirror.storage.location import split_options

WS = "6f0b2c2e-1b2d-4c3a-9e8f-0a1b2c3d4e5f"
ITEM = "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d"
ONELAKE = "https://onelake.dfs.fabric.microsoft.com"
FABRIC = {"account_name": "onelake", "use_fabric_endpoint": "true"}


@pytest.mark.parametrize("text, store_url, bucket, prefix, url_options", [
    # OneLake as the open-mirroring contract writes it, by GUIDs and by names with their type
    (f"{ONELAKE}/{WS}/{ITEM}/Files/LandingZone", f"{ONELAKE}/{WS}", WS,
     f"{ITEM}/Files/LandingZone", FABRIC),
    (f"{ONELAKE}/Sales/Orders.MirroredDatabase/Files/LandingZone/", f"{ONELAKE}/Sales", "Sales",
     "Orders.MirroredDatabase/Files/LandingZone", FABRIC),
    (f"{ONELAKE}/My%20Workspace/My Mirror.MirroredDatabase/Files/LandingZone",
     f"{ONELAKE}/My%20Workspace", "My Workspace", "My Mirror.MirroredDatabase/Files/LandingZone",
     FABRIC),
    ("https://onelake.blob.fabric.microsoft.com/Sales/Lake.Lakehouse/Files/LandingZone",
     f"{ONELAKE}/Sales", "Sales", "Lake.Lakehouse/Files/LandingZone", FABRIC),
    (f"abfss://{WS}@onelake.dfs.fabric.microsoft.com/{ITEM}/Files/LandingZone",
     f"{ONELAKE}/{WS}", WS, f"{ITEM}/Files/LandingZone", FABRIC),
    ("abfss://Sales@onelake.dfs.fabric.microsoft.com/Lake.Lakehouse/Files/LandingZone",
     f"{ONELAKE}/Sales", "Sales", "Lake.Lakehouse/Files/LandingZone", FABRIC),
    # ADLS Gen2 and Blob storage
    ("abfss://landing@myaccount.dfs.core.windows.net/erp/LandingZone",
     "abfss://landing@myaccount.dfs.core.windows.net", "landing", "erp/LandingZone",
     {"account_name": "myaccount"}),
    ("abfs://landing@myaccount.blob.core.windows.net/zone",
     "abfss://landing@myaccount.dfs.core.windows.net", "landing", "zone",
     {"account_name": "myaccount"}),
    ("https://myaccount.blob.core.windows.net/landing/erp/zone",
     "abfss://landing@myaccount.dfs.core.windows.net", "landing", "erp/zone",
     {"account_name": "myaccount"}),
    ("az://landing/erp/zone", "az://landing", "landing", "erp/zone", {}),
    ("azure://landing/zone", "az://landing", "landing", "zone", {}),
    # S3 (any S3-compatible endpoint) and GCS
    ("s3://my-bucket/mirror/LandingZone", "s3://my-bucket", "my-bucket", "mirror/LandingZone", {}),
    ("s3a://my-bucket/zone/", "s3://my-bucket", "my-bucket", "zone", {}),
    ("s3://my-bucket", "s3://my-bucket", "my-bucket", "", {}),
    ("gs://my-bucket/a/b%20c", "gs://my-bucket", "my-bucket", "a/b c", {}),
])
def test_each_url_form_parses_to_its_store_and_prefix(text, store_url, bucket, prefix,
                                                      url_options):
    location = parse_location(text, {})
    assert isinstance(location, ObjectLocation)
    assert (location.store_url, location.bucket, location.prefix) == (store_url, bucket, prefix)
    assert dict(location.options) == url_options
    assert parse_location(location.url, {}) == location  # the canonical URL means the same
    assert {location: 1}[parse_location(location.url, {"region": "x"})] == 1


def test_a_local_path_stays_a_path_made_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert parse_location("LandingZone") == tmp_path / "LandingZone"
    assert parse_location(str(tmp_path / "zone")) == tmp_path / "zone"
    assert parse_location(f"file://{tmp_path}/my%20zone") == tmp_path / "my zone"
    assert parse_location("s3:not-a-url") == tmp_path / "s3:not-a-url"


@pytest.mark.parametrize("text, message, fix", [
    ("ftp://host/zone", "unknown storage URL scheme 'ftp'", "s3://<bucket>/<prefix>"),
    ("http://myaccount.blob.core.windows.net/c/zone", "not a OneLake or Azure Storage https URL",
     "storage option endpoint"),
    ("https://example.com/zone", "not a OneLake or Azure Storage https URL", "az://"),
    ("file://server/share/zone", "is not a local folder's file:// URL", "plain absolute path"),
    ("s3:///zone", "names no container or bucket", "s3://<bucket>/<prefix>"),
    ("https://myaccount.blob.core.windows.net/", "names no container", "https://myaccount"),
    ("s3://my-bucket/zone/../other", "path segment '..'", "without '.', '..'"),
    ("s3://my-bucket/zone/./x", "path segment '.'", "without"),
    ("s3://my-bucket/zone//x", "path segment ''", "'//'"),
    ("gs://my-bucket/a%2Fb", "path segment 'a/b'", "'%2F'"),
    ("az://landing/a\\b", "path segment 'a\\\\b'", "backslashes"),
    ("s3://My_Bucket!/zone", "is not a valid container or bucket name", "lowercase"),
    ("s3://my-bucket/zone#x", "'#' fragment", "remove it"),
    ("abfss://landing@example.com/zone", "is not an Azure Storage or OneLake host",
     "abfss://<container>@<account>.dfs.core.windows.net"),
    (f"{ONELAKE}/Sales", "names no workspace and item", "/<workspace>/<item>/Files/LandingZone"),
    (f"{ONELAKE}/Sales/Orders/Files/LandingZone", "item 'Orders' lacks its type",
     "Orders.MirroredDatabase"),
    (f"{ONELAKE}/Sales/{ITEM}/Files/LandingZone",
     "gives the item by GUID but the workspace by name", "give both by GUID"),
    ("s3://my-bucket/zone?versionId=3", "query string that is not an Azure SAS token",
     "storage options"),
])
def test_a_malformed_url_is_refused_with_the_fix(text, message, fix):
    with pytest.raises(ConfigError) as raised:
        parse_location(text, {})
    assert message in raised.value.message
    assert fix in (raised.value.hint or "")
    assert raised.value.exit_code == 2


def test_a_sas_token_in_the_url_becomes_an_option_and_never_shows():
    text = ("https://myaccount.blob.core.windows.net/landing/zone"
            "?sv=2022-11-02&sp=rl&sig=SENTINEL%2Bsig%3D&se=2030-01-01")
    location = parse_location(text, {})
    assert isinstance(location, ObjectLocation)
    assert location.options["sas_key"] == text.split("?", 1)[1]
    for shown in (repr(location), str(location), location.url):
        assert "SENTINEL" not in shown and "sig" not in shown
    with pytest.raises(ConfigError) as raised:
        parse_location(text.replace("sv=", "sv=x&extra="), {})
    assert "SENTINEL" not in str(raised.value)


@pytest.mark.parametrize("text", ["s3://AKIASENTINEL:SENTINEL-secret@my-bucket/zone",
                                  "gs://my-bucket/zone?X-Goog-Signature=SENTINEL-secret"])
def test_credentials_in_a_url_are_refused_without_showing_them(text):
    with pytest.raises(ConfigError) as raised:
        parse_location(text, {})
    assert "SENTINEL" not in str(raised.value)
    assert "storage options" in (raised.value.hint or "")


def test_options_never_show_in_repr_or_str():
    location = parse_location("s3://my-bucket/zone", {"secret_access_key": "SENTINEL-secret"})
    assert "SENTINEL" not in repr(location) + str(location) + repr([location])


def test_options_split_into_store_config_client_options_and_retries():
    config, client, retry = split_options({
        "aws_endpoint": "http://127.0.0.1:9000", "AWS_ALLOW_HTTP": "true", "timeout": "30s",
        "max_retries": "2", "retry_timeout": "15", "region": "eu-west-1"})
    assert config == {"aws_endpoint": "http://127.0.0.1:9000", "region": "eu-west-1"}
    assert client == {"allow_http": "true", "timeout": "30s", "connect_timeout": "10s"}
    assert retry["max_retries"] == 2 and retry["retry_timeout"].total_seconds() == 15
    with pytest.raises(ConfigError, match="max_retries='two' is not a whole number"):
        split_options({"max_retries": "two"})


@pytest.mark.parametrize("text, options, shown", [
    (f"{ONELAKE}/My%20Workspace/My Mirror.MirroredDatabase/Files/LandingZone", {},
     'AzureStore(container_name="My Workspace", account_name="onelake", '
     'prefix="My Mirror.MirroredDatabase/Files/LandingZone")'),
    ("az://landing/zone", {"account_name": "acct"},
     'AzureStore(container_name="landing", account_name="acct", prefix="zone")'),
    ("s3://my-bucket/zone", {"aws_endpoint": "http://127.0.0.1:1", "allow_http": "true"},
     'S3Store(bucket="my-bucket", prefix="zone")'),
    ("gs://my-bucket", {}, 'GCSStore(bucket="my-bucket")'),
])
def test_open_store_roots_the_store_at_the_prefix(text, options, shown):
    assert repr(open_store(parse_location(text, options))) == shown


def test_an_unknown_storage_option_is_refused_with_its_name_and_not_its_value():
    location = parse_location("s3://my-bucket/zone", {"secret_acess_key": "SENTINEL-secret"})
    with pytest.raises(ConfigError) as raised:
        open_store(location)
    assert "'secret_acess_key' is not valid" in str(raised.value)
    assert "SENTINEL" not in str(raised.value)
    assert "storage options' names" in (raised.value.hint or "")
