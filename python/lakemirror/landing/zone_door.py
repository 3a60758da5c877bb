"""What a door to the landing zone is: the `ZoneDoor` interface that the local door
(`zone.LandingZone`) and the object-store door (`object_zone.ObjectZone`) implement, the entries
and files they hand out, and the checks and errors both share. `zone.open_zone` picks the door.

Zone paths are pure paths: `Path` on disk, `ObjectPath` (a key below the prefix, shown as its
URL) on an object store.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import PurePath
from types import TracebackType
from typing import Any, Literal, Protocol, Self

from lakemirror.errors import UnsafeEntryError, ZoneAccessError

Kind = Literal["file", "folder", "link", "special"]
CONTROL_FILE_LIMIT = 1 << 20  # _metadata.json, _lakemirror.json, _partnerEvents.json
BOTH_KINDS = "both an object and a folder (objects lie under its name)"  # object stores only
OUTSIDE_THE_ZONE = "lakemirror only touches entries inside the landing zone: report this as a bug"
READ_CHUNK = 1 << 20  # bytes read at a time from a zone file
_LINK_FIX = ("replace the link with the real file or folder; lakemirror never follows links "
            "out of the landing zone")


@dataclass(frozen=True)
class Entry:
    """One item of a zone folder as it is, links not followed."""

    path: PurePath
    kind: Kind
    what: str  # "a regular file", "a directory", "a symbolic link", "a FIFO", ...
    size: int
    mtime_ns: int
    etag: str | None = None  # an object's entity tag (None on disk)

    @property
    def name(self) -> str:
        return self.path.name


class Readable(Protocol):
    """A binary stream (a ZoneFile, a pyarrow input stream)."""

    def read(self, size: int, /) -> bytes | None: ...


class ZoneFile(Protocol):
    """A zone file open for reading: a seekable binary file for pyarrow and the readers, which
    knows its path and its size."""

    @property
    def path(self) -> PurePath: ...

    @property
    def size(self) -> int: ...

    def read(self, size: int = -1, /) -> bytes: ...

    def seek(self, offset: int, whence: int = io.SEEK_SET, /) -> int: ...

    def tell(self) -> int: ...

    def close(self) -> None: ...

    def __enter__(self) -> Self: ...

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None, /) -> None: ...


class ZoneDoor(Protocol):
    """What lakemirror may do in a landing zone; paths lie below `root`, and every method
    refuses one that does not."""

    @property
    def root(self) -> PurePath: ...

    @property
    def lists_history_cheaply(self) -> bool:
        """Whether an idle run may list `_ProcessedFiles/` to purge it."""

    @property
    def calls_are_requests(self) -> bool:
        """Whether each call is a request to a server (an object store), whose round trips
        are worth making several at once."""

    def entries(self, folder: PurePath) -> list[Entry]:
        """The folder's entries by name, each classified without following it."""

    def entry(self, path: PurePath) -> Entry | None:
        """The entry at `path` as it is; None when there is none."""

    def open(self, path: PurePath) -> ZoneFile:
        """A regular file open for reading (binary, seekable)."""

    def read_control(self, path: PurePath, *, limit: int = CONTROL_FILE_LIMIT,
                     etag: str | None = None) -> bytes | None:
        """A small control file's bytes (at most `limit`); None when there is no such file.
        With an `etag` (object stores), the read fails unless the object still has it."""

    def write_control(self, path: PurePath, data: bytes) -> None:
        """Write a control file whole (readers never see part of it)."""

    def create_control(self, path: PurePath, data: bytes) -> str | None:
        """Write a control file whole unless one exists, so two runners cannot both create
        it; its ETag ('' on disk) when it was written, None when one exists."""

    def make_folder(self, path: PurePath) -> None:
        """Make sure `path` can hold files: a folder, or nothing yet; never a file."""

    def move(self, path: PurePath, folder: PurePath) -> PurePath:
        """Move a regular file into `folder`, stamped with the time of the move; returns its
        new path. Repeating a move interrupted at any point completes it."""

    def delete(self, path: PurePath) -> None:
        """Delete a regular file (never a folder, a link or what a link points to)."""


def control_too_large(path: PurePath, limit: int) -> UnsafeEntryError:
    return UnsafeEntryError(
        f"{path.name} is larger than {limit} bytes, too large for a control file",
        file=str(path), hint=f"write {path.name} with only the keys it needs")


def read_bounded(pieces: Iterable[bytes], limit: int) -> bytes | None:
    """All the pieces joined, or None as soon as they hold more than `limit` bytes (so a huge
    or endless stream never takes more than about `limit` of memory)."""
    buffer = io.BytesIO()
    for piece in pieces:
        if buffer.tell() + len(piece) > limit:
            return None
        buffer.write(piece)
    return buffer.getvalue()


def parse_json(data: bytes) -> Any:
    """A control file's JSON document (UTF-8, a byte order mark allowed); raises ValueError
    saying what is wrong and where."""
    try:
        return json.loads(data.decode("utf-8-sig"))
    except json.JSONDecodeError as error:
        raise ValueError(f"not valid JSON: {error.msg} at line {error.lineno}, "
                         f"column {error.colno}") from error
    except UnicodeDecodeError as error:
        raise ValueError(f"not valid UTF-8: {error}") from error
    except RecursionError as error:
        raise ValueError("not valid JSON: nested too deeply") from error


def chunks(stream: Readable) -> Iterator[bytes]:
    """A binary stream's bytes in chunks."""
    return iter(partial(_read, stream), b"")


def _read(stream: Readable) -> bytes:
    return stream.read(READ_CHUNK) or b""


def gone(path: PurePath) -> ZoneAccessError:
    """The error for an entry that disappeared while lakemirror worked on it."""
    return ZoneAccessError(f"{path} does not exist", file=str(path),
                           hint="it disappeared while lakemirror worked on it; run again")


def unsafe_entry(entry: Entry, wanted: str, *, table: str | None = None) -> UnsafeEntryError:
    """The error for an entry that is not what the contract needs there."""
    hint = (_LINK_FIX if entry.kind == "link" else
            "rename or remove the object or the objects under its name: a name cannot be both"
            if entry.what == BOTH_KINDS else
            f"replace it with {wanted}; lakemirror never opens FIFOs, sockets or devices"
            if entry.kind == "special" else f"rename or remove it: only {wanted} belongs here")
    return UnsafeEntryError(f"{entry.path} is {entry.what}, not {wanted}", table=table,
                            file=str(entry.path), hint=hint)
