"""Locks that let lakemirror runs share a warehouse: one lock per mirrored table, held by the
run that stages, applies or drops it, and a short one for the shared control tables. Runs on
disjoint tables proceed side by side; a run wanting a busy table waits. The warehouse's
storage holds the locks themselves (`WarehouseStorage.try_lock`). A lease (a warehouse in
object storage) can be lost while held, when its heartbeat cannot renew it in time: a run
asks `ensure_held` before it commits for a table."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager

from lakemirror.errors import LockLostError, LockTimeoutError
from lakemirror.storage.location import Location
from lakemirror.storage.warehouse import warehouse_storage
from lakemirror.storage.warehouse_door import HeldLock, WarehouseStorage

DEFAULT_LOCK_TIMEOUT = 600.0
CONTROL_LOCK = "_control"  # table names never start with "_"
_POLL_SECONDS = 0.2
_held: dict[tuple[str, str], HeldLock] = {}  # this process's locks by (warehouse, name)


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
    _held[str(warehouse), name] = held
    try:
        yield
    finally:
        del _held[str(warehouse), name]
        held.release()


def ensure_held(warehouse: Location, names: Sequence[str] | None = None) -> None:
    """Raise LockLostError when a lock this process holds on the warehouse (of the named
    tables, or any) was lost: its holder must commit nothing more for those tables."""
    lost = sorted(name for (where, name), held in _held.items() if where == str(warehouse)
                  and (names is None or name in names) and held.lost)
    if lost:
        raise LockLostError(
            f"the lease of {', '.join(map(_label, lost))} was not renewed in time (a stalled "
            "network or process) and may be another run's now; nothing more was committed "
            "for it", table=lost[0] if lost[0] != CONTROL_LOCK else None,
            hint="run again: the next run goes on from what was committed; if this recurs, "
                 "raise LAKEMIRROR_LEASE_SECONDS")


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
