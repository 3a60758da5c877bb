"""Source row counts: what the publisher says its table holds, compared with what its change
files add up to, which tells whose side is off.

A count file is JSON, `{"dbo.customers": 1234}` (taken at the last staged file) or
`{"dbo.customers": {"rows": 1234, "sequence": 57}}` (taken after change file 57).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, TextIO

from lakemirror.errors import ConfigError
from lakemirror.landing import ROWS_PER_FILE
from lakemirror.proof.replay import STAGED, ChangeLog, count_rows, replayed_rows
from lakemirror.storage.location import Location


@dataclass(frozen=True)
class SourceCount:
    """A source table's row count, taken after change file `sequence` (None: the last
    staged)."""

    rows: int
    sequence: int | None = None


@dataclass(frozen=True)
class SourceCheck:
    """A source count against the replay of the changes up to the file it was taken at."""

    source_rows: int
    sequence: int | None
    replayed_rows: int | None  # None: those changes were folded, or not staged yet
    verdict: str

    @property
    def ok(self) -> bool:
        return self.replayed_rows == self.source_rows


def read_source_counts(file: TextIO, *, origin: str) -> dict[str, SourceCount]:
    """The counts of a count file (see the module), by lower-case name, as mirrored tables are
    named; a bad one is a ConfigError naming it."""
    try:
        document = json.load(file)  # text that is not UTF-8 is a ValueError too
        if not isinstance(document, dict):
            raise ValueError("not a JSON object of table names")
        counts = {str(name).lower(): _count(value) for name, value in document.items()}
        if len(counts) < len(document):
            raise ValueError("a table is named twice (names are not case-sensitive)")
        return counts
    except ValueError as error:
        raise ConfigError(
            f"source counts {origin} cannot be read: {error}",
            hint='write {"schema.table": ROWS} or {"schema.table": {"rows": ROWS, '
                 '"sequence": FILE_NUMBER}}') from None


def _count(value: Any) -> SourceCount:
    if isinstance(value, dict) and set(value) <= {"rows", "sequence"} and "rows" in value:
        rows, sequence = value["rows"], value.get("sequence")
    else:
        rows, sequence = value, None
    if not _is_count(rows) or not (sequence is None or _is_count(sequence)):
        raise ValueError(f"{value!r} is not a row count (with a file sequence number)")
    return SourceCount(rows, sequence)


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def check_source(source: SourceCount, staging: Location, log: ChangeLog, compacted_through: int,
                 *, last_staged: int, mirror_ok: bool) -> SourceCheck:
    """Compare a source count with the replay at its file (`last_staged` when it names
    none), and say which side is off."""
    sequence = last_staged if source.sequence is None else source.sequence
    through = (sequence + 1) * ROWS_PER_FILE - 1
    if sequence > last_staged:
        return SourceCheck(source.rows, sequence, None,
                           f"file {sequence} is not staged yet (the last is {last_staged}): "
                           "run lakemirror, then verify again")
    if through < compacted_through:
        return SourceCheck(source.rows, sequence, None,
                           f"the changes up to file {sequence} were folded by staging "
                           "compaction: give a count taken at a later file")
    replayed = count_rows({STAGED: staging}, replayed_rows(log, through))
    if replayed != source.rows:
        verdict = (f"the publisher's side: its change files up to file {sequence} add up to "
                   f"{replayed} rows, the source counts {source.rows}")
    elif not mirror_ok:
        verdict = ("lakemirror's side: the change files add up to the source's count, "
                   "the mirror differs from them")
    else:
        verdict = "ok"
    return SourceCheck(source.rows, sequence, replayed, verdict)
