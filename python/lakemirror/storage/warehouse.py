"""Where the warehouse is and how to touch it: the one module that reads, writes, lists, moves
and locks lakemirror's own files in a warehouse (the landing-zone record, the dropped area,
locks, run state). Delta tables are read and written by deltalake and the engine, by location.

Everything else names a file or folder of the warehouse by its key, a `/`-separated path below
the warehouse's root (`_lakemirror/landing_zone.json`), and asks `WarehouseStorage`: keys fit a
folder and an object store's prefix alike: `LocalWarehouse` for a folder, `ObjectWarehouse`
(`storage.object_warehouse`) for a warehouse at a URL (`s3://…`, `az://…`, `abfss://…`).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
from abc import ABC, abstractmethod
from pathlib import Path
from typing import IO, Protocol

from lakemirror.errors import ConfigError, StorageError
from lakemirror.storage.location import ObjectLocation, parse_location, redact_url

SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]+:")  # `s3:`; one letter would be a drive
FIX = ("pass a local folder or an object store's URL as --warehouse (LAKEMIRROR_WAREHOUSE): "
       "./warehouse, s3://<bucket>/<prefix>, az://<container>/<prefix>, abfss://<container>@"
       "<account>.dfs.core.windows.net/<prefix> or gs://<bucket>/<prefix>")
LOCKS = "_lakemirror/locks"


def warehouse_location(given: str | Path | ObjectLocation) -> Path | ObjectLocation:
    """The warehouse `given` names: a folder (a path or a file:// URL, made absolute with its
    links resolved) or a place in object storage (an `s3://`, `az://`, `abfss://`, `gs://` or
    OneLake URL, with its configured storage options). A URL of no store lakemirror knows is a
    ConfigError, and so is a Path one was folded into (`Path("s3://b/w")` is `s3:/b/w`): taken
    for a relative path it would become a local folder named `s3:`."""
    if isinstance(given, ObjectLocation):
        return given
    text = str(given)
    try:
        location = parse_location(text)
    except ConfigError as error:
        raise ConfigError(f"the warehouse: {error.message}; nothing was written",
                          hint=error.hint or FIX) from None
    if isinstance(location, ObjectLocation):
        return location
    if not text.lower().startswith("file://") and SCHEME.fullmatch(
            Path(text).parts[0] if text else ""):
        raise ConfigError(f"the warehouse {redact_url(text)} is a URL that lost a '/' (a path "
                          "cannot hold '//'); nothing was written", hint=FIX)
    return location.resolve()


def warehouse_storage(root: Path | ObjectLocation) -> WarehouseStorage:
    """The storage of the warehouse at `root`, a folder or an object-store location (or of a
    folder in it, such as a table's: keys are then below that folder)."""
    if isinstance(root, ObjectLocation):
        from lakemirror.storage.object_warehouse import ObjectWarehouse

        return ObjectWarehouse(root)
    return LocalWarehouse(root)


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
    def try_lock(self, name: str) -> HeldLock | None:
        """Take the lock `name` ('schema.table', or `_control`) if no one holds it, without
        waiting; None when another holder has it."""


class LocalWarehouse(WarehouseStorage):
    """A warehouse in a local folder; locks are advisory file locks (flock)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, key: str) -> Path:
        return self.root.joinpath(*key_segments(key))

    def location(self, key: str) -> str:
        return str(self._path(key))

    def exists(self, key: str) -> bool:
        return self._path(key).exists()

    def is_folder(self, key: str) -> bool:
        return self._path(key).is_dir()

    def folders(self, key: str) -> list[str]:
        folder = self._path(key)
        if not folder.is_dir():
            return []
        return sorted(entry.name for entry in folder.iterdir() if entry.is_dir())

    def files(self, key: str) -> list[str]:
        try:
            with os.scandir(self._path(key)) as entries:
                return sorted(entry.name for entry in entries if entry.is_file())
        except FileNotFoundError:
            return []

    def read_bytes(self, key: str) -> bytes:
        return self._path(key).read_bytes()

    def read_text(self, key: str) -> str | None:
        path = self._path(key)
        return path.read_text("utf-8") if path.is_file() else None

    def write_bytes(self, key: str, data: bytes) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(path.name + ".partial")
        partial.write_bytes(data)
        os.replace(partial, path)

    def move(self, source: str, destination: str) -> None:
        origin, target = self._path(source), self._path(destination)
        if not origin.exists():
            return
        if target.exists():
            shutil.rmtree(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        origin.rename(target)

    def remove(self, key: str) -> None:
        shutil.rmtree(self._path(key))

    def remove_empty(self, key: str, up_to: str) -> None:
        folder, root = self._path(key), self._path(up_to)
        while folder != root and folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
            folder = folder.parent

    def try_lock(self, name: str) -> HeldLock | None:
        path = self._path(f"{LOCKS}/{lock_file_name(name)}.lock")
        path.parent.mkdir(parents=True, exist_ok=True)
        handle = path.open("w")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            return None
        return _FileLock(handle)


class _FileLock:
    lost = False  # a file lock lasts as long as its process

    def __init__(self, handle: IO[str]) -> None:
        self.handle = handle

    def release(self) -> None:
        try:
            fcntl.flock(self.handle, fcntl.LOCK_UN)
        finally:
            self.handle.close()


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
