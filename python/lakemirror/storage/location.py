"""Where a landing zone (or a warehouse) lives: a local folder, or a URL in OneLake, ADLS Gen2 /
Blob storage, S3 or GCS, parsed once into a checked `ObjectLocation`.

The URL forms are the ones the ecosystem writes: OneLake's
(`https://onelake.dfs.fabric.microsoft.com/<workspace>/<item>/...`,
`abfss://<workspace>@onelake.dfs.fabric.microsoft.com/<item>/...`), ADLS's
`abfss://`, `az://`, `azure://` and `https://<account>.blob|dfs.core.windows.net/`, `s3://` and
`s3a://`, `gs://`. The store itself comes from obstore (the Rust `object_store` crate that delta-rs
and Sail use), so URLs and credentials mean the same to the zone, staging and the engine. The
location is parsed here rather than by `object_store`'s own URL parser, which keeps `%20` in a
OneLake workspace's name and lets `..` through.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import timedelta
from pathlib import Path, PurePosixPath
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import SplitResult, parse_qsl, quote, unquote, urlsplit

from lakemirror.environment import StorageSettings
from lakemirror.errors import ConfigError
from lakemirror.storage.options import configured_options
from lakemirror.storage.secrets import REDACTED, redact, remember, remember_secrets

if TYPE_CHECKING:
    from obstore.store import AzureStore, GCSStore, S3Store

Kind = Literal["azure", "s3", "gcs"]
FORMS = ("a folder path, or a URL: https://onelake.dfs.fabric.microsoft.com/<workspace>/<item>/"
         "Files/LandingZone, abfss://<container>@<account>.dfs.core.windows.net/<path>, "
         "az://<container>/<path>, s3://<bucket>/<prefix> or gs://<bucket>/<prefix>")
DOCS = "docs: Landing zone in OneLake, ADLS, S3 or GCS"
ONELAKE_HOSTS = ("onelake.dfs.fabric.microsoft.com", "onelake.blob.fabric.microsoft.com")
_AZURE_HOST = re.compile(r"^([a-z0-9]{3,24})\.(?:dfs|blob)\.core\.windows\.net$")
_GUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.IGNORECASE)
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.\-_]{1,221}[a-z0-9]$")
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")
_SCHEMES: dict[str, Kind] = {"abfss": "azure", "abfs": "azure", "az": "azure", "azure": "azure",
                             "s3": "s3", "s3a": "s3", "gs": "gcs"}
_SAS_PARAMETERS = {"sv", "sig", "se", "sp", "sr", "ss", "srt", "st", "spr", "sip", "skoid",
                   "sktid", "skt", "ske", "sks", "skv", "sdd", "ses", "si"}
# obstore's client options (timeouts, proxy, TLS), which it takes apart from the store's config.
CLIENT_OPTIONS = frozenset((
    "allow_http", "allow_invalid_certificates", "connect_timeout", "default_content_type",
    "http1_only", "http2_keep_alive_interval", "http2_keep_alive_timeout",
    "http2_keep_alive_while_idle", "http2_only", "pool_idle_timeout", "pool_max_idle_per_host",
    "proxy_url", "proxy_ca_certificate", "proxy_excludes", "randomize_addresses", "read_timeout",
    "timeout", "user_agent"))
RETRY_OPTIONS = frozenset(("max_retries", "retry_timeout"))
# A request that hangs fails in a minute and a failing one is retried for at most two, instead of
# object_store's three minutes of retries, so a run over a dead endpoint stops with a message.
DEFAULT_CLIENT_OPTIONS = {"connect_timeout": "10s", "timeout": "120s"}
DEFAULT_RETRY = {"max_retries": 5, "retry_timeout": timedelta(seconds=120)}


class OpenedStores:
    """The obstore stores opened for a parsed location and every location derived from it
    (`/`, `replace`), one per place and options: a store's client keeps its connections (and,
    on Azure, its token) for every later request, so each is opened once. It belongs to the
    run that parsed the location, never to the process."""

    def __init__(self) -> None:
        self._stores: dict[tuple[object, ...], AzureStore | S3Store | GCSStore] = {}

    def of(self, location: ObjectLocation) -> AzureStore | S3Store | GCSStore:
        """The store of `location`, opened on first use (two threads that open it at once
        both keep the first one opened)."""
        key = (location.kind, location.store_url, location.bucket, location.prefix,
               tuple(sorted(location.options.items())))
        store = self._stores.get(key)
        return store if store is not None else self._stores.setdefault(
            key, _new_store(location))


@dataclass(frozen=True, repr=False)
class ObjectLocation:
    """A prefix in an object store: `store_url` names the container or bucket (what obstore's
    `from_url` takes for the store's root), `prefix` the keys below it (no leading or trailing
    '/', '' for the root). `options` are the storage options for it, credentials included, so
    neither repr nor str shows them, and two locations are equal (and hash alike) when they
    name the same place, whatever their options. `stores`: the stores opened for it, shared
    with the locations derived from it (see `open_store`)."""

    kind: Kind
    store_url: str
    bucket: str  # the container, bucket or OneLake workspace, decoded
    prefix: str
    options: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}),
                                       compare=False)
    stores: OpenedStores = field(default_factory=OpenedStores, compare=False)

    @property
    def url(self) -> str:
        """The canonical URL, for messages: the store's URL and the prefix, no credentials."""
        return f"{self.store_url}/{quote(self.prefix)}" if self.prefix else self.store_url

    def __str__(self) -> str:
        return self.url

    def __truediv__(self, name: str) -> ObjectLocation:
        """The location of `name` (one or more `/`-separated segments) below this one, with
        the same store and options, as `Path / name` is for a folder."""
        below = "/".join(filter(None, name.split("/")))
        return replace(self, prefix=f"{self.prefix}/{below}" if self.prefix else below)

    @property
    def name(self) -> str:
        """The last segment of the prefix."""
        return self.prefix.rsplit("/", 1)[-1]

    def relative_to(self, other: ObjectLocation) -> PurePosixPath:
        """The keys of this location below `other` (ValueError when it is not below it)."""
        if (self.store_url, self.bucket) != (other.store_url, other.bucket):
            raise ValueError(f"{self.url} is not below {other.url}")
        return PurePosixPath(self.prefix or ".").relative_to(other.prefix or ".")

    def __repr__(self) -> str:
        return f"ObjectLocation({self.url!r})"


Location = Path | ObjectLocation


def parse_location(text: str, options: Mapping[str, str] | None = None, *,
                   storage: StorageSettings | None = None) -> Location:
    """A local path (made absolute) or a checked object-store location. `options` are its
    storage options; by default those `storage` configures (LAKEMIRROR_STORAGE_OPTIONS[_FILE]),
    which also gives the cloud SDKs' client variables (AWS_ALLOW_HTTP, AZURE_TIMEOUT, ...) and
    Azure's account (AZURE_STORAGE_ACCOUNT_NAME), taken into the options beneath them."""
    if not _URL.match(text):
        return Path(text).absolute()
    parts = urlsplit(text)
    scheme = parts.scheme.lower()
    if scheme == "file":
        return _file_path(text, parts)
    if parts.password is not None:
        remember(unquote(parts.password))
    shown = redact_url(text)
    if parts.fragment:
        raise ConfigError(f"storage URL {shown} has a '#' fragment",
                          hint=f"remove it; give {FORMS}")
    if parts.password is not None:
        raise ConfigError(f"storage URL {shown} carries a password",
                          hint="remove it from the URL and give credentials as storage options "
                               f"or environment variables ({DOCS})")
    if scheme in ("https", "http"):
        kind, bucket, account, path = _https_parts(parts, shown)
    elif scheme in _SCHEMES:
        kind = _SCHEMES[scheme]
        bucket, account, path = _scheme_parts(parts, kind, shown)
    else:
        raise ConfigError(f"unknown storage URL scheme {parts.scheme!r} in {shown}",
                          hint=f"give {FORMS}")
    location = ObjectLocation(kind, _store_url(kind, bucket, account), bucket, _prefix(path, shown))
    storage = storage or StorageSettings()
    given = dict(options) if options is not None else configured_options(
        storage, SplitResult(parts.scheme, parts.netloc, parts.path, "", "").geturl(),
        location.url)
    merged = {**_variable_options(kind, storage.variables, given),
              **_url_options(kind, account, parts, shown), **given}
    remember_secrets(merged)
    return replace(location, options=MappingProxyType(merged))


def _variable_options(kind: Kind, variables: Mapping[str, str],
                      given: Mapping[str, str]) -> dict[str, str]:
    """The client options set as the cloud SDK's variables (AWS_ALLOW_HTTP, AZURE_TIMEOUT, ...):
    obstore would read them, but any client options given replace them, so they are passed on;
    and Azure's account (AZURE_STORAGE_ACCOUNT_NAME), which Spark's connector needs in its URL,
    unless an option gives one."""
    prefix = {"azure": "AZURE_", "s3": "AWS_", "gcs": "GOOGLE_"}[kind]
    options = {name.lower(): value for name, value in variables.items()
               if name.startswith(prefix) and name[len(prefix):].lower() in CLIENT_OPTIONS}
    account = variables.get("AZURE_STORAGE_ACCOUNT_NAME")
    if kind == "azure" and account and not any(name.lower().endswith("account_name")
                                                for name in given):
        options["account_name"] = account
    return options


def redact_url(text: str) -> str:
    """`text` with any query string's values and any user name and password hidden."""
    parts = urlsplit(text)
    netloc = parts.netloc
    if parts.password is not None:
        netloc = f"{REDACTED}@{netloc.rsplit('@', 1)[1]}"
    query = "&".join(f"{name}={REDACTED}" for name, _ in parse_qsl(parts.query, True))
    return redact(SplitResult(parts.scheme, netloc, parts.path, query, parts.fragment).geturl())


def _file_path(text: str, parts: SplitResult) -> Path:
    if parts.netloc not in ("", "localhost") or parts.query or parts.fragment:
        raise ConfigError(f"{text!r} is not a local folder's file:// URL",
                          hint="give the folder as a plain absolute path, e.g. /data/LandingZone")
    return Path(unquote(parts.path)).absolute()


def _https_parts(parts: SplitResult, shown: str) -> tuple[Kind, str, str | None, str]:
    """(kind, container, account, path below it) of an https OneLake or Azure URL."""
    host = (parts.hostname or "").lower()
    segments = parts.path.lstrip("/").split("/", 1)
    container, path = unquote(segments[0]), segments[1] if len(segments) > 1 else ""
    if parts.scheme.lower() == "https" and host in ONELAKE_HOSTS:
        _check_onelake(container, path, shown)
        return "azure", container, "onelake", path
    match = _AZURE_HOST.match(host)
    if parts.scheme.lower() == "https" and match and parts.port is None:
        if not container:
            raise ConfigError(f"storage URL {shown} names no container",
                              hint=f"add it: https://{host}/<container>/<path>")
        return "azure", container, match[1], path
    raise ConfigError(f"{shown} is not a OneLake or Azure Storage https URL",
                      hint=f"give {FORMS}; for another S3-compatible endpoint use s3://<bucket> "
                           "with the storage option endpoint")


def _scheme_parts(parts: SplitResult, kind: Kind, shown: str) -> tuple[str, str | None, str]:
    """(container or bucket, Azure account or None, path below it) of an abfss://, az://,
    s3:// or gs:// URL."""
    netloc, account = parts.netloc, None
    if "@" in netloc:
        if kind != "azure":
            remember(unquote(netloc.rsplit("@", 1)[0]))
            raise ConfigError(f"storage URL {redact_url(parts.geturl())} carries a user name",
                              hint="remove it and give credentials as storage options")
        netloc, host = netloc.rsplit("@", 1)
        host = host.lower()
        match = _AZURE_HOST.match(host)
        if host in ONELAKE_HOSTS:
            account = "onelake"
            _check_onelake(unquote(netloc), parts.path.lstrip("/"), shown)
        elif match:
            account = match[1]
        else:
            raise ConfigError(
                f"storage URL {shown}: {host!r} is not an Azure Storage or OneLake host",
                hint="write abfss://<container>@<account>.dfs.core.windows.net/<path>")
    bucket = unquote(netloc)
    if not bucket:
        raise ConfigError(f"storage URL {shown} names no container or bucket",
                          hint=f"give {FORMS}")
    if account != "onelake" and not _BUCKET.match(bucket):
        raise ConfigError(f"storage URL {shown}: {bucket!r} is not a valid container or bucket "
                          "name", hint="use its exact name: lowercase letters, digits, '-' and '.'")
    return bucket, account, parts.path.lstrip("/")


def _check_onelake(workspace: str, path: str, shown: str) -> None:
    """OneLake addresses an item by name with its type (`Sales.MirroredDatabase`) or, with the
    workspace also by GUID, by its GUID alone (Microsoft's "Connecting to Microsoft OneLake")."""
    item = unquote(path.split("/", 1)[0])
    if not workspace or not item:
        raise ConfigError(f"OneLake URL {shown} names no workspace and item",
                          hint="write https://onelake.dfs.fabric.microsoft.com/<workspace>/<item>/"
                               "Files/LandingZone")
    if _GUID.match(item):
        if not _GUID.match(workspace):
            raise ConfigError(f"OneLake URL {shown} gives the item by GUID but the workspace by "
                              "name", hint="give both by GUID, or the item by name with its type")
    elif "." not in item:
        raise ConfigError(f"OneLake URL {shown}: item {item!r} lacks its type",
                          hint=f"write {item}.MirroredDatabase (or .Lakehouse), or give the "
                               "workspace and item by their GUIDs")


def _prefix(path: str, shown: str) -> str:
    """The key prefix of a URL's path: decoded segments, none empty, '.' or '..'."""
    raw = path.strip("/")
    if not raw:
        return ""
    segments = [unquote(segment) for segment in raw.split("/")]
    for segment in segments:
        if segment in ("", ".", "..") or "/" in segment or "\\" in segment:
            raise ConfigError(f"storage URL {shown} has a path segment {segment!r} that names no "
                              "folder", hint="give the prefix without '.', '..', '//', '%2F' or "
                                             "backslashes")
    return "/".join(segments)


def _url_options(kind: Kind, account: str | None, parts: SplitResult,
                 shown: str) -> dict[str, str]:
    """Storage options the URL itself carries: its Azure account, OneLake's endpoint, a SAS."""
    options: dict[str, str] = {}
    if account is not None:
        options["account_name"] = account
    if account == "onelake":
        options["use_fabric_endpoint"] = "true"
    if parts.query:
        query = parse_qsl(parts.query, keep_blank_values=True)
        for _, value in query:
            remember(value)
        names = {name.lower() for name, _ in query}
        if kind != "azure" or not names <= _SAS_PARAMETERS or "sig" not in names:
            raise ConfigError(f"storage URL {shown} has a query string that is not an Azure "
                              "SAS token", hint="remove it; give credentials as storage options "
                                                "or environment variables")
        options["sas_key"] = parts.query
    return options


def _store_url(kind: Kind, bucket: str, account: str | None) -> str:
    if account == "onelake":
        return f"https://{ONELAKE_HOSTS[0]}/{quote(bucket)}"
    if kind == "azure":
        return f"abfss://{bucket}@{account}.dfs.core.windows.net" if account else f"az://{bucket}"
    return f"{'gs' if kind == 'gcs' else 's3'}://{bucket}"


def open_store(location: ObjectLocation) -> AzureStore | S3Store | GCSStore:
    """The obstore store rooted at the location's prefix (keys are relative to it, and nothing
    outside it can be addressed), configured by its options (obstore reads the cloud SDK's
    variables, AZURE_*, AWS_*, GOOGLE_*, itself) and lakemirror's timeouts and retries;
    opened once for the location and those derived from it (`OpenedStores`)."""
    return location.stores.of(location)


def _new_store(location: ObjectLocation) -> AzureStore | S3Store | GCSStore:
    """A new store (and client) for `location` (see `open_store`)."""
    from obstore.exceptions import BaseError
    from obstore.store import AzureStore, GCSStore, S3Store

    config, client, retry = split_options(location.options)
    store_class: Any = {"azure": AzureStore, "s3": S3Store, "gcs": GCSStore}[location.kind]
    try:
        store: AzureStore | S3Store | GCSStore = store_class(
            location.bucket, prefix=location.prefix or None, config=config,
            client_options=client, retry_config=retry)
        return store
    except BaseError as error:
        raise ConfigError(f"cannot open {location.url}: {redact(str(error).splitlines()[0])}",
                          hint="check the storage options' names and values "
                               f"({DOCS})") from None


def split_options(options: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str],
                                                       dict[str, Any]]:
    """(store config, client options, retry config) of a flat storage-options mapping as
    delta-rs takes it; the three are apart in obstore, which fails on a misplaced key."""
    config: dict[str, str] = {}
    client = dict(DEFAULT_CLIENT_OPTIONS)
    retry = dict(DEFAULT_RETRY)
    for name, value in options.items():
        bare = re.sub(r"^(aws_|azure_|google_)", "", name.lower())
        if bare in CLIENT_OPTIONS:
            client[bare] = value
        elif bare in RETRY_OPTIONS:
            retry[bare] = _retry_value(bare, value)
        else:
            config[name] = value
    return config, client, retry


def _retry_value(name: str, value: str) -> int | timedelta:
    number = re.fullmatch(r"(\d+)(s?)", value.strip())
    if number is None or (name == "max_retries" and number[2]):
        example = "3" if name == "max_retries" else "60s"
        raise ConfigError(f"storage option {name}={value!r} is not a whole number"
                          f"{' of seconds' if name == 'retry_timeout' else ''}",
                          hint=f"write e.g. {name}={example}")
    return int(number[1]) if name == "max_retries" else timedelta(seconds=int(number[1]))
