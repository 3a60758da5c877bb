"""The embedded engine: a Sail Spark Connect server, in-process or in the background."""

from __future__ import annotations

import hashlib
import json
import select
import signal
import socket
import subprocess
import sys
import tempfile
import weakref
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any

import psutil

from lakemirror.engine.access import (
    EngineAccess,
    new_token,
    owner_url,
    remove_token,
    save_token,
)
from lakemirror.errors import EngineError
from lakemirror.environment import ENGINE_PORT, ENGINE_TOKEN, process_environment

DEFAULT_PORT = 50051
HOST = "127.0.0.1"


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
    message, and shown on stderr only when asked for (`show_log`: `--debug`, `LAKEMIRROR_LOG`).
    `environment` is set in its process besides this one's: Sail reads object-store settings
    only there. It lets in only the holder of its `token`, kept in `home` while it runs
    (engine.access); without a home, only in this object."""

    def __init__(self, *, home: Path | None = None, timeout: float = 60.0,
                 environment: Mapping[str, str] | None = None, port: int = 0,
                 show_log: bool = False) -> None:
        """`port`: the one to listen on (LAKEMIRROR_ENGINE_PORT's), 0 for any free one."""
        self.token = new_token()
        self.home = home  # where its token is kept while it runs (None: nowhere)
        self._forget: weakref.finalize[Any, Any] | None = None  # its token, once kept
        self._log = tempfile.TemporaryFile()
        self._process = subprocess.Popen(
            [sys.executable, "-m", "lakemirror.engine.server", "--port", str(port),
             "--with-parent"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=None if show_log else self._log,
            env=process_environment({**(environment or {}), ENGINE_TOKEN: self.token}))
        facts = _ready_facts(self._process, timeout)
        if facts is None:
            self.kill()
            reason = self.exit_reason()
            raise EngineError(f"the embedded engine did not start: {reason}",
                              hint=f"port {port} is taken: unset {ENGINE_PORT} or give it a "
                                   "free port" if "Address already in use" in reason else
                                   "check that pysail is installed (make install)")
        self.address = EngineAddress(HOST, int(facts["port"]))
        self.access = _access(facts)
        if self.access.warning:
            print(self.access.warning, file=sys.stderr, flush=True)
        if home is not None:
            save_token(home, self.address.port, self.token)
            # forgotten when this engine is killed, or at the latest when this process exits
            self._forget = weakref.finalize(self, remove_token, home, self.address.port,
                                            self.token)

    @property
    def url_with_token(self) -> str:
        """A Spark Connect URL that gets in."""
        return owner_url(self.address.port, self.token)

    @property
    def pid(self) -> int:
        return self._process.pid

    def alive(self) -> bool:
        return self._process.poll() is None

    def kill(self) -> None:
        if self.alive():
            self._process.kill()
        self._process.wait()
        if self._forget is not None:
            self._forget()

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


def _ready_facts(process: subprocess.Popen[bytes], timeout: float) -> dict[str, Any] | None:
    """The facts the engine process prints once it listens (engine.server), or None when it
    ended or said nothing within `timeout` seconds."""
    stdout: IO[bytes] | None = process.stdout
    assert stdout is not None
    ready, _, _ = select.select([stdout], [], [], timeout)
    line = stdout.readline() if ready else b""
    try:
        facts = json.loads(line) if line else None
    except ValueError:
        return None
    return facts if isinstance(facts, dict) and "port" in facts else None


def _access(facts: Mapping[str, Any]) -> EngineAccess:
    return EngineAccess(private=bool(facts.get("private")), reason=str(facts.get("reason", "")),
                        inner_port=int(facts.get("inner_port", 0)),
                        warning=str(facts.get("warning", "")))


def state_file(home: Path) -> Path:
    """Where the background engine's address is kept, in lakemirror's home (LAKEMIRROR_HOME)."""
    return home / "engine.json"


@dataclass(frozen=True)
class _Record:
    """The state file's record of the background engine."""

    pid: int
    started: float  # its process's start time: a later process given the same pid is not it
    address: EngineAddress
    storage: str  # storage_fingerprint of its settings
    project: str  # the dbt project folder it was started for; "" when not recorded
    access: EngineAccess | None  # how it is guarded; None when not recorded


def _read_record(home: Path) -> _Record | None:
    """The state file's record; None without one, and for an unreadable or incomplete one
    (an older lakemirror's, without the start time), which names no engine to trust."""
    try:
        state = json.loads(state_file(home).read_text())
        return _Record(int(state["pid"]), float(state["started"]),
                       EngineAddress(str(state["host"]), int(state["port"])),
                       str(state.get("storage", "")), str(state.get("project", "")),
                       _access(state["access"]) if isinstance(state.get("access"), dict)
                       else None)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _engine_process(record: _Record) -> psutil.Process | None:
    """The recorded engine's process while it runs: the pid's process only if it started at
    the recorded time (the pid of an engine that ended may be another program's now)."""
    try:
        process = psutil.Process(record.pid)
        if process.create_time() != record.started:
            return None
    except (psutil.Error, ValueError):
        return None
    return process if _runs(process) else None


def background_engine(home: Path) -> EngineAddress | None:
    """The address of the engine `lakemirror engine start` left running, if it still answers."""
    running = background_process(home)
    return running.address if running else None


def storage_fingerprint(environment: Mapping[str, str]) -> str:
    """A digest of an engine's storage settings (its object-store variables), kept in the
    state file to tell which warehouse's settings the background engine has, without them."""
    if not environment:
        return ""
    return hashlib.sha256(json.dumps(sorted(environment.items())).encode()).hexdigest()


def background_storage(home: Path) -> str | None:
    """The storage fingerprint the background engine was started with ("" for none), or None
    when no background engine runs."""
    running = background_process(home)
    return running.storage if running else None


def start_background(port: int = DEFAULT_PORT, *, home: Path, timeout: float = 30.0,
                     environment: Mapping[str, str] | None = None,
                     project: Path | None = None) -> EngineAddress:
    """Start a detached Sail server with `environment` (a warehouse's storage settings) set
    in its process, and record it, and the dbt `project` it is started for, in the state
    file. A running one is kept when it has the same settings, else refused."""
    fingerprint = storage_fingerprint(environment or {})
    running = background_process(home)
    if running and running.storage == fingerprint:
        return running.address
    if running:
        raise EngineError(f"the background engine at port {running.address.port}"
                          f"{running.started_for} runs with "
                          "other storage settings than this warehouse's",
                          hint="stop it with `lakemirror engine stop`, then start it again "
                               "with this --warehouse")
    address = EngineAddress(HOST, port)
    if answers(address):
        raise EngineError(f"port {port} is already in use by another program",
                          hint="pass --port with a free port")
    log = state_file(home).with_suffix(".log")
    log.parent.mkdir(parents=True, exist_ok=True)
    token = new_token()
    save_token(home, port, token)
    with log.open("ab") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "lakemirror.engine.server", "--port", str(port)],
            stdout=subprocess.PIPE, stderr=out, stdin=subprocess.DEVNULL,
            start_new_session=True,
            env=process_environment({**(environment or {}), ENGINE_TOKEN: token}))
    facts = _ready_facts(process, timeout)
    assert process.stdout is not None
    process.stdout.close()
    if facts is None:
        process.kill()
        remove_token(home, port, token)
        raise EngineError(f"the embedded engine did not start; see {log}")
    state_file(home).write_text(json.dumps({
        "pid": process.pid, "started": psutil.Process(process.pid).create_time(), "host": HOST,
        "port": port, "storage": fingerprint, "project": str(project or ""),
        "access": asdict(_access(facts))}))
    return address


class BackgroundProcess:
    """The background engine's process, as the watchdog sees it, and the storage fingerprint
    it was started with."""

    def __init__(self, process: psutil.Process, address: EngineAddress, storage: str,
                 project: str = "", access: EngineAccess | None = None) -> None:
        self.process = process
        self.address = address
        self.storage = storage
        self.project = project  # the dbt project folder it was started for, "" if unknown
        self.access = access  # how it is guarded; None when its state file does not say

    @property
    def started_for(self) -> str:
        """` (started for the project <folder>)`, for messages ("" when unknown)."""
        return f" (started for the project {self.project})" if self.project else ""

    def serves_another_project(self, project: Path) -> bool:
        """Whether it was started for a project other than `project`."""
        return _another_project(self.project, project)

    def alive(self) -> bool:
        return _runs(self.process)

    def kill(self) -> None:
        with suppress(psutil.NoSuchProcess):  # psutil signals no later process given its pid
            self.process.kill()

    def exit_reason(self) -> str:
        return (f"the background engine (pid {self.process.pid}) stopped; `lakemirror engine "
                "start` starts it again")


def background_process(home: Path) -> BackgroundProcess | None:
    """The engine `lakemirror engine start` left running, if it still runs and answers."""
    record = _read_record(home)
    process = _engine_process(record) if record else None
    if record is None or process is None or not answers(record.address):
        return None
    return BackgroundProcess(process, record.address, record.storage, record.project,
                             record.access)


def stop_background(home: Path, *, timeout: float = 5.0, project: Path | None = None) -> bool:
    """Stop the background engine (SIGTERM, then SIGKILL when it still runs `timeout` seconds
    later) and remove the state file; False when it named no running engine. Asked from a
    `project` other than the one it was started for, refused: it serves that one's dbt."""
    record = _read_record(home)
    process = _engine_process(record) if record else None
    if process is not None and record is not None and _another_project(record.project, project):
        raise EngineError(
            f"the background engine at port {record.address.port} was started for the "
            f"project {record.project}, not for this one ({project}); it was left running",
            hint=f"stop it from that project (`lakemirror engine stop --project-dir "
                 f"{record.project}`) once its dbt no longer needs it")
    if process is not None:
        with suppress(psutil.NoSuchProcess):
            process.terminate()
            if psutil.wait_procs([process], timeout=timeout)[1]:
                process.kill()
                psutil.wait_procs([process], timeout=timeout)
    state_file(home).unlink(missing_ok=True)
    if process is not None and record is not None:
        remove_token(home, record.address.port)
    return process is not None


def _another_project(recorded: str, project: Path | None) -> bool:
    """Whether an engine started for the project folder `recorded` ("" when not recorded)
    serves another project than `project` (None: no project asked)."""
    return bool(recorded) and project is not None and Path(recorded) != project


def answers(address: EngineAddress) -> bool:
    """Whether something accepts connections at `address` (at once on loopback)."""
    try:
        with socket.create_connection((address.host, address.port), timeout=0.5):
            return True
    except OSError:
        return False


def _runs(process: psutil.Process) -> bool:
    """Whether the process still runs: not ended, not a zombie, its pid not given to another."""
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
