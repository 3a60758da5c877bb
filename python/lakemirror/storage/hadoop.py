"""A warehouse in object storage as Apache Spark reaches it: through Hadoop's cloud connectors
(S3A, ABFS, the GCS connector), configured by `spark.hadoop.fs.*` settings made from the same
storage options lakemirror's own reads use, and addressed by the URL forms those connectors
take. The connectors' jars are not part of Spark: they must lie next to Delta's (the folder
LAKEMIRROR_DELTA_JARS), and the `spark` target refuses a warehouse URL before any work when
they do not."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import quote

from lakemirror.errors import ConfigError
from lakemirror.storage.location import ObjectLocation

DOCS = "docs/pages/object-storage.md, 'The spark and connect targets'"
# The jars each kind of store needs besides Spark's hadoop-client, as file-name patterns.
CONNECTOR_JARS = {"s3": ("hadoop-aws-*.jar", "bundle-*.jar"),
                  "azure": ("hadoop-azure-*.jar",),
                  "gcs": ("gcs-connector-*.jar",)}
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
    account = (_plain_names(location.options).get("account_name")
               or os.environ.get("AZURE_STORAGE_ACCOUNT_NAME"))
    if account == "onelake":
        return "onelake.dfs.fabric.microsoft.com"
    if not account:
        raise ConfigError(f"the warehouse {location} names no storage account, which Spark's "
                          "ABFS connector needs in the URL",
                          hint="give it as abfss://<container>@<account>.dfs.core.windows.net/"
                               f"<path> ({DOCS})")
    return f"{account}.dfs.core.windows.net"


def _options(location: ObjectLocation) -> dict[str, str]:
    """The location's storage options, those from the environment's standard variables
    included, under object_store's short names."""
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


def refuse_unreachable_warehouse(location: ObjectLocation, target: str) -> None:
    """Raise ConfigError, before any work, when the `target` (not the embedded engine) cannot
    reach a warehouse in object storage: `spark` without the connector's jars, or an Azure URL
    without its account; `connect` always (its server's storage settings are its own, and
    lakemirror cannot check them)."""
    from lakemirror.engine.spark import DELTA_JARS

    if target == "spark":
        spark_url(location)
        why = connector_missing(location, os.environ.get(DELTA_JARS))
        if why is None:
            return
        raise ConfigError(f"the warehouse {location} is in object storage: {why}; nothing was "
                          "written", hint="put the connector's jars in that folder, run with "
                                          f"--target embedded, or pass a local folder ({DOCS})")
    raise ConfigError(f"the warehouse {location} is in object storage, which the {target} "
                      "target does not mirror into: its server would read and write it with "
                      "its own Hadoop connector and credentials, which lakemirror cannot check; "
                      "nothing was written", hint="run with --target embedded or spark, or "
                                                  f"pass a folder the server reaches ({DOCS})")
