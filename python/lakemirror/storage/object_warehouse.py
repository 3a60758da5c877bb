"""A warehouse in object storage (ADLS, OneLake, S3, GCS): lakemirror's own files as objects
below the warehouse's prefix, through obstore (the `object_store` crate delta-rs and Sail use).

Object stores have no folders, no rename and no file locks, so:
- a folder is the keys below `<key>/`: it exists while it holds an object;
- a file is replaced by one put, which readers see whole or not at all;
- a move is copy then delete, journaled (`_lakemirror/moves/<digest>.json`, written before the
  first copy, deleted after the last delete) so that a move cut short finishes on the next
  call instead of clearing what it had already copied;
- a lock is a lease object (`storage.lease`), which expires when its runner crashed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from lakemirror.environment import DEFAULT_LEASE_SECONDS
from lakemirror.storage.lease import Lease, try_lease
from lakemirror.storage.location import ObjectLocation, open_store
from lakemirror.storage.missing_bucket import is_missing_bucket, missing_bucket_error
from lakemirror.storage.secrets import redact
from lakemirror.storage.warehouse_door import (
    LOCKS,
    WarehouseStorage,
    key_segments,
    lock_file_name,
)

MOVES = "_lakemirror/moves"


class ObjectWarehouse(WarehouseStorage):
    """The warehouse (or a folder of it) at an object-store location; keys are below its
    prefix, and the store cannot address anything outside it."""

    def __init__(self, root: ObjectLocation) -> None:
        self.root = root
        self.store: Any = open_store(root)

    def location(self, key: str) -> str:
        return (self.root / _clean(key)).url

    def exists(self, key: str) -> bool:
        return self._is_file(key) or self.is_folder(key)

    def is_folder(self, key: str) -> bool:
        if not _clean(key):
            return True  # the container or bucket: reached by every call, made by none
        return any(True for _ in self._keys(key, limit=1))

    def folders(self, key: str) -> list[str]:
        listing = self._listing(key)
        return sorted(name.rstrip("/").rsplit("/", 1)[-1] for name in listing["common_prefixes"])

    def files(self, key: str) -> list[str]:
        listing = self._listing(key)
        return sorted(str(meta["path"]).rsplit("/", 1)[-1] for meta in listing["objects"])

    def read_bytes(self, key: str) -> bytes:
        import obstore

        with _os_errors(self.location(key)):
            return bytes(obstore.get(self.store, _clean(key)).bytes())

    def read_text(self, key: str) -> str | None:
        try:
            return self.read_bytes(key).decode("utf-8")
        except FileNotFoundError:
            return None

    def write_bytes(self, key: str, data: bytes) -> None:
        import obstore

        with _os_errors(self.location(key)):
            obstore.put(self.store, _clean(key), data)

    def create_bytes(self, key: str, data: bytes) -> bool:
        import obstore
        from obstore.exceptions import AlreadyExistsError, PreconditionError

        with _os_errors(self.location(key)):
            try:
                obstore.put(self.store, _clean(key), data, mode="create")
            except (AlreadyExistsError, PreconditionError):  # S3 answers 412, Azure 409
                return False
        return True

    def move(self, source: str, destination: str) -> None:
        import obstore

        source, destination = _clean(source), _clean(destination)
        journal = f"{MOVES}/{_digest(source, destination)}.json"
        started = self.read_text(journal) is not None
        if not started:
            if not self.is_folder(source):
                return  # a move already done (or nothing to move)
            self._delete(list(self._keys(destination)))  # what the move replaces
            self.write_text(journal, json.dumps({"source": source, "destination": destination}))
        moved = list(self._keys(source))
        with _os_errors(self.location(source)):
            for key in moved:
                obstore.copy(self.store, key, destination + key[len(source):], overwrite=True)
        self._delete(moved)
        self._delete([journal])

    def remove(self, key: str) -> None:
        self._delete(list(self._keys(key)))

    def remove_empty(self, key: str, up_to: str) -> None:
        """Nothing: a folder of an object store is gone with its last object."""

    def try_lock(self, name: str, *,
                 lease_seconds: float = DEFAULT_LEASE_SECONDS) -> Lease | None:
        with _os_errors(self.location(LOCKS)):
            return try_lease(self.store, f"{LOCKS}/{lock_file_name(name)}.lease",
                             seconds=lease_seconds)

    def _is_file(self, key: str) -> bool:
        import obstore

        if not _clean(key):
            return False
        try:
            with _os_errors(self.location(key)):
                obstore.head(self.store, _clean(key))
        except FileNotFoundError:
            return False
        return True

    def _keys(self, key: str, *, limit: int = 1000) -> Iterator[str]:
        """The keys of every object below the folder `key`, `limit` per request."""
        import obstore

        folder = _clean(key)
        with _os_errors(self.location(key)):
            for chunk in obstore.list(self.store, f"{folder}/" if folder else None,
                                      chunk_size=limit):
                yield from (str(meta["path"]) for meta in chunk)

    def _listing(self, key: str) -> Any:
        import obstore

        folder = _clean(key)
        with _os_errors(self.location(key)):
            return obstore.list_with_delimiter(self.store, folder or None)

    def _delete(self, keys: list[str]) -> None:
        """Delete `keys`, one request each: a batch delete is not in every store (Azurite)."""
        import obstore

        for key in keys:
            try:
                with _os_errors(self.location(key)):
                    obstore.delete(self.store, key)
            except FileNotFoundError:
                pass  # deleted by an earlier, interrupted call


def _clean(key: str) -> str:
    return "/".join(key_segments(key))


def _digest(source: str, destination: str) -> str:
    return hashlib.sha256(f"{source}\0{destination}".encode("utf-8", "surrogateescape")
                          ).hexdigest()


@contextmanager
def _os_errors(where: str) -> Iterator[None]:
    """obstore's failures as the OSError the storage interface promises (a missing object as
    FileNotFoundError), secrets redacted; a missing bucket or container as a ConfigError."""
    from obstore.exceptions import BaseError, NotFoundError

    try:
        yield
    except (BaseError, FileNotFoundError) as error:
        if is_missing_bucket(error):  # S3 answers NoSuchBucket with a 404, as a missing key
            raise missing_bucket_error(where, "warehouse") from None
        if isinstance(error, (NotFoundError, FileNotFoundError)):
            raise FileNotFoundError(f"{where}: not found") from error
        raise OSError(f"{where}: {redact(str(error).splitlines()[0])}") from error
