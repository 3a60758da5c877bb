"""The embedded engine: a Sail Spark Connect server, in-process or in the background."""

from __future__ import annotations

import hashlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from lakemirror.errors import DEBUG_VARIABLE, EngineError

DEFAULT_PORT = 50051
PORT_VARIABLE = "LAKEMIRROR_ENGINE_PORT"  # the in-process engine's port when set, else any free one
HOST = "127.0.0.1"
LOG_VARIABLE = "LAKEMIRROR_LOG"  # set (or --debug): the engine's own log lines reach stderr


def engine_log_shown() -> bool:
    return bool(os.environ.get(LOG_VARIABLE) or os.environ.get(DEBUG_VARIABLE))


@dataclass(frozen=True)
class EngineAddress:
    host: str
    port: int

    @property
    def url(self) -> str:
        return f"sc://{self.host}:{self.port}"


class ChildEngine:
    """A Sail server in a child process: a crash inside the engine (a segfault in native
    code) then fails the tables it was working on instead of this process, and the child
    ends with this process (it exits when its stdin closes). Its log is kept for the error
    message, and shown only when asked for (`--debug`, `LAKEMIRROR_LOG`). `environment` is
    set in its process besides this one's: Sail reads object-store settings only there."""

    def __init__(self, *, timeout: float = 60.0, environment: Mapping[str, str] | None = None,
                 port: int | None = None) -> None:
        """`port`: LAKEMIRROR_ENGINE_PORT's when None, else any free one (0)."""
        self._log = tempfile.TemporaryFile()
        if port is None:
            port = configured_port()
        self._process = subprocess.Popen(
            [sys.executable, "-m", "lakemirror.engine.server", "--port", str(port),
             "--with-parent"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=None if engine_log_shown() else self._log,
            env={**os.environ, **environment} if environment else None)
        assert self._process.stdout is not None
        ready, _, _ = select.select([self._process.stdout], [], [], timeout)
        line = self._process.stdout.readline() if ready else b""
        if not line:
            self.kill()
            reason = self.exit_reason()
            raise EngineError(f"the embedded engine did not start: {reason}",
                              hint=f"port {port} is taken: unset {PORT_VARIABLE} or give it a "
                                   "free port" if "Address already in use" in reason else
                                   "check that pysail is installed (make install)")
        self.address = EngineAddress(HOST, int(json.loads(line)["port"]))

    @property
    def pid(self) -> int:
        return self._process.pid

    def alive(self) -> bool:
        return self._process.poll() is None

    def kill(self) -> None:
        if self.alive():
            self._process.kill()
        self._process.wait()

    def exit_reason(self) -> str:
        """How the engine ended, with the last line it logged."""
        code = self._process.poll()
        how = ("it is still running" if code is None else
               f"it was killed by {signal.Signals(-code).name}" if code < 0 else
               f"it exited with code {code}")
        self._log.seek(0)
        lines = [line for line in self._log.read().decode("utf-8", "replace").splitlines()
                 if line.strip()]
        return how + (f"; its last log line: {lines[-1][-300:]}" if lines else "")


def configured_port() -> int:
    """The port LAKEMIRROR_ENGINE_PORT asks the in-process engine to take, else 0 (any)."""
    return int(os.environ.get(PORT_VARIABLE) or 0)


def state_file() -> Path:
    return Path(os.environ.get("LAKEMIRROR_HOME", Path.home() / ".lakemirror")) / "engine.json"


def background_engine() -> EngineAddress | None:
    """The address of the engine `lakemirror engine start` left running, if it still answers."""
    try:
        state = json.loads(state_file().read_text())
    except (OSError, ValueError):
        return None
    address = EngineAddress(state["host"], int(state["port"]))
    return address if answers(address) and _alive(int(state["pid"])) else None


def storage_fingerprint(environment: Mapping[str, str]) -> str:
    """A digest of an engine's storage settings (its object-store variables), kept in the
    state file to tell which warehouse's settings the background engine has, without them."""
    if not environment:
        return ""
    return hashlib.sha256(json.dumps(sorted(environment.items())).encode()).hexdigest()


def background_storage() -> str | None:
    """The storage fingerprint the background engine was started with ("" for none), or None
    when no background engine runs."""
    if background_engine() is None:
        return None
    return str(json.loads(state_file().read_text()).get("storage", ""))


def start_background(port: int = DEFAULT_PORT, *, timeout: float = 30.0,
                     environment: Mapping[str, str] | None = None) -> EngineAddress:
    """Start a detached Sail server with `environment` (a warehouse's storage settings) set
    in its process, and record it in the state file. A running one is kept when it has the
    same settings, else refused."""
    fingerprint = storage_fingerprint(environment or {})
    running = background_engine()
    if running and background_storage() == fingerprint:
        return running
    if running:
        raise EngineError(f"the background engine at port {running.port} runs with other "
                          "storage settings than this warehouse's",
                          hint="stop it with `lakemirror engine stop`, then start it again "
                               "with this --warehouse")
    address = EngineAddress(HOST, port)
    if answers(address):
        raise EngineError(f"port {port} is already in use by another program",
                          hint="pass --port with a free port")
    log = state_file().with_suffix(".log")
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "lakemirror.engine.server", "--port", str(port)],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True, env={**os.environ, **(environment or {})})
    deadline = time.monotonic() + timeout
    while not answers(address):
        if process.poll() is not None or time.monotonic() > deadline:
            raise EngineError(f"the embedded engine did not start; see {log}")
        time.sleep(0.1)
    state_file().write_text(json.dumps({"pid": process.pid, "host": HOST, "port": port,
                                        "storage": fingerprint}))
    return address


class BackgroundProcess:
    """The background engine's process, as the watchdog sees it."""

    def __init__(self, pid: int, address: EngineAddress) -> None:
        self.pid = pid
        self.address = address

    def alive(self) -> bool:
        return _alive(self.pid)

    def kill(self) -> None:
        if self.alive():
            os.kill(self.pid, signal.SIGKILL)

    def exit_reason(self) -> str:
        return (f"the background engine (pid {self.pid}) stopped; `lakemirror engine start` "
                "starts it again")


def background_process() -> BackgroundProcess | None:
    """The background engine's process, if one runs."""
    address = background_engine()
    if address is None:
        return None
    return BackgroundProcess(int(json.loads(state_file().read_text())["pid"]), address)


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


def answers(address: EngineAddress) -> bool:
    """Whether something accepts connections at `address` (at once on loopback)."""
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
