"""Numeric settings from environment variables, each checked with an error naming the fix."""

from __future__ import annotations

import os

from lakemirror.errors import ConfigError


def env_number(name: str, default: float, unit: str) -> float:
    """The variable's value, a finite number of `unit` of 0 or more; `default` when unset."""
    value = os.environ.get(name, "").strip()
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
