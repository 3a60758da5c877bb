"""Storage options a user configures beyond the standard environment variables: a JSON object in
LAKEMIRROR_STORAGE_OPTIONS, or in the file LAKEMIRROR_STORAGE_OPTIONS_FILE names (both may be
set: the variable's names win). Its string values apply to every URL; a key that is a URL prefix
(`"s3://bucket"`, `"https://onelake.dfs.fabric.microsoft.com/Sales"`) holds an object of options
for the locations under it only, the longest prefix last, so a landing zone and a warehouse in
different accounts each get their own credentials.

Option names are object_store's, as delta-rs and obstore take them (`account_key`,
`aws_endpoint`, `allow_http`, `timeout`, ...)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from lakemirror.errors import ConfigError

OPTIONS_VARIABLE = "LAKEMIRROR_STORAGE_OPTIONS"
OPTIONS_FILE_VARIABLE = "LAKEMIRROR_STORAGE_OPTIONS_FILE"
MAX_FILE_BYTES = 1 << 20
_EXAMPLE = '{"aws_region": "eu-west-1", "s3://other-bucket": {"aws_profile": "other"}}'


def configured_options(*urls: str) -> dict[str, str]:
    """The configured storage options that apply to a location written as any of `urls`."""
    settings = {**_from_file(), **_from_variable()}
    options = {name: value for name, value in settings.items() if isinstance(value, str)}
    scoped = sorted((prefix for prefix, value in settings.items() if isinstance(value, dict)),
                    key=len)
    for prefix in scoped:
        if any(_under(url, prefix) for url in urls):
            options.update(settings[prefix])
    return options


def _under(url: str, prefix: str) -> bool:
    url, prefix = url.rstrip("/"), prefix.rstrip("/")
    return url == prefix or url.startswith(prefix + "/")


def _from_variable() -> dict[str, Any]:
    text = os.environ.get(OPTIONS_VARIABLE, "").strip()
    return _parse(text, OPTIONS_VARIABLE) if text else {}


def _from_file() -> dict[str, Any]:
    name = os.environ.get(OPTIONS_FILE_VARIABLE, "").strip()
    if not name:
        return {}
    path = Path(name).expanduser()
    try:
        with open(path, "rb") as file:
            data = file.read(MAX_FILE_BYTES + 1)
    except OSError as error:
        raise ConfigError(f"{OPTIONS_FILE_VARIABLE}: cannot read {path} ({error.strerror})",
                          hint=f"point {OPTIONS_FILE_VARIABLE} at a readable JSON file, or "
                               "unset it") from None
    if len(data) > MAX_FILE_BYTES:
        raise ConfigError(f"{OPTIONS_FILE_VARIABLE}: {path} is over {MAX_FILE_BYTES} bytes",
                          hint="keep only storage options in it")
    return _parse(data.decode("utf-8", errors="replace"), f"{OPTIONS_FILE_VARIABLE} ({path})")


def _parse(text: str, source: str) -> dict[str, Any]:
    """A JSON object of options (strings, or booleans and numbers as strings) and URL-scoped
    objects of them; the error never quotes the text, which may hold credentials."""
    try:
        value = json.loads(text)
    except ValueError as error:
        raise ConfigError(f"{source} is not valid JSON (line {getattr(error, 'lineno', '?')}, "
                          f"column {getattr(error, 'colno', '?')})",
                          hint=f"write a JSON object, e.g. {_EXAMPLE}") from None
    if not isinstance(value, dict):
        raise ConfigError(f"{source} is not a JSON object", hint=f"write e.g. {_EXAMPLE}")
    settings: dict[str, Any] = {}
    for name, item in value.items():
        if isinstance(item, dict) and "://" in name:
            settings[name] = {key: _option(key, inner, source) for key, inner in item.items()}
        else:
            settings[name] = _option(name, item, source)
    return settings


def _option(name: str, value: object, source: str) -> str:
    if "://" in name:
        raise ConfigError(f"{source}: {name!r} holds no object of options",
                          hint=f"scope options to a URL with an object, e.g. {_EXAMPLE}")
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    raise ConfigError(f"{source}: option {name!r} is not a string, number or boolean",
                      hint=f"give each option a plain value, e.g. {_EXAMPLE}")

