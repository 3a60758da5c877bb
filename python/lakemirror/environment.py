"""The LAKEMIRROR_* environment variables, read once at the edge (the CLI, the Python API, the
dbt plugin, the bench) into one frozen `Settings`; lower layers take the plain values.

This is the only module that reads `os.environ` (tests/python/test_settings.py checks),
storage's options and the cloud SDKs' variables included (`Settings.storage`): `read_settings`
parses and checks each variable (a bad value is a ConfigError naming the variable and the fix,
exit code 2), and `process_environment` is the one way to build a child process's environment
from this one's.
A small typed reader rather than pydantic-settings: the variables are few and flat, and each
error must name the variable and its fix in lakemirror's own words.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, TypeAlias

from lakemirror.errors import ConfigError

DEBUG = "LAKEMIRROR_DEBUG"  # tracebacks instead of clean failures, as `--debug`
ENGINE_LOG = "LAKEMIRROR_LOG"  # set: the embedded engine's own log lines reach stderr
ENGINE_PORT = "LAKEMIRROR_ENGINE_PORT"  # the in-process engine's port; unset: any free one
# Whether the embedded engine's own port goes in a private network: auto, required or off.
ENGINE_ISOLATION = "LAKEMIRROR_ENGINE_ISOLATION"
ENGINE_TOKEN = "LAKEMIRROR_ENGINE_TOKEN"  # set by lakemirror in its engine's process alone
HOME = "LAKEMIRROR_HOME"  # where the background engine's address file lives
SETTLE_SECONDS = "LAKEMIRROR_SETTLE_SECONDS"
MAX_TEXT_BYTES = "LAKEMIRROR_MAX_TEXT_BYTES"
LEASE_SECONDS = "LAKEMIRROR_LEASE_SECONDS"  # how long an object-store lease lasts unrenewed
MAINTENANCE_HOURS = "LAKEMIRROR_MAINTENANCE_HOURS"
CONNECT_URL = "LAKEMIRROR_CONNECT_URL"  # the `connect` target's server (profiles.yml)
CONNECT_TIMEOUT = "LAKEMIRROR_CONNECT_TIMEOUT"
ENGINE_TIMEOUT = "LAKEMIRROR_ENGINE_TIMEOUT"  # the longest an engine may take to answer dbt
DELTA_JARS = "LAKEMIRROR_DELTA_JARS"  # the folder of Delta's jars for the `spark` target
STORAGE_OPTIONS = "LAKEMIRROR_STORAGE_OPTIONS"  # storage options, a JSON object
STORAGE_OPTIONS_FILE = "LAKEMIRROR_STORAGE_OPTIONS_FILE"  # a file of them (the variable wins)
# The cloud SDKs' own variables (object_store's names) and the emulators' endpoints.
STORAGE_VARIABLE_PREFIXES = ("AWS_", "AZURE_", "GOOGLE_", "AZURITE_")
DBT_PROFILES_DIR = "DBT_PROFILES_DIR"  # where dbt finds profiles.yml, as dbt reads it
WAREHOUSE = "LAKEMIRROR_WAREHOUSE"  # the warehouse dbt is given (as dbt reads it)
WAREHOUSE_NAME = "LAKEMIRROR_WAREHOUSE_NAME"  # the logical name generated models know it by
SCHEMA_SUFFIX = "LAKEMIRROR_SCHEMA_SUFFIX"  # dbt's macros append it to every catalog schema

DEFAULT_SETTLE_SECONDS = 2.0
DEFAULT_MAX_TEXT_BYTES = 2 << 30
DEFAULT_LEASE_SECONDS = 60.0
DEFAULT_MAINTENANCE_HOURS = 24.0
DEFAULT_CONNECT_URL = "sc://localhost:15002"  # profiles.yml's default for it
DEFAULT_CONNECT_TIMEOUT = 30.0  # seconds a `connect` target's server may take to answer
DEFAULT_ENGINE_TIMEOUT = 3600.0  # seconds: a dbt invocation (lakemirror run), a request (dbt)
DEFAULT_WAREHOUSE_NAME = "default"
Isolation: TypeAlias = Literal["auto", "required", "off"]
ISOLATIONS: tuple[Isolation, ...] = ("auto", "required", "off")
_SCHEMA_SUFFIX = re.compile(r"_[a-z0-9_]+")
MAX_STORAGE_OPTIONS_BYTES = 1 << 20
_OPTIONS_EXAMPLE = '{"aws_region": "eu-west-1", "s3://other-bucket": {"aws_profile": "other"}}'


@dataclass(frozen=True)
class StorageSettings:
    """Storage's part of the environment: the options of LAKEMIRROR_STORAGE_OPTIONS and its
    file, parsed (plain options, and objects of them scoped to a URL prefix), and the cloud
    SDKs' variables as they were. Neither is shown: both may hold credentials."""

    options: Mapping[str, str | Mapping[str, str]] = field(
        default_factory=lambda: MappingProxyType({}), repr=False)
    variables: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}),
                                         repr=False)


@dataclass(frozen=True, kw_only=True)
class Settings:
    """Every LAKEMIRROR_* variable lower layers depend on, parsed and checked."""

    debug: bool = False
    engine_log: bool = False
    engine_port: int = 0  # 0: any free port
    engine_isolation: Isolation = "auto"
    engine_token: str = field(default="", repr=False)  # the engine process's own, else ""
    home: Path = field(default_factory=lambda: Path.home() / ".lakemirror")  # unset: here
    settle_seconds: float = DEFAULT_SETTLE_SECONDS
    max_text_bytes: int = DEFAULT_MAX_TEXT_BYTES
    lease_seconds: float = DEFAULT_LEASE_SECONDS
    maintenance_hours: float | None = DEFAULT_MAINTENANCE_HOURS  # None: only `maintain`
    connect_url: str = DEFAULT_CONNECT_URL
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    engine_timeout: float = DEFAULT_ENGINE_TIMEOUT
    warehouse: str = ""  # unset: ""; the CLI's --warehouse reads it too
    dbt_profiles_dir: Path | None = None
    delta_jars: str | None = None
    warehouse_name: str = DEFAULT_WAREHOUSE_NAME  # checked by codegen.checked_name
    schema_suffix: str = ""  # dbt reads it itself; checked here, before any work
    storage: StorageSettings = field(default_factory=StorageSettings)


def read_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """The settings `environ` (this process's environment by default) gives."""
    env = os.environ if environ is None else environ
    hours = env.get(MAINTENANCE_HOURS, "").strip()
    return Settings(
        debug=_flag(env, DEBUG),
        engine_log=_flag(env, ENGINE_LOG),
        engine_port=_port(env),
        engine_isolation=_isolation(env),
        engine_token=env.get(ENGINE_TOKEN, ""),
        home=Path(env[HOME]) if env.get(HOME) else Settings().home,
        settle_seconds=env_number(SETTLE_SECONDS, DEFAULT_SETTLE_SECONDS, "seconds", env),
        max_text_bytes=_positive_bytes(env),
        lease_seconds=env_number(LEASE_SECONDS, DEFAULT_LEASE_SECONDS, "seconds", env),
        maintenance_hours=None if hours.lower() == "never" else env_number(
            MAINTENANCE_HOURS, DEFAULT_MAINTENANCE_HOURS, "hours, or never", env),
        connect_url=env.get(CONNECT_URL) or DEFAULT_CONNECT_URL,
        connect_timeout=env_number(CONNECT_TIMEOUT, DEFAULT_CONNECT_TIMEOUT, "seconds", env),
        engine_timeout=seconds_at_least_one(
            env.get(ENGINE_TIMEOUT, ""), ENGINE_TIMEOUT, DEFAULT_ENGINE_TIMEOUT),
        warehouse=env.get(WAREHOUSE, ""),
        delta_jars=env.get(DELTA_JARS) or None,
        dbt_profiles_dir=Path(env[DBT_PROFILES_DIR]).expanduser() if env.get(DBT_PROFILES_DIR)
        else None,
        warehouse_name=env.get(WAREHOUSE_NAME) or DEFAULT_WAREHOUSE_NAME,
        schema_suffix=_schema_suffix(env),
        storage=read_storage_settings(env))


def read_storage_settings(environ: Mapping[str, str] | None = None) -> StorageSettings:
    """The storage options configured in `environ` (this process's environment by default;
    the variable's names win over its file's) and its cloud SDK variables."""
    env = os.environ if environ is None else environ
    return StorageSettings(
        options=MappingProxyType({**_storage_options_file(env), **_storage_options(env)}),
        variables=MappingProxyType({name: value for name, value in env.items()
                                    if name.startswith(STORAGE_VARIABLE_PREFIXES)}))


def process_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment with `extra` set: what a child process (the engine, a
    benchmark's run) starts with, and what the in-process JVM of the `spark` target sees."""
    return {**os.environ, **(extra or {})}


def unset_process_variable(name: str) -> None:
    """Remove `name` from this process's environment: a mark a library (pyspark) keeps there
    about the process, not a setting."""
    os.environ.pop(name, None)


def env_number(name: str, default: float, unit: str, env: Mapping[str, str]) -> float:
    """The variable's value in `env`, a finite number of `unit` of 0 or more; `default` when
    unset."""
    value = env.get(name, "").strip()
    if not value:
        return default
    try:
        number = float(value)
    except ValueError:
        number = -1.0
    if not 0 <= number < float("inf"):
        raise ConfigError(f"{name}={value!r} is not a number of {unit} (0 or more)",
                          hint=f"set {name} to e.g. {default:g}, or unset it")
    return number


def seconds_at_least_one(value: str, name: str, default: float) -> float:
    """`value`, the setting `name`'s text, as a finite number of seconds of 1 or more;
    `default` when empty."""
    if not value.strip():
        return default
    try:
        number = float(value)
    except ValueError:
        number = 0.0
    if not 1 <= number < float("inf"):
        raise ConfigError(f"{name}={value!r} is not a number of seconds (1 or more)",
                          hint=f"set {name} to e.g. {default:g}, or unset it")
    return number


def _flag(env: Mapping[str, str], name: str) -> bool:
    """Whether the variable is set to anything but nothing, 0 or false."""
    return env.get(name, "").strip().lower() not in ("", "0", "false")


def _port(env: Mapping[str, str]) -> int:
    value = env.get(ENGINE_PORT, "").strip()
    if not value:
        return 0
    if not value.isdigit() or not 0 <= int(value) <= 65535:
        raise ConfigError(f"{ENGINE_PORT}={value!r} is not a port number (0 to 65535)",
                          hint=f"set {ENGINE_PORT} to a free port, e.g. 50051, or unset it")
    return int(value)


def _isolation(env: Mapping[str, str]) -> Isolation:
    value = env.get(ENGINE_ISOLATION, "").strip().lower() or "auto"
    for isolation in ISOLATIONS:
        if value == isolation:
            return isolation
    raise ConfigError(f"{ENGINE_ISOLATION}={value!r} is not one of {', '.join(ISOLATIONS)}",
                      hint=f"set {ENGINE_ISOLATION} to auto (a private network where the host "
                           "allows it), required or off, or unset it")


def _positive_bytes(env: Mapping[str, str]) -> int:
    value = env.get(MAX_TEXT_BYTES, "").strip()
    if not value:
        return DEFAULT_MAX_TEXT_BYTES
    if not value.isdigit() or int(value) == 0:
        raise ConfigError(f"{MAX_TEXT_BYTES}={value!r} is not a positive number of bytes",
                          hint=f"set {MAX_TEXT_BYTES} to e.g. {DEFAULT_MAX_TEXT_BYTES}, or unset "
                               "it")
    return int(value)


def _schema_suffix(env: Mapping[str, str]) -> str:
    """The suffix, when empty or `_` and lowercase letters, digits or `_`; dbt would refuse
    another only after the run staged its files."""
    suffix = env.get(SCHEMA_SUFFIX, "").strip()
    if suffix and not _SCHEMA_SUFFIX.fullmatch(suffix):
        raise ConfigError(f"{SCHEMA_SUFFIX} is {suffix!r}, which cannot end a schema's name",
                          hint="use '_' followed by lowercase letters, digits or '_', e.g. "
                               "_sales, or unset it")
    return suffix


def _storage_options(env: Mapping[str, str]) -> dict[str, Any]:
    text = env.get(STORAGE_OPTIONS, "").strip()
    return _parse_storage_options(text, STORAGE_OPTIONS) if text else {}


def _storage_options_file(env: Mapping[str, str]) -> dict[str, Any]:
    name = env.get(STORAGE_OPTIONS_FILE, "").strip()
    if not name:
        return {}
    path = Path(name).expanduser()
    try:
        with open(path, "rb") as file:
            data = file.read(MAX_STORAGE_OPTIONS_BYTES + 1)
    except OSError as error:
        raise ConfigError(f"{STORAGE_OPTIONS_FILE}: cannot read {path} ({error.strerror})",
                          hint=f"point {STORAGE_OPTIONS_FILE} at a readable JSON file, or "
                               "unset it") from None
    if len(data) > MAX_STORAGE_OPTIONS_BYTES:
        raise ConfigError(f"{STORAGE_OPTIONS_FILE}: {path} is over {MAX_STORAGE_OPTIONS_BYTES} "
                          "bytes", hint="keep only storage options in it")
    return _parse_storage_options(data.decode("utf-8", errors="replace"),
                                  f"{STORAGE_OPTIONS_FILE} ({path})")


def _parse_storage_options(text: str, source: str) -> dict[str, Any]:
    """A JSON object of options (strings, or booleans and numbers as strings) and URL-scoped
    objects of them; the error never quotes the text, which may hold credentials."""
    try:
        value = json.loads(text)
    except ValueError as error:
        raise ConfigError(f"{source} is not valid JSON (line {getattr(error, 'lineno', '?')}, "
                          f"column {getattr(error, 'colno', '?')})",
                          hint=f"write a JSON object, e.g. {_OPTIONS_EXAMPLE}") from None
    if not isinstance(value, dict):
        raise ConfigError(f"{source} is not a JSON object", hint=f"write e.g. {_OPTIONS_EXAMPLE}")
    settings: dict[str, Any] = {}
    for name, item in value.items():
        if isinstance(item, dict) and "://" in name:
            settings[name] = MappingProxyType({key: _storage_option(key, inner, source)
                                               for key, inner in item.items()})
        else:
            settings[name] = _storage_option(name, item, source)
    return settings


def _storage_option(name: str, value: object, source: str) -> str:
    if "://" in name:
        raise ConfigError(f"{source}: {name!r} holds no object of options",
                          hint=f"scope options to a URL with an object, e.g. {_OPTIONS_EXAMPLE}")
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    raise ConfigError(f"{source}: option {name!r} is not a string, number or boolean",
                      hint=f"give each option a plain value, e.g. {_OPTIONS_EXAMPLE}")
