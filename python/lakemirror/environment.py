"""The LAKEMIRROR_* environment variables, read once at the edge (the CLI, the Python API, the
dbt plugin, the bench) into one frozen `Settings`; lower layers take the plain values.

This is the only module that reads `os.environ` (but for storage's options and credentials,
still read where a location is parsed: see tests/python/test_settings.py): `read_settings`
parses and checks each variable (a bad value is a ConfigError naming the variable and the fix,
exit code 2), and `process_environment` is the one way to build a child process's environment
from this one's.
A small typed reader rather than pydantic-settings: the variables are few and flat, and each
error must name the variable and its fix in lakemirror's own words.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from lakemirror.errors import ConfigError

DEBUG = "LAKEMIRROR_DEBUG"  # tracebacks instead of clean failures, as `--debug`
ENGINE_LOG = "LAKEMIRROR_LOG"  # set: the embedded engine's own log lines reach stderr
ENGINE_PORT = "LAKEMIRROR_ENGINE_PORT"  # the in-process engine's port; unset: any free one
HOME = "LAKEMIRROR_HOME"  # where the background engine's address file lives
SETTLE_SECONDS = "LAKEMIRROR_SETTLE_SECONDS"
MAX_TEXT_BYTES = "LAKEMIRROR_MAX_TEXT_BYTES"
LEASE_SECONDS = "LAKEMIRROR_LEASE_SECONDS"  # how long an object-store lease lasts unrenewed
MAINTENANCE_HOURS = "LAKEMIRROR_MAINTENANCE_HOURS"
CONNECT_URL = "LAKEMIRROR_CONNECT_URL"  # the `connect` target's server (profiles.yml)
CONNECT_TIMEOUT = "LAKEMIRROR_CONNECT_TIMEOUT"
DELTA_JARS = "LAKEMIRROR_DELTA_JARS"  # the folder of Delta's jars for the `spark` target
STORAGE_OPTIONS = "LAKEMIRROR_STORAGE_OPTIONS"  # storage options, a JSON object
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
DEFAULT_WAREHOUSE_NAME = "default"
_SCHEMA_SUFFIX = re.compile(r"_[a-z0-9_]+")


@dataclass(frozen=True, kw_only=True)
class Settings:
    """Every LAKEMIRROR_* variable lower layers depend on, parsed and checked."""

    debug: bool = False
    engine_log: bool = False
    engine_port: int = 0  # 0: any free port
    home: Path = field(default_factory=lambda: Path.home() / ".lakemirror")  # unset: here
    settle_seconds: float = DEFAULT_SETTLE_SECONDS
    max_text_bytes: int = DEFAULT_MAX_TEXT_BYTES
    lease_seconds: float = DEFAULT_LEASE_SECONDS
    maintenance_hours: float | None = DEFAULT_MAINTENANCE_HOURS  # None: only `maintain`
    connect_url: str = DEFAULT_CONNECT_URL
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    warehouse: str = ""  # unset: ""; the CLI's --warehouse reads it too
    dbt_profiles_dir: Path | None = None
    delta_jars: str | None = None
    warehouse_name: str = DEFAULT_WAREHOUSE_NAME  # checked by codegen.checked_name
    schema_suffix: str = ""  # dbt reads it itself; checked here, before any work


def read_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """The settings `environ` (this process's environment by default) gives."""
    env = os.environ if environ is None else environ
    hours = env.get(MAINTENANCE_HOURS, "").strip()
    return Settings(
        debug=_flag(env, DEBUG),
        engine_log=_flag(env, ENGINE_LOG),
        engine_port=_port(env),
        home=Path(env[HOME]) if env.get(HOME) else Settings().home,
        settle_seconds=env_number(SETTLE_SECONDS, DEFAULT_SETTLE_SECONDS, "seconds", env),
        max_text_bytes=_positive_bytes(env),
        lease_seconds=env_number(LEASE_SECONDS, DEFAULT_LEASE_SECONDS, "seconds", env),
        maintenance_hours=None if hours.lower() == "never" else env_number(
            MAINTENANCE_HOURS, DEFAULT_MAINTENANCE_HOURS, "hours, or never", env),
        connect_url=env.get(CONNECT_URL) or DEFAULT_CONNECT_URL,
        connect_timeout=env_number(CONNECT_TIMEOUT, DEFAULT_CONNECT_TIMEOUT, "seconds", env),
        warehouse=env.get(WAREHOUSE, ""),
        delta_jars=env.get(DELTA_JARS) or None,
        dbt_profiles_dir=Path(env[DBT_PROFILES_DIR]).expanduser() if env.get(DBT_PROFILES_DIR)
        else None,
        warehouse_name=env.get(WAREHOUSE_NAME) or DEFAULT_WAREHOUSE_NAME,
        schema_suffix=_schema_suffix(env))


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
