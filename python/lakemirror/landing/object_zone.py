"""The landing zone under a prefix of an object store (OneLake, ADLS/Blob, S3, GCS), reached
through obstore: the object-store implementation of `zone_door.ZoneDoor`.

There are no folders on an object store: a folder exists when an object lies under it, and
folders are listed with a delimiter, so a listing of a table never reads its `_ProcessedFiles/`
history. Every key lakemirror touches is built from the zone's prefix and the names of a path
below it (`ObjectPath`), never from a key as listed, and a name that could leave the prefix
(`..`, an empty name) is refused; keys the store cannot name as paths fail the listing that met
them, which fails that table only. An object that is also a folder (`T/x` and `T/x/y`) is
neither: it is refused wherever it is used. A move is a copy then a delete (object stores have
no rename); repeated after a crash in between, it completes.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import PurePath, PurePosixPath
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, cast

from lakemirror.errors import LakemirrorError, UnsafeEntryError, ZoneAccessError
from lakemirror.landing.zone_door import (
    BOTH_KINDS,
    CONTROL_FILE_LIMIT,
    OUTSIDE_THE_ZONE,
    READ_CHUNK,
    Entry,
    control_too_large,
    gone,
    read_bounded,
    unsafe_entry,
)
from lakemirror.storage.missing_bucket import is_missing_bucket, missing_bucket_error

if TYPE_CHECKING:
    from obstore import GetOptions, ObjectMeta, ReadableFile
    from obstore.store import ObjectStore

    from lakemirror.storage.location import ObjectLocation

T = TypeVar("T")
_SECRET = re.compile(r"\?\S*")  # a query string may carry a SAS token or a signature
WHOLE_READ_LIMIT = 4 << 20  # an object up to this size is read in one request
_CREDENTIALS_FIX = ("give the credentials lakemirror uses read, write and delete rights on the "
                    "landing zone's prefix (it moves staged files into _ProcessedFiles/)")


class ObjectPath(PurePosixPath):
    """A key below an object-store zone, as an absolute path whose root `/` is the zone's
    prefix; shown as its URL. Each zone has its own subclass carrying the URL (see
    `object_root`), so every path derived from its root shows it too. It is no local path:
    `os` functions refuse it."""

    url: ClassVar[str] = ""

    def __str__(self) -> str:
        text = super().__str__()
        if not self.is_absolute():
            return text
        return self.url if text == "/" else f"{self.url}{text}"

    def __fspath__(self) -> str:
        raise TypeError(f"{self} is an object-store key, not a local file")


def object_root(url: str) -> ObjectPath:
    """The root path of the zone at `url`."""
    kind = type("ObjectPath", (ObjectPath,), {"url": url.rstrip("/")})
    return cast(ObjectPath, kind("/"))


class ObjectFile(io.RawIOBase):
    """An object open for reading, in ranged reads (`reader`: obstore's), or read whole into
    memory (`reader`: a BytesIO): a seekable binary file for pyarrow and the readers."""

    def __init__(self, reader: ReadableFile | io.BytesIO, path: ObjectPath, size: int) -> None:
        super().__init__()
        self._reader = reader
        self.path = path
        self.size = size

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = memoryview(self._reader.read(len(buffer)))
        memoryview(buffer).cast("B")[:len(data)] = data
        return len(data)

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        return self._reader.seek(offset, whence)

    def tell(self) -> int:
        return self._reader.tell()

    def close(self) -> None:
        if not self.closed:
            self._reader.close()
        super().close()


@dataclass(frozen=True)
class ObjectZone:
    """The landing zone under `prefix` ('' for a whole bucket or container) of `store`, shown
    as `url` (without secrets)."""

    store: ObjectStore
    prefix: str
    url: str
    root: ObjectPath = field(init=False)
    lists_history_cheaply: ClassVar[bool] = False
    calls_are_requests: ClassVar[bool] = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "prefix", self.prefix.strip("/"))
        object.__setattr__(self, "root", object_root(self.url))

    @classmethod
    def at(cls, location: ObjectLocation) -> ObjectZone:
        """The zone at an object-store location."""
        from lakemirror.storage.location import open_store

        return cls(open_store(location), "", location.url)  # the store is rooted at the prefix

    def entries(self, folder: PurePath) -> list[Entry]:
        """The folder's objects and folders by name; a name that is both is `special`."""
        import obstore

        key = self._key(folder, entry=False)
        base = f"{key}/" if key else ""
        listing = _store_call(lambda: obstore.list_with_delimiter(self.store, key or None),
                             folder, "list")
        files = {meta["path"][len(base):]: meta for meta in listing["objects"]
                 if meta["path"].startswith(base)}
        folders = {name[len(base):].rstrip("/") for name in listing["common_prefixes"]
                   if name.startswith(base)}
        found = []
        for name in sorted({*files, *folders} - {""}):
            path = folder / name
            if name in files and name in folders:
                found.append(Entry(path, "special", BOTH_KINDS, files[name]["size"],
                                   _mtime_ns(files[name]), files[name]["e_tag"]))
            elif name in files:
                found.append(_file(path, files[name]))
            else:
                found.append(_folder(path))
        return found

    def entry(self, path: PurePath) -> Entry | None:
        """The object or folder at `path`; None when there is neither."""
        found = self._head(path)
        return _folder(path) if found is None and self._holds_objects(path) else found

    def open(self, path: PurePath) -> ObjectFile:
        """The object at `path`, open for reading: read whole in one request up to
        WHOLE_READ_LIMIT bytes, in ranged reads above. A folder is refused; an object that is
        also a folder, by the listing of its table (`detection`)."""
        import obstore

        key, shown = self._key(path), cast(ObjectPath, path)
        try:
            result = _store_call(lambda: obstore.get(self.store, key), path, "read")
        except FileNotFoundError:
            raise self._missing(path) from None
        size = int(result.meta["size"])
        if size <= WHOLE_READ_LIMIT:
            data = _store_call(lambda: bytes(result.bytes()), path, "read")
            return ObjectFile(io.BytesIO(data), shown, len(data))
        reader = _store_call(lambda: obstore.open_reader(self.store, key, size=size), path,
                             "read")  # the whole object's answer is dropped unread
        return ObjectFile(reader, shown, size)

    def read_control(self, path: PurePath, *, limit: int = CONTROL_FILE_LIMIT,
                     etag: str | None = None) -> bytes | None:
        """A small control object's bytes (at most `limit`, streamed in chunks, one request);
        None when there is no such object (a folder there is refused). With an `etag`, the
        object must still have it (`If-Match`). An object that is also a folder is refused by
        the listing of its table (`detection`), not here."""
        import obstore
        from obstore.exceptions import PreconditionError

        key = self._key(path)
        options: GetOptions = {"if_match": etag} if etag is not None else {}
        try:
            result = _store_call(lambda: obstore.get(self.store, key, options=options), path,
                                 "read")
        except PreconditionError:
            raise ZoneAccessError(f"{path} changed while lakemirror read it", file=str(path),
                                  hint="run again") from None
        except FileNotFoundError:
            if self._holds_objects(path):
                raise unsafe_entry(_folder(path), "an object") from None
            return None
        data = None if result.meta["size"] > limit else _store_call(
            lambda: read_bounded((bytes(piece) for piece in result.stream(READ_CHUNK)), limit),
            path, "read")
        if data is None:
            raise control_too_large(path, limit)
        return data

    def write_control(self, path: PurePath, data: bytes) -> None:
        """Put a control object whole (a put is atomic)."""
        import obstore

        key = self._key(path)
        _store_call(lambda: obstore.put(self.store, key, data), path, "write")

    def create_control(self, path: PurePath, data: bytes) -> str | None:
        """Put a control object whole unless one exists (a conditional put, If-None-Match);
        its ETag, or None when one exists."""
        import obstore
        from obstore.exceptions import AlreadyExistsError, PreconditionError

        key = self._key(path)
        try:
            put = _store_call(lambda: obstore.put(self.store, key, data, mode="create"), path,
                              "write")
        except (AlreadyExistsError, PreconditionError):
            return None
        return put["e_tag"] or ""

    def make_folder(self, path: PurePath) -> None:
        """Nothing to create (a folder exists once an object lies under it), but no object
        may stand where it belongs (one request)."""
        found = self._head(path)
        if found is not None:
            raise unsafe_entry(found, "a folder")

    def move(self, path: PurePath, folder: PurePath) -> PurePath:
        """Copy the object into `folder` (the copy's time is the time of the move), then
        delete it: two requests. A crash in between leaves it in both places; moving it again
        (the copy overwrites its earlier copy) completes the move. A folder is refused; an
        object that is also a folder, by the listing of its table (`detection`)."""
        import obstore

        target = folder / path.name
        source, copy = self._key(path), self._key(target)
        try:
            _store_call(lambda: obstore.copy(self.store, source, copy, overwrite=True), path,
                        "move")
        except FileNotFoundError:
            raise self._missing(path) from None
        _store_call(lambda: obstore.delete(self.store, source), path, "move")
        return target

    def delete(self, path: PurePath) -> None:
        """Delete an object (never a folder's objects)."""
        import obstore

        self._object(path)
        key = self._key(path)
        _store_call(lambda: obstore.delete(self.store, key), path, "delete")

    def _object(self, path: PurePath) -> Entry:
        """The entry at `path`, which must be an object and not also a folder."""
        found = self.entry(path)
        if found is None:
            raise gone(path)
        if found.kind != "file":
            raise unsafe_entry(found, "an object")
        if self._holds_objects(found.path):
            raise unsafe_entry(replace(found, kind="special", what=BOTH_KINDS), "an object")
        return found

    def _head(self, path: PurePath) -> Entry | None:
        """The object at `path` (one request); None when there is none."""
        import obstore

        try:
            return _file(path, _store_call(lambda: obstore.head(self.store, self._key(path)),
                                           path, "read"))
        except FileNotFoundError:
            return None

    def _missing(self, path: PurePath) -> LakemirrorError:
        """The error for no object at `path`: a folder there, or nothing."""
        is_folder = self._holds_objects(path)
        return unsafe_entry(_folder(path), "an object") if is_folder else gone(path)

    def _holds_objects(self, path: PurePath) -> bool:
        """Whether any object lies under `path` as a folder (one listing page)."""
        import obstore

        key = self._key(path)
        listing = _store_call(lambda: obstore.list_with_delimiter(self.store, key), path, "list")
        return bool(listing["objects"] or listing["common_prefixes"])

    def _key(self, path: PurePath, *, entry: bool = True) -> str:
        """The key of `path` (the zone's prefix itself, unless `entry`), which must be a path
        of this zone with plain names."""
        names = path.parts[1:]
        if not (isinstance(path, ObjectPath) and path.url == self.root.url
                and path.is_absolute()):
            raise UnsafeEntryError(f"{path} is outside the landing zone {self.url}",
                                   file=str(path), hint=OUTSIDE_THE_ZONE)
        if any(name in ("", ".", "..") or "/" in name for name in names):
            raise UnsafeEntryError(f"{path} names a folder outside its own", file=str(path),
                                   hint="rename the object: lakemirror never follows '..'")
        if entry and not names:
            raise UnsafeEntryError(f"{path} is the landing zone itself, not an entry in it",
                                   file=str(path), hint=OUTSIDE_THE_ZONE)
        return "/".join([self.prefix, *names] if self.prefix else names)


def _store_call(action: Callable[[], T], path: PurePath, verb: str) -> T:
    """`action`'s result, its failure as the zone's error (FileNotFoundError passes)."""
    from obstore.exceptions import (
        AlreadyExistsError,
        BaseError,
        InvalidPathError,
        PermissionDeniedError,
        PreconditionError,
        UnauthenticatedError,
    )

    try:
        return action()
    except (FileNotFoundError, AlreadyExistsError, PreconditionError):
        raise
    except InvalidPathError as error:
        raise UnsafeEntryError(
            f"cannot {verb} {path}: it holds a key that is not a valid path "
            f"({_first_line(error)})", file=str(path),
            hint="rename or remove the object (keys with '..', '.' or empty names between "
                 "slashes cannot be mirrored)") from None
    except (PermissionDeniedError, UnauthenticatedError) as error:
        raise ZoneAccessError(f"permission denied on {path}: {_first_line(error)}",
                              file=str(path), hint=_CREDENTIALS_FIX) from None
    except (BaseError, OSError) as error:
        if is_missing_bucket(error):
            raise missing_bucket_error(str(path), "landing zone") from None
        raise ZoneAccessError(f"cannot {verb} {path}: {_first_line(error)}",
                              file=str(path),
                              hint="check the landing zone's URL, credentials and network, "
                                   "then run again") from None


def _folder(path: PurePath) -> Entry:
    return Entry(path, "folder", "a folder", 0, 0)


def _file(path: PurePath, meta: ObjectMeta) -> Entry:
    return Entry(path, "file", "an object", meta["size"], _mtime_ns(meta), meta["e_tag"])


def _mtime_ns(meta: ObjectMeta) -> int:
    modified: datetime = meta["last_modified"]
    return int(modified.timestamp()) * 1_000_000_000 + modified.microsecond * 1000


def _first_line(error: Exception) -> str:
    """The error's first line, without query strings (they may hold a SAS token)."""
    lines = str(error).strip().splitlines()
    return _SECRET.sub("?...", lines[0] if lines else type(error).__name__)

