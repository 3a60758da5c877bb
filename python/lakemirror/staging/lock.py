"""Locks that let lakemirror runs share a warehouse: one lock per mirrored table, held by the
run that stages, applies or drops it, and a short one for the shared control tables. Runs on
disjoint tables proceed side by side; a run wanting a busy table waits. The warehouse's
storage holds the locks themselves (`WarehouseStorage.try_lock`). A lease (a warehouse in
object storage) can be lost while held, when its heartbeat cannot renew it in time: a run
asks its `HeldLocks.ensure_held` before it commits for a table."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass

from lakemirror.errors import LockLostError, LockTimeoutError
from lakemirror.environment import DEFAULT_LEASE_SECONDS
from lakemirror.storage.warehouse_door import HeldLock, WarehouseStorage

DEFAULT_LOCK_TIMEOUT = 600.0
CONTROL_LOCK = "_control"  # table names never start with "_"
_POLL_SECONDS = 0.2


@dataclass(frozen=True)
class HeldLocks:
    """The table locks one run holds on one warehouse, by table name."""

    held: Mapping[str, HeldLock]

    def ensure_held(self, names: Sequence[str] | None = None) -> None:
        """Raise LockLostError when a lock of the named tables (or any) was lost: the run
        must commit nothing more for those tables."""
        lost = sorted(name for name, held in self.held.items()
                      if (names is None or name in names) and held.lost)
        if lost:
            raise LockLostError(
                f"the lease of {', '.join(lost)} was not renewed in time (a stalled network "
                "or process) and may be another run's now; nothing more was committed for it",
                table=lost[0],
                hint="run again: the next run goes on from what was committed; if this "
                     "recurs, raise LAKEMIRROR_LEASE_SECONDS")


@contextmanager
def table_locks(storage: WarehouseStorage, names: Sequence[str], *, timeout: float,
                progress: Callable[[str], None],
                lease_seconds: float = DEFAULT_LEASE_SECONDS) -> Iterator[HeldLocks]:
    """Hold the locks of the named tables ('schema.table') in the warehouse of `storage`,
    taken in sorted order so that two runs never wait for each other; waits at most `timeout`
    seconds in all. A lease lasts `lease_seconds` unrenewed (LAKEMIRROR_LEASE_SECONDS)."""
    deadline = time.monotonic() + timeout
    with ExitStack() as stack:
        yield HeldLocks({name: stack.enter_context(_lock(storage, name, deadline, progress,
                                                         lease_seconds))
                         for name in sorted(set(names))})


@contextmanager
def control_lock(storage: WarehouseStorage, *, timeout: float = DEFAULT_LOCK_TIMEOUT,
                 progress: Callable[[str], None] = lambda message: None,
                 lease_seconds: float = DEFAULT_LEASE_SECONDS) -> Iterator[None]:
    """Hold the lock of the control tables lakemirror rewrites (registry, monitoring)."""
    with _lock(storage, CONTROL_LOCK, time.monotonic() + timeout, progress, lease_seconds):
        yield


@contextmanager
def _lock(storage: WarehouseStorage, name: str, deadline: float,
          progress: Callable[[str], None], lease_seconds: float) -> Iterator[HeldLock]:
    held = _acquire(storage, name, deadline, progress, lease_seconds)
    try:
        yield held
    finally:
        held.release()


def _acquire(storage: WarehouseStorage, name: str, deadline: float,
             progress: Callable[[str], None], lease_seconds: float) -> HeldLock:
    waiting = False
    while (held := storage.try_lock(name, lease_seconds=lease_seconds)) is None:
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
