"""Locks that let lakemirror runs share a warehouse: one lock per mirrored table, held by the
run that stages, applies or drops it, and a short one for the shared control tables. Runs on
disjoint tables proceed side by side; a run wanting a busy table waits. The warehouse's
storage holds the locks themselves (`WarehouseStorage.try_lock`)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager

from lakemirror.errors import LockTimeoutError
from lakemirror.storage.location import Location
from lakemirror.storage.warehouse import HeldLock, WarehouseStorage, warehouse_storage

DEFAULT_LOCK_TIMEOUT = 600.0
CONTROL_LOCK = "_control"  # table names never start with "_"
_POLL_SECONDS = 0.2


@contextmanager
def table_locks(warehouse: Location, names: Sequence[str], *, timeout: float,
                progress: Callable[[str], None]) -> Iterator[None]:
    """Hold the locks of the named tables ('schema.table'), taken in sorted order so that two
    runs never wait for each other; waits at most `timeout` seconds in all."""
    deadline = time.monotonic() + timeout
    with ExitStack() as stack:
        for name in sorted(set(names)):
            stack.enter_context(_lock(warehouse, name, deadline, progress))
        yield


@contextmanager
def control_lock(warehouse: Location, *, timeout: float = DEFAULT_LOCK_TIMEOUT,
                 progress: Callable[[str], None] = lambda message: None) -> Iterator[None]:
    """Hold the lock of the control tables lakemirror rewrites (registry, monitoring)."""
    with _lock(warehouse, CONTROL_LOCK, time.monotonic() + timeout, progress):
        yield


@contextmanager
def _lock(warehouse: Location, name: str, deadline: float,
          progress: Callable[[str], None]) -> Iterator[None]:
    held = _acquire(warehouse_storage(warehouse), name, deadline, progress)
    try:
        yield
    finally:
        held.release()


def _acquire(storage: WarehouseStorage, name: str, deadline: float,
             progress: Callable[[str], None]) -> HeldLock:
    waiting = False
    while (held := storage.try_lock(name)) is None:
        if time.monotonic() >= deadline:
            raise LockTimeoutError(
                "another lakemirror run is still working on this table",
                table=None if name == CONTROL_LOCK else name,
                hint="wait for that run to finish, then run again, or raise "
                     "--lock-timeout (LAKEMIRROR_LOCK_TIMEOUT)")
        if not waiting:
            progress(f"waiting for {_label(name)} (another lakemirror run holds it)")
            waiting = True
        time.sleep(_POLL_SECONDS)
    return held


def _label(name: str) -> str:
    return "the control tables" if name == CONTROL_LOCK else name
