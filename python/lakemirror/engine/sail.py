"""The embedded engine: a Sail Spark Connect server, in-process or in the background."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from lakemirror.errors import EngineError

DEFAULT_PORT = 50051
HOST = "127.0.0.1"


@dataclass(frozen=True)
class EngineAddress:
    host: str
    port: int

    @property
    def url(self) -> str:
        return f"sc://{self.host}:{self.port}"


class InProcessEngine:
    """A Sail server living as long as this Python process (or until `stop`)."""

    def __init__(self) -> None:
        from pysail.spark import SparkConnectServer

        self._server = SparkConnectServer(HOST, 0)
        self._server.start(background=True)
        host, port = self._server.listening_address
        self.address = EngineAddress(host, port)

    def stop(self) -> None:
        self._server.stop()


def state_file() -> Path:
    return Path(os.environ.get("LAKEMIRROR_HOME", Path.home() / ".lakemirror")) / "engine.json"


def background_engine() -> EngineAddress | None:
    """The address of the engine `lakemirror engine start` left running, if it still answers."""
    try:
        state = json.loads(state_file().read_text())
    except (OSError, ValueError):
        return None
    address = EngineAddress(state["host"], int(state["port"]))
    return address if _answers(address) and _alive(int(state["pid"])) else None


def start_background(port: int = DEFAULT_PORT, *, timeout: float = 30.0) -> EngineAddress:
    """Start a detached Sail server and record it in the state file."""
    running = background_engine()
    if running:
        return running
    address = EngineAddress(HOST, port)
    if _answers(address):
        raise EngineError(f"port {port} is already in use by another program",
                          hint="pass --port with a free port")
    log = state_file().with_suffix(".log")
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "lakemirror.engine.server", "--port", str(port)],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True)
    deadline = time.monotonic() + timeout
    while not _answers(address):
        if process.poll() is not None or time.monotonic() > deadline:
            raise EngineError(f"the embedded engine did not start; see {log}")
        time.sleep(0.1)
    state_file().write_text(json.dumps({"pid": process.pid, "host": HOST, "port": port}))
    return address


def stop_background() -> bool:
    """Stop the background engine; False when none was running."""
    try:
        state = json.loads(state_file().read_text())
    except (OSError, ValueError):
        return False
    pid = int(state["pid"])
    if _alive(pid):
        os.kill(pid, signal.SIGTERM)
        for _ in range(50):
            if not _alive(pid):
                break
            time.sleep(0.1)
    state_file().unlink(missing_ok=True)
    return True


def _answers(address: EngineAddress) -> bool:
    try:
        with socket.create_connection((address.host, address.port), timeout=0.5):
            return True
    except OSError:
        return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True
