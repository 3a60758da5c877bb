"""When the files a table has not applied yet landed, kept from run to run in its monitoring
record: a file is listed while it waits in the zone, and no longer once staged and moved, so
each run adds what it listed to what the last run knew."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Landed:
    """A change file, by the sequence number it applies under, and when it landed (its
    last-modified time as the zone listed it, in ns since the epoch)."""

    sequence: int
    landed_ns: int


def known_landings(listed: Iterable[Landed], earlier: Iterable[Landed], *, staged: int,
                   listed_now: bool) -> dict[int, int]:
    """Landing times by sequence number: those of this run's listing (`listed`, new files),
    and of the last run's those staged since (up to `staged`), no longer listed once moved.
    Those above `staged` that this run did not list went away, unless it could not list the
    table (`listed_now` false: it failed before)."""
    known = {landed.sequence: landed.landed_ns for landed in earlier
             if landed.sequence <= staged or not listed_now}
    known.update((landed.sequence, landed.landed_ns) for landed in listed)
    return known


def applied_latency(landings: dict[int, int], applied: int, applied_before: int | None,
                    latency_before: float | None, *, now_ns: int | None) -> float | None:
    """Seconds from landing to applied of the last file applied (`applied`), measured when this
    run's build applied it (`now_ns`, None: the run built nothing); the last run's measure when
    no file was applied since; None when unknown."""
    if applied == applied_before:
        return latency_before
    landed = landings.get(applied)
    if now_ns is None or landed is None:
        return None
    return max(0.0, (now_ns - landed) / 1e9)
