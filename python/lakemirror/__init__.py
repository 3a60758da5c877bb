"""lakemirror: open mirroring of a landing zone into Delta tables, SQL-first with dbt.

Kept light so `lakemirror --help` starts at once: heavy parts load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lakemirror.conflicts import Conflict, ConflictKind, classify_conflict
from lakemirror.errors import (
    ConfigError,
    EngineError,
    LakemirrorError,
    LandingZoneError,
    LockTimeoutError,
    SchemaChangeError,
)
from lakemirror.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from lakemirror.reading import read_table
    from lakemirror.service import MirrorService, RunSettings
    from lakemirror.status import TableStatus

__version__ = "0.1.0"
__all__ = [
    "ConfigError", "Conflict", "ConflictKind", "EngineError", "LakemirrorError",
    "LandingZoneError", "LockTimeoutError", "MirrorService", "RunSettings", "SchemaChangeError",
    "TableStatus", "classify_conflict", "read_table",
]


__getattr__ = lazy_exports(__name__, {
    "reading": ("read_table",),
    "service": ("MirrorService", "RunSettings"),
    "status": ("TableStatus",),
})
