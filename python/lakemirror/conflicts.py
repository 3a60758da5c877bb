"""Delta commit conflicts: recognise them in an engine's error message, and retry idempotent
operations that lost one, with bounded exponential backoff and jitter."""

from __future__ import annotations

import random
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import Enum
from typing import TypeVar

Result = TypeVar("Result")


class ConflictKind(str, Enum):
    """Why a commit lost to a concurrent one, in Delta Lake's terms."""

    CONCURRENT_APPEND = "concurrent append"
    DELETE_READ = "concurrent delete-read"
    DELETE_DELETE = "concurrent delete-delete"
    METADATA_CHANGED = "metadata changed"
    PROTOCOL_CHANGED = "protocol changed"
    CONCURRENT_TRANSACTION = "concurrent transaction"
    CONCURRENT_CREATE = "concurrent create"
    UNREPORTED = "commit conflict, reason not reported by the engine"


@dataclass(frozen=True)
class Conflict:
    """A commit conflict and the engine's raw message."""

    kind: ConflictKind
    message: str

    def __str__(self) -> str:
        return f"{self.kind.value}: {self.message}"


# Delta on Spark (exception names and error classes), delta-rs and Sail (its fork of delta-rs).
_PATTERNS = [
    (ConflictKind.CONCURRENT_APPEND,
     r"ConcurrentAppendException|DELTA_CONCURRENT_APPEND|concurrent transactions? added new data"),
    (ConflictKind.DELETE_READ,
     r"ConcurrentDeleteReadException|DELTA_CONCURRENT_DELETE_READ"
     r"|concurrent transaction deleted data this operation read"),
    (ConflictKind.DELETE_DELETE,
     r"ConcurrentDeleteDeleteException|DELTA_CONCURRENT_DELETE_DELETE"
     r"|concurrent transaction deleted the same data"),
    (ConflictKind.METADATA_CHANGED,
     r"MetadataChangedException|DELTA_METADATA_CHANGED|Metadata changed since last commit"),
    (ConflictKind.PROTOCOL_CHANGED,
     r"ProtocolChangedException|DELTA_PROTOCOL_CHANGED|Protocol changed since last commit"),
    (ConflictKind.CONCURRENT_TRANSACTION,
     r"ConcurrentTransactionException|DELTA_CONCURRENT_TRANSACTION|ConcurrentWriteException"
     r"|DELTA_CONCURRENT_WRITE|Concurrent transaction failed"),
    # Two sessions creating one table at once (`create table if not exists`, e.g. the control
    # tables on a fresh warehouse): the loser finds the winner's first files and no table yet.
    (ConflictKind.CONCURRENT_CREATE, r"DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION"),
    # Sail reports every lost commit as "Failed to commit transaction: 0", without the reason.
    (ConflictKind.UNREPORTED,
     r"Failed to commit transaction|Tried committing existing table version"),
]
_COMPILED = [(kind, re.compile(pattern)) for kind, pattern in _PATTERNS]


def classify_conflict(message: str | None) -> Conflict | None:
    """The conflict an engine error message reports, or None when it is no commit conflict."""
    if not message:
        return None
    for kind, pattern in _COMPILED:
        if pattern.search(message):
            return Conflict(kind, message.strip())
    return None


@dataclass(frozen=True)
class Backoff:
    """Bounded exponential backoff with full jitter: attempt n waits up to base·2ⁿ⁻¹ (≤ cap).
    Ours, not tenacity's: run/build.py retries a result (the conflicting models, rebuilt and
    merged into the last build), not a call; on tenacity both loops came out longer."""

    attempts: int = 4
    base_seconds: float = 0.5
    cap_seconds: float = 8.0

    def delays(self) -> Iterator[float]:
        """The wait before each retry (attempts - 1 of them)."""
        for retry in range(self.attempts - 1):
            yield random.uniform(0, min(self.cap_seconds, self.base_seconds * 2 ** retry))


def retry_on_conflict(operation: Callable[[], Result], *, what: str,
                      progress: Callable[[str], None], backoff: Backoff = Backoff()) -> Result:
    """Run an idempotent operation, again after each commit conflict, at most `attempts`
    times; the last conflict is raised."""
    for attempt, delay in enumerate(backoff.delays(), start=2):
        try:
            return operation()
        except Exception as error:
            conflict = classify_conflict(str(error))
            if conflict is None:
                raise
            progress(f"{what}: {conflict.kind.value}; retrying in {delay:.1f} s "
                     f"(attempt {attempt} of {backoff.attempts})")
            time.sleep(delay)
    return operation()
