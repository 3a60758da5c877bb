"""Entry point of the embedded engine's process (`lakemirror engine start`, a run's engine).

Sail listens on a port of a private network (engine.private_net) where the host allows it, else
on a random loopback port; clients reach it only through the front (engine.front) on the
engine's port, which lets through the calls that carry the engine's token
(LAKEMIRROR_ENGINE_TOKEN, set by whoever starts the process). The process works in a folder
that no longer exists (relative paths of a query resolve to nothing). Once
listening it prints one JSON line: its port, Sail's own port, and whether that one is private.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import sys
import tempfile
import threading
import time
from functools import partial
from typing import Any

from lakemirror.engine.access import token_file
from lakemirror.engine.private_net import PrivateNetwork, check_isolation, enter_user_namespace
from lakemirror.engine.sail import DEFAULT_PORT, HOST
from lakemirror.environment import ENGINE_ISOLATION, ENGINE_TOKEN, Settings, read_settings
from lakemirror.errors import EngineError, LakemirrorError


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="0: any free port")
    parser.add_argument("--with-parent", action="store_true",
                        help="stop when stdin closes")
    args = parser.parse_args()
    try:
        settings = read_settings()
        # While this process has one thread: a user namespace, if one is needed, is made now.
        problem = (enter_user_namespace() if settings.engine_isolation != "off" else
                   f"{ENGINE_ISOLATION}=off")
    except LakemirrorError as error:
        sys.exit(f"error: {error}")
    _work_nowhere()
    try:
        _serve(args.port, args.with_parent, settings, problem)
    except (LakemirrorError, OSError) as error:
        sys.exit(f"error: {error}")


def _work_nowhere() -> None:
    """Work in an empty private folder, removed at once: a relative path in a query names
    nothing, and nothing is left behind however the process ends."""
    folder = tempfile.mkdtemp(prefix="lakemirror-engine-")
    os.chdir(folder)
    os.rmdir(folder)


def _serve(port: int, with_parent: bool, settings: Settings, problem: str | None) -> None:
    from pysail.spark import SparkConnectServer

    from lakemirror.engine.front import TokenFront

    if not settings.engine_token:
        raise EngineError(f"{ENGINE_TOKEN} is not set: the engine lets in no one without it",
                          hint="start the engine with `lakemirror engine start`")
    sail = SparkConnectServer(HOST, 0)  # here: its runtime's threads reach the host's network
    network, problem = _private_network(problem)
    warning = check_isolation(settings.engine_isolation, problem)
    inner = _start(sail, network)
    if network is not None and _listens_on_host(inner):
        network, problem = None, f"Sail's port {inner} listens in the host's network"
        warning = check_isolation(settings.engine_isolation, problem)
    if warning:
        print(warning, file=sys.stderr, flush=True)  # in the engine's log
    front = TokenFront(port, settings.engine_token, partial(_connect, inner, network),
                       refusal_file=lambda bound: str(token_file(settings.home, bound)))
    stopped = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    signal.signal(signal.SIGINT, lambda *_: stopped.set())
    _tell_ready({"port": front.port, "inner_port": inner, "private": network is not None,
                 "reason": problem or "", "warning": warning or ""})
    if with_parent:
        threading.Thread(target=_stop_when_stdin_closes, args=(stopped,), daemon=True).start()
    stopped.wait()
    front.stop()
    sail.stop()


def _private_network(problem: str | None) -> tuple[PrivateNetwork | None, str | None]:
    """A private network, unless `problem` (why there can be none) or making it fails; with
    why there is none."""
    if problem is not None:
        return None, problem
    network = PrivateNetwork()
    return (network, None) if network.problem is None else (None, network.problem)


def _start(sail: Any, network: PrivateNetwork | None) -> int:
    """Start Sail listening (in `network` when given); its port."""
    if network is not None:
        network.run(lambda: sail.start(background=True))
    else:
        sail.start(background=True)
    deadline = time.monotonic() + 60
    while sail.listening_address is None:
        if time.monotonic() > deadline:
            raise EngineError("Sail did not start listening in 60 s")
        time.sleep(0.02)
    port: int = sail.listening_address[1]
    return port


def _connect(port: int, network: PrivateNetwork | None) -> socket.socket:
    """A connection to Sail's `port`: from inside its private network when it has one."""
    connection = network.socket() if network is not None else socket.socket()
    try:
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as gRPC's own
        connection.connect((HOST, port))
    except OSError:
        connection.close()
        raise
    return connection


def _listens_on_host(port: int) -> bool:
    """Whether this process listens at `port` in the host's network (the sockets the host
    lists; one in the private network is not among them). Another program listening at the
    same port number on the host is not this process's Sail."""
    import psutil

    return any(connection.status == psutil.CONN_LISTEN and connection.laddr.port == port
               for connection in psutil.Process().net_connections("tcp"))


def _tell_ready(facts: dict[str, Any]) -> None:
    """Print the engine's facts as one JSON line, then let nothing else reach stdout: the
    process that reads it may be gone."""
    print(json.dumps(facts), flush=True)
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _stop_when_stdin_closes(stopped: threading.Event) -> None:
    """The parent holds our stdin: when it exits, for whatever reason, we stop too."""
    sys.stdin.buffer.read()
    stopped.set()


if __name__ == "__main__":
    main()
