"""A warehouse URL as Apache Spark reaches it: the URL forms of Hadoop's connectors, the
`spark.hadoop.*` settings made from lakemirror's storage options, the refusal, before any
work, of a target that cannot reach it, and a Spark server's errors read as what it lacks to
reach the store. No network, no JVM."""

import pytest

from lakemirror.errors import ConfigError
from lakemirror.storage import parse_location
from lakemirror.environment import read_settings
from lakemirror.storage.hadoop import (
    connector_missing,
    hadoop_settings,
    refuse_unreachable_warehouse,
    server_storage_problem,
    spark_url,
)

MOTO = {"endpoint": "http://127.0.0.1:9000", "allow_http": "true", "region": "us-east-1",
        "access_key_id": "AKIDEXAMPLE", "secret_access_key": "wJalrXUtnFEMIEXAMPLE"}


@pytest.mark.parametrize("url, options, expected", [
    ("s3://lake/wh", MOTO, "s3://lake/wh"),
    ("s3a://lake/a%20b/wh", MOTO, "s3://lake/a%20b/wh"),
    ("abfss://lake@acct.dfs.core.windows.net/mirror", {"account_key": "a2V5"},
     "abfss://lake@acct.dfs.core.windows.net/mirror"),
    ("az://lake/mirror", {"account_name": "acct", "account_key": "a2V5"},
     "abfss://lake@acct.dfs.core.windows.net/mirror"),
    ("https://onelake.dfs.fabric.microsoft.com/Sales/Lake.Lakehouse/Files/wh", {},
     "abfss://Sales@onelake.dfs.fabric.microsoft.com/Lake.Lakehouse/Files/wh"),
    ("gs://lake/wh", {}, "gs://lake/wh"),
])
def test_the_url_spark_takes(url, options, expected):
    assert spark_url(parse_location(url, options)) == expected


def test_an_azure_url_without_its_account_is_refused_naming_the_form():
    with pytest.raises(ConfigError, match="names no storage account") as refused:
        spark_url(parse_location("az://lake/mirror", {}))
    assert "abfss://<container>@<account>.dfs.core.windows.net/<path>" in refused.value.hint


def test_an_azure_url_without_its_account_takes_the_settings_one():
    """AZURE_STORAGE_ACCOUNT_NAME as read at the edge, not from this process's environment."""
    storage = read_settings({"AZURE_STORAGE_ACCOUNT_NAME": "acct"}).storage
    assert spark_url(parse_location("az://lake/mirror", {}, storage=storage)) == (
        "abfss://lake@acct.dfs.core.windows.net/mirror")


def test_s3_options_become_s3a_settings():
    settings = hadoop_settings(parse_location("s3://lake/wh", {**MOTO, "token": "FwoGZX"}))
    assert settings == {
        "spark.hadoop.fs.s3.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
        "spark.hadoop.fs.s3a.access.key": "AKIDEXAMPLE",
        "spark.hadoop.fs.s3a.secret.key": "wJalrXUtnFEMIEXAMPLE",
        "spark.hadoop.fs.s3a.session.token": "FwoGZX",
        "spark.hadoop.fs.s3a.endpoint": "http://127.0.0.1:9000",
        "spark.hadoop.fs.s3a.endpoint.region": "us-east-1",
        "spark.hadoop.fs.s3a.path.style.access": "true",
        "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
        "spark.hadoop.fs.s3a.aws.credentials.provider":
            "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"}


@pytest.mark.parametrize("options, expected", [
    ({"azure_storage_account_key": "a2V5"},
     {"fs.azure.account.key.acct.dfs.core.windows.net": "a2V5"}),
    ({"sas_key": "sv=2024&sig=c2ln"},
     {"fs.azure.account.auth.type.acct.dfs.core.windows.net": "SAS",
      "fs.azure.sas.token.provider.type.acct.dfs.core.windows.net":
          "org.apache.hadoop.fs.azurebfs.sas.FixedSASTokenProvider",
      "fs.azure.sas.fixed.token.acct.dfs.core.windows.net": "sv=2024&sig=c2ln"}),
    ({"client_id": "app", "client_secret": "c2VjcmV0", "tenant_id": "tenant"},
     {"fs.azure.account.auth.type.acct.dfs.core.windows.net": "OAuth",
      "fs.azure.account.oauth.provider.type.acct.dfs.core.windows.net":
          "org.apache.hadoop.fs.azurebfs.oauth2.ClientCredsTokenProvider",
      "fs.azure.account.oauth2.client.id.acct.dfs.core.windows.net": "app",
      "fs.azure.account.oauth2.client.secret.acct.dfs.core.windows.net": "c2VjcmV0",
      "fs.azure.account.oauth2.client.endpoint.acct.dfs.core.windows.net":
          "https://login.microsoftonline.com/tenant/oauth2/token"}),
])
def test_azure_credentials_become_abfs_settings(options, expected, monkeypatch):
    for variable in ("AZURE_STORAGE_ACCOUNT_KEY", "AZURE_CLIENT_ID", "AZURE_STORAGE_SAS_KEY"):
        monkeypatch.delenv(variable, raising=False)
    location = parse_location("abfss://lake@acct.dfs.core.windows.net/mirror", options)
    assert hadoop_settings(location) == {f"spark.hadoop.{name}": value
                                         for name, value in expected.items()}


def test_the_connector_jars_are_looked_for_next_to_deltas(tmp_path):
    location = parse_location("s3://lake/wh", MOTO)
    assert "LAKEMIRROR_DELTA_JARS is not set" in connector_missing(location, None)
    (tmp_path / "hadoop-aws-3.4.1.jar").touch()
    assert "holds no bundle-*.jar" in connector_missing(location, str(tmp_path))
    (tmp_path / "bundle-2.24.6.jar").touch()
    assert connector_missing(location, str(tmp_path)) is None


def test_the_targets_that_cannot_reach_the_warehouse_are_refused(tmp_path):
    location = parse_location("s3://lake/wh", MOTO)
    jars = str(tmp_path)
    with pytest.raises(ConfigError, match=r"holds no hadoop-aws-\*\.jar and no bundle-\*\.jar"):
        refuse_unreachable_warehouse(location, "spark", jars)
    (tmp_path / "hadoop-aws-3.4.1.jar").touch()
    (tmp_path / "bundle-2.24.6.jar").touch()
    refuse_unreachable_warehouse(location, "spark", jars)
    refuse_unreachable_warehouse(location, "connect", jars)  # its server is asked by the run
    with pytest.raises(ConfigError, match="the target's server does not mirror into"):
        refuse_unreachable_warehouse(location, "server", jars)


STACK = "\n\nJVM stacktrace:\norg.apache.hadoop.fs.FileSystem.get(FileSystem.java:403)"


@pytest.mark.parametrize("error, lacks", [
    ('(org.apache.hadoop.fs.UnsupportedFileSystemException) No FileSystem for scheme "s3"',
     "it lacks Hadoop's S3A connector (hadoop-aws-"),
    ("(java.lang.RuntimeException) java.lang.ClassNotFoundException: Class "
     "org.apache.hadoop.fs.s3a.S3AFileSystem not found", "it lacks Hadoop's S3A connector"),
    ("java.lang.NoClassDefFoundError: software/amazon/awssdk/core/exception/SdkException",
     "the AWS SDK's bundle-*.jar"),
    ("java.lang.ClassNotFoundException: Class "
     "org.apache.hadoop.fs.azurebfs.SecureAzureBlobFileSystem not found",
     "it lacks Hadoop's ABFS connector (hadoop-azure-"),
    ('No FileSystem for scheme "gs"', "it lacks Google's GCS connector (gcs-connector-"),
    ("java.nio.file.AccessDeniedException: s3a://lake/wh: getFileStatus on s3a://lake/wh: "
     "software.amazon.awssdk.services.s3.model.S3Exception: Forbidden (Service: S3, Status "
     "Code: 403, Request ID: 1)", "s3 storage refused its credentials: AccessDenied"),
    ("org.apache.hadoop.fs.s3a.auth.NoAuthWithAWSException: No AWS Credentials provided by "
     "SimpleAWSCredentialsProvider", "s3 storage refused its credentials"),
    ('Operation failed: "This request is not authorized to perform this operation using this '
     'permission.", 403, HEAD, https://acct.dfs.core.windows.net/lake/wh?action=getStatus, '
     "AuthorizationPermissionMismatch", "azure storage refused its credentials"),
    ("com.google.api.client.googleapis.json.GoogleJsonResponseException: 401 Unauthorized",
     "gcs storage refused its credentials: 401 Unauthorized"),
])
def test_a_servers_storage_errors_say_what_it_lacks(error, lacks):
    problem = server_storage_problem(error + STACK)
    assert problem is not None and lacks in problem.lacks, problem
    explained = problem.explained(error + STACK)
    assert "JVM stacktrace" not in explained and explained.endswith(error)
    assert "docs/pages/object-storage.md" in problem.fix


@pytest.mark.parametrize("error", [
    "[PATH_NOT_FOUND] Path does not exist: s3://lake/wh. SQLSTATE: 42K03",
    "[DELTA_TABLE_NOT_FOUND] Delta table `s3://lake/wh` doesn't exist.",
    "java.lang.ClassNotFoundException: org.apache.spark.sql.delta.catalog.DeltaCatalog",
    "[DIVIDE_BY_ZERO] Division by zero.",
])
def test_other_errors_are_no_storage_problem(error):
    assert server_storage_problem(error + STACK) is None


NO_S3A = ('Runtime Error\n  (org.apache.hadoop.fs.UnsupportedFileSystemException) No FileSystem '
          'for scheme "s3"\n\n  JVM stacktrace:\n  at org.apache.spark.sql.delta.DeltaLog$.apply')


def test_dbt_meeting_a_server_without_the_connector_says_so(tmp_path, monkeypatch):
    """Met by dbt (after the run's own check): a dbt that could not run stops on
    ServerStorageError, not on the 'no Delta Lake' hint its Java stack's Delta frames would
    give; a model's failure is told as such on its node, its Java stack left out."""
    from types import SimpleNamespace

    from dbt.cli import main as dbt_main

    from lakemirror.dbt_runner import dbt_invoke
    from lakemirror.errors import ServerStorageError
    from lakemirror.node_result import NodeResult
    from lakemirror.run.server_storage import explain_storage_errors

    monkeypatch.setattr(dbt_main, "dbtRunner", lambda **_: SimpleNamespace(
        invoke=lambda args: SimpleNamespace(exception=RuntimeError(NO_S3A), result=None,
                                          success=False)))
    with pytest.raises(ServerStorageError, match="it lacks Hadoop's S3A connector") as stopped:
        dbt_invoke("build", tmp_path, profiles_dir=tmp_path, target="connect", engine="connect",
                   warehouse="s3://lake/wh")
    assert "Delta Lake" not in str(stopped.value) and "JVM" not in str(stopped.value)
    settings = SimpleNamespace(warehouse=parse_location("s3://lake/wh", MOTO))
    failed, passed = (NodeResult("model.p.dbo__customers", "error", NO_S3A),
                      NodeResult("model.p.dbo__orders", "success", None))
    told, kept = explain_storage_errors(settings, [failed, passed])
    assert told.message.startswith("the Spark server cannot reach the warehouse: it lacks")
    assert "JVM stacktrace" not in told.message and kept == passed
