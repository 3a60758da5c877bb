"""lakemirror: open mirroring of a landing zone into Delta tables, SQL-first with dbt.

Kept light so `lakemirror --help` starts at once: heavy parts load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lakemirror.conflicts import Conflict, ConflictKind, classify_conflict
from lakemirror.errors import (
    ConfigError,
    EngineError,
    LakemirrorError,
    LandingZoneError,
    LockTimeoutError,
    SchemaChangeError,
)

if TYPE_CHECKING:
    from lakemirror.service import MirrorService, RunSettings
    from lakemirror.status import TableStatus

__version__ = "0.1.0"
__all__ = [
    "ConfigError", "Conflict", "ConflictKind", "EngineError", "LakemirrorError",
    "LandingZoneError", "LockTimeoutError", "MirrorService", "RunSettings", "SchemaChangeError",
    "TableStatus", "classify_conflict",
]


def __getattr__(name: str) -> Any:
    if name in ("MirrorService", "RunSettings"):
        from lakemirror import service

        return getattr(service, name)
    if name == "TableStatus":
        from lakemirror.status import TableStatus

        return TableStatus
    raise AttributeError(name)
