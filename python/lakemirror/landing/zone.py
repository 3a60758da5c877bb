"""The local door to the landing zone (`LandingZone`, a folder on disk), and `open_zone`, which
makes the door for a zone at a local folder or at an object-store location (`ObjectZone`, in
`object_zone`). Every listing, read, write, move and delete of a zone entry goes through a
`ZoneDoor` (`zone_door`), and none of them ever leaves the zone.

The zone is untrusted input. Each path is walked from the zone root one folder at a time with
`O_NOFOLLOW` directory descriptors (`dir_fd=`), so a symbolic link or `..` anywhere below the
root is refused, never followed. Files are opened without blocking and must be regular files,
so a FIFO or a device can neither hang a run nor be touched. lakemirror writes, moves and
deletes only regular files, inside real folders of the zone.

Long because the local door's confinement (descriptor walks, kind checks before and after
opening, the refusals' wording) is one security boundary, reviewed together.
"""

from __future__ import annotations

import errno
import io
import os
import stat
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, ClassVar

from lakemirror.errors import LakemirrorError, UnsafeEntryError, ZoneAccessError
from lakemirror.landing.zone_door import (
    CONTROL_FILE_LIMIT,
    OUTSIDE_THE_ZONE,
    Entry,
    Kind,
    ZoneDoor,
    ZoneFile,
    chunks,
    control_too_large,
    gone,
    read_bounded,
    unsafe_entry,
)

if TYPE_CHECKING:
    from lakemirror.storage.location import ObjectLocation

_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_WRITE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_WANTED: dict[Kind, str] = {"file": "a regular file", "folder": "a folder"}
_KINDS: tuple[tuple[int, Kind, str], ...] = (
    (stat.S_IFREG, "file", "a regular file"), (stat.S_IFDIR, "folder", "a directory"),
    (stat.S_IFLNK, "link", "a symbolic link"), (stat.S_IFIFO, "special", "a FIFO"),
    (stat.S_IFSOCK, "special", "a socket"), (stat.S_IFCHR, "special", "a character device"),
    (stat.S_IFBLK, "special", "a block device"))


class LocalFile(io.FileIO):
    """A regular zone file open for reading: a plain binary file for pyarrow and the readers."""

    def __init__(self, descriptor: int, path: Path, size: int) -> None:
        super().__init__(descriptor, "rb", closefd=True)
        self.path = path
        self.size = size


def open_zone(location: PurePath | ObjectLocation) -> ZoneDoor:
    """The door to a zone at a local folder or an object-store location."""
    if isinstance(location, PurePath):
        return LandingZone(Path(location))
    from lakemirror.landing.object_zone import ObjectZone

    return ObjectZone.at(location)


def as_door(zone: PurePath | ZoneDoor) -> ZoneDoor:
    """The door to `zone`, given as a local folder or as a door."""
    return LandingZone(Path(zone)) if isinstance(zone, PurePath) else zone


@dataclass(frozen=True)
class LandingZone:
    """The landing zone rooted at the local folder `root` (trusted as configured; everything
    below is not)."""

    root: Path
    lists_history_cheaply: ClassVar[bool] = True
    calls_are_requests: ClassVar[bool] = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", Path(os.path.abspath(self.root)))

    def entries(self, folder: PurePath) -> list[Entry]:
        """The folder's entries by name, each classified without following it."""
        with self._folder(self._parts(folder)) as descriptor:
            try:
                with os.scandir(descriptor) as listing:
                    names = [item.name for item in listing]
            except OSError as error:
                raise access_error(error, folder, "list") from error
            found = [_lstat(descriptor, name, folder / name) for name in sorted(names)]
        return [entry for entry in found if entry is not None]  # None: gone meanwhile

    def entry(self, path: PurePath) -> Entry | None:
        """The entry at `path` as it is; None when its folder has no such entry."""
        folder, name = self._split(path)
        with self._folder(folder) as descriptor:
            return _lstat(descriptor, name, path)

    def open(self, path: PurePath) -> ZoneFile:
        """Open a regular file for reading; never follows a link, never blocks."""
        folder, name = self._split(path)
        with self._folder(folder) as descriptor:
            opened = _open_regular(descriptor, name, path)
        if opened is None:
            raise gone(path)
        return opened

    def read_control(self, path: PurePath, *, limit: int = CONTROL_FILE_LIMIT,
                     etag: str | None = None) -> bytes | None:
        """A small control file's bytes (at most `limit`); None when there is no such file
        (files on disk have no ETag: `etag` is never given here)."""
        folder, name = self._split(path)
        with self._folder(folder) as descriptor:
            opened = _open_regular(descriptor, name, path)
        if opened is None:
            return None
        return read_control_file(opened, limit)

    def write_control(self, path: PurePath, data: bytes) -> None:
        """Write a control file atomically: a new `<name>.partial` (a leftover one is unlinked,
        never written through), then a rename in its folder."""
        self._publish(path, data, os.replace)

    def create_control(self, path: PurePath, data: bytes) -> str | None:
        """Write a control file atomically unless one exists: a new `<name>.partial`, then a
        hard link to its name, which fails when the name is taken."""
        try:
            self._publish(path, data, _link)
        except FileExistsError:
            return None
        return ""

    def _publish(self, path: PurePath, data: bytes,
                 place: Callable[..., None]) -> None:
        """Write `data` to a new `<name>.partial` and `place` it at `path` (in one folder)."""
        folder, name = self._split(path)
        partial_name, partial_path = f"{name}.partial", path.with_name(f"{name}.partial")
        with self._folder(folder) as descriptor:
            if _lstat(descriptor, partial_name, partial_path) is not None:
                _require(descriptor, partial_name, partial_path, "file")
                _unlink(descriptor, partial_name, partial_path)
            try:
                handle = os.open(partial_name, _WRITE, 0o644, dir_fd=descriptor)
            except OSError as error:
                raise _refusal(descriptor, partial_name, partial_path, "file", error,
                               "write") from error
            try:
                with os.fdopen(handle, "wb", closefd=False) as stream:
                    stream.write(data)
                os.fsync(handle)
                place(partial_name, name, src_dir_fd=descriptor, dst_dir_fd=descriptor)
            except FileExistsError:
                raise
            except OSError as error:
                raise access_error(error, path, "write") from error
            finally:
                os.close(handle)
                if _lstat(descriptor, partial_name, partial_path) is not None:
                    _unlink(descriptor, partial_name, partial_path)

    def make_folder(self, path: PurePath) -> None:
        """Create a folder unless it exists; an existing entry there must be a real folder."""
        folder, name = self._split(path)
        with self._folder(folder) as descriptor:
            try:
                os.mkdir(name, 0o777, dir_fd=descriptor)
            except FileExistsError:
                pass
            except OSError as error:
                raise access_error(error, path, "create") from error
            _require(descriptor, name, path, "folder")

    def move(self, path: PurePath, folder: PurePath) -> PurePath:
        """Move a regular file into `folder` (a real zone folder), stamping it with the time of
        the move, unless it is hard-linked: its time is shared with its other names, which may
        lie outside the zone. Returns its new path."""
        source, name = self._split(path)
        target = folder / name
        with self._folder(source) as source_fd, self._folder(self._parts(folder)) as target_fd:
            _require(source_fd, name, path, "file")
            try:
                os.replace(name, name, src_dir_fd=source_fd, dst_dir_fd=target_fd)
                if os.lstat(name, dir_fd=target_fd).st_nlink == 1:
                    os.utime(name, dir_fd=target_fd, follow_symlinks=False)
            except OSError as error:
                raise access_error(error, path, "move") from error
        return target

    def delete(self, path: PurePath) -> None:
        """Delete a regular file (never a link, a folder or what a link points to)."""
        folder, name = self._split(path)
        with self._folder(folder) as descriptor:
            _require(descriptor, name, path, "file")
            _unlink(descriptor, name, path)

    def _parts(self, path: PurePath) -> list[str]:
        """The names leading from the root to `path` (`..` resolved by name, since no link is
        ever followed), which must lie inside the zone."""
        try:
            return list(Path(os.path.abspath(path)).relative_to(self.root).parts)
        except ValueError:
            raise UnsafeEntryError(f"{path} is outside the landing zone {self.root}",
                                   file=str(path), hint=OUTSIDE_THE_ZONE) from None

    def _split(self, path: PurePath) -> tuple[list[str], str]:
        """The folder names leading to an entry below the root, and the entry's name."""
        parts = self._parts(path)
        if not parts:
            raise UnsafeEntryError(f"{path} is the landing zone itself, not an entry in it",
                                   file=str(path), hint=OUTSIDE_THE_ZONE)
        return parts[:-1], parts[-1]

    @contextmanager
    def _folder(self, parts: Sequence[str]) -> Iterator[int]:
        """A descriptor of the folder at `parts`, each one a real folder, not a link."""
        try:
            descriptor = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as error:
            raise access_error(error, self.root, "open") from error
        try:
            for depth, name in enumerate(parts):
                try:
                    child = os.open(name, _FOLDER, dir_fd=descriptor)
                except OSError as error:
                    raise _refusal(descriptor, name, self.root.joinpath(*parts[:depth + 1]),
                                   "folder", error, "open") from error
                os.close(descriptor)
                descriptor = child
            yield descriptor
        finally:
            os.close(descriptor)


def read_control_file(opened: ZoneFile, limit: int) -> bytes:
    """An open control file's bytes, closing it; an UnsafeEntryError when it holds more than
    `limit` bytes (read in chunks, so a file growing meanwhile is never read whole)."""
    with opened:
        data = read_bounded(chunks(opened), limit) if opened.size <= limit else None
    if data is None:
        raise control_too_large(opened.path, limit)
    return data


def _link(source: str, target: str, *, src_dir_fd: int, dst_dir_fd: int) -> None:
    os.link(source, target, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd,
            follow_symlinks=False)


def _entry_of(path: PurePath, status: os.stat_result) -> Entry:
    kind, what = _kind(status.st_mode)
    return Entry(path, kind, what, status.st_size, status.st_mtime_ns)


def _kind(mode: int) -> tuple[Kind, str]:
    for file_type, kind, what in _KINDS:
        if stat.S_IFMT(mode) == file_type:
            return kind, what
    return "special", "a special file"


def _lstat(descriptor: int, name: str, path: PurePath) -> Entry | None:
    try:
        return _entry_of(path, os.lstat(name, dir_fd=descriptor))
    except FileNotFoundError:
        return None
    except OSError as error:
        raise access_error(error, path, "read") from error


def _open_regular(descriptor: int, name: str, path: PurePath) -> LocalFile | None:
    """Open `name` in the folder if it is a regular file (checked before and after opening,
    so that nothing else is ever opened for long); None when there is no such entry."""
    found = _lstat(descriptor, name, path)
    if found is None:
        return None
    _require_kind(found, "file")
    try:
        handle = os.open(name, _READ, dir_fd=descriptor)
    except OSError as error:
        raise _refusal(descriptor, name, path, "file", error, "read") from error
    opened = _entry_of(path, os.fstat(handle))
    if opened.kind != "file":
        os.close(handle)
        _require_kind(opened, "file")
    return LocalFile(handle, Path(path), opened.size)


def _require(descriptor: int, name: str, path: PurePath, kind: Kind) -> None:
    """`name` in the folder must exist and be of `kind`."""
    found = _lstat(descriptor, name, path)
    if found is None:
        raise gone(path)
    _require_kind(found, kind)


def _require_kind(entry: Entry, kind: Kind) -> None:
    if entry.kind != kind:
        raise unsafe_entry(entry, _WANTED[kind])


def _unlink(descriptor: int, name: str, path: PurePath) -> None:
    try:
        os.unlink(name, dir_fd=descriptor)
    except OSError as error:
        raise access_error(error, path, "delete") from error


def _refusal(descriptor: int, name: str, path: PurePath, kind: Kind, error: OSError,
             action: str) -> LakemirrorError:
    """Why opening `name` as `kind` failed: the entry is of another kind (a link, a FIFO, a
    file where a folder belongs), or the system refused access."""
    if error.errno in (errno.ELOOP, errno.ENOTDIR, errno.ENXIO, errno.EISDIR, errno.EEXIST):
        found = _lstat(descriptor, name, path)
        if found is not None and found.kind != kind:
            return unsafe_entry(found, _WANTED[kind])
    return access_error(error, path, action)


def access_error(error: OSError, path: PurePath, action: str) -> ZoneAccessError:
    """A zone read or write (`action`) the system refused, as the user's error to fix."""
    where = {"file": str(path)}
    if error.errno in (errno.EACCES, errno.EPERM):
        return ZoneAccessError(
            f"permission denied on {path}", **where,
            hint="let the user running lakemirror read the landing zone and write its table "
                 "folders (it moves staged files into _ProcessedFiles/)")
    if error.errno == errno.EROFS:
        return ZoneAccessError(
            f"the landing zone is read-only: cannot {action} {path}", **where,
            hint="mount the landing zone read-write for lakemirror: it moves staged files into "
                 "_ProcessedFiles/ and writes _lakemirror.json")
    if error.errno == errno.ENOENT:
        return gone(path)
    return ZoneAccessError(f"cannot {action} {path}: {error.strerror}", **where,
                           hint="check the landing zone's storage, then run again")
