"""One lakemirror writer per warehouse at a time (an advisory file lock)."""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from lakemirror.errors import ConfigError


@contextmanager
def warehouse_lock(warehouse: Path) -> Iterator[None]:
    """Hold the warehouse's lock, or fail at once if another run holds it."""
    path = warehouse / "_lakemirror" / "lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as error:
            raise ConfigError(f"another lakemirror run is using warehouse {warehouse}",
                              hint="wait for it to finish, then run again") from error
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
