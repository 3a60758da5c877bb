"""Where the warehouse is and how to touch it: the one module that reads, writes, lists, moves
and locks lakemirror's own files in a warehouse (the landing-zone record, the dropped area,
locks, run state). Delta tables are read and written by deltalake and the engine, by location.

Everything else names a file or folder of the warehouse by its key, a `/`-separated path below
the warehouse's root (`_lakemirror/landing_zone.json`), and asks `WarehouseStorage`
(`storage.warehouse_door`): keys fit a folder and an object store's prefix alike. Here are
`warehouse_storage`, which picks the implementation, and `LocalWarehouse` for a folder;
`ObjectWarehouse` (`storage.object_warehouse`) serves a warehouse at a URL (`s3://…`, `az://…`,
`abfss://…`).
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from lakemirror.errors import ConfigError
from lakemirror.environment import DEFAULT_LEASE_SECONDS, StorageSettings
from lakemirror.storage.location import ObjectLocation, parse_location, redact_url
from lakemirror.storage.warehouse_door import (
    LOCKS,
    HeldLock,
    WarehouseStorage,
    key_segments,
    lock_file_name,
)

if TYPE_CHECKING:
    from filelock import BaseFileLock

SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]+:")  # `s3:`; one letter would be a drive
FIX = ("pass a local folder or an object store's URL as --warehouse (LAKEMIRROR_WAREHOUSE): "
       "./warehouse, s3://<bucket>/<prefix>, az://<container>/<prefix>, abfss://<container>@"
       "<account>.dfs.core.windows.net/<prefix> or gs://<bucket>/<prefix>")


def warehouse_location(given: str | Path | ObjectLocation, *,
                       storage: StorageSettings | None = None) -> Path | ObjectLocation:
    """The warehouse `given` names: a folder (a path or a file:// URL, made absolute with its
    links resolved) or a place in object storage (an `s3://`, `az://`, `abfss://`, `gs://` or
    OneLake URL, with the storage options `storage` configures). A URL of no store lakemirror
    knows is a ConfigError, and so is a Path one was folded into (`Path("s3://b/w")` is
    `s3:/b/w`): taken for a relative path it would become a local folder named `s3:`."""
    if isinstance(given, ObjectLocation):
        return given
    text = str(given)
    try:
        location = parse_location(text, storage=storage)
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

    def create_bytes(self, key: str, data: bytes) -> bool:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
        partial.write_bytes(data)
        try:
            os.link(partial, path)  # fails when a file is there: never replaces one
        except FileExistsError:
            return False
        finally:
            partial.unlink()
        return True

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

    def try_lock(self, name: str, *,
                 lease_seconds: float = DEFAULT_LEASE_SECONDS) -> HeldLock | None:
        from filelock import FileLock, Timeout

        lock = FileLock(self._path(f"{LOCKS}/{lock_file_name(name)}.lock"), thread_local=False)
        try:
            lock.acquire(timeout=0)
        except Timeout:
            return None
        return _FileLock(lock)


class _FileLock:
    """flock on local disk (filelock's FileLock; a soft lock where the file system has no
    flock), released from whichever thread ends the run."""

    lost = False  # a file lock lasts as long as its process

    def __init__(self, lock: BaseFileLock) -> None:
        self.lock = lock

    def release(self) -> None:
        self.lock.release()
