"""Plain `dbt` on the embedded engine: a command that would connect to an engine that is not
running stops at once, naming `lakemirror engine start`.

The embedded target reaches the engine over Spark Connect, whose client retries a server that
does not answer for about ten minutes without a word. dbt imports every installed `dbt_*` module
and sets up the plugins it lists before it connects (dbt-core's plugin manager): lakemirror's
(`dbt_lakemirror`) checks there that the engine answers. It checks only a target marked as the
embedded engine's (`spark.lakemirror.engine: embedded` in its server_side_parameters), so the
`connect` target keeps the client's retries, which ride out a remote server's restart."""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from typing import Any

from dbt.plugins.manager import dbtPlugin

from lakemirror.engine.sail import EngineAddress, answers, background_engine
from lakemirror.errors import EngineError

ENGINE_MARK = "spark.lakemirror.engine"
SPARK_CONNECT_PORT = 15002  # Spark Connect's port when the URL names none
# The dbt commands that load a project without connecting to its engine.
_OFFLINE_COMMANDS = frozenset({"clean", "deps", "list", "ls", "parse", "serve"})


def embedded_engine(parameters: Mapping[str, str]) -> EngineAddress | None:
    """Where a target marked as the embedded engine's connects (its `spark.remote`), else None."""
    remote = parameters.get("spark.remote", "")
    if parameters.get(ENGINE_MARK) != "embedded" or not remote.startswith("sc://"):
        return None
    url = urllib.parse.urlparse("http" + remote.removeprefix("sc"))
    try:
        return EngineAddress(url.hostname or "localhost", url.port or SPARK_CONNECT_PORT)
    except ValueError:  # not a port number: pyspark's own error says so
        return None


def check_embedded_engine(parameters: Mapping[str, str]) -> None:
    """Raise EngineError when the target is the embedded engine's and nothing answers there."""
    address = embedded_engine(parameters)
    if address is None or answers(address):
        return
    running = background_engine()
    hint = (f"a background engine runs at port {running.port}: export "
            f"LAKEMIRROR_ENGINE_PORT={running.port}" if running is not None else
            "start it with `lakemirror engine start` (`lakemirror engine stop` ends it), or "
            "run `lakemirror run`, which starts an engine of its own")
    raise EngineError(f"the embedded engine is not running: nothing answers at "
                      f"{address.host}:{address.port} (LAKEMIRROR_ENGINE_HOST, "
                      "LAKEMIRROR_ENGINE_PORT)", hint=hint)


def invocation_state() -> dict[str, Any]:
    """What dbt's CLI (and dbtRunner) keeps of the command running: its flags, profile and
    project (`ctx.obj`); empty without one (dbt used as a library)."""
    import click

    context = click.get_current_context(silent=True)
    return context.obj if context is not None and isinstance(context.obj, dict) else {}


class EngineCheck(dbtPlugin):
    """dbt's plugin: before a command that connects, the embedded engine answers, or dbt stops
    with the fix. dbt hands a plugin only the project's name: the profile and command come
    from the click context dbt's CLI (and dbtRunner) runs the command in; without one (dbt
    used as a library) there is nothing to check."""

    def initialize(self) -> None:
        state = invocation_state()
        profile, flags = state.get("profile"), state.get("flags")
        if profile is None or getattr(flags, "WHICH", None) in _OFFLINE_COMMANDS:
            return
        check_embedded_engine(getattr(profile.credentials, "server_side_parameters", None) or {})
