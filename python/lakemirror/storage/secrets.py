"""Secrets out of every message: storage options and URL parameters that carry credentials are
remembered when lakemirror reads them, and `redact` replaces them (and any credential-shaped
URL parameter, and a Spark Connect URL's `;token=`) in text before it reaches a log, an error,
JSON output or a generated file."""

from __future__ import annotations

import re
from collections.abc import Mapping

REDACTED = "***"
# Option names (any case, any aws_/azure_/google_ prefix) whose values are credentials.
_SECRET_NAME = re.compile(r"key|secret|token|password|sas|signature|credential", re.IGNORECASE)
# Query parameters of signed URLs: Azure SAS `sig`, S3 presigned `X-Amz-Signature` and friends.
_SIGNED_PARAMETER = re.compile(
    r"(?i)\b(sig|signature|x-amz-signature|x-amz-security-token|x-amz-credential|"
    r"x-goog-signature|x-goog-credential)=([^&\s\"']+)")
# Parameters of a Spark Connect URL (sc://host:port/;token=...;user_id=...) that carry a secret;
# a value ends where the next parameter, a space, a quote or a closing bracket begins; a
# placeholder such as `<token>` in a hint stays.
_CONNECT_PARAMETER = re.compile(
    r"(?i)(;[\w.-]*(?:token|key|secret|password|credential)[\w.-]*=)(?!<\w+>)([^;\s\"'`)\]]+)")
_MIN_LENGTH = 6  # a shorter value would blank out ordinary words wherever it occurs
# Process-wide: a credential any run of the process read stays out of everything it writes.
_known: set[str] = set()


def is_secret_option(name: str) -> bool:
    """Whether a storage option's value is a credential, by its name."""
    return bool(_SECRET_NAME.search(name)) and not name.lower().endswith(("_id", "_type", "_file"))


def remember_secrets(options: Mapping[str, str]) -> None:
    """Remember the credential values among `options`, so `redact` hides them everywhere."""
    for name, value in options.items():
        if is_secret_option(name):
            remember(value)


def remember(secret: str) -> None:
    if len(secret) >= _MIN_LENGTH and secret.lower() not in ("true", "false"):
        _known.add(secret)


def redact(text: str) -> str:
    """`text` without any credential lakemirror has read, nor signed-URL parameters, nor a
    Spark Connect URL's token."""
    for secret in sorted(_known, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    text = _CONNECT_PARAMETER.sub(lambda match: f"{match[1]}{REDACTED}", text)
    return _SIGNED_PARAMETER.sub(lambda match: f"{match[1]}={REDACTED}", text)
