"""Whether a change file is complete, or still being written by its publisher (in flight).

A file of 0 bytes is in flight: no complete change file is empty (a Parquet file has a footer;
a delimited file with no rows still has its header). A Parquet file whose footer is complete
(it begins and ends with `PAR1`, and its footer length fits) is ready at once, as Parquet
writers write the footer last. Any other file is ready once it has not changed for the settle
window, LAKEMIRROR_SETTLE_SECONDS (default 2 s). A table whose next file is in flight waits for
it; a file that is still unreadable once it settled fails the table as any bad file does. A
one-shot run waits out the rest of the window of a file that is only settling (`settles_in`),
so an hourly job stages a file that landed just before it, not an hour later.
"""

from __future__ import annotations

import os
import time

from lakemirror.errors import LakemirrorError
from lakemirror.landing.zone_door import Entry, ZoneDoor
from lakemirror.environment import SETTLE_SECONDS

PARQUET_MAGIC = b"PAR1"
_FOOTER_TAIL = 8  # footer length (4 bytes, little-endian) + magic


def in_flight(door: ZoneDoor, entry: Entry, *, parquet: bool, window: float) -> str | None:
    """Why the file is not ready to stage yet; None when it is."""
    if entry.size == 0:
        return (f"{entry.name} is empty (0 bytes), so its publisher is still writing it; "
                "lakemirror stages it once it has content (delete it if it was abandoned)")
    if not settles_in(entry, window):
        return None  # settled: not read
    if parquet and _complete_parquet(door, entry):
        return None
    return (f"{entry.name} changed {max(_age(entry), 0):.1f} s ago, within the {window:g} s "
            f"settle window ({SETTLE_SECONDS}); lakemirror stages it once it stops changing")


def settles_in(entry: Entry, window: float) -> float:
    """Seconds until the file leaves the settle window if it does not change again (0 when it
    has not changed for the window); at most the window, even with a modification time in the
    future (another machine's clock)."""
    age = _age(entry)
    return 0.0 if abs(age) >= window else min(window - age, window)


def _age(entry: Entry) -> float:
    """Seconds since the file last changed."""
    return (time.time_ns() - entry.mtime_ns) / 1e9


def _complete_parquet(door: ZoneDoor, entry: Entry) -> bool:
    """Whether the file begins with Parquet's magic and ends with a footer that fits."""
    if entry.size < len(PARQUET_MAGIC) + _FOOTER_TAIL:
        return False
    try:
        with door.open(entry.path) as handle:
            head = handle.read(len(PARQUET_MAGIC))
            handle.seek(-_FOOTER_TAIL, os.SEEK_END)
            tail = handle.read(_FOOTER_TAIL)
    except (LakemirrorError, OSError):  # reading it again stages or fails it with the reason
        return False
    footer = int.from_bytes(tail[:4], "little")
    return (head == PARQUET_MAGIC and tail[4:] == PARQUET_MAGIC
            and footer + _FOOTER_TAIL + len(PARQUET_MAGIC) <= entry.size)
