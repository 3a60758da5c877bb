"""Which change files of a table are new, and in which order they apply.

`SequentialFileName` (the default): files are named with 20 digits, applied in numeric order and
contiguous; a gap makes the table wait. `LastUpdateTimeFileDetection`: any file name, applied in
order of modification time, then name; lakemirror numbers them itself, and a name once staged is
never staged again, even if the file is rewritten. An entry named like a change file must be a
regular file: a folder, link or FIFO under such a name fails the table (it is never opened).
Files still being written wait (`readiness`); entries starting with `.` are ignored, with a
warning; partition folders (`Year=2024/`) fail the table, as the contract has none.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import PurePath

from lakemirror.contract import (
    METADATA_FILE,
    SEQUENCE_DIGITS,
    is_sequence_number,
    sequence_file_name,
)
from lakemirror.errors import FileNameError
from lakemirror.landing.discovery import LandingTable
from lakemirror.landing.incarnation import MARKER
from lakemirror.landing.metadata import TableMetadata
from lakemirror.landing.readiness import in_flight, settles_in
from lakemirror.landing.zone_door import Entry, unsafe_entry

COMPRESSION_SUFFIXES = ("", ".gz", ".zst", ".snappy")
PARTITION_FOLDER = re.compile(r"[^=]+=.*", re.S)  # Hive style: Year=2024


@dataclass(frozen=True)
class SequenceFile:
    """A change file and the sequence number it applies under."""

    sequence: int
    path: PurePath
    size: int = 0  # bytes, as listed
    mtime_ns: int = 0  # as listed
    etag: str | None = None  # as listed (object stores only)


@dataclass(frozen=True)
class StagedFiles:
    """What staging holds: the last sequence number, the newest file's name, and (for
    LastUpdateTimeFileDetection) every name staged so far."""

    last_sequence: int = 0
    newest: str | None = None
    names: frozenset[str] = field(default_factory=frozenset)


@dataclass(frozen=True)
class Settling:
    """The file a table waits for only because it changed within the settle window."""

    path: PurePath
    seconds: float  # until it leaves the window, if it does not change again


@dataclass(frozen=True)
class Detection:
    """New files in apply order, older staged files still in place (to move), what the table
    waits for (a gap, a file in flight), warnings, and every staged file still in the folder
    (the newest too) as listed, to check that none changed since it was staged."""

    pending: list[SequenceFile]
    staged_in_place: list[PurePath]
    waiting_for: str | None = None
    blocked: tuple[SequenceFile, ...] = ()  # files after a gap or a file in flight
    warnings: tuple[str, ...] = ()
    settling: Settling | None = None  # when the file in flight is only settling
    staged_listed: tuple[Entry, ...] = ()


def detect_files(table: LandingTable, metadata: TableMetadata, staged: StagedFiles,
                 listing: Sequence[Entry] | None = None, *, settle_seconds: float) -> Detection:
    """What the table folder (`listing`: as listed) holds to stage, move and wait for; a file
    that changed within `settle_seconds` (and is not a complete Parquet file) is waited for."""
    listing = table.door.entries(table.folder) if listing is None else list(listing)
    entries = _entries(table, listing)
    if metadata.file_detection == "LastUpdateTimeFileDetection":
        detection = _by_update_time(table, metadata, staged, entries)
    else:
        detection = _by_sequence_number(table, metadata, staged, entries)
    detection = _until_in_flight(table, metadata, detection, settle_seconds)
    hidden = sorted(entry.name for entry in listing if entry.name.startswith("."))
    if not hidden:
        return detection
    shown = ", ".join(repr(name) for name in hidden[:5]) + (", ..." if len(hidden) > 5 else "")
    return replace(detection, warnings=(
        f"ignored {len(hidden)} hidden entries (names starting with '.'): {shown}",))


def data_file_suffixes(metadata: TableMetadata) -> tuple[str, ...]:
    """The name endings of the table's change files (compression only for delimited text)."""
    if metadata.delimited is None:
        return (".parquet",)
    return tuple(f".{metadata.file_extension}{suffix}" for suffix in COMPRESSION_SUFFIXES)


def _until_in_flight(table: LandingTable, metadata: TableMetadata, detection: Detection,
                     window: float) -> Detection:
    """The pending files up to the first one still being written; the table waits for it."""
    for index, file in enumerate(detection.pending):
        entry = Entry(file.path, "file", "a regular file", file.size, file.mtime_ns)
        reason = in_flight(table.door, entry, parquet=metadata.delimited is None, window=window)
        if reason is not None:
            seconds = settles_in(entry, window) if entry.size else 0.0
            return replace(detection, pending=detection.pending[:index], waiting_for=reason,
                           blocked=(*detection.pending[index:], *detection.blocked),
                           settling=Settling(file.path, seconds) if seconds else None)
    return detection


def _by_sequence_number(table: LandingTable, metadata: TableMetadata, staged: StagedFiles,
                        entries: list[Entry]) -> Detection:
    suffixes = data_file_suffixes(metadata)
    numbered: dict[int, Entry] = {}
    for entry in entries:
        path = entry.path
        digits, suffix = _split_number(path.name)
        if is_sequence_number(digits) and suffix.lower() in suffixes:
            _require_file(table, entry)
            if int(digits) in numbered:
                raise FileNameError(
                    f"two files carry sequence number {int(digits)}: "
                    f"{numbered[int(digits)].name} and {path.name}",
                    table=table.qualified_name, file=str(path), hint="keep one of them")
            numbered[int(digits)] = entry
        elif digits and entry.kind != "folder":
            raise _misnamed(table, path, digits, suffix, suffixes)
    pending: list[SequenceFile] = []
    listed = tuple(entry for number, entry in sorted(numbered.items())
                   if number <= staged.last_sequence)
    expected = staged.last_sequence + 1
    for number in sorted(n for n in numbered if n > staged.last_sequence):
        if number != expected:
            blocked = tuple(_sequence_file(n, numbered[n]) for n in sorted(numbered)
                            if n > expected)
            missing = sequence_file_name(expected, suffixes[0])
            return Detection(pending, _in_place(numbered, staged),
                             f"waiting for missing file {missing}", blocked, staged_listed=listed)
        pending.append(_sequence_file(number, numbered[number]))
        expected += 1
    return Detection(pending, _in_place(numbered, staged), staged_listed=listed)


def _by_update_time(table: LandingTable, metadata: TableMetadata, staged: StagedFiles,
                    entries: list[Entry]) -> Detection:
    suffixes = data_file_suffixes(metadata)
    files = [entry for entry in entries if entry.name.lower().endswith(suffixes)]
    for entry in files:
        _require_file(table, entry)
    new = sorted((entry for entry in files if entry.name not in staged.names),
                 key=lambda entry: (entry.mtime_ns, entry.name))
    pending = [_sequence_file(staged.last_sequence + index, entry)
               for index, entry in enumerate(new, 1)]
    return Detection(pending, [entry.path for entry in files
                               if entry.name in staged.names and entry.name != staged.newest],
                     staged_listed=tuple(entry for entry in files if entry.name in staged.names))


def _sequence_file(sequence: int, entry: Entry) -> SequenceFile:
    return SequenceFile(sequence, entry.path, entry.size, entry.mtime_ns, entry.etag)


def _in_place(numbered: dict[int, Entry], staged: StagedFiles) -> list[PurePath]:
    return [entry.path for number, entry in sorted(numbered.items())
            if number < staged.last_sequence]


def _entries(table: LandingTable, listing: list[Entry]) -> list[Entry]:
    """The table folder's entries by name, but lakemirror's and the contract's `_` ones and
    hidden `.` ones; a partition folder fails the table."""
    control = [entry for entry in listing
               if entry.name in (METADATA_FILE, MARKER) and entry.kind == "special"]
    if control:  # a FIFO there fails reading it; on an object store, an object and a folder
        raise unsafe_entry(control[0], "a regular file", table=table.qualified_name)
    entries = [entry for entry in listing if not entry.name.startswith(("_", "."))]
    partitions = [entry.name for entry in entries
                  if entry.kind == "folder" and PARTITION_FOLDER.fullmatch(entry.name)]
    if partitions:
        raise FileNameError(
            f"the table folder holds partition folders ({', '.join(map(repr, partitions[:3]))}"
            f"{', ...' if len(partitions) > 3 else ''}); partitioned landing folders are not "
            "supported", table=table.qualified_name, file=str(table.folder / partitions[0]),
            hint="write the change files directly into the table folder (Fabric's landing-zone "
                 "contract has no partition folders), with the partition values as columns")
    return entries


def _require_file(table: LandingTable, entry: Entry) -> None:
    if entry.kind != "file":
        raise unsafe_entry(entry, "a regular file", table=table.qualified_name)


def _split_number(name: str) -> tuple[str, str]:
    """The name's leading digits (any script's: look-alikes of 0-9 are misnamed, never
    skipped) and the rest."""
    match = re.fullmatch(r"(\d+)(\..*)?", name, re.S)
    return (match.group(1), match.group(2) or "") if match else ("", name)


def _misnamed(table: LandingTable, path: PurePath, number: str, suffix: str,
              suffixes: tuple[str, ...]) -> FileNameError:
    expected = f"{SEQUENCE_DIGITS} digits + {' or '.join(suffixes)}"
    problem = ("has digits other than 0-9 (look-alikes such as fullwidth digits)"
               if not number.isascii() else
               f"has {len(number)} digits instead of {SEQUENCE_DIGITS}"
               if len(number) != SEQUENCE_DIGITS else
               f"ends in {suffix or 'nothing'!r} instead of {suffixes[0]!r}")
    return FileNameError(
        f"file name {path.name!r} {problem}", table=table.qualified_name, file=str(path),
        hint=f"name change files {expected}, e.g. {sequence_file_name(1, suffixes[0])}")
