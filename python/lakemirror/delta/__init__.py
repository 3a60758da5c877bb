"""Delta logs: the table-feature catalog, reader profiles, and protocol, properties and history
of a warehouse's tables, read with `deltalake` on any engine."""

from typing import TYPE_CHECKING

from lakemirror.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from lakemirror.delta.features import FEATURES, FEATURES_BY_NAME, Protocol, TableFeature
    from lakemirror.delta.log import Commit, TableLog, WarehouseTable, read_log
    from lakemirror.delta.readers import (
        DEFAULT_READERS, PROFILES, ReaderProfile, Verdict, deletion_vector_blockers, judge,
        profiles_named,
    )

__getattr__ = lazy_exports(__name__, {
    "features": ("FEATURES", "FEATURES_BY_NAME", "Protocol", "TableFeature"),
    "log": ("Commit", "TableLog", "WarehouseTable", "read_log"),
    "readers": ("DEFAULT_READERS", "PROFILES", "ReaderProfile", "Verdict",
                "deletion_vector_blockers", "judge", "profiles_named"),
})

__all__ = [
    "DEFAULT_READERS", "FEATURES", "FEATURES_BY_NAME", "PROFILES", "Commit", "Protocol", "ReaderProfile",
    "TableFeature", "TableLog", "Verdict", "WarehouseTable", "deletion_vector_blockers", "judge",
    "profiles_named", "read_log",
]
