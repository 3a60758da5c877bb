"""Advisory file locks that let lakemirror runs share a warehouse: one lock per mirrored table,
held by the run that stages, applies or drops it, and a short one for the shared control
tables. Runs on disjoint tables proceed side by side; a run wanting a busy table waits."""

from __future__ import annotations

import fcntl
import hashlib
import re
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import IO

from lakemirror.errors import LockTimeoutError

DEFAULT_LOCK_TIMEOUT = 600.0
CONTROL_LOCK = "_control"  # table names never start with "_"
_POLL_SECONDS = 0.2


@contextmanager
def table_locks(warehouse: Path, names: Sequence[str], *, timeout: float,
                progress: Callable[[str], None]) -> Iterator[None]:
    """Hold the locks of the named tables ('schema.table'), taken in sorted order so that two
    runs never wait for each other; waits at most `timeout` seconds in all."""
    deadline = time.monotonic() + timeout
    with ExitStack() as stack:
        for name in sorted(set(names)):
            stack.enter_context(_lock(warehouse, name, deadline, progress))
        yield


@contextmanager
def control_lock(warehouse: Path, *, timeout: float = DEFAULT_LOCK_TIMEOUT,
                 progress: Callable[[str], None] = lambda message: None) -> Iterator[None]:
    """Hold the lock of the control tables lakemirror rewrites (registry, monitoring)."""
    with _lock(warehouse, CONTROL_LOCK, time.monotonic() + timeout, progress):
        yield


@contextmanager
def _lock(warehouse: Path, name: str, deadline: float,
          progress: Callable[[str], None]) -> Iterator[None]:
    path = warehouse / "_lakemirror" / "locks" / _file_name(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as handle:
        _acquire(handle, name, deadline, progress)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _acquire(handle: IO[str], name: str, deadline: float,
             progress: Callable[[str], None]) -> None:
    waiting = False
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise LockTimeoutError(
                    "another lakemirror run is still working on this table",
                    table=None if name == CONTROL_LOCK else name,
                    hint="wait for that run to finish, then run again, or raise "
                         "--lock-timeout (LAKEMIRROR_LOCK_TIMEOUT)") from None
            if not waiting:
                progress(f"waiting for {_label(name)} (another lakemirror run holds it)")
                waiting = True
            time.sleep(_POLL_SECONDS)


def _file_name(name: str) -> str:
    """The lock file of a table: its name when short and plain, else a digest of it (a name
    from the landing zone may be long or hold any character a file name cannot)."""
    if re.fullmatch(r"[A-Za-z0-9_.]{1,100}", name):
        return f"{name}.lock"
    return f"{hashlib.sha256(name.encode('utf-8', 'surrogateescape')).hexdigest()}.lock"


def _label(name: str) -> str:
    return "the control tables" if name == CONTROL_LOCK else name
