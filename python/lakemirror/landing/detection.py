"""Which change files of a table are new, and in which order they apply.

`SequentialFileName` (the default): files are named with 20 digits, applied in numeric order and
contiguous; a gap makes the table wait. `LastUpdateTimeFileDetection`: any file name, applied in
order of modification time, then name; lakemirror numbers them itself, and a name once staged is
never staged again, even if the file is rewritten. An entry named like a change file must be a
regular file: a folder, link or FIFO under such a name fails the table (it is never opened).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from lakemirror.errors import FileNameError
from lakemirror.landing.discovery import LandingTable, sequence_file_name
from lakemirror.landing.metadata import TableMetadata
from lakemirror.landing.zone import Entry, unsafe_entry

COMPRESSION_SUFFIXES = ("", ".gz", ".zst", ".snappy")


@dataclass(frozen=True)
class SequenceFile:
    """A change file and the sequence number it applies under."""

    sequence: int
    path: Path
    size: int = 0  # bytes, as listed


@dataclass(frozen=True)
class StagedFiles:
    """What staging holds: the last sequence number, the newest file's name, and (for
    LastUpdateTimeFileDetection) every name staged so far."""

    last_sequence: int = 0
    newest: str | None = None
    names: frozenset[str] = field(default_factory=frozenset)


@dataclass(frozen=True)
class Detection:
    """New files in apply order, older staged files still in place (to move), and a gap."""

    pending: list[SequenceFile]
    staged_in_place: list[Path]
    waiting_for: str | None = None
    blocked: int = 0  # files after a gap


def detect_files(table: LandingTable, metadata: TableMetadata, staged: StagedFiles) -> Detection:
    if metadata.file_detection == "LastUpdateTimeFileDetection":
        return _by_update_time(table, metadata, staged)
    return _by_sequence_number(table, metadata, staged)


def data_file_suffixes(metadata: TableMetadata) -> tuple[str, ...]:
    """The name endings of the table's change files (compression only for delimited text)."""
    if metadata.delimited is None:
        return (".parquet",)
    return tuple(f".{metadata.file_extension}{suffix}" for suffix in COMPRESSION_SUFFIXES)


def _by_sequence_number(table: LandingTable, metadata: TableMetadata,
                        staged: StagedFiles) -> Detection:
    suffixes = data_file_suffixes(metadata)
    numbered: dict[int, Entry] = {}
    for entry in _entries(table):
        path = entry.path
        digits, suffix = _split_number(path.name)
        if len(digits) == 20 and suffix.lower() in suffixes:
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
    expected = staged.last_sequence + 1
    for number in sorted(n for n in numbered if n > staged.last_sequence):
        if number != expected:
            blocked = len([n for n in numbered if n > expected])
            return Detection(pending, _in_place(numbered, staged),
                             f"waiting for missing file {sequence_file_name(expected)}", blocked)
        pending.append(SequenceFile(number, numbered[number].path, numbered[number].size))
        expected += 1
    return Detection(pending, _in_place(numbered, staged))


def _by_update_time(table: LandingTable, metadata: TableMetadata,
                    staged: StagedFiles) -> Detection:
    suffixes = data_file_suffixes(metadata)
    files = [entry for entry in _entries(table) if entry.name.lower().endswith(suffixes)]
    for entry in files:
        _require_file(table, entry)
    new = sorted((entry for entry in files if entry.name not in staged.names),
                 key=lambda entry: (entry.mtime_ns, entry.name))
    pending = [SequenceFile(staged.last_sequence + index, entry.path, entry.size)
               for index, entry in enumerate(new, 1)]
    return Detection(pending, [entry.path for entry in files
                               if entry.name in staged.names and entry.name != staged.newest])


def _in_place(numbered: dict[int, Entry], staged: StagedFiles) -> list[Path]:
    return [entry.path for number, entry in sorted(numbered.items())
            if number < staged.last_sequence]


def _entries(table: LandingTable) -> list[Entry]:
    """The table folder's entries by name, but lakemirror's and the contract's `_` ones."""
    return [entry for entry in table.door.entries(table.folder)
            if not entry.name.startswith("_")]


def _require_file(table: LandingTable, entry: Entry) -> None:
    if entry.kind != "file":
        raise unsafe_entry(entry, "a regular file", table=table.qualified_name)


def _split_number(name: str) -> tuple[str, str]:
    match = re.fullmatch(r"([0-9]+)(\..*)?", name, re.S)
    return (match.group(1), match.group(2) or "") if match else ("", name)


def _misnamed(table: LandingTable, path: Path, number: str, suffix: str,
              suffixes: tuple[str, ...]) -> FileNameError:
    expected = f"20 digits + {' or '.join(suffixes)}"
    problem = (f"has {len(number)} digits instead of 20" if len(number) != 20
               else f"ends in {suffix or 'nothing'!r} instead of {suffixes[0]!r}")
    return FileNameError(
        f"file name {path.name!r} {problem}", table=table.qualified_name, file=str(path),
        hint=f"name change files {expected}, e.g. {sequence_file_name(1).split('.')[0]}"
             f"{suffixes[0]}")
