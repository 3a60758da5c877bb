"""Spark Connect sessions that give up on a lost server in bounded time.

pyspark's client retries a server that does not answer for about ten minutes (its default
policy): in the statement that met it, and in the ReleaseExecute calls it sends from a thread
pool that the interpreter joins at exit, so a stopped server would hang the run and then the
process's exit. The sessions lakemirror makes (dbt-spark reuses the one made before dbt
connects) retry for LAKEMIRROR_CONNECT_TIMEOUT seconds at most, stop retrying at once when
their server is known lost, and at exit the releases still queued are dropped: they only tell
the server it may free results, which it also does on its own for abandoned operations.
"""

from __future__ import annotations

import math
import threading
import time
import urllib.parse
import weakref
from typing import TYPE_CHECKING, Any

from lakemirror.engine.release_pool import guard_release_pool
from lakemirror.engine.sail import EngineAddress, answers

if TYPE_CHECKING:
    from lakemirror.engine.deadline import Deadline

SPARK_CONNECT_PORT = 15002  # Spark Connect's port when the URL names none
_JITTER_MS = 500  # pyspark adds up to this to each wait of 2 s or more
_MAX_WAIT_MS = 4000  # a retry's longest wait (pyspark's: 60 s)
_LOST_AFTER = 2  # checks a second apart that found nothing listening: the server is lost

# Process-wide, as pyspark's sessions and the release threads joined at exit are: the clients
# whose retries lakemirror bounds, whether the exit hook is registered, and a lock for both.
_clients: weakref.WeakSet[Any] = weakref.WeakSet()
_exit_hook: list[bool] = []
_clients_lock = threading.Lock()  # two runs' threads bound clients, a watchdog gives them up


def server_address(url: str) -> EngineAddress | None:
    """The host and port of an sc:// URL, or None when it is not one."""
    if not url.startswith("sc://"):
        return None
    parsed = urllib.parse.urlparse("http" + url.removeprefix("sc"))
    try:
        return EngineAddress(parsed.hostname or "localhost", parsed.port or SPARK_CONNECT_PORT)
    except ValueError:  # not a port number: pyspark's own error says so
        return None


def connect_session(url: str, *, timeout: float, deadline: Deadline | None = None,
                    token: str | None = None) -> Any:
    """This process's Spark Connect session (pyspark's default, which dbt-spark's
    `getOrCreate` then uses), made for `url` unless one is open, its retries bounded to
    `timeout` seconds (LAKEMIRROR_CONNECT_TIMEOUT), each of its calls given the `deadline`
    (engine.deadline) when it is made here, and a statement its server lost named as such
    (engine.lost_statement). With a `token`, `url` is an embedded engine's on loopback,
    reached as its owner (engine.owner_channel)."""
    from pyspark.sql.connect.client import DefaultChannelBuilder
    from pyspark.sql.connect.session import SparkSession

    from lakemirror.engine.lost_statement import LostStatements

    session = SparkSession._get_default_session()
    if session is None:
        address = server_address(url)
        channel: DefaultChannelBuilder
        if token is not None and address is not None:
            from lakemirror.engine.owner_channel import OwnerChannelBuilder

            channel = OwnerChannelBuilder(address.host, address.port, token)
        else:
            channel = DefaultChannelBuilder(url)
        if deadline is not None:
            channel.add_interceptor(deadline)
        channel.add_interceptor(LostStatements(channel.endpoint))
        session = SparkSession.builder.channelBuilder(channel).create()
    bound_retries(session.client, timeout)
    return session


def bound_retries(client: Any, timeout: float) -> None:
    """Retry an unanswering server for `timeout` seconds at most (pyspark's backoff, its
    waits capped at 4 s)."""
    from pyspark.sql.connect.client.retries import DefaultPolicy

    with _clients_lock:
        if client in _clients:
            return
        client.set_retry_policies([DefaultPolicy(max_retries=_retries_within(timeout),
                                                 max_backoff=_MAX_WAIT_MS)])
        _clients.add(client)
        _drop_releases_at_exit()
        guard_release_pool()


def _retries_within(seconds: float) -> int:
    """How many retries of pyspark's default backoff (50 ms, times 4, capped) fit in
    `seconds`, jitter included; at least one."""
    retries, spent, wait = 0, 0.0, 50.0
    while True:
        step = wait + (_JITTER_MS if wait >= 2000 else 0)
        if spent + step > seconds * 1000:
            return max(retries, 1)
        retries, spent, wait = retries + 1, spent + step, min(wait * 4, _MAX_WAIT_MS)


def give_up(address: EngineAddress | None = None) -> None:
    """Make the Spark Connect clients of the server at `address` (all, without one) stop
    retrying: what they send next fails at once, and so do retries under way after their
    current wait."""
    for client in _sessions_clients():
        if address is None or _server_of(client) == address:
            for policy in client.get_retry_policies():
                policy.max_retries = 0


def _sessions_clients() -> list[Any]:
    """The clients lakemirror bounded and pyspark's default and active sessions' clients."""
    import sys

    with _clients_lock:
        clients = list(_clients)
    if "pyspark.sql.connect.session" in sys.modules:
        from pyspark.sql.connect.session import SparkSession

        for session in (SparkSession._default_session, SparkSession.getActiveSession()):
            if session is not None and session.client not in clients:
                clients.append(session.client)
    return clients


def close_connect_sessions() -> None:
    """End this process's Spark Connect sessions (the next dbt invocation starts clean, like
    a new process); those whose server went away without waiting for it."""
    import sys

    if "pyspark.sql.connect.session" not in sys.modules:
        return
    from pyspark.sql.connect.session import SparkSession

    for session in (SparkSession.getActiveSession(), SparkSession._get_default_session()):
        if session is None or session.is_stopped:
            continue
        address = _server_of(session.client)
        if address is not None and not answers(address):
            give_up(address)
        session.stop()


def _server_of(client: Any) -> EngineAddress | None:
    """The address a Spark Connect client connects to (its channel builder's host:port)."""
    endpoint = getattr(client._builder, "endpoint", None)
    return server_address(f"sc://{endpoint}") if isinstance(endpoint, str) else None


def _drop_releases_at_exit() -> None:
    """Before the interpreter joins pyspark's release threads at exit, stop the clients'
    retries and cancel the releases still queued. Registered with threading's own exit hook
    (what concurrent.futures uses to join its pools): `atexit` runs only after the join."""
    if _exit_hook:
        return
    _exit_hook.append(True)

    def drop() -> None:
        from pyspark.sql.connect.client.reattach import (
            ExecutePlanResponseReattachableIterator as Iterator,
        )

        give_up()
        pool = Iterator._release_thread_pool_instance
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    threading._register_atexit(drop)  # type: ignore[attr-defined]


def connect_server(url: str) -> RemoteServer | None:
    """The `connect` target's server (`url`: LAKEMIRROR_CONNECT_URL's), to watch; None for a
    URL that is not sc://host:port (pyspark's own error then says what is wrong)."""
    address = server_address(url)
    return RemoteServer(address) if address is not None else None


class RemoteServer:
    """A Spark Connect server lakemirror does not run, as the watchdog sees it: lost once
    nothing has accepted a connection at its address for a couple of checks a second apart
    (a remote server is not probed more often)."""

    def __init__(self, address: EngineAddress) -> None:
        self.address = address
        self._misses = 0
        self._checked = -math.inf

    def alive(self) -> bool:
        now = time.monotonic()
        if now - self._checked >= 1.0:
            self._checked = now
            self._misses = 0 if answers(self.address) else self._misses + 1
        return self._misses < _LOST_AFTER

    def kill(self) -> None:
        """Nothing to kill: the server is not ours."""

    def exit_reason(self) -> str:
        return (f"the Spark Connect server at {self.address.host}:{self.address.port} "
                "stopped accepting connections")
