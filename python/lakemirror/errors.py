"""Domain errors: each names the table, the file and what to do about it."""

from __future__ import annotations

from collections.abc import Sequence
from enum import IntEnum
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from lakemirror.node_result import NodeResult


class ExitCode(IntEnum):
    """The exit codes of every `lakemirror` command, documented once (docs/pages/deploy.md,
    "Running unattended")."""

    HEALTHY = 0  # every table and model healthy (a table waiting for its next file is)
    FAILED = 1  # some tables or models failed, or the run did: the next run may get further
    CONFIG = 2  # a configuration or usage error: nothing was done until it is fixed
    REFUSED = 3  # refused to protect the data: nothing was written or dropped; a person decides


class LakemirrorError(Exception):
    """Base error; the CLI turns it into a clean message and an exit code."""

    exit_code: ExitCode = ExitCode.FAILED
    error_class: Literal["user", "system"] = "system"  # user: the landing zone must change

    def __init__(self, message: str, *, table: str | None = None, file: str | None = None,
                 hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.table = table
        self.file = file
        self.hint = hint

    def __str__(self) -> str:
        parts = []
        if self.table:
            parts.append(f"table {self.table}")
        if self.file:
            parts.append(f"file {self.file}")
        where = f"[{', '.join(parts)}] " if parts else ""
        hint = f" Fix: {self.hint}" if self.hint else ""
        return f"{where}{self.message}{hint}"


class ConfigError(LakemirrorError):
    """Bad usage or configuration (exit code 2)."""

    exit_code = ExitCode.CONFIG


class ProjectParseError(ConfigError):
    """dbt cannot parse the project (a model's Jinja, a `ref` to no model, a bad yml); `node`
    is the unique id of the node it names, when it names one."""

    def __init__(self, message: str, *, node: str | None = None, hint: str | None = None
                 ) -> None:
        super().__init__(message, hint=hint)
        self.node = node


class MissingBucketError(ConfigError):
    """The bucket or container (`noun`: "bucket", "container" or "workspace") that a landing
    zone or warehouse (`role`) at `url` lies in does not exist: lakemirror never creates one."""

    def __init__(self, message: str, *, url: str, noun: str, bucket: str, role: str,
                 hint: str) -> None:
        super().__init__(message, hint=hint)
        self.url = url
        self.noun = noun
        self.bucket = bucket
        self.role = role


class RefusedError(LakemirrorError):
    """A command refused, as asked, to protect the data (exit code 3): nothing was written
    or dropped; the message says what a person must decide."""

    exit_code = ExitCode.REFUSED
    error_class: Literal["user", "system"] = "user"


class SnapshotError(RefusedError):
    """A snapshot given to `lakemirror resync` does not fit its table (columns, types, keys),
    or the table cannot take one: refused before anything is written (exit code 3)."""


class LandingZoneError(LakemirrorError):
    """A landing-zone file or folder breaks the open mirroring contract."""

    error_class: Literal["user", "system"] = "user"


class MetadataError(LandingZoneError):
    """`_metadata.json` is malformed or invalid, or changes what may not change (keys)."""


class FileNameError(LandingZoneError):
    """A change file's name breaks the naming rule (digits, extension, duplicate number)."""


class UnreadableFileError(LandingZoneError):
    """A change file is empty, truncated, corrupt or not in its declared format or encoding."""


class ColumnError(LandingZoneError):
    """A change file lacks a declared column, or uses a reserved column name."""


class RowMarkerError(LandingZoneError):
    """`__rowMarker__` is misplaced or holds a value the table cannot take."""


class ValueParseError(LandingZoneError):
    """A delimited-text value does not parse as its declared type, or is NULL where not allowed."""


class SchemaChangeError(LandingZoneError):
    """A file's columns differ from the table's staged columns."""


class UnsafeEntryError(LandingZoneError):
    """A landing-zone entry lakemirror will not touch as it is: a symbolic link, a FIFO, socket
    or device, a folder where a file belongs (or the other way round), or an oversized control
    file. Links are never followed, so nothing outside the zone is ever read or written."""


class ChangedFileError(LandingZoneError):
    """A published change file changed after lakemirror staged it (another size or ETag):
    applying it again or ignoring it would both be wrong, so its table stops until it is
    put right."""


class ZoneAccessError(LandingZoneError):
    """The landing zone refuses a read or write lakemirror needs: permission denied, a read-only
    file system, or an entry that vanished meanwhile."""


class ZoneBindingError(RefusedError):
    """The run's landing zone is not the zone the warehouse mirrors: another folder, a folder
    inside it, or the two folders swapped. Refused before anything is written or dropped."""


class MassDropError(RefusedError):
    """A run would drop more of the mirrored tables at once than it may without confirmation
    (a wrong or half-mounted landing zone looks the same). Refused before anything is dropped."""


class RestoreError(RefusedError):
    """A dropped table cannot be restored as asked: no copy of it is kept, a live table has its
    name, or its landing folder is missing or another incarnation."""


class StorageError(LakemirrorError):
    """The warehouse's storage failed while lakemirror wrote or read it: disk full, permission
    denied, read-only file system."""


class DeltaCommitError(LakemirrorError):
    """A Delta commit lakemirror makes for the embedded engine (a table whose change data
    feed is on, see engine.delta_rs_writes) failed; nothing of it was committed, and the
    table's model fails (exit code 1)."""

    exit_code = ExitCode.FAILED


class EngineError(LakemirrorError):
    """The Spark engine could not be started or reached."""

    exit_code = ExitCode.CONFIG


class UnreachableServerError(EngineError):
    """A remote Spark Connect server did not answer in time: the run fails (exit code 1) and
    its staged files wait for the next run."""

    exit_code = ExitCode.FAILED


class LostStatementError(EngineError):
    """The connection to a Spark Connect server broke while a statement was on it, and the
    server has no record of the statement: whether it ran is unknown, so it is not sent
    again; the model (the table) fails and the next run builds it again (exit code 1)."""

    exit_code = ExitCode.FAILED


class ServerStorageError(EngineError):
    """A Spark Connect server cannot reach the warehouse's object storage (no connector, or
    its credentials refused): a configuration error of the server, so the run stops before
    writing anything (exit code 2, as for lakemirror's own settings), and the next run, on a
    server that reaches it, mirrors everything."""

    exit_code = ExitCode.CONFIG


class LockTimeoutError(LakemirrorError):
    """Another lakemirror run kept a table locked longer than the lock timeout (exit code 2)."""

    exit_code = ExitCode.CONFIG


class LockLostError(LakemirrorError):
    """The lease this run held on a table of a warehouse in object storage expired unrenewed
    or was taken over: nothing more is committed for the table (exit code 2)."""

    exit_code = ExitCode.CONFIG


class CorruptTableError(LakemirrorError):
    """A Delta table lakemirror owns has a damaged log; it is never read around."""


class EngineCrashError(EngineError):
    """The engine died or stopped answering while it worked on a run's tables; `nodes` are
    the dbt results of that invocation, `at` when the engine was lost (seconds since epoch)."""

    def __init__(self, message: str, *, nodes: Sequence[NodeResult] = (),
                 at: float | None = None, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.nodes = list(nodes)
        self.at = at
