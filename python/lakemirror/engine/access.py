"""Who may use the embedded engine: its owner, who holds its token.

Each engine lakemirror starts gets a random token, kept in a file only its owner can read
(`<LAKEMIRROR_HOME>/engine-tokens/<port>`) for as long as it runs; its front (engine.front)
refuses every call without it. lakemirror, its dbt plugin and the demo read it there; a user's
own pyspark session passes it in SPARK_CONNECT_AUTHENTICATE_TOKEN."""

from __future__ import annotations

import os
import secrets
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from lakemirror.errors import EngineError

TOKEN_VARIABLE = "SPARK_CONNECT_AUTHENTICATE_TOKEN"  # where pyspark reads a token


def new_token() -> str:
    return secrets.token_urlsafe(32)


def token_file(home: Path, port: int) -> Path:
    """Where the token of the engine at `port` is kept."""
    return home / "engine-tokens" / str(port)


def save_token(home: Path, port: int, token: str) -> Path:
    """Keep `token` for the engine at `port`, readable by this user alone (its folder 0700,
    the file 0600, written whole before it takes the name)."""
    path = token_file(home, port)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.parent.chmod(0o700)
    temporary = path.with_name(f".{port}.{secrets.token_hex(8)}")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(descriptor, "w") as file:
            file.write(token)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return path


def load_token(home: Path, port: int) -> str | None:
    """The token kept for the engine at `port`, or None when none is."""
    try:
        return token_file(home, port).read_text().strip() or None
    except FileNotFoundError:
        return None


def remove_token(home: Path, port: int, token: str | None = None) -> None:
    """Forget the token of the engine at `port` (only `token`, when given: the port may have
    gone to another engine since)."""
    if token is None or load_token(home, port) == token:
        with suppress(FileNotFoundError):
            token_file(home, port).unlink()


def owner_token(home: Path, port: int) -> str:
    """The token of the embedded engine at `port`; EngineError naming the fix without one."""
    token = load_token(home, port)
    if token is None:
        raise EngineError(
            f"the embedded engine at port {port} lets in only its owner, and there is no token "
            f"for it in {token_file(home, port)} (LAKEMIRROR_HOME: {home})",
            hint="start the engine with `lakemirror engine start` with the same LAKEMIRROR_HOME "
                 "(it writes the token there), or point LAKEMIRROR_HOME at the home it was "
                 "started with")
    return token


def refusal(token_file: str) -> str:
    """What a call without the engine's token is told."""
    return (f"this embedded lakemirror engine accepts only its owner's requests: pass the "
            f"token kept in {token_file} as `;token=<token>` in the sc:// URL, or in "
            f"{TOKEN_VARIABLE} (with sc://localhost:<port>)")


def owner_url(port: int, token: str) -> str:
    """A Spark Connect URL that gets into the engine at `port` (pyspark sends a token without
    TLS only to `localhost`)."""
    return f"sc://localhost:{port}/;token={token}"


def pyspark_line(home: Path, port: int) -> str:
    """The shell line that opens the owner's own pyspark session on the engine at `port`."""
    return (f"{TOKEN_VARIABLE}=$(cat {token_file(home, port)}) and "
            f'SparkSession.builder.remote("sc://localhost:{port}")')


@dataclass(frozen=True)
class EngineAccess:
    """How an engine is guarded: by its token always, and by a private network around Sail's
    own port (`private`) where the host allows it (`reason`: why not)."""

    private: bool = False
    reason: str = ""
    inner_port: int = 0  # Sail's own port, behind the front
    warning: str = ""  # what to tell at its start: why it is not private, when it should be

    def describe(self) -> str:
        if self.private:
            return "private network + token (only the engine's owner gets in)"
        return (f"token only ({self.reason}): other local users can reach Sail's own port "
                f"{self.inner_port} directly")
