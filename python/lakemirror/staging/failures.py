"""Any exception raised while staging a table, as a typed error naming the table, the file and
the fix, so that `ingest_table` fails the table with a message instead of a traceback.

A landing-zone failure is the user's to fix; a warehouse storage failure (disk full, permission
denied, read-only) and anything unexpected are system errors. delta-rs raises plain exceptions
whose text names the operating-system error, so the errno is read from there too.
"""

from __future__ import annotations

import errno
import re
from pathlib import Path, PurePath

from lakemirror.errors import LakemirrorError, StorageError
from lakemirror.landing import LandingTable
from lakemirror.landing.zone import access_error
from lakemirror.storage.location import Location

_OS_ERROR = re.compile(r"\(os error (\d+)\)")  # how Rust's std::io::Error ends its text
_STRERRORS = {errno.ENOSPC: "No space left on device", errno.EACCES: "Permission denied",
              errno.EPERM: "Operation not permitted", errno.EROFS: "Read-only file system"}


def as_failure(error: Exception, table: LandingTable, *, file: PurePath | None,
               warehouse: Location, debug: bool = False) -> LakemirrorError:
    """`error` as the error of `table` (staging `file`, if one was being staged). With
    `debug` (`--debug`, LAKEMIRROR_DEBUG), an error that is not lakemirror's own is raised as
    it is instead, so that its traceback shows."""
    if debug and not isinstance(error, LakemirrorError):
        raise error
    if isinstance(error, LakemirrorError):
        error.table = error.table or table.qualified_name
        return error
    if isinstance(error, OSError) and error.filename is not None:
        path = Path(str(error.filename))
        if path.is_relative_to(table.door.root):
            zone_error = access_error(error, path, "use")
            zone_error.table = table.qualified_name
            return zone_error
    storage = storage_failure(error, table=table.qualified_name, file=file, location=warehouse)
    if storage is not None:
        return storage
    return LakemirrorError(
        f"unexpected {type(error).__name__}: {error}", table=table.qualified_name,
        file=None if file is None else str(file),
        hint="run again with --debug to see the traceback, and report it if it persists")


def storage_failure(error: Exception, *, table: str, file: PurePath | None,
                    location: Location) -> StorageError | None:
    """The warehouse storage error `error` stands for (`location` is where lakemirror wrote),
    or None when it is not one."""
    number = os_errno(error)
    if number is None:
        return None
    staging = f"staging {file}" if file is not None else "staging the table"
    where = {"table": table, "file": None if file is None else str(file)}
    if number == errno.ENOSPC:
        return StorageError(f"disk full while {staging}", **where,
                            hint=f"free space in the warehouse at {location}, then run again; "
                                 "nothing was lost")
    if number in (errno.EACCES, errno.EPERM):
        path = getattr(error, "filename", None) or location
        return StorageError(f"permission denied on {path} while {staging}", **where,
                            hint=f"let the user running lakemirror write the warehouse at "
                                 f"{location}, then run again")
    if number == errno.EROFS:
        return StorageError(f"the warehouse at {location} is read-only", **where,
                            hint="mount the warehouse read-write for lakemirror, then run again")
    return StorageError(f"{_strerror(error, number)} while {staging}", **where,
                        hint=f"check the storage of the warehouse at {location}, then run "
                             "again; nothing was lost")


def os_errno(error: Exception) -> int | None:
    """The operating-system error number of an OSError, or the one named in a delta-rs error's
    text; None for other errors."""
    if isinstance(error, OSError) and error.errno is not None:
        return error.errno
    text = str(error)
    match = _OS_ERROR.search(text)
    if match:
        return int(match.group(1))
    known = [number for number, message in _STRERRORS.items() if message in text]
    if known:
        return known[0]
    return None if not isinstance(error, OSError) else errno.EIO


def _strerror(error: Exception, number: int) -> str:
    return (error.strerror if isinstance(error, OSError) and error.strerror
            else _STRERRORS.get(number) or f"{type(error).__name__}: {error}")
