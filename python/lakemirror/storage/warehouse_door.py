"""What lakemirror's own files in a warehouse are reached through: the `WarehouseStorage`
interface, which the local (`warehouse.LocalWarehouse`) and object-store
(`object_warehouse.ObjectWarehouse`) storages implement, and the locks both take.
`warehouse.warehouse_storage` picks one."""

from __future__ import annotations

import hashlib
import re
from abc import ABC, abstractmethod
from typing import Protocol

from lakemirror.errors import StorageError
from lakemirror.environment import DEFAULT_LEASE_SECONDS

LOCKS = "_lakemirror/locks"


class HeldLock(Protocol):
    """A lock this process holds until `release`; `lost` when it was taken from it (a lease
    that expired unrenewed), after which its holder must not commit."""

    @property
    def lost(self) -> bool: ...

    def release(self) -> None: ...


class WarehouseStorage(ABC):
    """How lakemirror touches its own files in one warehouse, by key.

    Every change is safe to crash in and to repeat: `write_text` replaces a file whole (a
    reader sees the old text or the new), `move` and `remove` finish on the next call when
    cut short.

    Locks (`try_lock`) keep two lakemirror runs, on one machine or several, off the same
    table. Locally they are file locks. A warehouse at a URL, where file locks do not exist,
    takes lease objects `_lakemirror/locks/<name>.lease` instead (`storage.lease`): written
    only by conditional puts (create if absent; take over an expired one by If-Match on the
    version read), renewed by a heartbeat, and written expired on release, so a crashed
    runner's lease expires instead of blocking the table forever.
    """

    @abstractmethod
    def location(self, key: str) -> str:
        """Where `key` is, as a path or URL (for messages, and for libraries that read or
        write the file themselves)."""

    @abstractmethod
    def exists(self, key: str) -> bool:
        """Whether a file or folder is at `key`."""

    @abstractmethod
    def is_folder(self, key: str) -> bool:
        """Whether a folder is at `key` (`""`: the warehouse itself)."""

    @abstractmethod
    def folders(self, key: str) -> list[str]:
        """The names of the folders directly below `key`, sorted; none when it is absent."""

    @abstractmethod
    def files(self, key: str) -> list[str]:
        """The names of the files directly below the folder `key`; none when it is absent
        (OSError when it cannot be listed)."""

    @abstractmethod
    def read_bytes(self, key: str) -> bytes:
        """The content of the file at `key` (OSError when it cannot be read)."""

    @abstractmethod
    def read_text(self, key: str) -> str | None:
        """The text of the file at `key`; None when there is no file."""

    def write_text(self, key: str, text: str) -> None:
        """Replace the file at `key` whole (atomically) with `text`, making its folders."""
        self.write_bytes(key, text.encode("utf-8"))

    @abstractmethod
    def write_bytes(self, key: str, data: bytes) -> None:
        """Replace the file at `key` whole (atomically), making its folders."""

    @abstractmethod
    def create_bytes(self, key: str, data: bytes) -> bool:
        """Write the file at `key` whole (atomically), making its folders, only if no file is
        there (a conditional put, as a Delta commit needs); False when one is."""

    @abstractmethod
    def move(self, source: str, destination: str) -> None:
        """Move the folder `source` to `destination`, replacing what is there; nothing when
        `source` is absent (a move already done)."""

    @abstractmethod
    def remove(self, key: str) -> None:
        """Delete the folder `key` with everything in it."""

    @abstractmethod
    def remove_empty(self, key: str, up_to: str) -> None:
        """Remove the folder `key` and its parents below `up_to` while they are empty."""

    @abstractmethod
    def try_lock(self, name: str, *,
                 lease_seconds: float = DEFAULT_LEASE_SECONDS) -> HeldLock | None:
        """Take the lock `name` ('schema.table', or `_control`) if no one holds it, without
        waiting; None when another holder has it. A lease (object storage) lasts
        `lease_seconds` unrenewed."""


def key_segments(key: str) -> list[str]:
    """The names along `key`, empty ones dropped (`/a//b` is `a/b`); a StorageError when one is
    '.' or '..', which would name a file outside the warehouse (or one file by two keys)."""
    segments = [segment for segment in key.split("/") if segment]
    if any(segment in (".", "..") for segment in segments):
        raise StorageError(f"the warehouse key {key!r} holds a '.' or '..' segment, which could "
                           "reach outside the warehouse; nothing was read or written",
                           hint="name files below the warehouse by plain '/'-separated names")
    return segments


def lock_file_name(name: str) -> str:
    """The file (or lease object) name of a lock: the table's name when short and plain, else
    a digest of it (a name from the landing zone may be long or hold any character)."""
    if re.fullmatch(r"[A-Za-z0-9_.]{1,100}", name):
        return name
    return hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()
