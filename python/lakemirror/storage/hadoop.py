"""A warehouse in object storage as Apache Spark reaches it: through Hadoop's cloud connectors
(S3A, ABFS, the GCS connector), configured by `spark.hadoop.fs.*` settings made from the same
storage options lakemirror's own reads use, and addressed by the URL forms those connectors
take. The connectors' jars are not part of Spark: they must lie next to Delta's (the folder
LAKEMIRROR_DELTA_JARS), and the `spark` target refuses a warehouse URL before any work when
they do not. A Spark Connect server's connector and credentials are its own: what it lacks is
read from its errors (`server_storage_problem`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple
from urllib.parse import quote

from lakemirror.errors import ConfigError
from lakemirror.storage.location import ObjectLocation

DOCS = "docs/pages/object-storage.md, 'The spark and connect targets'"
# The jars each kind of store needs besides Spark's hadoop-client, as file-name patterns.
CONNECTOR_JARS = {"s3": ("hadoop-aws-*.jar", "bundle-*.jar"),
                  "azure": ("hadoop-azure-*.jar",),
                  "gcs": ("gcs-connector-*.jar",)}
# Each kind of store's connector as a server's administrator adds it.
CONNECTORS = {"s3": "Hadoop's S3A connector (hadoop-aws-<its Hadoop version>.jar and the AWS "
                    "SDK's bundle-*.jar)",
              "azure": "Hadoop's ABFS connector (hadoop-azure-<its Hadoop version>.jar)",
              "gcs": "Google's GCS connector (gcs-connector-*-shaded.jar)"}
# What a Spark error names when it lacks a connector, and the kind of store it names.
_NO_CONNECTOR = re.compile(r'No FileSystem for scheme "(\w+)"|(?:ClassNotFoundException|'
                           r"NoClassDefFoundError):? (?:Class )?([\w.$/]+)")
_KINDS = (("s3", re.compile(r"^s3a?$|\.s3a\.|awssdk|amazonaws|s3a?://|\bAWS", re.I)),
          ("azure", re.compile(r"^(abfss?|wasbs?)$|azurebfs|\.fs\.azure\.|abfss?://|"
                               r"windows\.net|onelake", re.I)),
          ("gcs", re.compile(r"^gs$|google|gs://", re.I)))
# Credentials the store refused or the connector could not find (S3A, ABFS, GCS).
_DENIED = re.compile(
    r"AccessDenied|NoAuthWithAWSException|No AWS Credentials|InvalidAccessKeyId|"
    r"SignatureDoesNotMatch|ExpiredToken|Status Code: 40[13]\b|\b40[13] (?:Forbidden|"
    r"Unauthorized)|AuthorizationPermissionMismatch|AuthenticationFailed|AuthorizationFailure|"
    r"Server failed to authenticate|KeyProviderException|Error getting access token")
_PREFIXES = ("aws_", "azure_storage_", "azure_", "google_")
_ABFS = "org.apache.hadoop.fs.azurebfs"


def connector_missing(location: ObjectLocation, jars_folder: str | None) -> str | None:
    """Why Spark cannot reach `location` with the jars in `jars_folder`, or None."""
    patterns = CONNECTOR_JARS[location.kind]
    if not jars_folder:
        return (f"the spark target reaches {location.kind} storage through Hadoop's connector "
                f"({', '.join(patterns)}), which it looks for next to Delta's jars, and "
                "LAKEMIRROR_DELTA_JARS is not set")
    missing = [pattern for pattern in patterns if not list(Path(jars_folder).glob(pattern))]
    if not missing:
        return None
    return (f"the spark target reaches {location.kind} storage through Hadoop's connector, "
            f"and {jars_folder} (LAKEMIRROR_DELTA_JARS) holds no {' and no '.join(missing)}")


def spark_url(location: ObjectLocation) -> str:
    """The URL Spark's Hadoop connectors take for `location`: `s3://` (mapped to S3A),
    `abfss://container@host/...` for Azure and OneLake, `gs://`."""
    path = f"/{quote(location.prefix)}" if location.prefix else ""
    if location.kind != "azure":
        return f"{'gs' if location.kind == 'gcs' else 's3'}://{location.bucket}{path}"
    return f"abfss://{quote(location.bucket)}@{_azure_host(location)}{path}"


def hadoop_settings(location: ObjectLocation) -> dict[str, str]:
    """The `spark.hadoop.*` settings that give a Spark session `location`'s credentials and
    endpoint, from its storage options (credentials the connectors find themselves, such as
    instance roles or environment variables, need none)."""
    options = _options(location)
    if location.kind == "s3":
        settings = _s3_settings(options)
    elif location.kind == "azure":
        settings = _azure_settings(_azure_host(location), options)
    else:
        settings = _gcs_settings(options)
    return {f"spark.hadoop.{name}": value for name, value in settings.items()}


def _s3_settings(options: Mapping[str, str]) -> dict[str, str]:
    settings = {"fs.s3.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem"}  # s3:// as s3a://
    for option, name in (("access_key_id", "access.key"), ("secret_access_key", "secret.key"),
                         ("session_token", "session.token"), ("token", "session.token"),
                         ("endpoint", "endpoint"), ("region", "endpoint.region")):
        if option in options:
            settings[f"fs.s3a.{name}"] = options[option]
    if "endpoint" in options and options.get("virtual_hosted_style_request") != "true":
        settings["fs.s3a.path.style.access"] = "true"
    if options.get("allow_http") == "true":
        settings["fs.s3a.connection.ssl.enabled"] = "false"
    if "fs.s3a.session.token" in settings:
        settings["fs.s3a.aws.credentials.provider"] = (
            "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider")
    return settings


def _azure_settings(host: str, options: Mapping[str, str]) -> dict[str, str]:
    if "account_key" in options or "access_key" in options:
        return {f"fs.azure.account.key.{host}": options.get("account_key")
                or options["access_key"]}
    if "sas_key" in options:
        return {f"fs.azure.account.auth.type.{host}": "SAS",
                f"fs.azure.sas.token.provider.type.{host}":
                    f"{_ABFS}.sas.FixedSASTokenProvider",
                f"fs.azure.sas.fixed.token.{host}": options["sas_key"].lstrip("?")}
    if {"client_id", "client_secret", "tenant_id"} <= options.keys():
        return {f"fs.azure.account.auth.type.{host}": "OAuth",
                f"fs.azure.account.oauth.provider.type.{host}":
                    f"{_ABFS}.oauth2.ClientCredsTokenProvider",
                f"fs.azure.account.oauth2.client.id.{host}": options["client_id"],
                f"fs.azure.account.oauth2.client.secret.{host}": options["client_secret"],
                f"fs.azure.account.oauth2.client.endpoint.{host}":
                    f"https://login.microsoftonline.com/{options['tenant_id']}/oauth2/token"}
    return {}


def _gcs_settings(options: Mapping[str, str]) -> dict[str, str]:
    keyfile = options.get("service_account") or options.get("service_account_path")
    if keyfile is None:
        return {}
    return {"fs.gs.auth.type": "SERVICE_ACCOUNT_JSON_KEYFILE",
            "fs.gs.auth.service.account.json.keyfile": keyfile}


def _azure_host(location: ObjectLocation) -> str:
    account = _plain_names(location.options).get("account_name")
    if account == "onelake":
        return "onelake.dfs.fabric.microsoft.com"
    if not account:
        raise ConfigError(f"the warehouse {location} names no storage account, which Spark's "
                          "ABFS connector needs in the URL",
                          hint="give it as abfss://<container>@<account>.dfs.core.windows.net/"
                               f"<path> ({DOCS})")
    return f"{account}.dfs.core.windows.net"


def _options(location: ObjectLocation) -> dict[str, str]:
    """The location's storage options as delta-rs takes them, under object_store's short
    names."""
    from lakemirror.storage.engine_settings import delta_storage_options

    return _plain_names(delta_storage_options(location))


def _plain_names(options: Mapping[str, str]) -> dict[str, str]:
    """Storage options under object_store's short names (`aws_access_key_id` →
    `access_key_id`), lower-case."""
    plain = {}
    for name, value in options.items():
        name = name.lower()
        for prefix in _PREFIXES:
            if name.startswith(prefix):
                name = name[len(prefix):]
                break
        plain[name] = str(value)
    return plain


class StorageProblem(NamedTuple):
    """What a Spark server lacks to reach object storage, and the fix."""

    lacks: str
    fix: str

    def explained(self, error: str) -> str:
        """The server's `error` told as this problem, with its first lines (no Java stack)."""
        said = error.split("JVM stacktrace:", 1)[0].strip()
        return (f"the Spark server cannot reach the warehouse: {self.lacks}. Fix: {self.fix}. "
                f"The server said: {said}")


def server_storage_problem(error: str) -> StorageProblem | None:
    """What the Spark server whose error says `error` lacks to reach object storage: a
    connector's jars (for the store the missing file system or class names) or credentials
    the store accepts; None for any other error."""
    for missing in _NO_CONNECTOR.finditer(error):
        if (kind := _store_kind(missing[1] or missing[2])) is not None:
            return StorageProblem(f"it lacks {CONNECTORS[kind]}: {missing[0]}",
                                  f"start the server with those jars (--jars) and the settings "
                                  f"of {DOCS}; or run with --target embedded or spark, or pass "
                                  "a folder the server reaches")
    denied = _DENIED.search(error)
    if denied is None:
        return None
    kind = _store_kind(error)
    store = f"{kind} storage" if kind else "the store"
    return StorageProblem(f"{store} refused its credentials: {denied[0]}",
                          f"give the server credentials for the warehouse (its spark.hadoop.fs.* "
                          f"settings or its connector's own variables, {DOCS})")


def _store_kind(text: str) -> str | None:
    return next((kind for kind, pattern in _KINDS if pattern.search(text)), None)


def refuse_unreachable_warehouse(location: ObjectLocation, engine: str,
                                 delta_jars: str | None) -> None:
    """Raise ConfigError, before any work, when the target's `engine` (not the embedded one)
    cannot reach a warehouse in object storage: an Azure URL without its account, `spark`
    without the connector's jars (in the folder `delta_jars`: LAKEMIRROR_DELTA_JARS), a
    thrift, http or odbc server always (lakemirror cannot check it). A `connect` server is
    asked by the run itself (`run.server_storage`)."""
    spark_url(location)
    if engine == "connect":
        return
    if engine == "spark":
        why = connector_missing(location, delta_jars)
        if why is None:
            return
        raise ConfigError(f"the warehouse {location} is in object storage: {why}; nothing was "
                          "written", hint="put the connector's jars in that folder, run with "
                                          f"--target embedded, or pass a local folder ({DOCS})")
    raise ConfigError(f"the warehouse {location} is in object storage, which the target's "
                      "server does not mirror into: its server would read and write it with "
                      "its own Hadoop connector and credentials, which lakemirror cannot check; "
                      "nothing was written", hint="run with --target embedded, spark or "
                                                  f"connect, or pass a folder the server "
                                                  f"reaches ({DOCS})")
